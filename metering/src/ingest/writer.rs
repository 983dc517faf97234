//! Group commit for ingest (`crate::group_commit`): writer tasks take the batches queued
//! at that moment and write them with `accept_many` — one transaction for batches of
//! distinct nodes — and every batch gets its own answer.
//!
//! Beside them one task aggregates the journal: woken after every commit that journaled a
//! batch (and every few seconds, for rows left by a restart), it runs passes until the
//! journal is empty.

use std::sync::Arc;

use neocloud_schema::clock::SharedClock;
use neocloud_schema::ingest::Batch;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::Notify;
use uuid::Uuid;

use super::aggregate::{PASS, aggregate};
use super::{Answer, Outcome, Submission, accept_many};
use crate::error::MeteringError;
use crate::group_commit::{Bound, GroupCommit};

/// How often an idle aggregator looks at the journal anyway.
const IDLE_LOOK: std::time::Duration = std::time::Duration::from_secs(2);

/// The handle requests submit batches through.
#[derive(Clone)]
pub struct Writer {
    commit: GroupCommit<Submission, Answer>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ingest::Writer")
    }
}

impl Writer {
    /// Starts `writers` tasks writing groups of at most `max_group` batches, judging their
    /// times by `clock`.
    pub fn spawn(
        db: DatabaseConnection,
        clock: SharedClock,
        writers: usize,
        max_group: usize,
    ) -> Writer {
        let journaled = Arc::new(Notify::new());
        spawn_aggregator(db.clone(), journaled.clone());
        let bound = Bound {
            max_weight: max_group,
            weight: |_| 1,
        };
        let commit = GroupCommit::spawn(writers, bound, move |submissions: Vec<Submission>| {
            let (db, clock, journaled) = (db.clone(), clock.clone(), journaled.clone());
            async move {
                let (size, started) = (submissions.len(), std::time::Instant::now());
                let results = accept_many(&db, submissions, clock.now()).await;
                tracing::debug!(
                    batches = size,
                    ms = started.elapsed().as_secs_f64() * 1000.0,
                    "Ingest group written."
                );
                if results
                    .iter()
                    .any(|r| matches!(r, Ok(Outcome::Accepted { .. })))
                {
                    journaled.notify_one();
                }
                results
            }
        });
        Writer { commit }
    }

    /// Takes one batch from the agent of `node_id`; answers once it is durable (or not).
    pub async fn submit(&self, node_id: Uuid, batch: Batch) -> Answer {
        self.commit
            .submit(Submission { node_id, batch })
            .await
            .unwrap_or_else(|| {
                Err(MeteringError::Database(DbErr::Custom(
                    "the ingest writer stopped".into(),
                )))
            })
    }
}

/// Aggregates the journal whenever a writer journaled something, pass after pass until it
/// is empty; a failed pass changed nothing and is tried again.
fn spawn_aggregator(db: DatabaseConnection, journaled: Arc<Notify>) {
    tokio::spawn(async move {
        loop {
            loop {
                match aggregate(&db, PASS, None).await {
                    // A full pass may have left more in the journal (a count past `u64` is full too).
                    Ok(n) if u64::try_from(n).unwrap_or(u64::MAX) >= PASS => {}
                    Ok(_) => break,
                    Err(error) => {
                        tracing::error!(%error, "Aggregating the ingest journal failed; retrying.");
                        tokio::time::sleep(IDLE_LOOK).await;
                        break;
                    }
                }
            }
            let _ = tokio::time::timeout(IDLE_LOOK, journaled.notified()).await;
        }
    });
}
