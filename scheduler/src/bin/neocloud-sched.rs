//! `neocloud-sched`: replays workload traces against the placement policies.

fn main() {
    eprintln!("neocloud-sched: replay is not built yet");
    std::process::exit(2);
}
