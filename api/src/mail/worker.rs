//! The mail worker: sends due mails one at a time. Each is claimed for [`HOLD`] before it
//! is sent, so workers of several replicas never send it twice (a worker killed mid-send
//! leaves it due again once the hold lapses: the in-flight try is the only one that can
//! be repeated). A server that is down is tried again with exponential backoff, 30 s
//! doubling to at most an hour, [`MAX_ATTEMPTS`] times; a permanent refusal ends it at
//! once.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::clock::SharedClock;
use sea_orm::DatabaseConnection;

use super::store::{self, Settled};
use super::{Failure, Mailer};
use crate::error::ApiResult;

/// How long a worker holds a mail it is sending.
pub const HOLD: TimeDelta = TimeDelta::minutes(5);
/// Tries before a mail is given up.
pub const MAX_ATTEMPTS: i32 = 12;
/// Mails taken per pass.
const BATCH: u64 = 50;
/// How often due mails are looked for.
const EVERY: Duration = Duration::from_secs(2);

/// The wait after the `attempts`-th failed try.
pub fn backoff(attempts: i32) -> TimeDelta {
    let doublings = u32::try_from(attempts.clamp(1, 8) - 1).unwrap_or(0);
    (TimeDelta::seconds(30) * 2_i32.pow(doublings)).min(TimeDelta::hours(1))
}

/// Sends the mails due by `now`; how many were sent.
pub async fn deliver_due(
    db: &DatabaseConnection,
    mailer: &Mailer,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    let mut sent = 0;
    for queued in store::due(db, now, BATCH).await? {
        if !store::claim(db, &queued, now + HOLD).await? {
            continue;
        }
        let attempts = queued.attempts + 1;
        let outcome = match mailer.send(&queued).await {
            Ok(()) => {
                sent += 1;
                Settled::Sent
            }
            Err(Failure::Permanent(error)) => Settled::Failed(error),
            Err(Failure::Transient(error)) if attempts >= MAX_ATTEMPTS => Settled::Failed(error),
            Err(Failure::Transient(error)) => Settled::Retry {
                error,
                next: now + backoff(attempts),
            },
        };
        if let Settled::Failed(error) | Settled::Retry { error, .. } = &outcome {
            tracing::warn!(mail = %queued.id, kind = %queued.kind, attempts, %error, "A mail was not sent.");
        }
        store::settle(db, queued.id, attempts, outcome, now).await?;
    }
    Ok(sent)
}

/// Runs the worker (only with a mail server configured).
pub fn spawn(db: DatabaseConnection, mailer: Arc<Mailer>, clock: SharedClock) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tick.tick().await;
            if let Err(err) = deliver_due(&db, &mailer, clock.now()).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "The mail worker failed a pass.");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_half_a_minute_to_an_hour() {
        let waits: Vec<i64> = (1..=MAX_ATTEMPTS)
            .map(|n| backoff(n).num_seconds())
            .collect();
        assert_eq!(&waits[..8], &[30, 60, 120, 240, 480, 960, 1920, 3600]);
        assert!(waits[8..].iter().all(|&w| w == 3600), "{waits:?}");
    }
}
