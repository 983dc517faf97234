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
    app.client
        .post(format!("{}/graphql", app.url))
        .header("cookie", &session.0)
        .header("x-csrf-token", &session.1)
        .json(&json!({"query": query}))
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

on_both_databases!(
    invitations_become_password_sessions,
    wrong_passwords_lock_and_invitations_expire,
);
