//! Usage batches over NATS JetStream (contract, docs/operations.md): where an agent
//! publishes a batch and how the message is named, shared by the agent that publishes and
//! the ingest workers that consume. The payload is the ingest v1 batch exactly as
//! `POST /v1/ingest` takes it (JSON, optionally gzip or zstd, said by `Content-Encoding`).

use crate::ids::NodeId;
use crate::ingest::Batch;

/// The stream every usage batch is stored in until an ingest worker has committed it.
pub const STREAM: &str = "USAGE";
/// Every subject of the stream starts with this; then `<region>.<node id>`.
pub const SUBJECT_PREFIX: &str = "neocloud.usage.v1";
/// The header JetStream deduplicates on within its window; the database's batch identity
/// (agent, boot, sequence) stays the authority beyond it.
pub const MESSAGE_ID_HEADER: &str = "Nats-Msg-Id";
/// The header naming the payload's compression (`gzip` or `zstd`; absent: plain JSON).
pub const ENCODING_HEADER: &str = "Content-Encoding";

/// `neocloud.usage.v1.<region>.<node>`: the one subject a node's credential may publish
/// to. None when the region cannot be one subject token (it holds a dot, a wildcard or
/// white space, or is empty).
pub fn subject(region: &str, node: NodeId) -> Option<String> {
    is_token(region).then(|| format!("{SUBJECT_PREFIX}.{region}.{node}"))
}

/// The node a message was published for, read from its subject; None for any subject
/// outside the contract.
pub fn node_of(subject: &str) -> Option<NodeId> {
    let rest = subject.strip_prefix(SUBJECT_PREFIX)?.strip_prefix('.')?;
    let (region, node) = rest.split_once('.')?;
    if !is_token(region) {
        return None;
    }
    node.parse().ok()
}

/// The inbox prefix a node's connection uses for JetStream's acknowledgements: the only
/// subjects its credential may subscribe to are below it.
pub fn inbox_prefix(node: NodeId) -> String {
    format!("_INBOX_{}", node.as_uuid().simple())
}

/// `<agent>:<boot>:<seq>`: the same batch always gets the same message id.
pub fn message_id(batch: &Batch) -> String {
    format!("{}:{}:{}", batch.agent_id, batch.boot_id, batch.seq)
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_names_its_node_and_nothing_else_parses() {
        let node = NodeId::new();
        let s = subject("eu-west", node).unwrap();
        assert_eq!(s, format!("neocloud.usage.v1.eu-west.{node}"));
        assert_eq!(node_of(&s), Some(node));
        for bad in ["eu.west", "", "eu west", "*", ">"] {
            assert_eq!(subject(bad, node), None, "{bad:?}");
        }
        for other in [
            format!("neocloud.usage.v2.eu-west.{node}"),
            format!("neocloud.usage.v1.eu-west.{node}.x"),
            "neocloud.usage.v1.eu-west.not-a-uuid".to_owned(),
            format!("neocloud.usage.v1.{node}"),
        ] {
            assert_eq!(node_of(&other), None, "{other}");
        }
    }

    #[test]
    fn inbox_prefixes_differ_per_node_and_are_one_token() {
        let (a, b) = (NodeId::new(), NodeId::new());
        assert_ne!(inbox_prefix(a), inbox_prefix(b));
        assert!(!inbox_prefix(a).contains('.'));
    }
}
