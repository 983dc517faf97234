//! Outbound HTTP to URLs that tenants give us (budget webhooks). Every request to a
//! tenant-supplied URL goes through [`WebhookClient`], which keeps a tenant from making
//! the server reach into the operator's own network:
//!
//! - only `http`/`https` URLs of at most [`MAX_URL_BYTES`] bytes, without user name or
//!   password ([`check_url`], also run when the URL is set);
//! - the destination must be a public address: loopback, private, link-local,
//!   unique-local, CGNAT, multicast, unspecified, broadcast, documentation, reserved and
//!   cloud-metadata addresses are refused, also inside IPv4-mapped, IPv4-compatible,
//!   NAT64 and 6to4 IPv6 forms ([`is_public`]). Host names are checked after resolution,
//!   by the client's own resolver, and the connection goes to exactly the addresses that
//!   were checked (no second lookup, so DNS rebinding cannot slip through). A name that
//!   resolves to any refused address is refused as a whole;
//! - redirects are not followed, no proxy is used, the connection must open within
//!   [`CONNECT_TIMEOUT`] and the whole exchange end within [`TOTAL_TIMEOUT`], and at most
//!   [`MAX_RESPONSE_BYTES`] of the answer are read;
//! - the operator's allow-list (`webhook_allow_hosts`, `NEOCLOUD_WEBHOOK_ALLOW_HOSTS`)
//!   names hosts and addresses that are reachable even though they are not public: a name
//!   on the list may resolve anywhere, an address on the list may be connected to.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Url, redirect};

/// Longest accepted webhook URL.
pub const MAX_URL_BYTES: usize = 2048;
/// Time allowed to open the connection (TCP and TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Time allowed for the whole request, answer included.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes of an answer that are read; the rest is dropped unread.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// Longest host name (RFC 1035).
const MAX_HOST_BYTES: usize = 253;

/// Hosts and addresses reachable even though they are not public.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    names: HashSet<String>,
    addrs: HashSet<IpAddr>,
}

impl AllowList {
    /// Parses a comma-separated list of host names and IP addresses (empty: none).
    pub fn parse(raw: &str) -> Result<AllowList, String> {
        let mut list = AllowList::default();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bare = entry.trim_start_matches('[').trim_end_matches(']');
            if let Ok(ip) = bare.parse::<IpAddr>() {
                list.addrs.insert(canonical(ip));
            } else if is_host_name(entry) {
                list.names.insert(normalize_name(entry));
            } else {
                return Err(format!(
                    "`{entry}` is neither a host name nor an IP address"
                ));
            }
        }
        Ok(list)
    }

    fn allows_name(&self, host: &str) -> bool {
        self.names.contains(&normalize_name(host))
    }

    fn allows_addr(&self, ip: IpAddr) -> bool {
        self.addrs.contains(&canonical(ip))
    }

    /// Whether a connection to `ip`, reached through `host`, may be made.
    fn permits(&self, host: &str, ip: IpAddr) -> bool {
        is_public(ip) || self.allows_addr(ip) || self.allows_name(host)
    }
}

fn normalize_name(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn is_host_name(s: &str) -> bool {
    let s = s.trim_end_matches('.');
    !s.is_empty()
        && s.len() <= MAX_HOST_BYTES
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

/// An IPv4-mapped IPv6 address as its IPv4 address; anything else as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `ip` is a globally reachable unicast address a webhook may be sent to.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network", 0.0.0.0 included
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 169 && b == 254) // link-local, cloud metadata 169.254.169.254
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let o = ip.octets();
    let embedded_v4 = |i: usize| Ipv4Addr::new(o[i], o[i + 1], o[i + 2], o[i + 3]);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4); // ::ffff:a.b.c.d
    }
    if s[..6] == [0; 6] {
        // ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d.
        return s[6] != 0 && is_public_v4(embedded_v4(12));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded_v4(12)); // NAT64 64:ff9b::/96
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded_v4(2)); // 6to4 2002::/16
    }
    let refused = (s[0] == 0x64 && s[1] == 0xff9b) // NAT64 local use 64:ff9b:1::/48
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard 100::/64
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments, Teredo
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7, metadata fd00:ec2::254
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] & 0xe000) != 0x2000; // outside global unicast 2000::/3
    !refused
}

/// The URL's host as an IP address, if it is one (`[…]` brackets removed).
fn literal_ip(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Checks a webhook URL when it is set: an `http`/`https` URL of at most
/// [`MAX_URL_BYTES`], with a host and without credentials, whose host, if it is an IP
/// address, may be reached. Host names are checked when a request is sent.
pub fn check_url(raw: &str, allow: &AllowList) -> Result<Url, String> {
    if raw.len() > MAX_URL_BYTES || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "an http(s) URL of at most {MAX_URL_BYTES} bytes without spaces"
        ));
    }
    let url = Url::parse(raw).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http or https URL".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".into());
    }
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err("must name a host".into());
    };
    if let Some(ip) = literal_ip(&url)
        && !allow.permits(host, ip)
    {
        return Err(format!(
            "{ip} is not a public address (loopback, private, link-local and metadata addresses are refused)"
        ));
    }
    Ok(url)
}

/// Why a request was not answered.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The URL, or an address its host resolves to, may not be reached.
    #[error("refused: {0}")]
    Refused(String),
    /// The request was tried and failed (connection, timeout, TLS).
    #[error("request failed: {0}")]
    Failed(String),
}

/// A refused destination, carried through the HTTP client's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {addr}, which is not a public address")]
struct BlockedAddress {
    host: String,
    addr: IpAddr,
}

/// Resolves with the system resolver and refuses names that reach non-public addresses.
struct GuardedResolver {
    allow: Arc<AllowList>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if let Some(bad) = addrs.iter().find(|a| !allow.permits(&host, a.ip())) {
                return Err(Box::new(BlockedAddress {
                    host,
                    addr: bad.ip(),
                }) as _);
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The only client for requests to tenant-supplied URLs (see the module's rules).
#[derive(Clone)]
pub struct WebhookClient {
    client: reqwest::Client,
    allow: Arc<AllowList>,
}

impl std::fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient")
            .field("allow", &self.allow)
            .finish()
    }
}

impl WebhookClient {
    pub fn new(allow: AllowList) -> WebhookClient {
        Self::with_timeouts(allow, CONNECT_TIMEOUT, TOTAL_TIMEOUT)
    }

    /// With other timeouts (tests).
    pub fn with_timeouts(allow: AllowList, connect: Duration, total: Duration) -> WebhookClient {
        let allow = Arc::new(allow);
        let client = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .no_proxy()
            .connect_timeout(connect)
            .timeout(total)
            .dns_resolver(Arc::new(GuardedResolver {
                allow: allow.clone(),
            }))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        WebhookClient { client, allow }
    }

    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }

    /// POSTs `body` as JSON with `headers`; returns the answer's status code and the
    /// first [`ANSWER_HEAD_BYTES`] of its body once at most [`MAX_RESPONSE_BYTES`] of the
    /// body are read. A redirect is returned, not followed.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Answer, OutboundError> {
        let url = check_url(url, &self.allow).map_err(OutboundError::Refused)?;
        let mut request = self
            .client
            .post(url)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.body(body).send().await.map_err(failure)?;
        let status = response.status().as_u16();
        let mut head = Vec::new();
        let mut read = 0;
        while read < MAX_RESPONSE_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = ANSWER_HEAD_BYTES.saturating_sub(head.len());
                    head.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    read += chunk.len();
                }
                Ok(None) => break,
                Err(err) => return Err(failure(err)),
            }
        }
        Ok(Answer { status, head })
    }
}

/// Bytes of an answer's body kept for the delivery log.
pub const ANSWER_HEAD_BYTES: usize = 512;

/// What a receiver answered.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The first [`ANSWER_HEAD_BYTES`] of the body.
    pub head: Vec<u8>,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A client error as a refusal (the resolver refused the host) or a failure.
fn failure(err: reqwest::Error) -> OutboundError {
    let mut source: Option<&(dyn std::error::Error + 'static)> =
        Some(&err as &(dyn std::error::Error + 'static));
    while let Some(cause) = source {
        if let Some(blocked) = cause.downcast_ref::<BlockedAddress>() {
            return OutboundError::Refused(blocked.to_string());
        }
        source = cause.source();
    }
    let kind = if err.is_timeout() {
        "timed out"
    } else if err.is_connect() {
        "could not connect"
    } else {
        "error"
    };
    OutboundError::Failed(format!("{kind}: {err}"))
}

#[cfg(test)]
mod tests;
