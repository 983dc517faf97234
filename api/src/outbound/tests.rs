use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("an address")
}

#[test]
fn non_public_addresses_are_refused_in_every_form() {
    for refused in [
        "127.0.0.1",
        "127.255.0.9",
        "10.0.0.1",
        "172.16.5.4",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "169.254.0.1",
        "100.64.0.1",
        "100.127.255.254",
        "0.0.0.0",
        "0.1.2.3",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.0.192",
        "192.0.2.10",
        "198.18.0.1",
        "198.51.100.7",
        "203.0.113.9",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.1.2.3",
        "::ffff:169.254.169.254",
        "::ffff:192.168.0.1",
        "::ffff:100.64.0.1",
        "::ffff:0.0.0.0",
        "::ffff:255.255.255.255",
        "::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::",
        "fd00:ec2::254",
        "fc00::1",
        "fe80::1",
        "fec0::1",
        "ff02::1",
        "2001:db8::1",
        "2001::1",
        "100::1",
    ] {
        assert!(!is_public(ip(refused)), "{refused} must be refused");
    }
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "100.128.0.1",
        "::ffff:8.8.8.8",
        "2606:4700:4700::1111",
        "2a00:1450:4001::200e",
        "64:ff9b::808:808",
    ] {
        assert!(is_public(ip(public)), "{public} is public");
    }
}

#[test]
fn a_webhook_url_is_checked_when_it_is_set() {
    let none = AllowList::default();
    for (url, why) in [
        ("ftp://example.com/x", "http or https"),
        ("file:///etc/passwd", "http or https"),
        ("https://user:pw@example.com/", "user name or password"),
        ("https://user@example.com/", "user name or password"),
        ("http://127.0.0.1:8080/", "not a public address"),
        ("http://2130706433/", "not a public address"),
        ("http://0x7f.1/", "not a public address"),
        ("http://10.0.0.8/", "not a public address"),
        (
            "http://169.254.169.254/latest/meta-data",
            "not a public address",
        ),
        ("http://[::1]:9000/", "not a public address"),
        ("http://[::ffff:7f00:1]/", "not a public address"),
        ("http://[fd00:ec2::254]/", "not a public address"),
        ("not a url", "without spaces"),
    ] {
        let err = check_url(url, &none).expect_err(url);
        assert!(err.contains(why), "{url}: {err}");
    }
    let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
    assert!(check_url(&long, &none).is_err());
    // Host names are resolved and checked when a request is sent.
    assert!(check_url("https://hooks.example.com/budget", &none).is_ok());
    assert!(check_url("http://localhost:9000/", &none).is_ok());
    let allow = AllowList::parse("127.0.0.1, [::1]").expect("parses");
    assert!(check_url("http://127.0.0.1:8080/", &allow).is_ok());
    assert!(check_url("http://[::1]:8080/", &allow).is_ok());
    assert!(check_url("http://[::ffff:127.0.0.1]:8080/", &allow).is_ok());
    assert!(check_url("http://10.0.0.8/", &allow).is_err());
}

#[test]
fn the_allow_list_takes_names_and_addresses_only() {
    assert!(AllowList::parse("").is_ok());
    assert!(AllowList::parse("hooks.internal, 10.0.0.5,::1,").is_ok());
    assert!(AllowList::parse("http://x").is_err());
    assert!(AllowList::parse("a b").is_err());
    assert!(AllowList::parse("10.0.0.0/8").is_err());
}

/// A local listener that counts connections and answers each with `answer`, after
/// `delay`.
async fn listener(answer: &'static [u8], delay: Duration) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = socket.read(&mut buf).await;
                tokio::time::sleep(delay).await;
                let _ = socket.write_all(answer).await;
            });
        }
    });
    (addr, count)
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

fn loopback() -> AllowList {
    AllowList::parse("127.0.0.1").expect("parses")
}

#[tokio::test]
async fn a_webhook_to_a_loopback_address_or_name_is_refused_without_reaching_it() {
    let (addr, count) = listener(OK, Duration::ZERO).await;
    let client = WebhookClient::new(AllowList::default());
    for url in [
        format!("http://{addr}/hook"),
        format!("http://localhost:{}/hook", addr.port()),
        format!("http://[::ffff:127.0.0.1]:{}/hook", addr.port()),
    ] {
        let err = client
            .post_json(&url, &[], b"{}".to_vec())
            .await
            .expect_err("refused");
        assert!(matches!(err, OutboundError::Refused(_)), "{url}: {err}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(count.load(Ordering::SeqCst), 0, "a request reached it");
}

#[tokio::test]
async fn an_allow_listed_host_is_reached() {
    let (addr, count) = listener(OK, Duration::ZERO).await;
    let status = WebhookClient::new(loopback())
        .post_json(&format!("http://{addr}/hook"), &[], b"{}".to_vec())
        .await
        .expect("delivered")
        .status;
    assert_eq!(status, 200);
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let by_name = AllowList::parse("localhost").expect("parses");
    let status = WebhookClient::new(by_name)
        .post_json(
            &format!("http://localhost:{}/hook", addr.port()),
            &[],
            b"{}".to_vec(),
        )
        .await
        .expect("delivered by name")
        .status;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (target, reached) = listener(OK, Duration::ZERO).await;
    let answer = format!(
        "HTTP/1.1 302 Found\r\nlocation: http://{target}/stolen\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let (addr, _) = listener(answer.leak().as_bytes(), Duration::ZERO).await;
    let status = WebhookClient::new(loopback())
        .post_json(&format!("http://{addr}/hook"), &[], b"{}".to_vec())
        .await
        .expect("answered")
        .status;
    assert_eq!(status, 302);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

#[tokio::test]
async fn a_slow_receiver_times_out() {
    let (addr, _) = listener(OK, Duration::from_secs(30)).await;
    let client = WebhookClient::with_timeouts(
        loopback(),
        Duration::from_millis(500),
        Duration::from_millis(800),
    );
    let started = Instant::now();
    let err = client
        .post_json(&format!("http://{addr}/hook"), &[], b"{}".to_vec())
        .await
        .expect_err("timed out");
    assert!(
        matches!(err, OutboundError::Failed(ref m) if m.contains("timed out")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_endless_answer_is_read_only_up_to_the_bound() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                let _ = socket.read(&mut buf).await;
                let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head).await.is_err() {
                    return;
                }
                let chunk = format!("4000\r\n{}\r\n", "x".repeat(0x4000));
                while socket.write_all(chunk.as_bytes()).await.is_ok() {}
            });
        }
    });
    let client =
        WebhookClient::with_timeouts(loopback(), Duration::from_secs(1), Duration::from_secs(5));
    let started = Instant::now();
    let status = client
        .post_json(&format!("http://{addr}/hook"), &[], b"{}".to_vec())
        .await
        .expect("answered")
        .status;
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "read past the bound"
    );
}
