//! What every HTTP handler can reach, built once by `startup`.

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use super::rate_limit::RateLimiter;
use crate::graphql::NeoSchema;
use crate::invoicing::Billing;
use crate::metrics::Metrics;
use crate::ordering::Ordering;

/// What every handler can reach.
pub struct AppState {
    pub db: DatabaseConnection,
    pub rate_limiter: RateLimiter,
    pub ordering: Arc<Ordering>,
    pub schema: NeoSchema,
    pub metrics: Metrics,
    pub billing: Arc<Billing>,
    /// Writes ingest batches in groups.
    pub ingest: neocloud_metering::ingest::writer::Writer,
    /// Records usage events in groups.
    pub events: crate::meters::EventWriter,
    /// Verifies `POST /v1/stripe/webhook`; none: the endpoint answers 503.
    pub stripe_webhook_secret: Option<secrecy::SecretString>,
    /// What time it is.
    pub clock: neocloud_schema::clock::SharedClock,
    /// What answers without a key.
    pub exposure: crate::settings::ExposureSettings,
    /// The operators' identity provider, when single sign-on is configured.
    pub oidc: Option<Arc<crate::auth::oidc::Provider>>,
    /// Sends invitations and password-reset links, when a mail server is configured.
    pub mailer: Option<Arc<crate::mail::Mailer>>,
    /// The portal page's Content-Security-Policy (`web::portal_policy`).
    pub portal_policy: String,
    /// Mints nodes' NATS credentials, when the server holds the account's signing key.
    pub nats_authority: Option<Arc<crate::nats::credentials::Authority>>,
}
