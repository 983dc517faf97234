//! The identity provider, spoken to as an OpenID Connect relying party: its metadata
//! (discovery, cached), the authorization request (code flow with PKCE S256, state and
//! nonce), the code exchange (client secret as HTTP Basic), and the ID token's checks —
//! signature by a key of the provider's JWKS (asymmetric algorithms only; the set is
//! fetched again once when a token names a key it lacks), issuer, audience, expiry and
//! nonce — and a back-channel logout token's. The provider is the operator's own, so it is reached directly (not through
//! the tenant-URL client), with short timeouts.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::settings::OidcSettings;

/// How long discovery and the key set are trusted before they are fetched again.
const CACHE_FOR: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    /// Where the provider signs a person out (OpenID Connect RP-Initiated Logout 1.0).
    #[serde(default)]
    end_session_endpoint: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    id_token: Option<String>,
}

/// The event a logout token names.
const BACK_CHANNEL_LOGOUT_EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";
/// How old a logout token may be.
pub const LOGOUT_TOKEN_AGE: chrono::Duration = chrono::Duration::minutes(5);
/// How far the provider's clock may be from ours.
pub const CLOCK_ALLOWANCE: chrono::Duration = chrono::Duration::minutes(1);

/// What a verified logout token names.
#[derive(Debug, Clone)]
pub struct LogoutClaims {
    pub sub: Option<String>,
    pub sid: Option<String>,
    pub issued_at: chrono::DateTime<chrono::Utc>,
}

pub struct Provider {
    settings: OidcSettings,
    http: reqwest::Client,
    metadata: Mutex<Option<(Metadata, Instant)>>,
    keys: Mutex<Option<(JwkSet, Instant)>>,
}

fn unavailable(what: &str, err: impl std::fmt::Display) -> ApiError {
    tracing::warn!(error = %err, "identity provider: {what}");
    ApiError::Unavailable {
        message: format!("the identity provider could not be reached ({what})"),
    }
}

fn refused(message: &str) -> ApiError {
    ApiError::Unauthenticated {
        message: format!("single sign-on failed: {message}"),
    }
}

fn fresh<T: Clone>(cell: &Mutex<Option<(T, Instant)>>) -> Option<T> {
    let guard = cell.lock().ok()?;
    guard
        .as_ref()
        .filter(|(_, at)| at.elapsed() < CACHE_FOR)
        .map(|(value, _)| value.clone())
}

fn remember<T>(cell: &Mutex<Option<(T, Instant)>>, value: T) {
    if let Ok(mut guard) = cell.lock() {
        *guard = Some((value, Instant::now()));
    }
}

impl Provider {
    pub fn new(settings: OidcSettings) -> ApiResult<Provider> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| unavailable("client", err))?;
        Ok(Provider {
            settings,
            http,
            metadata: Mutex::new(None),
            keys: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }

    fn issuer(&self) -> &str {
        self.settings.issuer.as_deref().unwrap_or_default()
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        what: &str,
    ) -> ApiResult<T> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|err| unavailable(what, err))?;
        response.json().await.map_err(|err| unavailable(what, err))
    }

    async fn metadata(&self) -> ApiResult<Metadata> {
        if let Some(metadata) = fresh(&self.metadata) {
            return Ok(metadata);
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.issuer().trim_end_matches('/')
        );
        let metadata: Metadata = self.get_json(&url, "discovery").await?;
        if metadata.issuer != self.issuer() {
            return Err(unavailable(
                "discovery",
                format!("the provider calls itself {}", metadata.issuer),
            ));
        }
        remember(&self.metadata, metadata.clone());
        Ok(metadata)
    }

    /// Where to send the browser to sign in.
    pub async fn authorization_url(
        &self,
        state: &str,
        nonce: &str,
        challenge: &str,
    ) -> ApiResult<String> {
        let metadata = self.metadata().await?;
        let mut url = reqwest::Url::parse(&metadata.authorization_endpoint)
            .map_err(|err| unavailable("authorization endpoint", err))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", &self.settings.redirect_uri())
            .append_pair("scope", "openid email profile")
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256");
        Ok(url.into())
    }

    /// Where to send the browser so that the provider signs the person out too, then
    /// back to the console (`client_id` names us; the console's address must be one of
    /// the client's post-logout redirect URIs); none when the provider offers no logout.
    pub async fn logout_url(&self) -> ApiResult<Option<String>> {
        let metadata = self.metadata().await?;
        let Some(endpoint) = metadata.end_session_endpoint else {
            return Ok(None);
        };
        let mut url = reqwest::Url::parse(&endpoint)
            .map_err(|err| unavailable("end session endpoint", err))?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.settings.client_id)
            .append_pair(
                "post_logout_redirect_uri",
                &self.settings.post_logout_redirect_uri(),
            );
        Ok(Some(url.into()))
    }

    /// Trades the authorization code for the ID token (still unchecked).
    pub async fn exchange(&self, code: &str, verifier: &str) -> ApiResult<String> {
        let metadata = self.metadata().await?;
        let secret = self
            .settings
            .client_secret
            .as_ref()
            .map(|s| s.expose_secret().to_owned());
        let redirect_uri = self.settings.redirect_uri();
        let response = self
            .http
            .post(&metadata.token_endpoint)
            .basic_auth(&self.settings.client_id, secret)
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri.as_str()),
                ("code_verifier", verifier),
            ])
            .send()
            .await
            .map_err(|err| unavailable("token endpoint", err))?;
        if !response.status().is_success() {
            tracing::warn!(status = %response.status(), "identity provider refused the code");
            return Err(refused("the provider did not accept the sign-in"));
        }
        let tokens: TokenResponse = response
            .json()
            .await
            .map_err(|err| unavailable("token endpoint", err))?;
        tokens
            .id_token
            .ok_or_else(|| refused("the provider sent no ID token"))
    }

    async fn key_set(&self, refresh: bool) -> ApiResult<JwkSet> {
        if let Some(keys) = fresh(&self.keys).filter(|_| !refresh) {
            return Ok(keys);
        }
        let metadata = self.metadata().await?;
        let keys: JwkSet = self.get_json(&metadata.jwks_uri, "key set").await?;
        remember(&self.keys, keys.clone());
        Ok(keys)
    }

    /// The claims of a token the provider signed for us: its signature by a key of the
    /// provider's JWKS (asymmetric algorithms only), its issuer and audience, its expiry
    /// where it has one, and the claims `required` present. `what` names it in errors.
    async fn decode(
        &self,
        token: &str,
        what: &str,
        required: &[&str],
    ) -> ApiResult<Map<String, Value>> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| refused(&format!("a malformed {what}")))?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(refused(&format!(
                "the {what} is not signed with a public key"
            )));
        }
        let kid = header.kid.unwrap_or_default();
        let mut keys = self.key_set(false).await?;
        if keys.find(&kid).is_none() {
            keys = self.key_set(true).await?;
        }
        let jwk = keys
            .find(&kid)
            .or_else(|| (keys.keys.len() == 1 && kid.is_empty()).then(|| &keys.keys[0]))
            .ok_or_else(|| {
                refused(&format!(
                    "the {what} is signed by a key the provider does not list"
                ))
            })?;
        let key = DecodingKey::from_jwk(jwk).map_err(|_| refused("an unusable provider key"))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[self.issuer()]);
        validation.set_audience(&[&self.settings.client_id]);
        validation.set_required_spec_claims(required);
        jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|err| refused(&format!("the {what} does not hold ({err})")))
    }

    /// The claims of an ID token whose signature, issuer, audience, expiry and nonce hold.
    pub async fn verify(&self, id_token: &str, nonce: &str) -> ApiResult<Map<String, Value>> {
        let claims = self
            .decode(id_token, "ID token", &["exp", "iss", "aud", "sub"])
            .await?;
        if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(refused("the ID token is not for this sign-in"));
        }
        Ok(claims)
    }

    /// A logout token's claims (OpenID Connect Back-Channel Logout 1.0, 2.6): signed by
    /// the provider for us, issued within [`LOGOUT_TOKEN_AGE`] (and not ahead of our
    /// clock by more than [`CLOCK_ALLOWANCE`]), naming the back-channel logout event, a `sub` or a
    /// `sid`, and no `nonce` (so that an ID token never passes for one).
    pub async fn verify_logout(&self, token: &str) -> ApiResult<LogoutClaims> {
        let claims = self.decode(token, "logout token", &["iss", "aud"]).await?;
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty() && v.len() <= 255)
                .map(str::to_owned)
        };
        let issued_at = claims
            .get("iat")
            .and_then(Value::as_i64)
            .and_then(|at| chrono::DateTime::from_timestamp(at, 0))
            .ok_or_else(|| refused("the logout token has no issue time"))?;
        let now = chrono::Utc::now();
        if issued_at < now - LOGOUT_TOKEN_AGE || issued_at > now + CLOCK_ALLOWANCE {
            return Err(refused("the logout token was not issued just now"));
        }
        let event = claims
            .get("events")
            .and_then(|events| events.get(BACK_CHANNEL_LOGOUT_EVENT));
        if !event.is_some_and(Value::is_object) {
            return Err(refused("the token names no back-channel logout event"));
        }
        if claims.contains_key("nonce") {
            return Err(refused("a logout token carries no nonce"));
        }
        let (sub, sid) = (text("sub"), text("sid"));
        if sub.is_none() && sid.is_none() {
            return Err(refused(
                "the logout token names neither a subject nor a session",
            ));
        }
        Ok(LogoutClaims {
            sub,
            sid,
            issued_at,
        })
    }
}
