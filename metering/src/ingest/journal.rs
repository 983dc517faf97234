//! The encoding of a journaled batch (`ingest_pending.payload`): a format byte, then the
//! validated batch in postcard, compressed with zstd: under a tenth of the batch's JSON
//! (about 300 bytes for a node of 8 GPUs × 8 processes, 10.6 KB of JSON), so a journal row
//! stays inline in its table page (no TOAST), and a few microseconds to encode or decode.
//! A new format gets a new byte; rows of a format this build cannot read stay in the
//! journal (and are logged) rather than being dropped.

use std::cell::RefCell;

use neocloud_schema::ingest::Batch;
use zstd::bulk::{Compressor, Decompressor};

/// postcard of `Batch`, zstd level 1.
const FORMAT_V1: u8 = 1;
const LEVEL: i32 = 1;
/// The most a payload may claim to decompress to (far above any valid batch).
const MAX_DECODED: usize = 64 << 20;

thread_local! {
    // zstd contexts cost more to create than a batch costs to compress: one per thread.
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

pub fn encode(batch: &Batch) -> Result<Vec<u8>, String> {
    let raw = postcard::to_stdvec(batch).map_err(|e| e.to_string())?;
    let compressed = COMPRESSOR.with(|cell| match &mut *cell.borrow_mut() {
        Some(compressor) => compressor.compress(&raw),
        empty => {
            let mut compressor = Compressor::new(LEVEL)?;
            let out = compressor.compress(&raw);
            *empty = Some(compressor);
            out
        }
    });
    let compressed = compressed.map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(1 + compressed.len());
    out.push(FORMAT_V1);
    out.extend_from_slice(&compressed);
    Ok(out)
}

pub fn decode(payload: &[u8]) -> Result<Batch, String> {
    match payload.split_first() {
        Some((&FORMAT_V1, compressed)) => {
            let size = Decompressor::upper_bound(compressed)
                .ok_or("the journal payload does not record its size")?;
            if size > MAX_DECODED {
                return Err(format!("the journal payload claims {size} bytes"));
            }
            let raw = DECOMPRESSOR.with(|cell| match &mut *cell.borrow_mut() {
                Some(decompressor) => decompressor.decompress(compressed, size),
                empty => {
                    let mut decompressor = Decompressor::new()?;
                    let out = decompressor.decompress(compressed, size);
                    *empty = Some(decompressor);
                    out
                }
            });
            let raw = raw.map_err(|e| e.to_string())?;
            postcard::from_bytes(&raw).map_err(|e| e.to_string())
        }
        Some((format, _)) => Err(format!("unknown journal format {format}")),
        None => Err("empty journal payload".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_survives_the_journal_unchanged() {
        let batch: Batch = serde_json::from_value(serde_json::json!({
            "version": 1, "agent_id": "hgx-1", "boot_id": "7f1c0d9e-8d1a-4c59-9a43-0e0e3d6b2a11",
            "seq": 42,
            "window": {"start": "2026-11-30T10:00:00Z", "end": "2026-11-30T10:00:10Z"},
            "devices": [{
                "uuid": "GPU-1", "sm_util_pct": 61.25, "fb_used_bytes": 8589934592u64,
                "energy_mj": 123456789, "power_mw": 350000, "temp_c": 61, "health": "ok",
                "events": [{"kind": "xid", "code": 79, "at": "2026-11-30T10:00:03Z"}],
                "processes": [{"pid": 7, "allocation_id": "0192f3c4-1111-7000-8000-000000000001",
                    "labels": {"project": "llm"}, "sm_util_pct": 12.5, "fb_used_bytes": 1024}]
            }, {"uuid": "MIG-2", "parent_uuid": "GPU-2", "mig_profile": "1g.10gb"}]
        }))
        .expect("a batch");
        let payload = encode(&batch).expect("encodes");
        assert_eq!(payload[0], FORMAT_V1);
        assert_eq!(decode(&payload).expect("decodes"), batch);
    }

    #[test]
    fn a_node_batch_journals_in_a_fraction_of_its_json() {
        // 8 GPUs × 8 processes of one allocation with a project label, as an agent sends.
        let devices: Vec<serde_json::Value> = (0..8)
            .map(|d| {
                let processes: Vec<serde_json::Value> = (0..8)
                    .map(|p| {
                        serde_json::json!({"pid": 1000 + p,
                        "allocation_id": "0192f3c4-1111-7000-8000-000000000001",
                        "labels": {"project": format!("p{}", p % 2)},
                        "sm_util_pct": 7.5 + p as f64, "fb_used_bytes": (1u64 << 30) + p})
                    })
                    .collect();
                serde_json::json!({"uuid": format!("GPU-{d:04}-9c1e-4f7a-8d2b-5e6f7a8b9c0d"),
                    "sm_util_pct": 60.0 + d as f64, "fb_used_bytes": 8u64 << 30,
                    "energy_mj": 123_456_789 + d, "power_mw": 350_000, "temp_c": 60,
                    "health": "ok", "events": [], "processes": processes})
            })
            .collect();
        let json = serde_json::to_vec(&serde_json::json!({"version": 1, "agent_id": "hgx-0001",
            "boot_id": "7f1c0d9e-8d1a-4c59-9a43-0e0e3d6b2a11", "seq": 42,
            "window": {"start": "2026-11-30T10:00:00Z", "end": "2026-11-30T10:00:10Z"},
            "devices": devices}))
        .expect("json");
        let batch: Batch = serde_json::from_slice(&json).expect("a batch");
        let payload = encode(&batch).expect("encodes");
        assert!(
            payload.len() * 10 < json.len(),
            "{} of {}",
            payload.len(),
            json.len()
        );
        assert_eq!(decode(&payload).expect("decodes"), batch);
    }

    #[test]
    fn an_unknown_or_broken_payload_is_an_error_not_a_batch() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[9, 1, 2, 3]).is_err());
        assert!(decode(&[FORMAT_V1, 1, 2, 3]).is_err());
    }
}
