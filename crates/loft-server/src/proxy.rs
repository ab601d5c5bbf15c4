//! The client behind a load balancer: connections from a trusted proxy (`--trusted-proxy
//! CIDR`) may open with a PROXY protocol v2 header and their requests may carry
//! `X-Forwarded-For`; from anyone else both are ignored, so that a client cannot choose
//! the address per-client limits and `aws:SourceIp` conditions see.
//!
//! - **PROXY protocol v2** (HAProxy's "The PROXY protocol", version 2, section 2.2): a
//!   16-byte head (the 12-byte signature, version and command, family and protocol, the
//!   length of what follows) and the addresses. `PROXY` over TCP/IPv4 or TCP/IPv6 names
//!   the client (source address and port); `LOCAL` (the balancer's own health checks) and
//!   other families keep the connection's address. TLVs are skipped.
//!   PROXY protocol version 1 (the text form) is not read: a trusted proxy's connection
//!   that opens with it is served as HTTP and fails as a malformed request.
//! - **`X-Forwarded-For`** (MDN, "X-Forwarded-For"; each proxy appends the address it got
//!   the request from): read right to left, skipping trusted proxies; the first address
//!   that is not one is the client. When every entry is trusted, the leftmost is. It names
//!   the client of one request (`aws:SourceIp`), not of the connection: the per-address
//!   connection limit counts a connection by its PROXY header's client, or by its peer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use axum::http::HeaderMap;
use ipnet::IpNet;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The PROXY protocol v2 signature: the first 12 bytes of its header.
pub const PROXY_V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// Most bytes after the 16-byte head Loft reads (addresses and TLVs; the protocol allows
/// 65,535, balancers send well under a kilobyte).
pub const MAX_PROXY_V2_BODY: usize = 4096;

/// The proxies whose PROXY headers and `X-Forwarded-For` are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(pub Vec<IpNet>);

impl TrustedProxies {
    /// Whether `ip` (an IPv4-mapped IPv6 address as its IPv4 address) is in a trusted range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// Whether no proxy is trusted (the default).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The client of a request that came from `peer` with `headers`: `peer` unless it is
    /// trusted and the request carries `X-Forwarded-For` (every such header, in order), then
    /// the rightmost entry that is not a trusted proxy (see the module documentation). An
    /// entry that is no address (`unknown`, an obfuscated name) ends the walk at the hop
    /// to its right.
    /// The answer is canonical: an IPv4-mapped IPv6 address is given as its IPv4 address,
    /// as IAM's `IpAddress` conditions on IPv4 ranges expect.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        let entries: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        let mut client = peer;
        for entry in entries.iter().rev() {
            let Some(ip) = forwarded_ip(entry) else {
                break;
            };
            client = ip.to_canonical();
            if !self.contains(client) {
                break;
            }
        }
        client
    }
}

/// A `--trusted-proxy` value: a CIDR range (`10.0.0.0/8`, `2001:db8::/32`; host bits are
/// cleared) or one address (`10.1.2.3`, as `/32` or `/128`).
///
/// Errors: neither an address nor `ADDRESS/PREFIX` with a prefix the family allows.
pub fn parse_cidr(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    match loft_core::cidr::parse(text) {
        // One address: an IPv4-mapped IPv6 address stands for its IPv4 address.
        Some(net) if net.prefix_len() == net.max_prefix_len() => {
            Ok(IpNet::from(net.addr().to_canonical()))
        }
        Some(net) => Ok(net.trunc()),
        None => Err(format!(
            "{text:?} is not an IP address or CIDR range (e.g. 10.0.0.0/8)"
        )),
    }
}

/// The address of one `X-Forwarded-For` entry: `IP`, `IPv4:port`, `[IPv6]` or
/// `[IPv6]:port`.
fn forwarded_ip(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(sa) = entry.parse::<SocketAddr>() {
        return Some(sa.ip());
    }
    entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .and_then(|e| e.parse::<Ipv6Addr>().ok())
        .map(IpAddr::V6)
}

/// What a PROXY protocol v2 header said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyHeader {
    /// `PROXY` over TCP: the client's address and port.
    Client(SocketAddr),
    /// `LOCAL`, or an address family Loft does not use (UNIX, UDP, unspecified): the
    /// connection's own address stands.
    Local,
}

/// The length of what follows a PROXY v2 `head` (its last two bytes), or why `head` is
/// no PROXY v2 head.
///
/// Errors: the signature, the version (2) or the command (`LOCAL`, `PROXY`) is wrong, or
/// the length is over [`MAX_PROXY_V2_BODY`].
pub fn proxy_v2_len(head: &[u8; 16]) -> Result<usize, String> {
    if head[..12] != PROXY_V2_SIGNATURE {
        return Err("not a PROXY protocol v2 signature".into());
    }
    if head[12] >> 4 != 2 {
        return Err(format!("PROXY protocol version {} (not 2)", head[12] >> 4));
    }
    if head[12] & 0x0f > 1 {
        return Err(format!("PROXY protocol command {}", head[12] & 0x0f));
    }
    let len = u16::from_be_bytes([head[14], head[15]]) as usize;
    if len > MAX_PROXY_V2_BODY {
        return Err(format!("PROXY protocol header of {len} bytes"));
    }
    Ok(len)
}

/// Reads a PROXY v2 `head` (16 bytes, checked by [`proxy_v2_len`]) and its `body`.
///
/// Errors: as [`proxy_v2_len`], and a body too short for its family's addresses.
pub fn parse_proxy_v2(head: &[u8; 16], body: &[u8]) -> Result<ProxyHeader, String> {
    let len = proxy_v2_len(head)?;
    if body.len() != len {
        return Err(format!(
            "PROXY protocol body of {} bytes, not {len}",
            body.len()
        ));
    }
    if head[12] & 0x0f == 0 {
        return Ok(ProxyHeader::Local);
    }
    let short = || "PROXY protocol addresses cut short".to_owned();
    match head[13] {
        // TCP over IPv4: source, destination (4 bytes each), source port, destination port.
        0x11 => {
            let b = body.get(..12).ok_or_else(short)?;
            let ip = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            let port = u16::from_be_bytes([b[8], b[9]]);
            Ok(ProxyHeader::Client(SocketAddr::new(ip.into(), port)))
        }
        // TCP over IPv6: 16-byte addresses.
        0x21 => {
            let b = body.get(..36).ok_or_else(short)?;
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&b[..16]);
            let port = u16::from_be_bytes([b[32], b[33]]);
            Ok(ProxyHeader::Client(SocketAddr::new(
                Ipv6Addr::from(octets).into(),
                port,
            )))
        }
        _ => Ok(ProxyHeader::Local),
    }
}

/// Reads the PROXY v2 header a connection from a trusted proxy opens with, if it does:
/// the first byte tells (the signature starts with `\r`, which neither an HTTP request
/// nor a TLS record does); nothing is consumed otherwise. The first byte may take `idle`
/// (a balancer may open a connection before it has a request for it), the header
/// `timeout` from then on.
///
/// Errors: a header that does not parse, a connection that closes, fails or stalls in it;
/// no first byte within `idle`.
pub async fn read_proxy_v2(
    stream: &mut TcpStream,
    idle: Duration,
    timeout: Duration,
) -> Result<Option<ProxyHeader>, String> {
    let mut first = [0u8; 1];
    let n = tokio::time::timeout(idle, stream.peek(&mut first))
        .await
        .map_err(|_| "no request in time".to_owned())?
        .map_err(|e| e.to_string())?;
    if n == 0 || first[0] != PROXY_V2_SIGNATURE[0] {
        return Ok(None);
    }
    let work = async {
        let mut head = [0u8; 16];
        stream
            .read_exact(&mut head)
            .await
            .map_err(|e| format!("PROXY protocol header: {e}"))?;
        let mut body = vec![0u8; proxy_v2_len(&head)?];
        stream
            .read_exact(&mut body)
            .await
            .map_err(|e| format!("PROXY protocol header: {e}"))?;
        parse_proxy_v2(&head, &body).map(Some)
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| Err("no PROXY protocol header in time".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(cmd: u8, fam: u8, len: u16) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[..12].copy_from_slice(&PROXY_V2_SIGNATURE);
        h[12] = 0x20 | cmd;
        h[13] = fam;
        h[14..].copy_from_slice(&len.to_be_bytes());
        h
    }

    #[test]
    fn proxy_v2_tcp4_and_tcp6_name_the_client() {
        let body4 = [203, 0, 113, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x23, 0x84];
        assert_eq!(
            parse_proxy_v2(&head(1, 0x11, 12), &body4),
            Ok(ProxyHeader::Client("203.0.113.7:8080".parse().unwrap()))
        );
        let mut body6 = vec![0u8; 36];
        body6[..16].copy_from_slice(&"2001:db8::5".parse::<Ipv6Addr>().unwrap().octets());
        body6[32..34].copy_from_slice(&443u16.to_be_bytes());
        // TLVs after the addresses are skipped.
        body6.extend_from_slice(&[0x04, 0x00, 0x01, 0xaa]);
        assert_eq!(
            parse_proxy_v2(&head(1, 0x21, 40), &body6),
            Ok(ProxyHeader::Client("[2001:db8::5]:443".parse().unwrap()))
        );
    }

    #[test]
    fn proxy_v2_local_and_other_families_keep_the_connection_address() {
        assert_eq!(
            parse_proxy_v2(&head(0, 0x00, 0), &[]),
            Ok(ProxyHeader::Local)
        );
        assert_eq!(
            parse_proxy_v2(&head(1, 0x31, 4), &[0; 4]),
            Ok(ProxyHeader::Local),
            "AF_UNIX"
        );
    }

    #[test]
    fn bad_proxy_v2_headers_are_refused() {
        let mut h = head(1, 0x11, 12);
        h[3] = b'x';
        assert!(proxy_v2_len(&h).is_err(), "signature");
        let mut h = head(1, 0x11, 12);
        h[12] = 0x11;
        assert!(proxy_v2_len(&h).is_err(), "version 1");
        assert!(proxy_v2_len(&head(2, 0x11, 12)).is_err(), "command 2");
        assert!(proxy_v2_len(&head(1, 0x11, 5000)).is_err(), "too long");
        assert!(
            parse_proxy_v2(&head(1, 0x11, 8), &[0; 8]).is_err(),
            "cut short"
        );
        assert!(
            parse_proxy_v2(&head(1, 0x11, 12), &[0; 11]).is_err(),
            "length"
        );
    }

    #[test]
    fn forwarded_for_is_read_right_to_left_from_trusted_proxies_only() {
        let trusted = TrustedProxies(vec!["10.0.0.0/8".parse().unwrap()]);
        let mut h = HeaderMap::new();
        h.append(
            "x-forwarded-for",
            "198.51.100.1, 203.0.113.9".parse().unwrap(),
        );
        h.append("x-forwarded-for", "10.1.1.1:3456".parse().unwrap());
        let proxy: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(
            trusted.client(proxy, &h),
            "203.0.113.9".parse::<IpAddr>().unwrap(),
            "the first untrusted hop from the right; the client's own claim is ignored"
        );
        let stranger: IpAddr = "192.0.2.4".parse().unwrap();
        assert_eq!(trusted.client(stranger, &h), stranger, "untrusted peer");
        let mut all = HeaderMap::new();
        all.insert(
            "x-forwarded-for",
            "10.2.2.2, [::ffff:10.3.3.3]".parse().unwrap(),
        );
        assert_eq!(
            trusted.client(proxy, &all),
            "10.2.2.2".parse::<IpAddr>().unwrap(),
            "every hop trusted: the leftmost"
        );
        let mut junk = HeaderMap::new();
        junk.insert("x-forwarded-for", "unknown, 10.4.4.4".parse().unwrap());
        assert_eq!(
            trusted.client(proxy, &junk),
            "10.4.4.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(trusted.client(proxy, &HeaderMap::new()), proxy);
    }

    #[test]
    fn trusted_proxy_values_are_ranges_or_single_addresses() {
        assert_eq!(parse_cidr("10.0.0.0/8"), Ok("10.0.0.0/8".parse().unwrap()));
        assert_eq!(parse_cidr("10.1.2.3/8"), Ok("10.0.0.0/8".parse().unwrap()));
        assert_eq!(parse_cidr(" 10.1.2.3 "), Ok("10.1.2.3/32".parse().unwrap()));
        assert_eq!(
            parse_cidr("2001:db8::1"),
            Ok("2001:db8::1/128".parse().unwrap())
        );
        for bad in ["", "10.0.0.0/33", "example.com", "10.0.0/8", "::/129"] {
            assert!(parse_cidr(bad).is_err(), "{bad:?}");
        }
        let trusted = TrustedProxies(vec![parse_cidr("127.0.0.1").unwrap()]);
        assert!(
            trusted.contains("::ffff:127.0.0.1".parse().unwrap()),
            "IPv4-mapped"
        );
        assert!(!trusted.contains("127.0.0.2".parse().unwrap()));
    }

    #[test]
    fn the_client_is_canonical() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client("::ffff:192.0.2.1".parse().unwrap(), &HeaderMap::new()),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
    }

    /// Every cut and every one-byte change of valid headers, and pseudo-random bytes
    /// behind the signature: each is parsed or refused, never a panic.
    #[test]
    fn malformed_proxy_v2_headers_never_panic() {
        let mut samples: Vec<Vec<u8>> = Vec::new();
        let mut v4 = head(1, 0x11, 12).to_vec();
        v4.extend_from_slice(&[203, 0, 113, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x23, 0x84]);
        let mut v6 = head(1, 0x21, 36).to_vec();
        v6.extend_from_slice(&[7; 36]);
        for valid in [v4, v6, head(0, 0, 0).to_vec()] {
            for cut in 0..=valid.len() {
                samples.push(valid[..cut].to_vec());
            }
            for at in 0..valid.len() {
                for byte in [0x00, 0x01, 0x0f, 0x10, 0x20, 0x21, 0x7f, 0xff] {
                    let mut s = valid.clone();
                    s[at] = byte;
                    samples.push(s);
                }
            }
        }
        // xorshift: the same bytes every run.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5_000 {
            let mut s = PROXY_V2_SIGNATURE.to_vec();
            for _ in 0..(x % 64) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(x as u8);
            }
            samples.push(s);
        }
        for s in samples {
            let Some(h) = s.get(..16) else { continue };
            let h: [u8; 16] = h.try_into().unwrap();
            let _ = proxy_v2_len(&h);
            let _ = parse_proxy_v2(&h, &s[16..]);
        }
    }

    /// A pair of connected sockets: what the client writes arrives on the server's.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (client.unwrap(), accepted.unwrap().0)
    }

    #[tokio::test]
    async fn a_header_is_read_off_the_stream_and_the_request_behind_it_stays() {
        use tokio::io::AsyncWriteExt;
        let secs = Duration::from_secs(5);
        let (mut client, mut server) = pair().await;
        let mut bytes = head(1, 0x11, 12).to_vec();
        bytes.extend_from_slice(&[203, 0, 113, 7, 10, 0, 0, 1, 0x1f, 0x90, 0x23, 0x84]);
        bytes.extend_from_slice(b"GET / HTTP/1.1\r\n");
        client.write_all(&bytes).await.unwrap();
        assert_eq!(
            read_proxy_v2(&mut server, secs, secs).await,
            Ok(Some(ProxyHeader::Client(
                "203.0.113.7:8080".parse().unwrap()
            )))
        );
        let mut rest = [0u8; 16];
        server.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"GET / HTTP/1.1\r\n");

        // No header: nothing consumed.
        let (mut client, mut server) = pair().await;
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        assert_eq!(read_proxy_v2(&mut server, secs, secs).await, Ok(None));
        server.read_exact(&mut rest).await.unwrap();
        assert_eq!(&rest, b"GET / HTTP/1.1\r\n");

        // A header cut short by the proxy closing, or one that stalls: refused in time.
        let (mut client, mut server) = pair().await;
        client.write_all(&bytes[..10]).await.unwrap();
        drop(client);
        assert!(read_proxy_v2(&mut server, secs, secs).await.is_err());
        let (mut client, mut server) = pair().await;
        client.write_all(&bytes[..20]).await.unwrap();
        let short = Duration::from_millis(100);
        assert_eq!(
            read_proxy_v2(&mut server, secs, short).await,
            Err("no PROXY protocol header in time".into())
        );
        drop(client);
    }
}
