//! Group commit for ingest: requests hand their parsed batch to a few writer tasks, which
//! take everything queued at that moment and write it with `accept_many` — one
//! transaction, one set of statements and one commit for batches of distinct nodes. Under
//! light load a group is a single batch (no added wait); under load the groups grow and
//! the per-batch cost of round trips and commit flushes falls. Every batch still gets its
//! own answer, exactly as if it had come alone.
//!
//! Beside them one task aggregates the journal: woken after every commit that journaled a
//! batch (and every few seconds, for rows left by a restart), it runs passes until the
//! journal is empty.

use std::sync::Arc;

use neocloud_schema::clock::SharedClock;
use neocloud_schema::ingest::Batch;
use sea_orm::{DatabaseConnection, DbErr};
use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use uuid::Uuid;

use super::aggregate::{PASS, aggregate};
use super::{Answer, Outcome, Submission, accept_many};
use crate::error::MeteringError;

/// Batches waiting for a writer before new requests wait for room.
const QUEUE: usize = 4096;
/// How often an idle aggregator looks at the journal anyway.
const IDLE_LOOK: std::time::Duration = std::time::Duration::from_secs(2);

struct Job {
    submission: Submission,
    answer: oneshot::Sender<Answer>,
}

/// The handle requests submit batches through.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
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
        let (jobs, queue) = mpsc::channel::<Job>(QUEUE);
        let queue = Arc::new(Mutex::new(queue));
        let journaled = Arc::new(Notify::new());
        spawn_aggregator(db.clone(), journaled.clone());
        for _ in 0..writers.max(1) {
            let (db, queue, journaled) = (db.clone(), queue.clone(), journaled.clone());
            let clock = clock.clone();
            tokio::spawn(async move {
                loop {
                    let group = {
                        let mut queue = queue.lock().await;
                        let Some(first) = queue.recv().await else {
                            return;
                        };
                        let mut group = vec![first];
                        while group.len() < max_group.max(1) {
                            match queue.try_recv() {
                                Ok(job) => group.push(job),
                                Err(_) => break,
                            }
                        }
                        group
                    };
                    let (submissions, answers): (Vec<_>, Vec<_>) = group
                        .into_iter()
                        .map(|job| (job.submission, job.answer))
                        .unzip();
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
                    for (answer, result) in answers.into_iter().zip(results) {
                        // The request may have gone (client timeout): its batch is written
                        // all the same, and its retry will be answered `duplicate`.
                        let _ = answer.send(result);
                    }
                }
            });
        }
        Writer { jobs }
    }

    /// Takes one batch from the agent of `node_id`; answers once it is durable (or not).
    pub async fn submit(&self, node_id: Uuid, batch: Batch) -> Answer {
        let (answer, answered) = oneshot::channel();
        let stopped = || MeteringError::Database(DbErr::Custom("the ingest writer stopped".into()));
        self.jobs
            .send(Job {
                submission: Submission { node_id, batch },
                answer,
            })
            .await
            .map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
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
