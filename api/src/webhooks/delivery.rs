//! The delivery worker: takes due deliveries from the outbox, signs them
//! ([`super::signing`]), POSTs them through [`WebhookClient`] (public addresses only, no
//! redirects, bounded time and answer) and settles each in one transaction with its
//! attempt logged.
//!
//! - At least once per event and endpoint, with the same `webhook-id` every time: a
//!   delivery is claimed for a hold (`webhooks.claim_hold_seconds`, well past the client's
//!   10 s limit) before it is sent, so another replica's worker leaves it alone and a
//!   worker killed mid-send leaves it due again once the hold lapses — the in-flight
//!   attempt is the only one that can be sent twice.
//! - A failure (no answer, or not 2xx) is retried with exponential backoff and ±20 %
//!   jitter ([`retry_delay`]) until three days after the delivery was owed; then it is
//!   `failed`, and can still be redelivered by hand.
//! - An endpoint every attempt to which has failed for [`DISABLE_AFTER`] is disabled, and
//!   its owner's other endpoints get `webhook_endpoint.disabled`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};
use futures_util::StreamExt;
use neocloud_metering::events::{self, NewEvent, store as event_store, webhooks as store};
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::{event, webhook_delivery, webhook_endpoint};
use rand::Rng;
use sea_orm::DatabaseConnection;
use serde_json::json;

use super::signing;
use crate::error::ApiResult;
use crate::outbound::{Answer, OutboundError, WebhookClient};

/// Most deliveries taken per pass.
pub const BATCH: u64 = 256;
/// Deliveries sent at once.
pub const IN_FLIGHT: usize = 32;
/// An endpoint failing this long is disabled.
pub const DISABLE_AFTER: TimeDelta = TimeDelta::days(5);

/// Delays before the retry after the n-th failed attempt (the last repeats).
const BACKOFF_SECONDS: [i64; 10] = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 43_200];

/// The delay before retrying after `failures` failed attempts, with ±20 % jitter.
pub fn retry_delay(failures: i32, jitter: f64) -> TimeDelta {
    let index = usize::try_from(failures.saturating_sub(1))
        .unwrap_or(0)
        .min(BACKOFF_SECONDS.len() - 1);
    let base = BACKOFF_SECONDS[index];
    let factor = 1.0 + 0.2 * jitter.clamp(-1.0, 1.0);
    // At most 12 h × 1.2 in milliseconds: far inside f64's exact integers.
    #[allow(clippy::cast_possible_truncation)]
    let millis = (base as f64 * 1000.0 * factor).round() as i64;
    TimeDelta::milliseconds(millis)
}

/// Delivers what is due now; how many deliveries this worker settled.
#[tracing::instrument(name = "webhooks.deliver_due", skip_all)]
pub async fn deliver_due(
    db: &DatabaseConnection,
    client: &WebhookClient,
    clock: &SharedClock,
    hold: TimeDelta,
) -> ApiResult<usize> {
    let now = clock.now();
    let due = store::due(db, now, BATCH).await?;
    if due.is_empty() {
        return Ok(0);
    }
    let events: HashMap<_, _> = event_store::by_ids(db, due.iter().map(|d| d.event_id).collect())
        .await?
        .into_iter()
        .map(|e| (e.id, e))
        .collect();
    let endpoints: HashMap<_, _> =
        store::endpoints_by_id(db, due.iter().map(|d| d.endpoint_id).collect())
            .await?
            .into_iter()
            .map(|e| (e.id, e))
            .collect();
    let jobs: Vec<_> = due
        .iter()
        .filter_map(|d| {
            let event = events.get(&d.event_id)?;
            let endpoint = endpoints.get(&d.endpoint_id)?;
            Some(deliver_one(db, client, clock, hold, d, event, endpoint))
        })
        .collect();
    let settled: Vec<_> = futures_util::stream::iter(jobs)
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let mut done = 0;
    for outcome in settled {
        match outcome {
            Ok(true) => done += 1,
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Settling a webhook delivery failed.");
            }
        }
    }
    Ok(done)
}

/// Claims, sends and settles one delivery; false when another worker had it.
async fn deliver_one(
    db: &DatabaseConnection,
    client: &WebhookClient,
    clock: &SharedClock,
    hold: TimeDelta,
    delivery: &webhook_delivery::Model,
    event: &event::Model,
    endpoint: &webhook_endpoint::Model,
) -> ApiResult<bool> {
    let Some(token) = store::claim(db, delivery.id, clock.now(), hold).await? else {
        return Ok(false);
    };
    let attempt = if endpoint.enabled {
        send(client, clock, event, endpoint).await
    } else {
        // Owed while it was enabled: kept for a redelivery once it is enabled again.
        refused_attempt(clock.now(), "the endpoint is disabled")
    };
    let attempt = with_retry(attempt, delivery, endpoint);
    let txn = crate::db::begin_write(db).await?;
    if !store::finish(&txn, delivery, token, &attempt).await? {
        return Ok(false);
    }
    if endpoint.enabled {
        let standing =
            store::note_outcome(&txn, endpoint.id, attempt.delivered, attempt.at).await?;
        if let Some(standing) = standing {
            disable_if_failing(&txn, &standing, attempt.at).await?;
        }
    }
    txn.commit().await?;
    Ok(true)
}

fn refused_attempt(at: DateTime<Utc>, why: &str) -> store::Attempt {
    store::Attempt {
        at,
        status_code: None,
        latency_ms: 0,
        error: Some(why.to_owned()),
        response_head: None,
        delivered: false,
        retry_at: None,
    }
}

/// When to retry a failed attempt: the backoff, unless that is past the delivery's
/// retry window or the endpoint is disabled.
fn with_retry(
    mut attempt: store::Attempt,
    delivery: &webhook_delivery::Model,
    endpoint: &webhook_endpoint::Model,
) -> store::Attempt {
    if !attempt.delivered && endpoint.enabled {
        let jitter = rand::rng().random_range(-1.0..=1.0);
        let at = attempt.at + retry_delay(delivery.attempts + 1, jitter);
        attempt.retry_at = (at <= delivery.retry_until).then_some(at);
    }
    attempt
}

/// POSTs the event, signed with every secret in force; what came of it.
async fn send(
    client: &WebhookClient,
    clock: &SharedClock,
    event: &event::Model,
    endpoint: &webhook_endpoint::Model,
) -> store::Attempt {
    let now = clock.now();
    let body = serde_json::to_vec(&events::envelope(event)).unwrap_or_default();
    let mut secrets = vec![endpoint.secret.as_str()];
    if let (Some(old), Some(until)) = (&endpoint.previous_secret, endpoint.previous_secret_until)
        && until > now
    {
        secrets.push(old);
    }
    let id = event.id.to_string();
    let mut headers = signing::headers(&secrets, &id, now.timestamp(), &body).to_vec();
    if endpoint.legacy_signature {
        let legacy = signing::legacy(&endpoint.secret, now.timestamp(), &body);
        headers.push(("Neocloud-Signature", legacy));
    }
    let started = Instant::now();
    let answer = client.post_json(&endpoint.url, &headers, body).await;
    let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    match answer {
        Ok(answer) => answered(now, latency_ms, &answer),
        Err(OutboundError::Refused(why) | OutboundError::Failed(why)) => store::Attempt {
            latency_ms,
            ..refused_attempt(now, &why)
        },
    }
}

fn answered(at: DateTime<Utc>, latency_ms: i64, answer: &Answer) -> store::Attempt {
    store::Attempt {
        at,
        status_code: Some(answer.status),
        latency_ms,
        error: (!answer.is_success()).then(|| format!("answered {}", answer.status)),
        response_head: Some(printable(&answer.head)),
        delivered: answer.is_success(),
        retry_at: None,
    }
}

/// An answer's first bytes as text that any column takes: invalid UTF-8 and control
/// characters (but newlines and tabs) become `?`.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' || c == '\u{FFFD}' {
                '?'
            } else {
                c
            }
        })
        .collect()
}

/// Disables an endpoint failing since [`DISABLE_AFTER`] ago, telling its owner's other
/// endpoints.
async fn disable_if_failing<C: sea_orm::ConnectionTrait>(
    conn: &C,
    endpoint: &webhook_endpoint::Model,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let Some(since) = endpoint.failing_since else {
        return Ok(());
    };
    if now - since < DISABLE_AFTER {
        return Ok(());
    }
    let reason = format!("every delivery failed since {}", since.to_rfc3339());
    if store::disable(conn, endpoint.id, &reason, now).await? {
        tracing::warn!(endpoint = %endpoint.id, "Webhook endpoint disabled after failing for days.");
        let data = json!({"endpoint_id": endpoint.id, "url": endpoint.url, "failing_since": since});
        let event = NewEvent {
            kind: "webhook_endpoint.disabled",
            tenant: endpoint.tenant_id,
            occurred_at: now,
            data,
        };
        events::record(conn, event, now).await?;
    }
    Ok(())
}

/// Runs [`deliver_due`] every `every` until the process ends.
pub fn spawn_worker(
    db: DatabaseConnection,
    client: Arc<WebhookClient>,
    clock: SharedClock,
    every: std::time::Duration,
    hold: TimeDelta,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            // Keep going while a pass fills its batch, so a backlog drains at full speed.
            loop {
                match deliver_due(&db, &client, &clock, hold).await {
                    Ok(n) if n as u64 >= BATCH / 2 => continue,
                    Ok(_) => break,
                    Err(err) => {
                        tracing::warn!(code = err.code().as_str(), message = %err.message(), "Webhook delivery pass failed.");
                        break;
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_within_their_jitter() {
        assert_eq!(retry_delay(1, 0.0), TimeDelta::seconds(5));
        assert_eq!(retry_delay(2, 1.0), TimeDelta::seconds(36));
        assert_eq!(retry_delay(3, -1.0), TimeDelta::seconds(96));
        assert_eq!(retry_delay(50, 0.0), TimeDelta::hours(12));
        let mut previous = TimeDelta::zero();
        for failures in 1..=10 {
            let delay = retry_delay(failures, 0.0);
            assert!(delay > previous);
            previous = delay;
        }
    }

    #[test]
    fn three_days_of_retries_take_more_than_ten_attempts() {
        let mut at = TimeDelta::zero();
        let mut attempts = 1;
        while at + retry_delay(attempts, 1.0) <= TimeDelta::days(3) {
            at += retry_delay(attempts, 1.0);
            attempts += 1;
        }
        assert!(attempts > 10, "{attempts}");
    }

    #[test]
    fn an_answer_is_logged_as_printable_text() {
        assert_eq!(printable(b"ok\x00\x1b[31m\xff"), "ok??[31m?");
    }
}
