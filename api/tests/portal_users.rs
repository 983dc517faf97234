//! Portal users through the API, on both databases, as a tenant admin and the invited
//! person would: an invitation (only for roles the inviter may grant, only in its own
//! tenant), accepted once with a long enough password, which signs the person in as a
//! session of its role; email and password sign-in with one answer for an unknown email
//! and a wrong password; a lock after repeated wrong passwords; removal ends the
//! sessions. Every step is audited.

mod support;

use chrono::{Duration, Utc};
use neocloud_schema::entity::portal_user;
use reqwest::StatusCode;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const INVITE: &str = "mutation($e: String!, $r: Role!, $t: ID) { inviteUser(email: $e, role: $r, tenantId: $t) { user { id email role state } invitationToken invitationPath } }";
const PASSWORD: &str = "a long passphrase, really";

async fn invite(app: &TestApp, key: &str, email: &str, role: &str) -> Value {
    app.gql(Some(key), INVITE, json!({"e": email, "r": role}))
        .await
}

async fn post(app: &TestApp, path: &str, body: Value) -> (StatusCode, Option<String>, Value) {
    let response = app
        .client
        .post(format!("{}{path}", app.url))
        .json(&body)
        .send()
        .await
        .expect("POST");
    let status = response.status();
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().to_owned());
    (status, cookie, response.json().await.unwrap_or(Value::Null))
}

/// A GraphQL request as the browser of a session sends it.
async fn as_session(app: &TestApp, session: &(String, String), query: &str) -> Value {
    as_session_with(app, session, query, json!({})).await
}

async fn as_session_with(
    app: &TestApp,
    session: &(String, String),
    query: &str,
    variables: Value,
) -> Value {
    app.client
        .post(format!("{}/graphql", app.url))
        .header("cookie", &session.0)
        .header("x-csrf-token", &session.1)
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON")
}

async fn sign_in(
    app: &TestApp,
    email: &str,
    password: &str,
) -> (StatusCode, Option<(String, String)>, Value) {
    let (status, cookie, body) = post(
        app,
        "/v1/session",
        json!({"email": email, "password": password}),
    )
    .await;
    let session = cookie.zip(body["csrfToken"].as_str().map(str::to_owned));
    (status, session, body)
}

async fn invitations_become_password_sessions(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (tenant, admin) = app.create_tenant("acme").await;
    let (_, other_admin) = app.create_tenant("globex").await;

    for (email, field) in [("not-an-email", "email"), ("a b@x.io", "email")] {
        let r = invite(&app, &admin, email, "TENANT_MEMBER").await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{r}");
    }
    let r = invite(&app, &admin, "ops@acme.io", "OPERATOR").await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");

    let r = invite(&app, &admin, " Bob@Acme.io ", "TENANT_BILLING").await;
    let token = r["data"]["inviteUser"]["invitationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    assert_eq!(r["data"]["inviteUser"]["user"]["email"], "bob@acme.io");
    assert_eq!(r["data"]["inviteUser"]["user"]["state"], "INVITED");
    assert!(
        r["data"]["inviteUser"]["invitationPath"]
            .as_str()
            .is_some_and(|p| p.ends_with(&token)),
        "{r}"
    );
    // An active user's email cannot be taken by another tenant.
    let r = invite(&app, &other_admin, "bob@acme.io", "TENANT_MEMBER").await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");

    let (status, _, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": "short"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["field"], "password", "{body}");
    let (status, cookie, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = (
        cookie.expect("cookie"),
        body["csrfToken"].as_str().expect("csrf").to_owned(),
    );
    let r = as_session(&app, &session, "{ viewer { role email tenant { name } } }").await;
    assert_eq!(r["data"]["viewer"]["role"], "TENANT_BILLING", "{r}");
    assert_eq!(r["data"]["viewer"]["email"], "bob@acme.io", "{r}");
    assert_eq!(r["data"]["viewer"]["tenant"]["name"], "acme", "{r}");
    // A billing user reads; it changes nothing.
    let r = as_session(&app, &session, "mutation { removeBudget }").await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // The token is spent.
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Email and password; unknown email and wrong password read the same.
    let (status, session, _) = sign_in(&app, "BOB@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    assert!(session.is_some());
    let (_, _, wrong) = sign_in(&app, "bob@acme.io", "not the passphrase").await;
    let (status, _, unknown) = sign_in(&app, "nobody@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong, unknown);

    // Other tenants see nobody; the own admin sees the user.
    let r = app
        .gql(Some(&other_admin), "{ portalUsers { email } }", json!({}))
        .await;
    assert_eq!(r["data"]["portalUsers"], json!([]), "{r}");
    let r = app
        .gql(
            Some(&other_admin),
            "query($t: ID) { portalUsers(tenantId: $t) { email } }",
            json!({"t": tenant}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(
            Some(&admin),
            "{ portalUsers { id email state lastSignInAt } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["portalUsers"][0]["state"], "ACTIVE", "{r}");
    assert!(
        r["data"]["portalUsers"][0]["lastSignInAt"].is_string(),
        "{r}"
    );
    let id = r["data"]["portalUsers"][0]["id"].clone();

    let remove = "mutation($id: ID!) { removeUser(id: $id) { state } }";
    let r = app.gql(Some(&other_admin), remove, json!({"id": id})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&admin), remove, json!({"id": id})).await;
    assert_eq!(r["data"]["removeUser"]["state"], "REMOVED", "{r}");
    let session = session.expect("session");
    let r = as_session(&app, &session, "{ viewer { role } }").await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
    let (status, _, _) = sign_in(&app, "bob@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let r = app
        .gql(
            Some(&admin),
            "{ auditLog(filter: {objectType: \"portal_user\"}) { edges { node { action } } } }",
            json!({}),
        )
        .await;
    let actions: Vec<&str> = r["data"]["auditLog"]["edges"]
        .as_array()
        .map(|e| {
            e.iter()
                .filter_map(|e| e["node"]["action"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for action in [
        "portal_user.invite",
        "portal_user.accept",
        "portal_user.remove",
    ] {
        assert!(actions.contains(&action), "{action}: {r}");
    }
}

async fn wrong_passwords_lock_and_invitations_expire(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let (_, member) = {
        let r = app
            .gql(
                Some(&admin),
                "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
                json!({}),
            )
            .await;
        (
            (),
            r["data"]["createApiKey"]["apiKey"]
                .as_str()
                .expect("key")
                .to_owned(),
        )
    };
    // A member cannot make admins.
    let r = invite(&app, &member, "eve@acme.io", "TENANT_ADMIN").await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    let r = invite(&app, &admin, "carol@acme.io", "TENANT_MEMBER").await;
    let token = r["data"]["inviteUser"]["invitationToken"]
        .as_str()
        .expect("token")
        .to_owned();
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    for _ in 0..5 {
        let (status, _, _) = sign_in(&app, "carol@acme.io", "wrong wrong wrong").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, session, body) = sign_in(&app, "carol@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(session.is_none());
    assert!(body.to_string().contains("locked"), "{body}");
    // The lock passes.
    portal_user::Entity::update_many()
        .col_expr(
            portal_user::Column::LockedUntil,
            Expr::value(Utc::now() - Duration::seconds(1)),
        )
        .filter(portal_user::Column::Email.eq("carol@acme.io"))
        .exec(&app.db)
        .await
        .expect("unlock");
    let (status, _, _) = sign_in(&app, "carol@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::OK);

    // An expired invitation is refused; inviting again issues a new token.
    let r = invite(&app, &admin, "dan@acme.io", "TENANT_MEMBER").await;
    let old = r["data"]["inviteUser"]["invitationToken"]
        .as_str()
        .expect("token")
        .to_owned();
    portal_user::Entity::update_many()
        .col_expr(
            portal_user::Column::InvitationExpiresAt,
            Expr::value(Utc::now() - Duration::seconds(1)),
        )
        .filter(portal_user::Column::Email.eq("dan@acme.io"))
        .exec(&app.db)
        .await
        .expect("expire");
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": old, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let r = invite(&app, &admin, "dan@acme.io", "TENANT_MEMBER").await;
    let new = r["data"]["inviteUser"]["invitationToken"]
        .as_str()
        .expect("token")
        .to_owned();
    assert_ne!(old, new);
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": new, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    // A body that is neither form of sign-in is invalid input, not a crash.
    for body in [
        json!({}),
        json!({"apiKey": "x", "email": "a@b.io", "password": "p"}),
        json!({"email": 3}),
    ] {
        let (status, _, answer) = post(&app, "/v1/session", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "INVALID_INPUT", "{answer}");
    }
}

/// RFC 6238 written out (HMAC-SHA-1 of the 30-second step, dynamic truncation, six
/// digits), as an authenticator app computes it.
fn one_time_code(secret_base32: &str, at: chrono::DateTime<Utc>) -> String {
    use totp_hmac::{KeyInit, Mac};
    let key = data_encoding::BASE32_NOPAD
        .decode(secret_base32.as_bytes())
        .expect("base32");
    let mut mac = totp_hmac::Hmac::<sha1::Sha1>::new_from_slice(&key).expect("key");
    mac.update(&(at.timestamp() / 30).to_be_bytes());
    let h = mac.finalize().into_bytes();
    let o = usize::from(h[19] & 0xf);
    let n = u32::from_be_bytes([h[o] & 0x7f, h[o + 1], h[o + 2], h[o + 3]]);
    format!("{:06}", n % 1_000_000)
}

async fn sign_in_with_code(app: &TestApp, email: &str, code: &str) -> (StatusCode, Value) {
    let (status, _, body) = post(
        app,
        "/v1/session",
        json!({"email": email, "password": PASSWORD, "code": code}),
    )
    .await;
    (status, body)
}

/// A finance user sets up an authenticator: from then on the password alone is not
/// enough; a code counts once, a recovery code once; the user turns it off with a code,
/// and a tenant admin resets it for a lost phone.
async fn a_second_factor_guards_the_password(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let (_, stranger) = app.create_tenant("globex").await;
    let r = invite(&app, &admin, "fin@acme.io", "TENANT_BILLING").await;
    let user = r["data"]["inviteUser"]["user"]["id"].clone();
    let token = r["data"]["inviteUser"]["invitationToken"].clone();
    let (status, cookie, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = (
        cookie.expect("cookie"),
        body["csrfToken"].as_str().expect("csrf").to_owned(),
    );

    let r = app
        .gql(
            Some(&admin),
            "mutation { startSecondFactor { secret } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "a key is no person: {r}");
    let r = as_session(
        &app,
        &session,
        "mutation { startSecondFactor { secret uri } }",
    )
    .await;
    let secret = r["data"]["startSecondFactor"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("a read-only user sets up its own: {r}"))
        .to_owned();
    let uri = r["data"]["startSecondFactor"]["uri"].as_str().expect("uri");
    assert!(
        uri.starts_with("otpauth://totp/neocloud%3Afin%40acme.io?secret=") && uri.contains(&secret),
        "{uri}"
    );
    let now = Utc::now();
    let code = one_time_code(&secret, now);
    let wrong = format!(
        "{:06}",
        (code.parse::<u32>().expect("digits") + 1) % 1_000_000
    );
    let confirm = |c: &str| format!("mutation {{ confirmSecondFactor(code: \"{c}\") }}");
    let r = as_session(&app, &session, &confirm(&wrong)).await;
    assert_eq!(r["errors"][0]["extensions"]["field"], "code", "{r}");
    let r = as_session(&app, &session, &confirm(&code)).await;
    let recovery: Vec<String> = r["data"]["confirmSecondFactor"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|c| c.as_str().expect("code").to_owned())
        .collect();
    assert_eq!(recovery.len(), 10, "{r}");
    let r = app
        .gql(
            Some(&admin),
            "{ portalUsers { email secondFactorSince } }",
            json!({}),
        )
        .await;
    assert!(
        r["data"]["portalUsers"][0]["secondFactorSince"].is_string(),
        "{r}"
    );

    let (status, _, body) = sign_in(&app, "fin@acme.io", PASSWORD).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("SECOND_FACTOR_REQUIRED")),
        "{body}"
    );
    for (bad, why) in [
        (wrong.as_str(), "wrong"),
        (code.as_str(), "already used to confirm"),
    ] {
        let (status, body) = sign_in_with_code(&app, "fin@acme.io", bad).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("UNAUTHENTICATED")),
            "{why}: {body}"
        );
    }
    let next = one_time_code(&secret, now + Duration::seconds(30));
    let (status, body) = sign_in_with_code(&app, "fin@acme.io", &next).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the next step's code, within a step of drift: {body}"
    );
    let typed = recovery[0].to_uppercase().replace('-', " ");
    let (status, body) = sign_in_with_code(&app, "fin@acme.io", &typed).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = sign_in_with_code(&app, "fin@acme.io", &recovery[0]).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a recovery code counts once: {body}"
    );

    let disable = format!(
        "mutation {{ disableSecondFactor(code: \"{}\") }}",
        recovery[1]
    );
    let r = as_session(&app, &session, &disable).await;
    assert_eq!(r["data"]["disableSecondFactor"], true, "{r}");
    let (status, _, body) = sign_in(&app, "fin@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "a password alone again: {body}");

    // On again, then reset by the admin; another tenant's admin finds no such user.
    let r = as_session(&app, &session, "mutation { startSecondFactor { secret } }").await;
    let secret = r["data"]["startSecondFactor"]["secret"]
        .as_str()
        .expect("secret")
        .to_owned();
    let r = as_session(
        &app,
        &session,
        &confirm(&one_time_code(&secret, Utc::now())),
    )
    .await;
    assert!(r["errors"].is_null(), "{r}");
    let reset = "mutation($id: ID!) { resetSecondFactor(id: $id) { secondFactorSince } }";
    let r = app.gql(Some(&stranger), reset, json!({"id": user})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&admin), reset, json!({"id": user})).await;
    assert_eq!(
        r["data"]["resetSecondFactor"]["secondFactorSince"],
        Value::Null,
        "{r}"
    );
    let (status, _, body) = sign_in(&app, "fin@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"portal_user\"}) { nodes { action } } }",
            json!({}),
        )
        .await;
    let actions: Vec<&str> = r["data"]["auditLog"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.contains("second_factor"))
        .collect();
    assert_eq!(actions.len(), 4, "on, off, on, reset: {r}");
}

/// A forgotten password: an admin issues a one-time link; the old password works until
/// the link is used, then only the new one, and the sessions opened before end.
async fn an_admin_issues_a_password_reset_link(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let (_, stranger) = app.create_tenant("globex").await;
    let r = invite(&app, &admin, "dev@acme.io", "TENANT_MEMBER").await;
    let user = r["data"]["inviteUser"]["user"]["id"].clone();
    let token = r["data"]["inviteUser"]["invitationToken"].clone();
    let reset = "mutation($id: ID!) { resetPassword(id: $id) { invitationToken invitationPath user { state invitationExpiresAt } } }";
    let r = app.gql(Some(&admin), reset, json!({"id": user})).await;
    assert_eq!(
        error_code(&r),
        Some("INVALID_STATE"),
        "a pending invitation: {r}"
    );
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, old_session, _) = sign_in(&app, "dev@acme.io", PASSWORD).await;
    let old_session = old_session.expect("a session");

    let r = app.gql(Some(&stranger), reset, json!({"id": user})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&admin), reset, json!({"id": user})).await;
    let link = &r["data"]["resetPassword"];
    let token = link["invitationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    assert_eq!(link["user"]["state"], "ACTIVE", "{r}");
    let expires: chrono::DateTime<Utc> = link["user"]["invitationExpiresAt"]
        .as_str()
        .expect("expiry")
        .parse()
        .expect("time");
    assert!(expires <= Utc::now() + Duration::hours(24), "{r}");
    let (status, _, _) = sign_in(&app, "dev@acme.io", PASSWORD).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the old password works until the link is used"
    );

    let new_password = "another long passphrase";
    let (status, _, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": new_password}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let r = as_session(&app, &old_session, "{ viewer { role } }").await;
    assert_eq!(
        error_code(&r),
        Some("UNAUTHENTICATED"),
        "the old session ended: {r}"
    );
    let (status, _, _) = sign_in(&app, "dev@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = sign_in(&app, "dev@acme.io", new_password).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": token, "password": new_password}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a link works once");
    // Without a mail server nobody can ask for a link themselves.
    let (status, _, body) = post(
        &app,
        "/v1/session/password-reset",
        json!({"email": "dev@acme.io"}),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("UNAVAILABLE")),
        "{body}"
    );
}

/// A real SMTP server (`aiosmtpd`, installed by `scripts/test-deps.sh`) on `port`,
/// keeping what it receives in a maildir; killed when dropped. Missing, the mail tests are
/// skipped, unless `NEOCLOUD_REQUIRE_LOCALSTRIPE=1` (CI: the same script installs both).
struct SmtpServer {
    child: std::process::Child,
    maildir: std::path::PathBuf,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn smtp_server(port: u16, dir: &std::path::Path) -> Option<SmtpServer> {
    use std::process::{Command, Stdio};
    let present = Command::new("python3")
        .args(["-c", "import aiosmtpd"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        assert!(
            std::env::var("NEOCLOUD_REQUIRE_LOCALSTRIPE").as_deref() != Ok("1"),
            "aiosmtpd is required: run scripts/test-deps.sh"
        );
        eprintln!("aiosmtpd not installed: skipping");
        return None;
    }
    let maildir = dir.join("maildir");
    let child = Command::new("python3")
        .args(["-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["-c", "aiosmtpd.handlers.Mailbox"])
        .arg(&maildir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("aiosmtpd");
    let server = SmtpServer { child, maildir };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(server);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("aiosmtpd did not start");
}

impl SmtpServer {
    /// The mails received for `to`, as their raw text, soft line breaks of
    /// quoted-printable undone.
    fn mails_to(&self, to: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.maildir.join("new")) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .filter(|m| {
                m.lines()
                    .any(|l| l.eq_ignore_ascii_case(&format!("to: {to}")))
            })
            .map(|m| {
                m.replace("=\r\n", "")
                    .replace("=\n", "")
                    .replace("=3D", "=")
            })
            .collect()
    }

    /// Waits for the `n`-th mail to `to`.
    async fn wait_for(&self, to: &str, n: usize) -> Vec<String> {
        for _ in 0..150 {
            let mails = self.mails_to(to);
            if mails.len() >= n {
                return mails;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("no mail #{n} to {to}: {:?}", self.mails_to(to));
    }
}

/// The token of the portal link in a mail (`…/portal/invitation#<token>`).
fn link_token(mail: &str) -> String {
    let at = mail
        .find("https://cloud.example/portal/invitation#")
        .unwrap_or_else(|| panic!("no link: {mail}"));
    mail[at..]
        .split('#')
        .nth(1)
        .map(|t| t.chars().take_while(char::is_ascii_hexdigit).collect())
        .expect("token")
}

async fn with_mail(backend: Backend, smtp_port: u16) -> Option<TestApp> {
    TestApp::spawn_with(backend, move |s| {
        s.mail.smtp_url = Some(format!("smtp://127.0.0.1:{smtp_port}").into());
        s.mail.from = "Acme Cloud <no-reply@cloud.example>".into();
        s.mail.public_url = "https://cloud.example/".into();
    })
    .await
}

async fn outbox(app: &TestApp, to: &str) -> Vec<neocloud_schema::entity::mail::Model> {
    use neocloud_schema::entity::mail;
    mail::Entity::find()
        .filter(mail::Column::Recipient.eq(to))
        .all(&app.db)
        .await
        .expect("outbox")
}

/// With a mail server, an invitation and a password-reset link reach the person by
/// mail: the link in the mail is the one issued, it works once, and the mail keeps no
/// link once sent. Anyone may ask for a reset link; the answer is the same whether the
/// address has an account, and one address gets at most one such mail per 5 minutes.
async fn links_reach_people_by_mail(backend: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = support::free_port();
    let Some(smtp) = smtp_server(port, dir.path()).await else {
        return;
    };
    let Some(app) = with_mail(backend, port).await else {
        return;
    };
    let methods: Value = app
        .client
        .get(format!("{}/v1/session/methods", app.url))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(methods["passwordReset"], true, "{methods}");
    let (tenant, admin) = app.create_tenant("acme").await;
    let r = app
        .gql(Some(&admin), "mutation { inviteUser(email: \"Mia@Acme.example\", role: TENANT_MEMBER) { invitationToken emailed } }", json!({}))
        .await;
    assert_eq!(r["data"]["inviteUser"]["emailed"], true, "{r}");
    let mail = smtp.wait_for("mia@acme.example", 1).await.remove(0);
    assert!(mail.contains("Subject: You are invited to acme"), "{mail}");
    assert!(
        mail.contains("From: \"Acme Cloud\" <no-reply@cloud.example>"),
        "{mail}"
    );
    assert_eq!(
        json!(link_token(&mail)),
        r["data"]["inviteUser"]["invitationToken"]
    );
    let (status, _, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": link_token(&mail), "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let sent = outbox(&app, "mia@acme.example").await;
    assert!(
        sent.iter().all(|m| m.sent_at.is_some() && m.body.is_none()),
        "{sent:?}"
    );

    for email in [
        "nobody@acme.example",
        " MIA@acme.example ",
        "mia@acme.example",
    ] {
        let (status, _, body) =
            post(&app, "/v1/session/password-reset", json!({"email": email})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{email}: {body}");
    }
    let (status, _, body) = post(
        &app,
        "/v1/session/password-reset",
        json!({"email": "not an address"}),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["field"]),
        (StatusCode::BAD_REQUEST, &json!("email")),
        "{body}"
    );
    let mail = smtp
        .wait_for("mia@acme.example", 2)
        .await
        .into_iter()
        .find(|m| m.contains("Subject: Set a new password"))
        .expect("reset mail");
    assert!(
        outbox(&app, "nobody@acme.example").await.is_empty(),
        "a mail to an address without an account"
    );
    let resets = outbox(&app, "mia@acme.example")
        .await
        .into_iter()
        .filter(|m| m.kind == "password_reset")
        .count();
    assert_eq!(resets, 1, "one reset mail per 5 minutes");
    let new_password = "another long passphrase";
    let (status, _, body) = post(
        &app,
        "/v1/session/invitation",
        json!({"token": link_token(&mail), "password": new_password}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        sign_in(&app, "mia@acme.example", PASSWORD).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        sign_in(&app, "mia@acme.example", new_password).await.0,
        StatusCode::OK
    );
    let audit = app
        .gql(Some(&app.operator_key), "{ auditLog(filter: {action: \"portal_user.password_reset_requested\"}) { edges { node { action } } } }", json!({}))
        .await;
    assert_eq!(
        audit["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(1),
        "{audit}"
    );
    // Erasing the tenant's data deletes its mails.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($t: ID!) { eraseTenantData(tenantId: $t, confirmName: \"acme\") { erasedAt } }",
            json!({"t": tenant}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    assert!(outbox(&app, "mia@acme.example").await.is_empty());

    // A provider's person is invited to the provider console.
    let rhein = app.create_rhein_provider().await;
    let r = app
        .gql(
            Some(&rhein),
            "mutation { inviteUser(email: \"ops@rhein.example\", role: PROVIDER) { emailed } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["inviteUser"]["emailed"], true, "{r}");
    let mail = smtp.wait_for("ops@rhein.example", 1).await.remove(0);
    assert!(
        mail.contains("Subject: You are invited to Rhein GPU GmbH"),
        "{mail}"
    );
    assert!(
        mail.contains("the provider console of Rhein GPU GmbH, as a provider user"),
        "{mail}"
    );
    assert!(
        mail.contains("https://cloud.example/provider/invitation#"),
        "{mail}"
    );
}

/// A mail server that is down loses nothing: the mail waits, is tried again with backoff,
/// and goes out once the server is up.
async fn a_mail_waits_for_the_mail_server(backend: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = support::free_port();
    let Some(app) = with_mail(backend, port).await else {
        return;
    };
    let (_, admin) = app.create_tenant("acme").await;
    let r = invite(&app, &admin, "noa@acme.example", "TENANT_MEMBER").await;
    assert!(r["errors"].is_null(), "{r}");
    let mut tried = Vec::new();
    for _ in 0..100 {
        tried = outbox(&app, "noa@acme.example").await;
        if tried.first().is_some_and(|m| m.attempts > 0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let waiting = tried.first().expect("queued");
    assert!(
        waiting.attempts >= 1 && waiting.sent_at.is_none() && waiting.failed_at.is_none(),
        "{waiting:?}"
    );
    assert!(
        waiting.last_error.is_some() && waiting.body.is_some(),
        "{waiting:?}"
    );
    let Some(smtp) = smtp_server(port, dir.path()).await else {
        return;
    };
    app.advance(chrono::TimeDelta::minutes(2));
    let mail = smtp.wait_for("noa@acme.example", 1).await.remove(0);
    assert!(mail.contains("Subject: You are invited to acme"), "{mail}");
    // Its record is kept as long as events, then deleted; a mail not sent yet never is.
    let prune = |before| neocloud_api::mail::store::prune(&app.db, before);
    let now = Utc::now();
    assert_eq!(prune(now - Duration::days(1)).await.expect("prune"), 0);
    for _ in 0..50 {
        if outbox(&app, "noa@acme.example").await[0].sent_at.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(prune(now + Duration::days(1)).await.expect("prune"), 1);
    assert!(outbox(&app, "noa@acme.example").await.is_empty());
}

/// An invited person signs in with the invitation: the session of its role.
async fn accepted(app: &TestApp, admin: &str, email: &str, role: &str) -> (String, String) {
    let r = invite(app, admin, email, role).await;
    let token = r["data"]["inviteUser"]["invitationToken"].clone();
    let (status, cookie, body) = post(
        app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (
        cookie.expect("cookie"),
        body["csrfToken"].as_str().expect("csrf").to_owned(),
    )
}

/// `GET /v1/session` and a REST download as the session's browser: (whether the session
/// may only set up a second factor, the download's error code).
async fn session_state(app: &TestApp, session: &(String, String)) -> (Value, Value) {
    let get = |path: String| {
        app.client
            .get(format!("{}{path}", app.url))
            .header("cookie", &session.0)
            .send()
    };
    let described: Value = get("/v1/session".into())
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    let missing = uuid::Uuid::now_v7();
    let download: Value = get(format!("/v1/invoices/{missing}/export?format=csv"))
        .await
        .expect("GET")
        .json()
        .await
        .unwrap_or(Value::Null);
    (
        described["secondFactorSetupRequired"].clone(),
        download["error"]["code"].clone(),
    )
}

/// A tenant requires a second factor of every user: a user without one (a session open
/// before, or signing in after) may only set one up, in GraphQL and REST alike, and
/// works once it is on; no one turns theirs off while it is required. Only an admin
/// with its own second factor (or a key, or an operator) turns it on.
async fn a_tenant_requires_a_second_factor_of_every_user(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (acme, admin) = app.create_tenant("acme").await;
    let (_, stranger) = app.create_tenant("globex").await;
    let member = accepted(&app, &admin, "dev@acme.io", "TENANT_MEMBER").await;
    let boss = accepted(&app, &admin, "boss@acme.io", "TENANT_ADMIN").await;
    let require = |on: bool| {
        format!("mutation {{ requireSecondFactor(required: {on}) {{ secondFactorRequired }} }}")
    };
    let r = as_session(&app, &member, &require(true)).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "a member: {r}");
    let r = as_session(&app, &boss, &require(true)).await;
    assert_eq!(
        error_code(&r),
        Some("INVALID_STATE"),
        "an admin without one: {r}"
    );
    let on = "mutation($t: ID) { requireSecondFactor(required: true, tenantId: $t) { secondFactorRequired } }";
    let r = app.gql(Some(&stranger), on, json!({"t": acme})).await;
    assert_eq!(
        error_code(&r),
        Some("NOT_FOUND"),
        "another tenant's key: {r}"
    );
    assert_eq!(
        session_state(&app, &member).await,
        (json!(false), json!("NOT_FOUND"))
    );

    let r = app.gql(Some(&admin), on, json!({})).await;
    assert_eq!(
        r["data"]["requireSecondFactor"]["secondFactorRequired"], true,
        "{r}"
    );
    let r = as_session(&app, &member, "{ allocations { nodes { id } } }").await;
    assert_eq!(error_code(&r), Some("SECOND_FACTOR_SETUP_REQUIRED"), "{r}");
    assert_eq!(
        session_state(&app, &member).await,
        (json!(true), json!("SECOND_FACTOR_SETUP_REQUIRED"))
    );
    let (status, _, body) = sign_in(&app, "dev@acme.io", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["secondFactorSetupRequired"], true, "{body}");

    let r = as_session(&app, &member, "mutation { startSecondFactor { secret } }").await;
    let secret = r["data"]["startSecondFactor"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("setting one up is allowed: {r}"))
        .to_owned();
    let code = one_time_code(&secret, Utc::now());
    let confirm = format!("mutation {{ confirmSecondFactor(code: \"{code}\") }}");
    let r = as_session(&app, &member, &confirm).await;
    assert!(r["data"]["confirmSecondFactor"].is_array(), "{r}");
    let r = as_session(&app, &member, "{ allocations { nodes { id } } }").await;
    assert!(r["errors"].is_null(), "set up, the session works: {r}");
    assert_eq!(
        session_state(&app, &member).await,
        (json!(false), json!("NOT_FOUND"))
    );
    let off = format!(
        "mutation {{ disableSecondFactor(code: \"{}\") }}",
        one_time_code(&secret, Utc::now() + Duration::seconds(30))
    );
    let r = as_session(&app, &member, &off).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "it stays on: {r}");

    let r = app.gql(Some(&admin), &require(false), json!({})).await;
    assert_eq!(
        r["data"]["requireSecondFactor"]["secondFactorRequired"], false,
        "{r}"
    );
    assert_eq!(
        session_state(&app, &boss).await,
        (json!(false), json!("NOT_FOUND"))
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"tenant\"}) { nodes { action after } } }",
            json!({}),
        )
        .await;
    let changes: Vec<&Value> = r["data"]["auditLog"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter(|e| e["action"] == "tenant.second_factor_required")
        .collect();
    assert_eq!(changes.len(), 2, "on, off: {r}");
}

const INVITE_TO: &str = "mutation($e: String!, $r: Role!, $t: ID, $p: ID) { inviteUser(email: $e, role: $r, tenantId: $t, providerId: $p) { user { id email role state } invitationToken invitationPath } }";

async fn invite_to(app: &TestApp, key: &str, email: &str, role: &str, to: Value) -> Value {
    let mut vars = json!({"e": email, "r": role});
    vars.as_object_mut()
        .expect("an object")
        .extend(to.as_object().cloned().unwrap_or_default());
    app.gql(Some(key), INVITE_TO, vars).await
}

async fn provider_id(app: &TestApp, key: &str) -> String {
    let r = app.gql(Some(key), "{ provider { id } }", json!({})).await;
    r["data"]["provider"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned()
}

/// Accepts an invitation answer's token with [`PASSWORD`]; the session.
async fn accept(app: &TestApp, invited: &Value) -> (String, String) {
    let token = &invited["data"]["inviteUser"]["invitationToken"];
    let (status, cookie, body) = post(
        app,
        "/v1/session/invitation",
        json!({"token": token, "password": PASSWORD}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{invited} {body}");
    let csrf = body["csrfToken"].as_str().expect("csrf").to_owned();
    (cookie.expect("cookie"), csrf)
}

/// A provider's people sign in to the provider console with an email, a password and a
/// second factor. The provider (or an operator naming it) invites them, as `PROVIDER`
/// users only; signed in, they read what the provider's keys read and nothing of a
/// tenant. Another provider and a tenant reach none of them.
async fn a_provider_invites_its_people(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let rhein = app.create_rhein_provider().await;
    let rhein_id = provider_id(&app, &rhein).await;
    let r = app.gql(Some(&app.operator_key), "mutation { createProvider(input: {name: \"gridco\", legalName: \"Gridco AB\", country: \"SE\", currency: \"EUR\", payoutMethod: MANUAL}) { apiKey } }", json!({})).await;
    let gridco = r["data"]["createProvider"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    let gridco_id = provider_id(&app, &gridco).await;
    let (acme, acme_admin) = app.create_tenant("acme").await;

    // Who may invite whom, and where.
    let refused = [
        (&rhein, "TENANT_MEMBER", json!({}), "INVALID_INPUT"),
        (&rhein, "PROVIDER", json!({"p": gridco_id}), "NOT_FOUND"),
        (&rhein, "PROVIDER", json!({"t": acme}), "NOT_FOUND"),
        (&acme_admin, "PROVIDER", json!({}), "INVALID_INPUT"),
        (
            &acme_admin,
            "TENANT_MEMBER",
            json!({"p": rhein_id}),
            "FORBIDDEN",
        ),
        (
            &app.operator_key,
            "PROVIDER",
            json!({"t": acme, "p": rhein_id}),
            "INVALID_INPUT",
        ),
        (
            &app.operator_key,
            "PROVIDER",
            json!({"p": uuid::Uuid::new_v4()}),
            "NOT_FOUND",
        ),
    ];
    for (key, role, to, code) in refused {
        let r = invite_to(&app, key, "ops@rhein.de", role, to.clone()).await;
        assert_eq!(error_code(&r), Some(code), "{role} {to}: {r}");
    }
    let ops = invite_to(&app, &rhein, "Ops@Rhein.de", "PROVIDER", json!({})).await;
    let path = ops["data"]["inviteUser"]["invitationPath"]
        .as_str()
        .unwrap_or_else(|| panic!("{ops}"));
    assert!(path.starts_with("/provider/invitation#"), "{path}");
    let finance = invite_to(
        &app,
        &app.operator_key,
        "finance@rhein.de",
        "PROVIDER",
        json!({"p": rhein_id}),
    )
    .await;
    let finance_id = finance["data"]["inviteUser"]["user"]["id"].clone();
    assert_eq!(
        finance["data"]["inviteUser"]["user"]["role"], "PROVIDER",
        "{finance}"
    );

    // Signed in: the provider's view, nothing of a tenant's.
    let session = accept(&app, &ops).await;
    let r = as_session(&app, &session, "{ viewer { role email } provider { legalName } providerNodes { id } portalUsers { email } }").await;
    assert_eq!(r["data"]["viewer"]["role"], "PROVIDER", "{r}");
    assert_eq!(r["data"]["viewer"]["email"], "ops@rhein.de", "{r}");
    assert_eq!(r["data"]["provider"]["legalName"], "Rhein GPU GmbH", "{r}");
    let emails: Vec<&str> = r["data"]["portalUsers"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter_map(|u| u["email"].as_str())
        .collect();
    assert_eq!(emails, ["ops@rhein.de", "finance@rhein.de"], "{r}");
    let r = as_session(&app, &session, "{ tenants { edges { node { id } } } }").await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // A second factor, then sign-in needs it.
    let r = as_session(&app, &session, "mutation { startSecondFactor { secret } }").await;
    let secret = r["data"]["startSecondFactor"]["secret"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let code = one_time_code(&secret, Utc::now());
    let r = as_session(
        &app,
        &session,
        &format!("mutation {{ confirmSecondFactor(code: \"{code}\") }}"),
    )
    .await;
    let recovery = r["data"]["confirmSecondFactor"][0]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let (status, _, body) = sign_in(&app, "ops@rhein.de", PASSWORD).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("SECOND_FACTOR_REQUIRED")),
        "{body}"
    );
    let (status, body) = sign_in_with_code(&app, "ops@rhein.de", &recovery).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The provider requires a second factor of its people: the one without it may only
    // set one up, and the one with it keeps it.
    let require = "mutation($r: Boolean!, $p: ID) { requireProviderSecondFactor(required: $r, providerId: $p) { secondFactorRequired } }";
    for (key, code) in [(&gridco, "NOT_FOUND"), (&acme_admin, "FORBIDDEN")] {
        let r = app
            .gql(Some(key), require, json!({"r": true, "p": rhein_id}))
            .await;
        assert_eq!(error_code(&r), Some(code), "{r}");
    }
    let r = as_session_with(&app, &session, require, json!({"r": true})).await;
    assert_eq!(
        r["data"]["requireProviderSecondFactor"]["secondFactorRequired"], true,
        "{r}"
    );
    let newcomer = accept(&app, &finance).await;
    let r = as_session(&app, &newcomer, "{ providerNodes { id } }").await;
    assert_eq!(error_code(&r), Some("SECOND_FACTOR_SETUP_REQUIRED"), "{r}");
    let r = as_session(
        &app,
        &session,
        "mutation { disableSecondFactor(code: \"000000\") }",
    )
    .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app.gql(Some(&rhein), require, json!({"r": false})).await;
    assert_eq!(
        r["data"]["requireProviderSecondFactor"]["secondFactorRequired"], false,
        "{r}"
    );
    let r = as_session(&app, &newcomer, "{ providerNodes { id } }").await;
    assert!(r["errors"].is_null(), "{r}");

    // Others reach none of them.
    let ops_id = ops["data"]["inviteUser"]["user"]["id"].clone();
    for (key, to) in [
        (&gridco, json!({})),
        (&gridco, json!({"p": rhein_id})),
        (&acme_admin, json!({})),
    ] {
        let mut vars = json!({"id": ops_id});
        vars.as_object_mut()
            .expect("an object")
            .extend(to.as_object().cloned().unwrap_or_default());
        let r = app
            .gql(
                Some(key),
                "mutation($id: ID!, $p: ID) { removeUser(id: $id, providerId: $p) { state } }",
                vars,
            )
            .await;
        assert!(
            matches!(error_code(&r), Some("NOT_FOUND" | "FORBIDDEN")),
            "{to}: {r}"
        );
        let r = app
            .gql(Some(key), "{ portalUsers { email } }", json!({}))
            .await;
        assert!(!r.to_string().contains("rhein.de"), "{r}");
    }

    // The provider resets a lost phone and removes a colleague.
    let r = app
        .gql(
            Some(&rhein),
            "mutation($id: ID!) { resetSecondFactor(id: $id) { secondFactorSince } }",
            json!({"id": ops_id}),
        )
        .await;
    assert!(
        r["data"]["resetSecondFactor"]["secondFactorSince"].is_null(),
        "{r}"
    );
    let r = app
        .gql(
            Some(&rhein),
            "mutation($id: ID!) { removeUser(id: $id) { state } }",
            json!({"id": finance_id}),
        )
        .await;
    assert_eq!(r["data"]["removeUser"]["state"], "REMOVED", "{r}");
    let (status, _, _) = sign_in(&app, "ops@rhein.de", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "the password alone again");

    // Audited for operators; nothing of it in a tenant's log.
    let log = "{ auditLog(filter: {objectType: \"portal_user\"}) { edges { node { action } } } }";
    let r = app.gql(Some(&app.operator_key), log, json!({})).await;
    for action in [
        "portal_user.invite",
        "portal_user.accept",
        "portal_user.second_factor_on",
        "portal_user.second_factor_reset",
        "portal_user.remove",
    ] {
        assert!(r.to_string().contains(action), "{action}: {r}");
    }
    let r = app.gql(Some(&acme_admin), log, json!({})).await;
    assert_eq!(r["data"]["auditLog"]["edges"], json!([]), "{r}");
    let log = "{ auditLog(filter: {action: \"provider.second_factor_required\"}) { edges { node { action } } } }";
    let r = app.gql(Some(&app.operator_key), log, json!({})).await;
    assert_eq!(
        r["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(2),
        "on, off: {r}"
    );
}

on_both_databases!(
    a_provider_invites_its_people,
    links_reach_people_by_mail,
    a_mail_waits_for_the_mail_server,
    a_tenant_requires_a_second_factor_of_every_user,
    an_admin_issues_a_password_reset_link,
    a_second_factor_guards_the_password,
    invitations_become_password_sessions,
    wrong_passwords_lock_and_invitations_expire,
);
