//! The operator's exchange rates: `exchangeRates` and `addExchangeRate`, each addition
//! audited, and reference rates read from a feed (`exchange_rates.feed_url`, the ECB's
//! daily feed or its 90-day history: every few hours and by `fetchReferenceRates`). How statements use them is
//! `neocloud_metering::exchange`.

use chrono::{DateTime, Utc};
use neocloud_metering::exchange::reference;
use neocloud_metering::exchange::store::{self, NewRate, RateError};
use neocloud_schema::entity::exchange_rate;
use sea_orm::DatabaseConnection;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

impl From<RateError> for ApiError {
    fn from(e: RateError) -> Self {
        match e {
            RateError::Invalid { field, message } => ApiError::invalid(field, message),
            RateError::Database(source) => ApiError::Database { source },
        }
    }
}

/// `exchangeRates(from, to)` (operator): by pair and start.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    (from, to): (Option<&str>, Option<&str>),
) -> ApiResult<Vec<exchange_rate::Model>> {
    actor.require_operator()?;
    Ok(store::list(db, from, to).await?)
}

/// `addExchangeRate` (operator).
pub async fn add(
    db: &DatabaseConnection,
    actor: &Principal,
    rate: NewRate,
    now: DateTime<Utc>,
) -> ApiResult<exchange_rate::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let added = store::add(&txn, rate, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "exchange_rate.add",
            object_type: "exchange_rate",
            object_id: added.id.to_string(),
            before: None,
            after: Some(serde_json::json!({
                "from": added.from_currency,
                "to": added.to_currency,
                "rate": added.rate.get().to_string(),
                "effective_from": added.effective_from,
                "source": added.source,
            })),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(added)
}

/// Where the operator's reference rates come from (`exchange_rates.feed_url`): a feed in
/// the European Central Bank's format (daily, or the 90-day history), read every [`FEED_EVERY`] and on demand.
pub struct ReferenceFeed {
    url: String,
    http: reqwest::Client,
}

/// How often the feed is read (the ECB publishes once a working day).
pub const FEED_EVERY: std::time::Duration = std::time::Duration::from_secs(6 * 3600);
/// What a reading names as its source, with the day.
const FEED_SOURCE: &str = "Reference rate";

/// What one reading of the feed added.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The newest day the feed holds.
    pub date: chrono::NaiveDate,
    /// How many days it holds.
    pub days: usize,
    /// The rates added, over all its days.
    pub added: usize,
}

impl ReferenceFeed {
    pub fn new(url: &str) -> reqwest::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .timeout(std::time::Duration::from_secs(20))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()?;
        Ok(ReferenceFeed {
            url: url.to_owned(),
            http,
        })
    }

    /// The feed's text, at most [`reference::MAX_FEED_BYTES`].
    async fn read(&self) -> ApiResult<String> {
        let unavailable = |e: reqwest::Error| ApiError::Unavailable {
            message: format!("the reference-rate feed did not answer: {e}"),
        };
        let mut response = self
            .http
            .get(&self.url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(unavailable)?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
            body.extend_from_slice(&chunk);
            if body.len() > reference::MAX_FEED_BYTES {
                return Err(ApiError::invalid("feed", "larger than 1 MiB"));
            }
        }
        String::from_utf8(body).map_err(|_| ApiError::invalid("feed", "not UTF-8 text"))
    }
}

/// Reads the feed and adds each pair of each of its days that no rate of the same pair
/// and start exists for: a daily feed adds the day, a history back-fills the days missed.
/// In one transaction, audited as `exchange_rate.reference` with the days and how many
/// rates, under `actor` or none for the periodic reading. A feed that is unreachable or
/// malformed, or holds a day that has not begun, adds nothing.
pub async fn add_reference(
    db: &DatabaseConnection,
    feed: &ReferenceFeed,
    actor: Option<&Principal>,
    now: DateTime<Utc>,
) -> ApiResult<Fetched> {
    let days = reference::parse(&feed.read().await?)
        .map_err(|e| ApiError::invalid("feed", e.to_string()))?;
    let (Some(oldest), Some(newest)) = (days.first(), days.last()) else {
        return Err(ApiError::invalid("feed", "no day"));
    };
    // A reference rate is published for a day that has begun somewhere on earth.
    if newest.date > (now + chrono::TimeDelta::days(1)).date_naive() {
        return Err(ApiError::invalid(
            "feed",
            format!("rates for {}, a day that has not come yet", newest.date),
        ));
    }
    let pairs = days.iter().flat_map(|d| d.pairs(FEED_SOURCE)).collect();
    let txn = crate::db::begin_write(db).await?;
    let added = store::add_new(&txn, pairs, now).await?;
    if !added.is_empty() {
        audit::record_as(
            &txn,
            actor,
            audit::Entry {
                tenant_id: None,
                action: "exchange_rate.reference",
                object_type: "exchange_rate",
                object_id: newest.date.to_string(),
                before: None,
                after: Some(serde_json::json!({
                    "day": newest.date,
                    "from_day": oldest.date,
                    "days": days.len(),
                    "added": added.len(),
                    "feed": feed.url,
                })),
            },
        )
        .await?;
    }
    txn.commit().await?;
    Ok(Fetched {
        date: newest.date,
        days: days.len(),
        added: added.len(),
    })
}

/// `fetchReferenceRates` (operator): reads the feed now.
pub async fn fetch_now(
    db: &DatabaseConnection,
    actor: &Principal,
    feed: Option<&ReferenceFeed>,
    now: DateTime<Utc>,
) -> ApiResult<Fetched> {
    actor.require_operator()?;
    let feed = feed.ok_or_else(|| ApiError::Unavailable {
        message: "no reference-rate feed is configured (exchange_rates.feed_url)".into(),
    })?;
    add_reference(db, feed, Some(actor), now).await
}

/// Reads the feed every [`FEED_EVERY`], the first time at once.
pub fn spawn_feed(
    db: DatabaseConnection,
    feed: std::sync::Arc<ReferenceFeed>,
    clock: neocloud_schema::clock::SharedClock,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FEED_EVERY);
        loop {
            tick.tick().await;
            match add_reference(&db, &feed, None, clock.now()).await {
                Ok(f) if f.added > 0 => {
                    tracing::info!(day = %f.date, added = f.added, "Added reference exchange rates.")
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(code = err.code().as_str(), message = %err.message(), "Reading the reference-rate feed failed.")
                }
            }
        }
    });
}
