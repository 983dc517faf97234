//! Shipping over NATS JetStream: each batch is published to the node's own subject
//! (`neocloud.usage.v1.<region>.<node>`, stream `USAGE`) with `Nats-Msg-Id =
//! <agent>:<boot>:<seq>`, and counts as shipped only once JetStream acknowledges it
//! (`PublishAck`; a duplicate acknowledgement counts too). Ingest workers take it from
//! the stream into the same journal as `POST /v1/ingest`, under the same exactly-once
//! rules. The connection authenticates with the node's credential (`.creds`), which may
//! publish to that subject only and read only its own acknowledgement inbox, and which
//! [`credentials`] keeps fresh.

pub mod credentials;

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::{ConnectOptions, HeaderMap};
use neocloud_schema::ids::NodeId;
use neocloud_schema::ingest::Batch;
use neocloud_schema::usage_stream;

use super::{Compression, ShipOutcome, Shipper, ShipperError, body};

/// How long a batch waits for JetStream's acknowledgement before it is retried (with the
/// same message id, so a late first copy and the retry are stored once).
const ACK_WAIT: Duration = Duration::from_secs(10);

/// Publishes batches to one node's subject.
#[derive(Debug, Clone)]
pub struct NatsShipper {
    jetstream: async_nats::jetstream::Context,
    subject: String,
    compression: Compression,
}

impl NatsShipper {
    /// Connects to `url` as the node `node` of `region` (with its credentials file, when
    /// the server needs one). The connection is made in the background and kept: the
    /// agent starts, and spools, while NATS is away.
    pub async fn connect(
        url: &str,
        credentials: Option<&Path>,
        region: &str,
        node: NodeId,
        compression: Compression,
    ) -> Result<Self, ShipperError> {
        let subject = usage_stream::subject(region, node).ok_or_else(|| ShipperError::Request {
            url: url.to_owned(),
            reason: format!("region `{region}` cannot name a NATS subject"),
        })?;
        let mut options = match credentials {
            Some(path) => {
                let creds = std::fs::read_to_string(path).map_err(|e| nats_error(url, &e))?;
                if credentials::parse(&creds).is_none() {
                    let reason = format!("{}: not a NATS credentials file", path.display());
                    return Err(nats_error(url, &reason));
                }
                credentials::file_auth(path.to_owned())
            }
            None => ConnectOptions::new(),
        };
        options = options
            .name(format!("neocloud-agent {node}"))
            .custom_inbox_prefix(usage_stream::inbox_prefix(node))
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(10))
            .event_callback(|event| async move {
                if matches!(event, async_nats::Event::Connected) {
                    tracing::info!("Connected to NATS.");
                } else {
                    tracing::warn!(%event, "NATS connection event.");
                }
            });
        let client = options
            .connect(url)
            .await
            .map_err(|e| nats_error(url, &e))?;
        let mut jetstream = async_nats::jetstream::new(client);
        jetstream.set_timeout(ACK_WAIT);
        Ok(Self {
            jetstream,
            subject,
            compression,
        })
    }

    /// The subject this shipper publishes to.
    pub fn subject(&self) -> &str {
        &self.subject
    }
}

fn nats_error(url: &str, e: &dyn std::fmt::Display) -> ShipperError {
    ShipperError::Request {
        url: url.to_owned(),
        reason: e.to_string(),
    }
}

impl Shipper for NatsShipper {
    async fn ship(&self, batch: &Batch) -> ShipOutcome {
        let (body, encoding) = match body(batch, self.compression) {
            Ok(b) => b,
            Err(outcome) => return outcome,
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            usage_stream::MESSAGE_ID_HEADER,
            usage_stream::message_id(batch).as_str(),
        );
        if let Some(encoding) = encoding {
            headers.insert(usage_stream::ENCODING_HEADER, encoding);
        }
        let published = self
            .jetstream
            .publish_with_headers(self.subject.clone(), headers, body.into())
            .await;
        let acked = match published {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match acked {
            Ok(ack) if ack.duplicate => ShipOutcome::Duplicate,
            Ok(_) => ShipOutcome::Accepted,
            Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => ShipOutcome::TooLarge,
            Err(e) => ShipOutcome::Retry {
                reason: format!("JetStream: {e}"),
            },
        }
    }
}
