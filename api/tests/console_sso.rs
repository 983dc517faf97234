//! Single sign-on to the operator console against a real OpenID Connect provider (the
//! `oidc-provider` package, `e2e/browser/oidc-provider.mjs`), on both databases, followed
//! redirect by redirect as a browser would: an operator by email and one by group sign in
//! and act as operators; someone else is sent back with the reason and no session; a
//! replayed or foreign callback is refused; signing out signs out at the provider too
//! (RP-Initiated Logout), and signing out at the provider ends the console session it
//! opened (Back-Channel Logout); revoking the identity's key ends its session and its
//! next sign-in. Without an issuer, single sign-on is not offered.
//!
//! Needs node and `e2e/browser/node_modules` (`scripts/test-deps.sh`); missing, the test is
//! skipped, unless `NEOCLOUD_REQUIRE_BROWSER=1` (CI).

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use neocloud_api::settings::OidcSettings;
use reqwest::{StatusCode, redirect::Policy};
use serde_json::{Value, json};
use support::{Backend, Killed, TestApp, error_code, free_port, lines_of};

const SECRET: &str = "console-client-secret";

/// The provider, for the app at `app_url`; `None` (skipped) without node or its package.
fn provider(app_url: &str) -> Option<(Killed, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/browser");
    let present = dir.join("node_modules/oidc-provider").exists();
    assert!(
        present || std::env::var("NEOCLOUD_REQUIRE_BROWSER").as_deref() != Ok("1"),
        "e2e/browser/node_modules is required: run scripts/test-deps.sh"
    );
    if !present {
        eprintln!("oidc-provider is not installed: skipping");
        return None;
    }
    let port = free_port();
    let mut child = Command::new("node")
        .arg(dir.join("oidc-provider.mjs"))
        .env("OIDC_PORT", port.to_string())
        .env("OIDC_CLIENT_SECRET", SECRET)
        .env(
            "OIDC_REDIRECT_URI",
            format!("{app_url}/v1/session/oidc/callback"),
        )
        .env("OIDC_POST_LOGOUT_URI", format!("{app_url}/console"))
        .env(
            "OIDC_BACKCHANNEL_LOGOUT_URI",
            format!("{app_url}/v1/session/oidc/backchannel-logout"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node");
    let lines = lines_of(child.stdout.take().expect("stdout"));
    let ready = lines
        .recv_timeout(Duration::from_secs(20))
        .is_ok_and(|line| line.contains("ready"));
    assert!(ready, "the identity provider did not start");
    Some((Killed(child), format!("http://127.0.0.1:{port}")))
}

/// Cookies as a browser keeps them for one site: name → value.
#[derive(Default)]
struct Jar(HashMap<String, String>);

impl Jar {
    fn take(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let pair = value
                .to_str()
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                if value.is_empty() {
                    self.0.remove(name);
                } else {
                    self.0.insert(name.to_owned(), value.to_owned());
                }
            }
        }
    }

    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

struct Browser {
    client: reqwest::Client,
    app: Jar,
    idp: Jar,
    app_url: String,
    /// How many times the provider asked who is signing in.
    logins: usize,
}

impl Browser {
    fn new(app_url: &str) -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .expect("client"),
            app: Jar::default(),
            idp: Jar::default(),
            app_url: app_url.to_owned(),
            logins: 0,
        }
    }

    async fn get(&mut self, url: &str) -> reqwest::Response {
        let app = url.starts_with(&self.app_url);
        let jar = if app { &self.app } else { &self.idp };
        let response = self
            .client
            .get(url)
            .header("cookie", jar.header())
            .send()
            .await
            .expect("GET");
        if app {
            self.app.take(&response)
        } else {
            self.idp.take(&response)
        }
        response
    }

    /// Signs in as `account` at the provider, following every redirect; where the app
    /// finally sends the browser, and the callback URL it came back on.
    async fn sign_in(&mut self, account: &str) -> (String, String) {
        let mut url = format!("{}/v1/session/oidc", self.app_url);
        let mut callback = String::new();
        for _ in 0..20 {
            if url.contains("/v1/session/oidc/callback") {
                callback.clone_from(&url);
            }
            let response = self.get(&url).await;
            if response.status().is_redirection() {
                let location = response.headers()["location"]
                    .to_str()
                    .expect("location")
                    .to_owned();
                if location.starts_with("/console") {
                    return (location, callback);
                }
                url = absolute(&url, &location);
                continue;
            }
            assert_eq!(response.status(), StatusCode::OK, "{url}");
            let form = url.split('?').next().unwrap_or_default().to_owned() + "/login";
            let posted = self
                .client
                .post(&form)
                .header("cookie", self.idp.header())
                .form(&[("login", account)])
                .send()
                .await
                .expect("POST login");
            self.idp.take(&posted);
            self.logins += 1;
            assert!(
                posted.status().is_redirection(),
                "login: {}",
                posted.status()
            );
            url = absolute(
                &url,
                posted.headers()["location"].to_str().expect("location"),
            );
        }
        panic!("too many redirects");
    }

    async fn viewer(&self) -> Value {
        let csrf: Value = self
            .client
            .get(format!("{}/v1/session", self.app_url))
            .header("cookie", self.app.header())
            .send()
            .await
            .expect("GET")
            .json()
            .await
            .unwrap_or(Value::Null);
        self.client
            .post(format!("{}/graphql", self.app_url))
            .header("cookie", self.app.header())
            .header(
                "x-csrf-token",
                csrf["csrfToken"].as_str().unwrap_or_default(),
            )
            .json(&json!({"query": "{ viewer { role apiKeyId email } fleetOverview { nodesByState { count } } }"}))
            .send()
            .await
            .expect("POST")
            .json()
            .await
            .expect("JSON")
    }
}

/// The issuer the app was configured with, as `GET /v1/session/oidc` reveals it.
async fn issuer_of(app: &TestApp) -> String {
    let response = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("client")
        .get(format!("{}/v1/session/oidc", app.url))
        .send()
        .await
        .expect("GET");
    let location = response.headers()["location"].to_str().expect("location");
    let url = reqwest::Url::parse(location).expect("URL");
    url.origin().ascii_serialization()
}

/// Signing out of an SSO session answers the provider's sign-out; the browser signs out
/// there and comes back to the console, and the next sign-in asks for the user again
/// (before it, the provider's session signed the browser in without asking).
async fn signing_out_signs_out_at_the_provider(browser: &mut Browser, issuer: &str) {
    let logins = browser.logins;
    assert_eq!(browser.sign_in("grp").await.0, "/console");
    assert_eq!(
        browser.logins, logins,
        "the provider's session still signs in"
    );
    let csrf: Value = browser
        .get(&format!("{}/v1/session", browser.app_url))
        .await
        .json()
        .await
        .expect("JSON");
    let out = browser
        .client
        .delete(format!("{}/v1/session", browser.app_url))
        .header("cookie", browser.app.header())
        .header("x-csrf-token", csrf["csrfToken"].as_str().expect("csrf"))
        .send()
        .await
        .expect("DELETE");
    assert_eq!(out.status(), StatusCode::OK);
    let body: Value = out.json().await.expect("JSON");
    let logout = body["logoutUrl"].as_str().expect("logoutUrl").to_owned();
    let url = reqwest::Url::parse(&logout).expect("URL");
    assert_eq!(url.origin().ascii_serialization(), issuer, "{logout}");
    let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(
        query.get("client_id").map(String::as_str),
        Some("neocloud-console")
    );
    assert_eq!(
        query.get("post_logout_redirect_uri"),
        Some(&format!("{}/console", browser.app_url))
    );
    assert_eq!(error_code(&browser.viewer().await), Some("UNAUTHENTICATED"));

    // At the provider: its page asks, the browser confirms, and is sent back.
    let location = confirm_at_provider(browser, &logout).await;
    assert_eq!(location, format!("{}/console", browser.app_url));
    assert_eq!(browser.sign_in("grp").await.0, "/console");
    assert_eq!(
        browser.logins,
        logins + 1,
        "signed out at the provider: asked again"
    );
}

/// Confirms the sign-out on the provider's page at `logout`; where the browser ends up
/// (empty when the provider's own page is the end).
async fn confirm_at_provider(browser: &mut Browser, logout: &str) -> String {
    let page = browser.get(logout).await.text().await.expect("page");
    let action = page
        .split("action=\"")
        .nth(1)
        .and_then(|a| a.split('"').next())
        .expect("form action");
    let xsrf = page
        .split("name=\"xsrf\" value=\"")
        .nth(1)
        .and_then(|a| a.split('"').next())
        .expect("xsrf");
    let confirmed = browser
        .client
        .post(absolute(logout, action))
        .header("cookie", browser.idp.header())
        .form(&[("xsrf", xsrf), ("logout", "yes")])
        .send()
        .await
        .expect("POST logout");
    browser.idp.take(&confirmed);
    let mut location = confirmed.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    for _ in 0..5 {
        if location.is_empty() || location.starts_with(&browser.app_url) {
            break;
        }
        let next = browser.get(&absolute(logout, &location)).await;
        location = next
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or_default()
            .to_owned();
    }
    location
}

/// Signing out at the provider itself (another application's sign-out, say) ends the
/// console session it opened, through the provider's back-channel logout, and no other;
/// a logout token that does not hold is refused and ends nothing.
async fn signing_out_at_the_provider_ends_the_console_session(app: &TestApp, issuer: &str) {
    let app_url = app.url.as_str();
    let mut left = Browser::new(app_url);
    let mut stays = Browser::new(app_url);
    for browser in [&mut left, &mut stays] {
        assert_eq!(browser.sign_in("grp").await.0, "/console");
        assert_eq!(browser.viewer().await["data"]["viewer"]["role"], "OPERATOR");
    }
    let client = reqwest::Client::new();
    let endpoint = format!("{app_url}/v1/session/oidc/backchannel-logout");
    let unsigned = format!(
        "eyJhbGciOiJub25lIn0.{}.",
        base64_url(
            &json!({"iss": issuer, "aud": "neocloud-console", "sub": "grp",
            "iat": chrono::Utc::now().timestamp(),
            "events": {"http://schemas.openid.net/event/backchannel-logout": {}}})
        )
    );
    for form in [
        vec![],
        vec![("logout_token", "not a token")],
        vec![("logout_token", unsigned.as_str())],
    ] {
        let refused = client
            .post(&endpoint)
            .form(&form)
            .send()
            .await
            .expect("POST");
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{form:?}");
        assert_eq!(refused.headers()["cache-control"], "no-store");
        let body: Value = refused.json().await.expect("JSON");
        assert_eq!(body["error"], "invalid_request", "{body}");
    }
    assert_eq!(left.viewer().await["data"]["viewer"]["role"], "OPERATOR");

    let end = format!("{issuer}/session/end?client_id=neocloud-console");
    confirm_at_provider(&mut left, &end).await;
    assert_eq!(error_code(&left.viewer().await), Some("UNAUTHENTICATED"));
    assert_eq!(
        stays.viewer().await["data"]["viewer"]["role"],
        "OPERATOR",
        "another sign-in at the provider stays"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {action: \"session.back_channel_logout\"}) { edges { node { after } } } }",
            json!({}),
        )
        .await;
    let after: Value = serde_json::from_str(
        r["data"]["auditLog"]["edges"][0]["node"]["after"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("the audit entry");
    assert_eq!(after["ended"].as_array().map(Vec::len), Some(1), "{r}");
    assert!(after["sid"].is_string(), "{after}");
}

fn base64_url(value: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

fn absolute(base: &str, location: &str) -> String {
    reqwest::Url::parse(base)
        .and_then(|b| b.join(location))
        .map(String::from)
        .expect("a URL")
}

async fn operators_sign_in_through_the_identity_provider(backend: Backend) {
    let port = free_port();
    let app_url = format!("http://127.0.0.1:{port}");
    let Some((_idp, issuer)) = provider(&app_url) else {
        return;
    };
    let settings = OidcSettings {
        issuer: Some(issuer),
        client_id: "neocloud-console".into(),
        client_secret: Some(SECRET.to_owned().into()),
        public_url: app_url.clone(),
        operator_emails: "ops@example.com".into(),
        operator_groups: "neocloud-operators".into(),
        groups_claim: None,
    };
    let Some(app) = TestApp::spawn_with(backend, |s| {
        s.listen = format!("127.0.0.1:{port}");
        s.oidc = settings;
    })
    .await
    else {
        return;
    };
    let methods: Value = app
        .client
        .get(format!("{app_url}/v1/session/methods"))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(methods["oidc"], true);

    // By email, twice: one identity, two sign-ins.
    let mut ops = Browser::new(&app_url);
    let (landed, callback) = ops.sign_in("ops").await;
    assert_eq!(landed, "/console");
    let r = ops.viewer().await;
    assert_eq!(r["data"]["viewer"]["role"], "OPERATOR", "{r}");
    assert_eq!(r["data"]["viewer"]["email"], "ops@example.com", "{r}");
    assert!(r["data"]["fleetOverview"].is_object(), "{r}");
    let key = r["data"]["viewer"]["apiKeyId"].clone();
    let mut again = Browser::new(&app_url);
    assert_eq!(again.sign_in("ops").await.0, "/console");
    assert_eq!(again.viewer().await["data"]["viewer"]["apiKeyId"], key);

    // The callback cannot be replayed.
    let replayed = ops.get(&callback).await;
    let location = replayed.headers()["location"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(location.starts_with("/console/signin?error="), "{location}");

    // By group; and someone who is neither.
    let mut grp = Browser::new(&app_url);
    assert_eq!(grp.sign_in("grp").await.0, "/console");
    assert_eq!(grp.viewer().await["data"]["viewer"]["role"], "OPERATOR");
    signing_out_signs_out_at_the_provider(&mut grp, &issuer_of(&app).await).await;
    signing_out_at_the_provider_ends_the_console_session(&app, &issuer_of(&app).await).await;
    let mut eve = Browser::new(&app_url);
    let (landed, callback) = eve.sign_in("eve").await;
    assert!(landed.starts_with("/console/signin?error="), "{landed}");
    assert!(
        landed.contains("not%20an%20operator") || landed.contains("not+an+operator"),
        "{landed}"
    );
    assert!(!eve.app.0.contains_key("neocloud_session"));
    assert_eq!(error_code(&eve.viewer().await), Some("UNAUTHENTICATED"));

    // A callback from another browser (no binding cookie) is refused.
    let stranger = Browser::new(&app_url);
    let response = stranger.client.get(&callback).send().await.expect("GET");
    let location = response.headers()["location"].to_str().unwrap_or_default();
    assert!(
        location.contains("another%20browser") || location.contains("another+browser"),
        "{location}"
    );

    // Revoked: the session ends and the next sign-in is refused.
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($id: ID!) { revokeApiKey(id: $id) { key { id } } }",
            json!({"id": key}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    assert_eq!(error_code(&ops.viewer().await), Some("UNAUTHENTICATED"));
    let mut later = Browser::new(&app_url);
    let (landed, _) = later.sign_in("ops").await;
    assert!(landed.contains("revoked"), "{landed}");

    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {action: \"operator_identity.create\"}) { edges { node { after } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(2),
        "{r}"
    );
}

async fn without_an_issuer_there_is_no_single_sign_on(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let client = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("client");
    let response = client
        .get(format!("{}/v1/session/oidc", app.url))
        .send()
        .await
        .expect("GET");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let methods: Value = client
        .get(format!("{}/v1/session/methods", app.url))
        .send()
        .await
        .expect("GET")
        .json()
        .await
        .expect("JSON");
    assert_eq!(methods["oidc"], false);
}

on_both_databases!(
    operators_sign_in_through_the_identity_provider,
    without_an_issuer_there_is_no_single_sign_on,
);
