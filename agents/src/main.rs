//! neocloud-agent: runs on every GPU host, samples NVML (or a simulated fleet), appends
//! batches to a crash-safe spool and ships them to `POST /v1/ingest`.
//!
//! Not built yet: the host agent issue fills this crate. It exits with an error rather
//! than pretending to sample.

fn main() {
    eprintln!("neocloud-agent: the host agent is not built yet");
    std::process::exit(2);
}
