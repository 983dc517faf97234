//! Telemetry: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `neocloud serve` exports its request
//! spans over OTLP/HTTP (flushed at shutdown at the latest). The collector here is a bare
//! TCP listener that records what arrives and answers 200.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn neocloud_binary() -> PathBuf {
    neocloud_e2e::binary("neocloud", "neocloud-api")
}

/// Accepts connections and sends the request head of each to `tx`.
fn collector(listener: TcpListener, tx: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = vec![0u8; 1 << 16];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or("")
                .to_owned();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = tx.send(head);
        }
    });
}

#[test]
fn request_spans_are_exported_over_otlp() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind collector");
    let otlp = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    collector(listener, tx);

    let dir = tempfile::tempdir().expect("tempdir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut server = Command::new(neocloud_binary())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--database-url")
        .arg(format!(
            "sqlite://{}/otel.db?mode=rwc",
            dir.path().display()
        ))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn neocloud serve");

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ready = false;
    while Instant::now() < deadline && !ready {
        ready = std::net::TcpStream::connect(("127.0.0.1", port))
            .and_then(|mut s| {
                s.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")?;
                let mut out = String::new();
                s.read_to_string(&mut out)?;
                Ok(out.starts_with("HTTP/1.1 200"))
            })
            .unwrap_or(false);
        if !ready {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert!(ready, "neocloud serve did not answer /healthz");
    // Graceful stop: the exporter flushes its batch on shutdown.
    let status = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let exited = server.wait().expect("wait");
    assert!(exited.success(), "neocloud serve exited with {exited}");
    let head = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("an OTLP export arrived");
    assert!(head.starts_with("POST /v1/traces"), "{head}");
}
