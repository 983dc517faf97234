//! Typed, layered configuration: built-in defaults → an optional TOML file
//! (`--config FILE` or `NEOCLOUD_CONFIG`) → `NEOCLOUD_*` environment variables → command-line
//! flags. Validated once at start-up; a bad value stops the process with a message that
//! names the setting.

use std::net::SocketAddr;
use std::path::Path;

use secrecy::{ExposeSecret, SecretString};

use crate::outbound::AllowList;
use clap::ValueEnum;
use serde::Deserialize;

/// Everything the server needs to start.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    /// `sqlite://FILE?mode=rwc` (embedded default) or `postgres://…`.
    pub database_url: SecretString,
    /// Address the HTTP server binds (`127.0.0.1:8080`; port 0 picks a free port).
    pub listen: String,
    /// `pretty` or `json`.
    pub log_format: LogFormat,
    /// A tracing filter (`info`, `neocloud_api=debug,info`); `RUST_LOG` overrides it.
    pub log_filter: String,
    pub limits: Limits,
    pub ordering: OrderingSettings,
    pub billing: BillingSettings,
    pub budgets: BudgetSettings,
    pub events: EventSettings,
    pub webhooks: WebhookSettings,
    pub exposure: ExposureSettings,
    /// Stripe's secret API key (`NEOCLOUD_STRIPE_SECRET_KEY`); without it invoices are
    /// collected outside neocloud (payment state `external`).
    #[serde(default)]
    pub stripe_secret_key: Option<SecretString>,
    /// The webhook endpoint's signing secret (`NEOCLOUD_STRIPE_WEBHOOK_SECRET`).
    #[serde(default)]
    pub stripe_webhook_secret: Option<SecretString>,
    /// Stripe's API base URL (`NEOCLOUD_STRIPE_API_BASE`; a localstripe URL in tests).
    #[serde(default)]
    pub stripe_api_base: Option<String>,
    /// Stripe's publishable key (`NEOCLOUD_STRIPE_PUBLISHABLE_KEY`, `pk_…`): with it (and
    /// the secret key) the portal collects cards with Stripe.js.
    #[serde(default)]
    pub stripe_publishable_key: Option<String>,
    /// Where the portal loads Stripe.js from (`NEOCLOUD_STRIPE_JS_URL`; Stripe's own,
    /// `https://js.stripe.com/v3/`, unless set: localstripe's in tests).
    #[serde(default)]
    pub stripe_js_url: Option<String>,
    /// Host names and IP addresses that tenant webhooks may reach even though they are not
    /// public addresses (loopback, private, link-local…), comma-separated
    /// (`NEOCLOUD_WEBHOOK_ALLOW_HOSTS`); empty: public addresses only.
    #[serde(default)]
    pub webhook_allow_hosts: String,
    /// What this process runs (`all`, `api`, `ingest`, `worker`).
    pub role: Role,
    /// NATS JetStream: the production transport of usage.
    #[serde(default)]
    pub nats: NatsSettings,
    /// Single sign-on for the operator console.
    #[serde(default)]
    pub oidc: OidcSettings,
    /// Mail to people (invitations, password-reset links).
    #[serde(default)]
    pub mail: MailSettings,
    /// Reference exchange rates.
    #[serde(default)]
    pub exchange_rates: ExchangeRateSettings,
}

/// Where reference exchange rates are read from; unset: the operator adds rates by hand.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ExchangeRateSettings {
    /// A feed in the ECB's daily format, e.g.
    /// `https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml`
    /// (`NEOCLOUD_EXCHANGE_RATES__FEED_URL`).
    #[serde(default)]
    pub feed_url: Option<String>,
}

/// The mail server that invitations and password-reset links go out through; `smtp_url`
/// unset: no mail, admins hand links over (`docs/portal.md`, "Mail").
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MailSettings {
    /// `smtp://[user:password@]host[:port][?tls=required]` or `smtps://…`
    /// (`NEOCLOUD_MAIL__SMTP_URL`).
    #[serde(default)]
    pub smtp_url: Option<SecretString>,
    /// The sender, e.g. `Acme Cloud <no-reply@cloud.example>` (`NEOCLOUD_MAIL__FROM`).
    #[serde(default)]
    pub from: String,
    /// Where people open the portal, e.g. `https://cloud.example`: the links' base
    /// (`NEOCLOUD_MAIL__PUBLIC_URL`).
    #[serde(default)]
    pub public_url: String,
}

/// The operators' identity provider (OpenID Connect: Keycloak, Entra ID, Okta…) for the
/// console; `issuer` unset: operators sign in with operator keys only.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OidcSettings {
    /// The issuer URL; `{issuer}/.well-known/openid-configuration` describes the provider
    /// (`NEOCLOUD_OIDC__ISSUER`).
    #[serde(default)]
    pub issuer: Option<String>,
    /// This deployment's client at the provider (`NEOCLOUD_OIDC__CLIENT_ID`).
    #[serde(default)]
    pub client_id: String,
    /// Its secret (`NEOCLOUD_OIDC__CLIENT_SECRET`), sent as HTTP Basic authentication.
    #[serde(default)]
    pub client_secret: Option<SecretString>,
    /// Where browsers reach this deployment, e.g. `https://cloud.example.com`; the
    /// provider redirects to `{public_url}/v1/session/oidc/callback`
    /// (`NEOCLOUD_OIDC__PUBLIC_URL`).
    #[serde(default)]
    pub public_url: String,
    /// Comma-separated emails (verified by the provider) that are operators
    /// (`NEOCLOUD_OIDC__OPERATOR_EMAILS`).
    #[serde(default)]
    pub operator_emails: String,
    /// Comma-separated groups whose members are operators (`NEOCLOUD_OIDC__OPERATOR_GROUPS`),
    /// read from the ID token's `groups_claim`.
    #[serde(default)]
    pub operator_groups: String,
    /// The claim that lists a person's groups (`groups` unless set).
    #[serde(default)]
    pub groups_claim: Option<String>,
}

impl OidcSettings {
    /// Whether single sign-on is configured.
    pub fn enabled(&self) -> bool {
        self.issuer.is_some()
    }

    pub fn redirect_uri(&self) -> String {
        format!(
            "{}/v1/session/oidc/callback",
            self.public_url.trim_end_matches('/')
        )
    }

    /// Where the provider sends the browser back after signing the person out.
    pub fn post_logout_redirect_uri(&self) -> String {
        format!("{}/console", self.public_url.trim_end_matches('/'))
    }

    /// Splits a comma-separated setting into lower-cased entries.
    pub fn list(value: &str) -> Vec<String> {
        value
            .split(',')
            .map(|v| v.trim().to_lowercase())
            .filter(|v| !v.is_empty())
            .collect()
    }

    fn check(&self) -> Result<(), SettingsError> {
        let Some(issuer) = &self.issuer else {
            return Ok(());
        };
        let invalid = |setting, message: &str| SettingsError::Invalid {
            setting,
            message: message.to_owned(),
        };
        let http = |url: &str| {
            reqwest::Url::parse(url)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
        };
        if !http(issuer) {
            return Err(invalid(
                "oidc.issuer (NEOCLOUD_OIDC__ISSUER)",
                "an http(s) URL",
            ));
        }
        if !http(&self.public_url) {
            return Err(invalid(
                "oidc.public_url (NEOCLOUD_OIDC__PUBLIC_URL)",
                "the http(s) URL browsers reach this deployment at",
            ));
        }
        if self.client_id.is_empty() || self.client_secret.is_none() {
            return Err(invalid(
                "oidc.client_id, oidc.client_secret",
                "both are needed with an issuer",
            ));
        }
        if Self::list(&self.operator_emails).is_empty()
            && Self::list(&self.operator_groups).is_empty()
        {
            return Err(invalid(
                "oidc.operator_emails, oidc.operator_groups",
                "name who is an operator: some emails or groups",
            ));
        }
        Ok(())
    }
}

/// What one process runs; a deployment runs every role at least once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything below in one process (the embedded default).
    All,
    /// The HTTP API: GraphQL, exports, webhooks in, `POST /v1/ingest` and `/v1/events`.
    Api,
    /// JetStream ingest workers (needs `nats.url`); serves health and metrics only.
    Ingest,
    /// The background jobs (payments, period close, preemption, budgets, webhooks out,
    /// event pruning); serves health and metrics only.
    Worker,
}

impl Role {
    pub fn serves_api(self) -> bool {
        matches!(self, Role::All | Role::Api)
    }
    pub fn consumes_stream(self) -> bool {
        matches!(self, Role::All | Role::Ingest)
    }
    pub fn runs_jobs(self) -> bool {
        matches!(self, Role::All | Role::Worker)
    }
}

/// Where NATS is and how neocloud authenticates there; all unset: no JetStream.
#[derive(Debug, Clone, Deserialize)]
pub struct NatsSettings {
    /// `nats://host:4222` (`NEOCLOUD_NATS__URL`).
    #[serde(default)]
    pub url: Option<String>,
    /// neocloud's own credentials file (`NEOCLOUD_NATS__CREDENTIALS`); unset: minted with
    /// the account signing key, or none.
    #[serde(default)]
    pub credentials: Option<std::path::PathBuf>,
    /// The account usage flows in (`A…`, `NEOCLOUD_NATS__ACCOUNT`): with the signing seed,
    /// `registerNode` mints each node's credential.
    #[serde(default)]
    pub account: Option<String>,
    /// The seed of one of that account's signing keys (`SA…`,
    /// `NEOCLOUD_NATS__ACCOUNT_SIGNING_SEED`).
    #[serde(default)]
    pub account_signing_seed: Option<SecretString>,
    /// Ingest workers in this process (`ingest` and `all` roles).
    #[serde(default = "default_stream_workers")]
    pub workers: usize,
    /// How long a node's NATS credential is valid, in hours
    /// (`NEOCLOUD_NATS__CREDENTIAL_HOURS`, 1 to 8,760): its agent renews it through
    /// `GET /v1/agents/nats-credentials` before then, so a node whose agent token is
    /// revoked (rotated, retired) is off NATS within this time.
    #[serde(default = "default_credential_hours")]
    pub credential_hours: u32,
    /// The seed of the operator's signing key (`SO…`,
    /// `NEOCLOUD_NATS__OPERATOR_SIGNING_SEED`): with the system account's, neocloud
    /// re-signs the usage account when a node's credential is revoked and hands it to
    /// nats-server at once (a full resolver). Unset: a revoked credential runs out at its
    /// expiry.
    #[serde(default)]
    pub operator_signing_seed: Option<SecretString>,
    /// The system account's public key (`A…`, `NEOCLOUD_NATS__SYSTEM_ACCOUNT`).
    #[serde(default)]
    pub system_account: Option<String>,
    /// The seed of one of the system account's signing keys (`SA…`,
    /// `NEOCLOUD_NATS__SYSTEM_SIGNING_SEED`).
    #[serde(default)]
    pub system_signing_seed: Option<SecretString>,
}

fn default_stream_workers() -> usize {
    2
}

fn default_credential_hours() -> u32 {
    24
}

impl Default for NatsSettings {
    fn default() -> Self {
        NatsSettings {
            url: None,
            credentials: None,
            account: None,
            account_signing_seed: None,
            workers: default_stream_workers(),
            credential_hours: default_credential_hours(),
            operator_signing_seed: None,
            system_account: None,
            system_signing_seed: None,
        }
    }
}

/// What answers without an API key: a per-deployment choice.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct ExposureSettings {
    /// GraphQL introspection without a key (`true`: schema explorers and client
    /// generators work before sign-in; every other query needs a key either way).
    pub introspection_without_key: bool,
    /// `/metrics` without a key from any address (`false`: only from loopback, where a
    /// node-local Prometheus or agent scrapes; others send an operator key).
    pub metrics_without_key: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BudgetSettings {
    /// How often every budget is compared with its tenant's spend (a crossed limit acts
    /// within twice this).
    pub sweep_seconds: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EventSettings {
    /// How long events are kept: the feed shows them and redelivery can reach them for
    /// this long; older ones are deleted with their delivery log (at least 7 days, past
    /// every delivery's three days of retries).
    pub retention_days: u64,
}

impl EventSettings {
    pub fn retention(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::days(i64::try_from(self.retention_days.min(3650)).unwrap_or(3650))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct WebhookSettings {
    /// How long a delivery being sent is held from other workers: the longest a
    /// delivery whose worker died (kill -9, a lost replica) waits to be sent again. At
    /// least 15 s, past the client's 10 s time limit.
    pub claim_hold_seconds: u64,
}

impl WebhookSettings {
    pub fn claim_hold(&self) -> chrono::TimeDelta {
        chrono::TimeDelta::seconds(i64::try_from(self.claim_hold_seconds.min(3600)).unwrap_or(3600))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct BillingSettings {
    /// Invoice numbers read `{invoice_prefix}-{year}-{sequence}` (1–8 letters or digits).
    pub invoice_prefix: String,
    /// How long after its end a billing period waits for late usage before it closes.
    pub close_grace_seconds: u64,
    /// The seller named on invoices: the operator's legal name.
    pub operator_name: String,
    /// The seller's postal address, a line each (printed under its name).
    #[serde(default)]
    pub seller_address: Vec<String>,
    /// The seller's country (ISO 3166-1 alpha-2), VAT id, company registration (court
    /// and number), contact email and bank details for transfers (IBAN, BIC, bank).
    #[serde(default)]
    pub seller_country: String,
    #[serde(default)]
    pub seller_vat_id: String,
    #[serde(default)]
    pub seller_registration: String,
    #[serde(default)]
    pub seller_email: String,
    #[serde(default)]
    pub seller_bank: String,
    /// The operator's account SEPA payout files pay providers from: `IBAN BIC` (empty:
    /// no SEPA payouts).
    #[serde(default)]
    pub payout_account: String,
    /// Failed payments of one invoice after which the tenant is suspended for new orders
    /// until it pays (0: never).
    pub dunning_failures: u32,
    /// Seconds to wait after each refused charge of an invoice before trying it again,
    /// comma-separated (`86400,172800,172800`: after 1, 3 and 5 days); empty: no retries.
    pub charge_retry_seconds: String,
}

impl BillingSettings {
    /// The seller's identity: bounded lines, and an EU VAT id that matches its country
    /// and check digits.
    fn check_seller(&self) -> Result<(), SettingsError> {
        use neocloud_metering::parties::vat_id;
        let invalid = |setting, message: &str| SettingsError::Invalid {
            setting,
            message: message.to_owned(),
        };
        if self.seller_address.len() > 6 || self.seller_address.iter().any(|l| l.len() > 100) {
            return Err(invalid(
                "billing.seller_address",
                "at most 6 lines of 100 characters",
            ));
        }
        let vat = vat_id::compact(&self.seller_vat_id);
        if let (false, Some(prefix)) = (vat.is_empty(), vat_id::prefix_of(&self.seller_country)) {
            if !vat.starts_with(prefix) {
                return Err(invalid(
                    "billing.seller_vat_id",
                    "must start with the VAT prefix of billing.seller_country",
                ));
            }
            vat_id::check(&vat).map_err(|e| invalid("billing.seller_vat_id", &e.to_string()))?;
        }
        self.payout_debtor()
            .map_err(|e| invalid("billing.payout_account", &e.message()))?;
        Ok(())
    }

    /// Who pays SEPA payout files: the operator, from `payout_account` (checked as a
    /// provider's SEPA account is); `None` when it is not set.
    pub fn payout_debtor(
        &self,
    ) -> crate::error::ApiResult<Option<neocloud_metering::payouts::Debtor>> {
        use crate::providers::payout::{PayoutMethod, account};
        if self.payout_account.trim().is_empty() {
            return Ok(None);
        }
        let checked = account(PayoutMethod::SepaCreditTransfer, Some(&self.payout_account))?
            .unwrap_or_default();
        Ok(
            neocloud_metering::payouts::iban_bic(&checked).map(|(iban, bic)| {
                neocloud_metering::payouts::Debtor {
                    name: self.operator_name.clone(),
                    iban: iban.to_owned(),
                    bic: bic.to_owned(),
                }
            }),
        )
    }

    /// `charge_retry_seconds` as numbers (validated at start-up).
    pub fn charge_retry_delays(&self) -> Vec<u64> {
        parse_delays(&self.charge_retry_seconds).unwrap_or_default()
    }
}

/// Most retries of a refused charge.
const MAX_CHARGE_RETRIES: usize = 10;

fn parse_delays(raw: &str) -> Result<Vec<u64>, String> {
    let delays = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|d| (1..=30 * 86_400).contains(d))
                .ok_or_else(|| format!("`{s}` is not a number of seconds from 1 to 2592000"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if delays.len() > MAX_CHARGE_RETRIES {
        return Err(format!("at most {MAX_CHARGE_RETRIES} retries"));
    }
    Ok(delays)
}

#[derive(Debug, Clone, Deserialize)]
pub struct OrderingSettings {
    /// How long a preempted spot allocation keeps running before it ends.
    pub preemption_notice_seconds: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Limits on everything a client can send.
#[derive(Debug, Clone, Deserialize)]
pub struct Limits {
    /// Largest accepted request body, in bytes.
    pub body_bytes: usize,
    /// Largest accepted ingest batch, in bytes after decompression.
    pub ingest_body_bytes: usize,
    /// Deepest accepted GraphQL selection.
    pub graphql_depth: usize,
    /// Largest accepted GraphQL complexity (each field costs 1; lists cost per page).
    pub graphql_complexity: usize,
    /// Largest `first` of a connection.
    pub page_size_max: u32,
    /// Steady requests per second per API key (0 disables the limit).
    pub requests_per_second: u32,
    /// Requests a key may make at once before the steady rate applies.
    pub burst: u32,
}

const DEFAULTS: &str = r#"
database_url = "sqlite://neocloud.db?mode=rwc"
listen = "127.0.0.1:8080"
log_format = "pretty"
log_filter = "info"
role = "all"

[limits]
body_bytes = 1048576
ingest_body_bytes = 8388608
graphql_depth = 12
graphql_complexity = 5000
page_size_max = 100
requests_per_second = 50
burst = 200

[ordering]
preemption_notice_seconds = 60

[billing]
invoice_prefix = "NC"
close_grace_seconds = 3600
operator_name = "neocloud"
dunning_failures = 3
charge_retry_seconds = "86400,172800,172800"

[budgets]
sweep_seconds = 30

[events]
retention_days = 30

[webhooks]
claim_hold_seconds = 60

[exposure]
introspection_without_key = true
metrics_without_key = false
"#;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("invalid configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration: {setting}: {message}")]
    Invalid {
        setting: &'static str,
        message: String,
    },
}

/// Values given on the command line; they win over every other layer.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub database_url: Option<String>,
    pub listen: Option<String>,
    pub log_format: Option<LogFormat>,
    pub role: Option<Role>,
}

impl Settings {
    /// Loads defaults → file → environment → overrides, then validates.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Settings, SettingsError> {
        let mut builder = config::Config::builder()
            .add_source(config::File::from_str(DEFAULTS, config::FileFormat::Toml));
        if let Some(path) = file {
            builder = builder.add_source(config::File::from(path).required(true));
        }
        builder = builder.add_source(
            config::Environment::with_prefix("NEOCLOUD")
                .prefix_separator("_")
                .separator("__")
                .ignore_empty(true)
                .try_parsing(true),
        );
        if let Some(url) = &overrides.database_url {
            builder = builder.set_override("database_url", url.as_str())?;
        }
        if let Some(listen) = &overrides.listen {
            builder = builder.set_override("listen", listen.as_str())?;
        }
        if let Some(format) = overrides.log_format {
            let name = match format {
                LogFormat::Pretty => "pretty",
                LogFormat::Json => "json",
            };
            builder = builder.set_override("log_format", name)?;
        }
        if let Some(role) = overrides.role.and_then(|r| r.to_possible_value()) {
            builder = builder.set_override("role", role.get_name())?;
        }
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Defaults only, with the given database: what tests start from.
    pub fn for_tests(database_url: &str) -> Settings {
        Settings {
            database_url: SecretString::from(database_url.to_owned()),
            listen: "127.0.0.1:0".into(),
            log_format: LogFormat::Pretty,
            log_filter: "warn".into(),
            limits: Limits {
                body_bytes: 1 << 20,
                ingest_body_bytes: 8 << 20,
                graphql_depth: 12,
                graphql_complexity: 5000,
                page_size_max: 100,
                requests_per_second: 0,
                burst: 200,
            },
            ordering: OrderingSettings {
                preemption_notice_seconds: 60,
            },
            billing: BillingSettings {
                invoice_prefix: "NC".into(),
                close_grace_seconds: 3600,
                operator_name: "neocloud".into(),
                seller_address: Vec::new(),
                seller_country: String::new(),
                seller_vat_id: String::new(),
                seller_registration: String::new(),
                seller_email: String::new(),
                seller_bank: String::new(),
                payout_account: String::new(),
                dunning_failures: 3,
                charge_retry_seconds: "86400,172800,172800".into(),
            },
            budgets: BudgetSettings { sweep_seconds: 30 },
            events: EventSettings { retention_days: 30 },
            webhooks: WebhookSettings {
                claim_hold_seconds: 60,
            },
            exposure: ExposureSettings {
                introspection_without_key: true,
                metrics_without_key: false,
            },
            stripe_secret_key: None,
            stripe_webhook_secret: None,
            stripe_api_base: None,
            stripe_publishable_key: None,
            stripe_js_url: None,
            webhook_allow_hosts: String::new(),
            role: Role::All,
            nats: NatsSettings::default(),
            oidc: OidcSettings::default(),
            mail: MailSettings::default(),
            exchange_rates: ExchangeRateSettings::default(),
        }
    }

    /// The portal's card form, when Stripe is configured with a publishable key.
    pub fn card_form(&self) -> Option<crate::payments::cards::CardForm> {
        self.stripe_secret_key.as_ref()?;
        Some(crate::payments::cards::CardForm {
            publishable_key: self.stripe_publishable_key.clone()?,
            js_url: self
                .stripe_js_url
                .clone()
                .unwrap_or_else(|| crate::payments::cards::STRIPE_JS.to_owned()),
        })
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, SettingsError> {
        self.listen.parse().map_err(|e| SettingsError::Invalid {
            setting: "listen (NEOCLOUD_LISTEN, --listen)",
            message: format!(
                "`{}` is not an address like 127.0.0.1:8080: {e}",
                self.listen
            ),
        })
    }

    /// `webhook_allow_hosts` parsed (validated at start-up).
    pub fn webhook_allow_list(&self) -> Result<AllowList, SettingsError> {
        AllowList::parse(&self.webhook_allow_hosts).map_err(|message| SettingsError::Invalid {
            setting: "webhook_allow_hosts (NEOCLOUD_WEBHOOK_ALLOW_HOSTS)",
            message,
        })
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        self.listen_addr()?;
        self.webhook_allow_list()?;
        self.check_connections()?;
        self.check_nats()?;
        self.check_billing()?;
        self.oidc.check()?;
        crate::mail::Mailer::from_settings(&self.mail).map_err(|message| {
            SettingsError::Invalid {
                setting: "mail (NEOCLOUD_MAIL__SMTP_URL, NEOCLOUD_MAIL__FROM, NEOCLOUD_MAIL__PUBLIC_URL)",
                message,
            }
        })?;
        self.check_ranges()
    }

    /// The database and Stripe URLs.
    fn check_connections(&self) -> Result<(), SettingsError> {
        check_url(
            self.stripe_api_base.as_deref(),
            "stripe_api_base (NEOCLOUD_STRIPE_API_BASE)",
        )?;
        check_url(
            self.stripe_js_url.as_deref(),
            "stripe_js_url (NEOCLOUD_STRIPE_JS_URL)",
        )?;
        check_url(
            self.exchange_rates.feed_url.as_deref(),
            "exchange_rates.feed_url (NEOCLOUD_EXCHANGE_RATES__FEED_URL)",
        )?;
        if let Some(key) = &self.stripe_publishable_key {
            let ok = key.starts_with("pk_")
                && key.len() <= 255
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(SettingsError::Invalid {
                    setting: "stripe_publishable_key (NEOCLOUD_STRIPE_PUBLISHABLE_KEY)",
                    message: "a Stripe publishable key (pk_…)".into(),
                });
            }
        }
        let url = self.database_url.expose_secret();
        if !(url.starts_with("sqlite:")
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://"))
        {
            return Err(SettingsError::Invalid {
                setting: "database_url (NEOCLOUD_DATABASE_URL, --database-url)",
                message: "must start with sqlite: or postgres://".into(),
            });
        }
        Ok(())
    }

    /// NATS: a URL where a role needs one, keys that parse, a bounded worker count.
    fn check_nats(&self) -> Result<(), SettingsError> {
        let invalid = |setting, message: String| Err(SettingsError::Invalid { setting, message });
        if self.role == Role::Ingest && self.nats.url.is_none() {
            return invalid(
                "nats.url (NEOCLOUD_NATS__URL)",
                "the ingest role consumes JetStream: set nats.url".into(),
            );
        }
        if let Some(url) = &self.nats.url
            && !url
                .split(',')
                .all(|u| u.starts_with("nats://") || u.starts_with("tls://"))
        {
            return invalid(
                "nats.url (NEOCLOUD_NATS__URL)",
                format!("`{url}`: nats:// or tls:// URLs, comma-separated"),
            );
        }
        if let Err(e) = crate::nats::authority(&self.nats) {
            return invalid("nats.account, nats.account_signing_seed", format!("{e:#}"));
        }
        if let Err(e) = crate::nats::issuer(&self.nats) {
            return invalid(
                "nats.operator_signing_seed, nats.system_account, nats.system_signing_seed",
                format!("{e:#}"),
            );
        }
        if !(1..=64).contains(&self.nats.workers) {
            return invalid("nats.workers", "1 to 64".into());
        }
        if !(1..=8760).contains(&self.nats.credential_hours) {
            return invalid("nats.credential_hours", "1 to 8,760 hours".into());
        }
        Ok(())
    }

    /// What invoices and payments are made with.
    fn check_billing(&self) -> Result<(), SettingsError> {
        let prefix = &self.billing.invoice_prefix;
        if prefix.is_empty()
            || prefix.len() > 8
            || !prefix.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(SettingsError::Invalid {
                setting: "billing.invoice_prefix",
                message: format!("`{prefix}` must be 1 to 8 letters or digits"),
            });
        }
        if let Err(message) = parse_delays(&self.billing.charge_retry_seconds) {
            return Err(SettingsError::Invalid {
                setting: "billing.charge_retry_seconds",
                message,
            });
        }
        if self.billing.operator_name.trim().is_empty() || self.billing.operator_name.len() > 200 {
            return Err(SettingsError::Invalid {
                setting: "billing.operator_name",
                message: "1 to 200 characters".into(),
            });
        }
        self.billing.check_seller()
    }

    /// Every numeric setting within its bounds.
    fn check_ranges(&self) -> Result<(), SettingsError> {
        let (limits, billing) = (&self.limits, &self.billing);
        // A usize beyond u64 is beyond every bound below.
        let size = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        let checks: [(&'static str, u64, u64, u64); 13] = [
            (
                "billing.dunning_failures",
                billing.dunning_failures.into(),
                0,
                20,
            ),
            ("budgets.sweep_seconds", self.budgets.sweep_seconds, 1, 30),
            ("events.retention_days", self.events.retention_days, 7, 3650),
            (
                "webhooks.claim_hold_seconds",
                self.webhooks.claim_hold_seconds,
                15,
                3600,
            ),
            (
                "billing.close_grace_seconds",
                billing.close_grace_seconds,
                0,
                7 * 86_400,
            ),
            (
                "limits.ingest_body_bytes",
                size(limits.ingest_body_bytes),
                1024,
                256 << 20,
            ),
            (
                "limits.requests_per_second",
                limits.requests_per_second.into(),
                0,
                1_000_000,
            ),
            ("limits.burst", limits.burst.into(), 1, 1_000_000),
            (
                "ordering.preemption_notice_seconds",
                self.ordering.preemption_notice_seconds,
                0,
                86_400,
            ),
            ("limits.body_bytes", size(limits.body_bytes), 1024, 64 << 20),
            ("limits.graphql_depth", size(limits.graphql_depth), 2, 64),
            (
                "limits.graphql_complexity",
                size(limits.graphql_complexity),
                10,
                100_000,
            ),
            ("limits.page_size_max", limits.page_size_max.into(), 1, 1000),
        ];
        for (setting, value, min, max) in checks {
            if !(min..=max).contains(&value) {
                return Err(SettingsError::Invalid {
                    setting,
                    message: format!("{value} is outside {min}..={max}"),
                });
            }
        }
        Ok(())
    }
}

/// An optional setting that must be an absolute http(s) URL.
fn check_url(url: Option<&str>, setting: &'static str) -> Result<(), SettingsError> {
    let Some(url) = url else { return Ok(()) };
    let ok = reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
    if ok {
        Ok(())
    } else {
        Err(SettingsError::Invalid {
            setting,
            message: format!("`{url}` is not an http(s) URL"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_embedded() {
        let settings = Settings::load(None, &Overrides::default()).expect("defaults load");
        assert!(settings.database_url.expose_secret().starts_with("sqlite:"));
        assert_eq!(settings.listen, "127.0.0.1:8080");
    }

    #[test]
    fn a_bad_listen_address_names_the_setting() {
        let overrides = Overrides {
            listen: Some("not-an-address".into()),
            ..Overrides::default()
        };
        let err = Settings::load(None, &overrides).expect_err("rejected");
        assert!(err.to_string().contains("NEOCLOUD_LISTEN"), "{err}");
    }

    #[test]
    fn a_file_layer_overrides_the_defaults_and_is_validated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("neocloud.toml");
        std::fs::write(
            &path,
            "listen = \"127.0.0.1:9999\"\n[limits]\npage_size_max = 0\n",
        )
        .expect("write");
        let err = Settings::load(Some(&path), &Overrides::default()).expect_err("rejected");
        assert!(err.to_string().contains("limits.page_size_max"), "{err}");
        std::fs::write(&path, "listen = \"127.0.0.1:9999\"\n").expect("write");
        let settings = Settings::load(Some(&path), &Overrides::default()).expect("loads");
        assert_eq!(settings.listen, "127.0.0.1:9999");
    }

    #[test]
    fn a_bad_webhook_allow_list_names_the_setting() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("neocloud.toml");
        std::fs::write(
            &path,
            "webhook_allow_hosts = \"hooks.internal, 10.0.0.0/8\"\n",
        )
        .expect("write");
        let err = Settings::load(Some(&path), &Overrides::default()).expect_err("rejected");
        assert!(
            err.to_string().contains("NEOCLOUD_WEBHOOK_ALLOW_HOSTS"),
            "{err}"
        );
        std::fs::write(
            &path,
            "webhook_allow_hosts = \"hooks.internal, 10.0.0.5\"\n",
        )
        .expect("write");
        let settings = Settings::load(Some(&path), &Overrides::default()).expect("loads");
        assert!(settings.webhook_allow_list().is_ok());
    }

    #[test]
    fn an_unknown_database_scheme_is_rejected() {
        let overrides = Overrides {
            database_url: Some("mysql://x".into()),
            ..Overrides::default()
        };
        let err = Settings::load(None, &overrides).expect_err("rejected");
        assert!(err.to_string().contains("database_url"), "{err}");
    }
}
