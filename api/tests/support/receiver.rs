//! A webhook receiver for tests: a plain HTTP/1.1 listener on loopback that keeps every
//! POST and answers the statuses it is told to, and the Standard Webhooks check written
//! from the specification (not the server's code).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One request as the receiver got it: its path, lower-cased headers and the body.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

#[derive(Clone, Default)]
pub struct Receiver {
    pub got: Arc<Mutex<Vec<Received>>>,
    /// Statuses to answer, in turn (0: never answer, holding the connection open); 200
    /// once they run out.
    pub answers: Arc<Mutex<Vec<u16>>>,
}

impl Receiver {
    pub fn got(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }
}

/// Reads one HTTP/1.1 request (head and `content-length` body) from `socket`.
pub async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let headers: HashMap<String, String> = text[..end]
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            let body = data[end + 4..end + 4 + length].to_vec();
            let path = text.split(' ').nth(1).unwrap_or("").to_owned();
            return Some(Received {
                path,
                headers,
                body,
            });
        }
    }
}

pub async fn receiver() -> (String, Receiver) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hooks", listener.local_addr().expect("addr"));
    let recv = Receiver::default();
    let state = recv.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let state = state.clone();
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else {
                    return;
                };
                let status = {
                    let mut answers = state.answers.lock().expect("lock");
                    if answers.is_empty() {
                        200
                    } else {
                        answers.remove(0)
                    }
                };
                state.got.lock().expect("lock").push(request);
                if status == 0 {
                    return std::future::pending::<()>().await;
                }
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 7\r\nconnection: close\r\n\r\nthanks!"
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, recv)
}

/// Standard Webhooks, from the specification: the key is the base64 after `whsec_`; the
/// signed content is `id.timestamp.body`; `webhook-signature` lists `v1,<base64>` values
/// separated by spaces, any of which may match.
pub fn verifies(secret: &str, r: &Received) -> bool {
    let key = STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .expect("a base64 secret");
    let (Some(id), Some(ts), Some(sigs)) = (
        r.headers.get("webhook-id"),
        r.headers.get("webhook-timestamp"),
        r.headers.get("webhook-signature"),
    ) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("key");
    mac.update(format!("{id}.{ts}.").as_bytes());
    mac.update(&r.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    sigs.split(' ').any(|s| s == expected)
}

pub fn body(r: &Received) -> Value {
    serde_json::from_slice(&r.body).expect("a JSON body")
}

/// Waits (bounded) until the receiver holds `n` requests.
pub async fn wait_for(recv: &Receiver, n: usize) -> Vec<Received> {
    for _ in 0..100 {
        let got = recv.got();
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the receiver got {} of {n} deliveries", recv.got().len());
}
