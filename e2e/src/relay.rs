//! A TCP relay between a process and a service, for tests that break the network on
//! purpose: it passes bytes both ways, can hold back the service's answers (the call
//! arrives, its answer does not), or cut the link (every connection closed, new ones
//! refused) until it is mended.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the relay does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Both ways, at once.
    Up,
    /// Requests pass; answers wait until the link is up again.
    HoldAnswers,
    /// Connections closed and refused, as by a network fault.
    Cut,
}

/// A relay to one upstream address, listening on `addr`.
pub struct Relay {
    pub addr: SocketAddr,
    link: watch::Sender<Link>,
}

impl Relay {
    pub async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (link, _) = watch::channel(Link::Up);
        let watcher = link.subscribe();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay(client, upstream, watcher.clone()));
            }
        });
        Relay { addr, link }
    }

    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }
}

async fn relay(client: TcpStream, upstream: SocketAddr, mut link: watch::Receiver<Link>) {
    if *link.borrow() == Link::Cut {
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pipe(client_read, server_write, link.clone(), false);
    let down = pipe(server_read, client_write, link.clone(), true);
    let both = async move { tokio::join!(up, down) };
    tokio::select! {
        _ = both => {}
        // Dropping both sockets closes them.
        _ = link.wait_for(|l| *l == Link::Cut) => {}
    }
}

/// Copies `from` to `to`; the answers' direction waits while they are held.
async fn pipe(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    link: watch::Receiver<Link>,
    answers: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while answers && *link.borrow() == Link::HoldAnswers {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
