//! Posting bodies to a server the way a load generator does.
#![allow(dead_code)] // not every benchmark posts over HTTP

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A poster's keep-alive HTTP/1.1 connection, as lean as a load generator can be (as `wrk`
/// is): the request is written whole, the answer read by its `Content-Length`. The
/// posters share the machine with the server, so their CPU is kept out of its way.
pub struct Connection {
    stream: BufReader<TcpStream>,
    host: String,
}

impl Connection {
    pub async fn open(url: &str) -> Connection {
        let host = url.trim_start_matches("http://").to_owned();
        let stream = TcpStream::connect(&host).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Connection {
            stream: BufReader::new(stream),
            host,
        }
    }

    /// POSTs `body` to `path`; returns the answer's status and body.
    pub async fn post(&mut self, path: &str, token: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.host,
            body.len()
        );
        let mut request = Vec::with_capacity(head.len() + body.len());
        request.extend_from_slice(head.as_bytes());
        request.extend_from_slice(body);
        self.stream
            .get_mut()
            .write_all(&request)
            .await
            .expect("write");
        let mut line = String::new();
        self.stream.read_line(&mut line).await.expect("status line");
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("HTTP status");
        let mut length = 0;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await.expect("header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().expect("content-length");
            }
        }
        let mut answer = vec![0; length];
        self.stream.read_exact(&mut answer).await.expect("body");
        (status, answer)
    }
}

/// Posts every poster's share of `bodies` to `url` + `path` (`token` for ours), each poster
/// waiting for each answer; returns the samples of batches answered `accepted`.
pub async fn post_all(
    url: &str,
    path: &str,
    work: &Arc<Vec<(String, Vec<u8>, usize)>>,
    posters: usize,
    batches: usize,
) -> usize {
    let mut tasks = Vec::new();
    for p in 0..posters {
        let (url, path, work) = (url.to_owned(), path.to_owned(), work.clone());
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(&url).await;
            let mut durable = 0usize;
            // Per node in order (as agents ship), nodes spread over posters.
            for (i, (token, body, samples)) in work.iter().enumerate() {
                if (i / batches) % posters != p {
                    continue;
                }
                let (status, answer) = connection.post(&path, token, body).await;
                let answer: Value = serde_json::from_slice(&answer).expect("json");
                if status == 200 && answer["status"] == "accepted" {
                    durable += samples;
                }
            }
            durable
        }));
    }
    let mut durable = 0;
    for task in tasks {
        durable += task.await.expect("poster");
    }
    durable
}
