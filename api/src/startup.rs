//! Building and running the server: `Application::build(settings)` connects, migrates and
//! binds (port 0 picks a free port, for tests); `run_until_stopped` serves until SIGINT or
//! SIGTERM.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::{Compress, from_fn};
use actix_web::{App, HttpResponse, HttpServer, web};
use sea_orm::DatabaseConnection;

use crate::error::{Code, rest_error};
use crate::graphql::{Outside, build_schema};
use crate::http::AppState;
use crate::http::rate_limit::RateLimiter;
use crate::http::{
    agents, events, graphql, health, ingest, invoices, metrics, observe, privacy, session, stripe,
    usage_events,
};
use crate::invoicing::Billing;
use crate::metrics::Metrics;
use crate::ordering::Ordering;
use crate::outbound::WebhookClient;
use crate::providers::exchange_rates::ReferenceFeed;
use crate::settings::Settings;
use neocloud_metering::payments::gateway::Gateway;
use neocloud_schema::clock::{self, SharedClock};
use secrecy::ExposeSecret;

pub struct Application {
    port: u16,
    server: Server,
    db: DatabaseConnection,
    /// The SQLite file's process lock, held while serving.
    _sqlite: Option<std::fs::File>,
}

impl Application {
    /// Connects to the configured database, migrates it, and binds the listener.
    pub async fn build(settings: Settings) -> anyhow::Result<Application> {
        Self::build_with_clock(settings, clock::system()).await
    }

    /// Like `build`, telling time by `clock`.
    pub async fn build_with_clock(
        settings: Settings,
        clock: SharedClock,
    ) -> anyhow::Result<Application> {
        let db = crate::db::connect(&settings.database_url).await?;
        crate::db::migrate(&db).await?;
        Self::build_with_db(settings, db, clock).await
    }

    /// Binds the server over an already migrated database and starts the background work.
    pub async fn build_with_db(
        settings: Settings,
        db: DatabaseConnection,
        clock: SharedClock,
    ) -> anyhow::Result<Application> {
        let sqlite = crate::db::claim_sqlite(&settings.database_url)?;
        let listener = TcpListener::bind(settings.listen_addr()?)?;
        let port = listener.local_addr()?.port();
        let jetstream = match &settings.nats.url {
            Some(_) => Some(async_nats::jetstream::new(
                crate::nats::connect(&settings.nats, clock.now().timestamp()).await?,
            )),
            None => None,
        };
        let state = web::Data::new(start_services(&settings, &db, clock, jetstream)?);
        let body_limit = settings.limits.body_bytes;
        let ingest_limit = settings.limits.ingest_body_bytes;
        let serves_api = settings.role.serves_api();
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(web::PayloadConfig::new(body_limit))
                .wrap(Compress::default())
                .wrap(from_fn(observe::known_encoding))
                .wrap(from_fn(observe::observe))
                .configure(|routes| {
                    health_routes(routes);
                    if serves_api {
                        api_routes(routes, ingest_limit);
                    }
                    routes.default_service(web::to(not_found));
                })
        })
        .workers(workers)
        .listen(listener)?
        .run();
        Ok(Application {
            port,
            server,
            db,
            _sqlite: sqlite,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let _sqlite = self._sqlite;
        self.server.await
    }
}

/// What every process serves: health and metrics.
fn health_routes(routes: &mut web::ServiceConfig) {
    routes
        .route("/healthz", web::get().to(health::healthz))
        .route("/readyz", web::get().to(health::readyz))
        .route("/metrics", web::get().to(metrics::metrics));
}

/// The API (`api` and `all` roles). Anything no route takes answers `NOT_FOUND`.
fn api_routes(routes: &mut web::ServiceConfig, ingest_limit: usize) {
    routes
        .configure(crate::http::web::routes)
        .route("/graphql", web::post().to(graphql::graphql))
        .route("/graphql", web::get().to(graphql::graphiql))
        .route("/graphiql/{file}", web::get().to(graphql::graphiql_asset))
        .route("/v1/agents/inventory", web::get().to(agents::inventory))
        .route("/v1/agents/hardware", web::post().to(agents::hardware))
        .route("/v1/agents/assignments", web::get().to(agents::assignments))
        .route(
            "/v1/agents/nats-credentials",
            web::get().to(agents::nats_credentials),
        )
        .route("/v1/invoices/{id}/export", web::get().to(invoices::export))
        .route(
            "/v1/credit-notes/{id}/export",
            web::get().to(invoices::credit_note),
        )
        .route("/v1/tenant/export", web::get().to(privacy::tenant_export))
        .route(
            "/v1/ledger/journal.csv",
            web::get().to(crate::http::ledger::journal),
        )
        .route(
            "/v1/provider-statements/{id}/export",
            web::get().to(crate::http::provider_statements::export),
        )
        .route("/v1/stripe/webhook", web::post().to(stripe::webhook))
        .service(
            web::resource("/v1/session")
                .app_data(session::json_body())
                .route(web::post().to(session::sign_in))
                .route(web::get().to(session::current))
                .route(web::delete().to(session::sign_out)),
        )
        .route("/v1/session/methods", web::get().to(session::methods))
        .service(
            web::resource("/v1/session/password-reset")
                .app_data(session::json_body())
                .route(web::post().to(session::request_password_reset)),
        )
        .route("/v1/session/oidc", web::get().to(session::oidc_start))
        .route(
            "/v1/session/oidc/callback",
            web::get().to(session::oidc_callback),
        )
        .route(
            "/v1/session/oidc/backchannel-logout",
            web::post().to(session::oidc_back_channel_logout),
        )
        .service(
            web::resource("/v1/session/invitation")
                .app_data(session::json_body())
                .route(web::post().to(session::accept_invitation)),
        )
        .route("/v1/events/schema", web::get().to(events::catalog))
        .service(
            web::resource("/v1/ingest")
                .app_data(web::PayloadConfig::new(ingest_limit))
                .route(web::post().to(ingest::ingest)),
        )
        .service(
            web::resource("/v1/events")
                .app_data(web::PayloadConfig::new(ingest_limit))
                .route(web::post().to(usage_events::report)),
        );
}

/// The systems beyond the database that the settings configure.
fn outside_systems(
    settings: &Settings,
    jetstream: Option<async_nats::jetstream::Context>,
) -> anyhow::Result<Outside> {
    let mailer = crate::mail::Mailer::from_settings(&settings.mail)
        .map_err(|message| anyhow::anyhow!("mail: {message}"))?;
    let feed = settings.exchange_rates.feed_url.as_deref();
    Ok(Outside {
        gateway: stripe_gateway(settings),
        webhooks: Arc::new(WebhookClient::new(settings.webhook_allow_list()?)),
        jetstream,
        mailer: mailer.map(Arc::new),
        reference_rates: feed.map(ReferenceFeed::new).transpose()?.map(Arc::new),
    })
}

/// The services the handlers share, with the background workers started over them.
fn start_services(
    settings: &Settings,
    db: &DatabaseConnection,
    clock: SharedClock,
    jetstream: Option<async_nats::jetstream::Context>,
) -> anyhow::Result<AppState> {
    let metrics = Metrics::new()?;
    let ordering = start_ordering(settings, db, &clock, &metrics);
    let outside = outside_systems(settings, jetstream)?;
    let billing = Arc::new(Billing::new(
        &settings.billing,
        outside.gateway.is_some(),
        clock.clone(),
    ));
    if settings.role.runs_jobs() {
        let jobs = Jobs {
            db,
            ordering: &ordering,
            billing: &billing,
            outside: &outside,
            clock: &clock,
        };
        jobs.spawn(settings)?;
    }
    let ingest = neocloud_metering::ingest::writer::Writer::spawn(
        db.clone(),
        clock.clone(),
        INGEST_WRITERS,
        INGEST_GROUP,
    );
    if let Some(jetstream) = &outside.jetstream
        && settings.role.consumes_stream()
    {
        let parts = crate::nats::consumer::Ingest {
            writer: ingest.clone(),
            db: db.clone(),
            clock: clock.clone(),
            metrics: metrics.stream.clone(),
            body_limit: settings.limits.ingest_body_bytes,
        };
        crate::nats::consumer::spawn(jetstream.clone(), parts, settings.nats.workers);
    }
    let mailer = outside.mailer.clone();
    Ok(AppState {
        schema: build_schema(
            db.clone(),
            ordering.clone(),
            billing.clone(),
            outside,
            clock.clone(),
            settings,
        ),
        billing,
        ingest,
        events: crate::meters::spawn_writer(db.clone(), clock.clone()),
        stripe_webhook_secret: settings.stripe_webhook_secret.clone(),
        exposure: settings.exposure,
        oidc: identity_provider(settings)?,
        mailer,
        portal_policy: crate::http::web::portal_policy(
            settings.card_form().as_ref().map(|f| f.js_url.as_str()),
            settings.stripe_api_base.as_deref(),
        ),
        nats_authority: crate::nats::authority(&settings.nats)?,
        ordering,
        rate_limiter: RateLimiter::new(settings.limits.requests_per_second, settings.limits.burst),
        metrics,
        clock,
        db: db.clone(),
    })
}

/// Placement, with its metrics, its fleet loaded from `db`.
fn start_ordering(
    settings: &Settings,
    db: &DatabaseConnection,
    clock: &SharedClock,
    metrics: &Metrics,
) -> Arc<Ordering> {
    let ordering = Arc::new(
        Ordering::new(
            Duration::from_secs(settings.ordering.preemption_notice_seconds),
            clock.clone(),
        )
        .with_metrics(metrics.placement.clone()),
    );
    ordering.start(db);
    ordering
}

/// The operators' identity provider, when single sign-on is configured.
fn identity_provider(
    settings: &Settings,
) -> anyhow::Result<Option<Arc<crate::auth::oidc::Provider>>> {
    if !settings.oidc.enabled() {
        return Ok(None);
    }
    let provider = crate::auth::oidc::Provider::new(settings.oidc.clone())
        .map_err(|err| anyhow::anyhow!("oidc: {}", err.message()))?;
    Ok(Some(Arc::new(provider)))
}

/// Stripe, when a secret key is configured.
fn stripe_gateway(settings: &Settings) -> Option<Arc<Gateway>> {
    let key = settings.stripe_secret_key.as_ref()?;
    Some(Arc::new(Gateway::new(
        key.expose_secret(),
        settings.stripe_api_base.as_deref(),
    )))
}

/// What the background jobs run over.
struct Jobs<'a> {
    db: &'a DatabaseConnection,
    ordering: &'a Arc<Ordering>,
    billing: &'a Arc<Billing>,
    outside: &'a Outside,
    clock: &'a SharedClock,
}

impl Jobs<'_> {
    /// Starts every background job (the `worker` and `all` roles). Each claims its work in
    /// the database, so any number of processes may run them (docs/operations.md).
    fn spawn(&self, settings: &Settings) -> anyhow::Result<()> {
        let db = self.db;
        spawn_preemption_worker(db.clone(), self.ordering.clone());
        if let Some(gateway) = &self.outside.gateway {
            crate::payments::spawn_outbox_worker(
                db.clone(),
                gateway.clone(),
                self.billing.clone(),
                OUTBOX_SWEEP,
            );
        }
        if let Some(mailer) = &self.outside.mailer {
            crate::mail::worker::spawn(db.clone(), mailer.clone(), self.clock.clone());
        }
        if let Some(feed) = &self.outside.reference_rates {
            crate::providers::exchange_rates::spawn_feed(
                db.clone(),
                feed.clone(),
                self.clock.clone(),
            );
        }
        spawn_period_closer(db.clone(), self.billing.clone());
        crate::webhooks::delivery::spawn_worker(
            db.clone(),
            self.outside.webhooks.clone(),
            self.clock.clone(),
            WEBHOOK_SWEEP,
            settings.webhooks.claim_hold(),
        );
        spawn_budget_sweep(
            db.clone(),
            self.ordering.clone(),
            Duration::from_secs(settings.budgets.sweep_seconds),
        );
        spawn_event_pruning(db.clone(), self.clock.clone(), settings.events.retention());
        spawn_audit_sealer(db.clone());
        crate::fleet::reliability::spawn_refresh(db.clone(), self.clock.clone());
        crate::nats::revocation::spawn(db.clone(), self.clock.clone(), &settings.nats)
    }
}

/// Seals new audit entries into the chains (`audit::chain`).
fn spawn_audit_sealer(db: DatabaseConnection) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(AUDIT_SEAL_SWEEP);
        loop {
            tick.tick().await;
            if let Err(err) = crate::audit::chain::seal(&db).await {
                tracing::warn!(error = %err, "Sealing audit entries failed.");
            }
        }
    });
}

/// Ends preempted spot allocations when their notice window has passed.
fn spawn_preemption_worker(db: DatabaseConnection, ordering: Arc<Ordering>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PREEMPTION_SWEEP);
        loop {
            tick.tick().await;
            match ordering.end_due_preemptions(&db).await {
                Ok(0) => {}
                Ok(ended) => tracing::info!(ended, "Preempted allocations ended."),
                Err(err) => {
                    tracing::warn!(code = err.code().as_str(), message = %err.message(), "Ending preempted allocations failed.")
                }
            }
        }
    });
}

/// Closes billing periods whose grace for late usage has passed, reminds tenants of
/// invoices falling or fallen due, and closes providers' ended months into statements.
fn spawn_period_closer(db: DatabaseConnection, billing: Arc<Billing>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PERIOD_CLOSE_SWEEP);
        loop {
            tick.tick().await;
            if let Err(err) = crate::invoicing::close_due(&db, &billing).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Closing billing periods failed.");
            }
            if let Err(err) = crate::invoicing::send_reminders(&db, &billing).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Sending invoice reminders failed.");
            }
            let now = billing.clock.now();
            if let Err(err) = crate::providers::statements::close_due(&db, now).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Closing provider statements failed.");
            }
        }
    });
}

/// How often events past the retention are deleted, and the most per transaction.
const EVENT_PRUNING: Duration = Duration::from_secs(3600);
const PRUNE_BATCH: u64 = 1000;

/// Deletes events older than `retention` (with their delivery log), a batch per
/// transaction, every [`EVENT_PRUNING`]. Replicas may both run it: deleting is idempotent.
fn spawn_event_pruning(db: DatabaseConnection, clock: SharedClock, retention: chrono::TimeDelta) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVENT_PRUNING);
        loop {
            tick.tick().await;
            let before = clock.now() - retention;
            if let Err(err) = prune_events(&db, before).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Deleting expired events failed.");
            }
            // Rejected messages come from outside: kept as long as events, no longer.
            if let Err(err) = neocloud_metering::ingest::rejections::prune(&db, before).await {
                tracing::warn!(error = %err, "Deleting expired rejected messages failed.");
            }
            // A mail's record names a person: kept as long as events, no longer.
            if let Err(err) = crate::mail::store::prune(&db, before).await {
                tracing::warn!(error = %err, "Deleting old mail records failed.");
            }
        }
    });
}

/// Deletes every event that occurred before `before` and is owed to no endpoint; how many.
pub async fn prune_events(
    db: &DatabaseConnection,
    before: chrono::DateTime<chrono::Utc>,
) -> crate::error::ApiResult<u64> {
    let mut total = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        let deleted = neocloud_metering::events::prune(&txn, before, PRUNE_BATCH).await?;
        txn.commit().await?;
        total += deleted;
        if deleted < PRUNE_BATCH {
            return Ok(total);
        }
    }
}

/// Compares every budget with its tenant's spend.
fn spawn_budget_sweep(db: DatabaseConnection, ordering: Arc<Ordering>, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let now = ordering.clock.now();
            if let Err(err) = crate::budgets::sweep(&db, &ordering, now).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Budget sweep failed.");
            }
        }
    });
}

/// Ingest writer tasks, and the most batches one writes in a transaction.
const INGEST_WRITERS: usize = 4;
const INGEST_GROUP: usize = 64;

/// How often the payment outbox is delivered.
const OUTBOX_SWEEP: Duration = Duration::from_secs(2);

/// How often due webhook deliveries are looked for.
const WEBHOOK_SWEEP: Duration = Duration::from_secs(1);

/// How often billing periods are checked for closing.
const PERIOD_CLOSE_SWEEP: Duration = Duration::from_secs(60);

/// How often new audit entries are sealed.
const AUDIT_SEAL_SWEEP: Duration = Duration::from_secs(1);

/// How often preemption deadlines are checked.
const PREEMPTION_SWEEP: Duration = Duration::from_secs(2);

async fn not_found() -> HttpResponse {
    rest_error(Code::NotFound, "no such endpoint")
}
