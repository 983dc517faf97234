//! Ingest workers on JetStream: every worker (in every `ingest` process) pulls from one
//! durable consumer of stream `USAGE` with explicit acknowledgements, up to
//! [`FETCH`] messages a pull, and hands each batch to the same group-commit writer as
//! `POST /v1/ingest`, one batch of a node at a time (in stream order). A message is acknowledged (double acknowledgement: the server
//! confirms it) only after its batch is committed or known as a duplicate; a message that
//! can never be ingested is recorded in `ingest_rejections` and terminated; one the
//! database could not take now is redelivered after [`RETRY_DELAY`]. A worker that dies
//! leaves its unacknowledged messages to be redelivered after [`ACK_WAIT`], and the
//! database's batch identity makes the second delivery a duplicate.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use async_nats::jetstream::AckKind;
use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, Message};
use futures_util::StreamExt;
use neocloud_metering::MeteringError;
use neocloud_metering::ingest::rejections::{self, Rejection};
use neocloud_metering::ingest::writer::Writer;
use neocloud_metering::ingest::{self, Outcome};
use neocloud_schema::clock::SharedClock;
use neocloud_schema::ids::NodeId;
use neocloud_schema::usage_stream;
use sea_orm::DatabaseConnection;

use crate::metrics::StreamMetrics;

/// The durable consumer every ingest worker shares.
pub const CONSUMER: &str = "ingest";
/// The most messages a worker asks for at once.
pub const FETCH: usize = 64;
/// The most messages a worker handles at once (a few writers' groups).
const IN_FLIGHT: usize = 256;
/// How long a delivered message may stay unacknowledged before JetStream gives it to
/// another worker: far above a group commit's p99 (tens of milliseconds).
pub const ACK_WAIT: Duration = Duration::from_secs(30);
/// The most messages delivered and unacknowledged across all workers.
pub const MAX_ACK_PENDING: i64 = 4096;
/// How long the stream remembers message ids to drop a republished batch.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);
/// When the database refused a batch for now, how long before it comes again.
const RETRY_DELAY: Duration = Duration::from_secs(5);
/// How long a fetch waits for messages on an idle stream.
const FETCH_WAIT: Duration = Duration::from_secs(2);
/// How often a worker reads the consumer's backlog into the gauges.
const OBSERVE: Duration = Duration::from_secs(5);

/// Creates stream `USAGE` and the shared consumer when they are missing; the consumer.
pub async fn consumer(
    jetstream: &jetstream::Context,
    max_message_bytes: usize,
) -> anyhow::Result<PullConsumer> {
    let stream = jetstream
        .get_or_create_stream(stream::Config {
            name: usage_stream::STREAM.into(),
            subjects: vec![format!("{}.>", usage_stream::SUBJECT_PREFIX)],
            // A batch leaves the stream once a worker has committed it.
            retention: RetentionPolicy::WorkQueue,
            storage: StorageType::File,
            // A full stream refuses new batches (agents keep them spooled): never drops stored ones.
            discard: DiscardPolicy::New,
            duplicate_window: DUPLICATE_WINDOW,
            max_message_size: i32::try_from(max_message_bytes).unwrap_or(i32::MAX),
            ..Default::default()
        })
        .await?;
    let consumer = stream
        .get_or_create_consumer(
            CONSUMER,
            pull::Config {
                durable_name: Some(CONSUMER.into()),
                ack_policy: AckPolicy::Explicit,
                ack_wait: ACK_WAIT,
                max_ack_pending: MAX_ACK_PENDING,
                ..Default::default()
            },
        )
        .await?;
    Ok(consumer)
}

/// The shared consumer's state, as JetStream reports it now; None when NATS does not
/// answer within a second or the consumer does not exist yet.
pub async fn backlog(
    jetstream: &jetstream::Context,
) -> Option<async_nats::jetstream::consumer::Info> {
    let ask = async {
        let stream = jetstream.get_stream(usage_stream::STREAM).await.ok()?;
        let consumer: PullConsumer = stream.get_consumer(CONSUMER).await.ok()?;
        consumer.get_info().await.ok()
    };
    tokio::time::timeout(Duration::from_secs(1), ask)
        .await
        .ok()
        .flatten()
}

/// Where workers put what they take.
#[derive(Clone)]
pub struct Ingest {
    pub writer: Writer,
    pub db: DatabaseConnection,
    pub clock: SharedClock,
    pub metrics: StreamMetrics,
    /// The most a batch may hold once decompressed (`limits.ingest_body_bytes`).
    pub body_limit: usize,
}

/// One worker: the shared consumer and where its batches go.
struct Worker {
    consumer: PullConsumer,
    ingest: Ingest,
    turns: Turns,
}

/// One node's batches go to the writers one at a time, in the order they came: a backlog
/// holds many of each node's windows, and two of them in concurrent transactions would
/// wait on each other's locks in the database.
#[derive(Clone, Default)]
struct Turns(Arc<std::sync::Mutex<HashMap<NodeId, Arc<tokio::sync::Mutex<()>>>>>);

impl Turns {
    fn of(&self, node: NodeId) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        turns.entry(node).or_default().clone()
    }

    /// Forgets the node's turn once no one waits for it: the map holds only nodes with a
    /// batch in hand, whatever node ids subjects name.
    fn end(&self, node: NodeId, turn: Arc<tokio::sync::Mutex<()>>) {
        let mut turns = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Ours and the map's: nobody else took it (taking it needs this lock).
        if Arc::strong_count(&turn) == 2 {
            turns.remove(&node);
        }
    }
}

/// Creates the stream and consumer once NATS answers (retrying while it does not), then
/// runs `workers` workers over them, and one task reading the backlog into the gauges,
/// until the process ends.
pub fn spawn(jetstream: jetstream::Context, ingest: Ingest, workers: usize) {
    tokio::spawn(async move {
        let consumer = loop {
            match consumer(&jetstream, ingest.body_limit).await {
                Ok(consumer) => break consumer,
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), "JetStream is not ready for ingest; retrying.");
                    tokio::time::sleep(RETRY_DELAY).await;
                }
            }
        };
        tracing::info!(workers, "Consuming usage from JetStream.");
        tokio::spawn(observe(consumer.clone(), ingest.metrics.clone()));
        let turns = Turns::default();
        for _ in 0..workers.max(1) {
            let worker = Worker {
                consumer: consumer.clone(),
                ingest: ingest.clone(),
                turns: turns.clone(),
            };
            tokio::spawn(worker.run());
        }
    });
}

/// Reads the consumer's backlog into the gauges every [`OBSERVE`].
async fn observe(consumer: PullConsumer, metrics: StreamMetrics) {
    loop {
        if let Ok(info) = consumer.get_info().await {
            metrics
                .pending
                .set(i64::try_from(info.num_pending).unwrap_or(i64::MAX));
            metrics
                .ack_pending
                .set(i64::try_from(info.num_ack_pending).unwrap_or(i64::MAX));
        }
        tokio::time::sleep(OBSERVE).await;
    }
}

/// How a message ends.
enum Verdict {
    Ingested(&'static str),
    Rejected {
        node: Option<NodeId>,
        reason: String,
    },
    Retry(String),
}

impl Worker {
    /// Pulls for ever: messages come in batches of up to [`FETCH`], prefetched while the
    /// earlier ones are handled, and up to [`IN_FLIGHT`] are handled at once, so the
    /// writers commit them in groups as they do concurrent HTTP requests.
    async fn run(self) {
        loop {
            let pulled = self
                .consumer
                .stream()
                .max_messages_per_batch(FETCH)
                .expires(FETCH_WAIT)
                .messages()
                .await;
            let messages = match pulled {
                Ok(messages) => messages,
                Err(error) => {
                    tracing::warn!(%error, "Pulling usage from JetStream failed; retrying.");
                    tokio::time::sleep(RETRY_DELAY).await;
                    continue;
                }
            };
            messages
                .for_each_concurrent(IN_FLIGHT, |message| async {
                    match message {
                        Ok(message) => self.handle(message).await,
                        Err(error) => tracing::warn!(%error, "A JetStream delivery failed."),
                    }
                })
                .await;
        }
    }

    async fn handle(&self, message: Message) {
        let started = Instant::now();
        if message.info().is_ok_and(|info| info.delivered > 1) {
            self.ingest.metrics.redeliveries_total.inc();
        }
        let verdict = self.ingest(&message).await;
        let settled = match &verdict {
            Verdict::Ingested(_) => message.double_ack().await,
            Verdict::Rejected { node, reason } => {
                match self.reject(&message, *node, reason).await {
                    Ok(()) => message.ack_with(AckKind::Term).await,
                    // Not recorded: it comes again rather than vanish unseen.
                    Err(error) => {
                        tracing::warn!(%error, "Recording a rejected usage message failed.");
                        message.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await
                    }
                }
            }
            Verdict::Retry(reason) => {
                tracing::warn!(%reason, subject = %message.subject, "A usage batch was not recorded; JetStream redelivers it.");
                message.ack_with(AckKind::Nak(Some(RETRY_DELAY))).await
            }
        };
        if let Err(error) = settled {
            // Unacknowledged: redelivered after the ack wait, and then a duplicate.
            tracing::warn!(%error, "Acknowledging a usage message failed.");
        }
        let outcome = match verdict {
            Verdict::Ingested(outcome) => outcome,
            Verdict::Rejected { .. } => "rejected",
            Verdict::Retry(_) => "retried",
        };
        self.ingest
            .metrics
            .messages_total
            .with_label_values(&[outcome])
            .inc();
        self.ingest
            .metrics
            .ack_seconds
            .observe(started.elapsed().as_secs_f64());
    }

    async fn ingest(&self, message: &Message) -> Verdict {
        let Some(node) = usage_stream::node_of(&message.subject) else {
            return Verdict::Rejected {
                node: None,
                reason: "the subject names no node".into(),
            };
        };
        let rejected = |reason: String| Verdict::Rejected {
            node: Some(node),
            reason,
        };
        let body = match decode(message, self.ingest.body_limit) {
            Ok(body) => body,
            Err(reason) => return rejected(reason),
        };
        let batch = match ingest::parse(&body) {
            Ok(batch) => batch,
            Err(error) => return rejected(error.to_string()),
        };
        let turn = self.turns.of(node);
        let submitted = {
            let _held = turn.lock().await;
            self.ingest.writer.submit(node.into(), batch).await
        };
        self.turns.end(node, turn);
        match submitted {
            Ok(Outcome::Accepted { .. }) => Verdict::Ingested("accepted"),
            Ok(Outcome::Duplicate { .. }) => Verdict::Ingested("duplicate"),
            Err(MeteringError::Database(error)) => Verdict::Retry(error.to_string()),
            Err(error) => rejected(error.to_string()),
        }
    }

    async fn reject(
        &self,
        message: &Message,
        node: Option<NodeId>,
        reason: &str,
    ) -> Result<(), MeteringError> {
        let message_id = header(message, usage_stream::MESSAGE_ID_HEADER);
        let rejection = Rejection {
            transport: "nats",
            subject: &message.subject,
            message_id: message_id.as_deref(),
            node_id: node.map(Into::into),
            reason,
            payload: &message.payload,
        };
        tracing::warn!(subject = %message.subject, reason, "A usage message was rejected.");
        rejections::record(&self.ingest.db, &rejection, self.ingest.clock.now()).await
    }
}

fn header(message: &Message, name: &str) -> Option<String> {
    message
        .headers
        .as_ref()
        .and_then(|h| h.get(name))
        .map(|v| v.as_str().to_owned())
}

/// The message's batch as JSON: decompressed as its `Content-Encoding` says, and at most
/// `limit` bytes once decompressed (a bomb is refused, not inflated).
fn decode(message: &Message, limit: usize) -> Result<Vec<u8>, String> {
    let payload: &[u8] = &message.payload;
    let encoding = header(message, usage_stream::ENCODING_HEADER);
    let reader: Box<dyn Read + '_> = match encoding.as_deref() {
        None | Some("identity") => Box::new(payload),
        Some("gzip") => Box::new(flate2::read::GzDecoder::new(payload)),
        Some("zstd") => Box::new(
            zstd::stream::read::Decoder::new(payload).map_err(|e| format!("not zstd: {e}"))?,
        ),
        Some(other) => return Err(format!("Content-Encoding `{other}` is not supported")),
    };
    let mut body = Vec::new();
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    reader
        .take(limit_u64.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(|e| format!("the payload does not decompress: {e}"))?;
    if body.len() > limit {
        return Err(format!("the batch is larger than {limit} bytes"));
    }
    Ok(body)
}
