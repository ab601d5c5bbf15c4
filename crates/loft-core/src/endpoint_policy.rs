//! The SNS endpoint policy: which IP addresses HTTP/S subscriptions may reach.
//!
//! An SNS HTTP/S subscription makes Loft POST to a URL a caller chose, so without a policy
//! anyone who may call Subscribe can make Loft reach cloud metadata services
//! (`169.254.169.254`, `fd00:ec2::254`) or services on Loft's private network (server-side
//! request forgery). The policy is two lists of CIDR ranges:
//!
//! - **deny**: [`DEFAULT_DENY`] (link-local, the cloud metadata addresses, "this network")
//!   plus whatever is configured (`--sns-deny-cidr`; [`PRIVATE_RANGES`] for production);
//! - **allow**: configured exceptions (`--sns-allow-cidr`), which win over deny.
//!
//! An address is permitted when an allow range holds it or no deny range does. IPv4
//! addresses written as IPv6 (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
//! NAT64 `64:ff9b::a.b.c.d`) are
//! checked in both forms, and both must be permitted.
//!
//! Subscribe checks endpoints whose host is an IP literal ([`EndpointPolicy::check_url`]);
//! the delivery workers check every address a host name resolves to before each attempt and
//! connect only to permitted ones (`loft_server::delivery`), so a name that resolves (or
//! later re-resolves) to a denied address is refused too.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::cidr::{self, IpNet};

/// Ranges every policy denies unless explicitly allowed: IPv4 and IPv6 link-local (where
/// the AWS, Azure, GCP, OCI and DigitalOcean metadata services live), AWS's IPv6 metadata
/// address, Alibaba Cloud's metadata address, and the unspecified "this host" addresses
/// (a connection to `0.0.0.0` reaches the local host on Linux).
pub const DEFAULT_DENY: &[&str] = &[
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::254/128",
    "100.100.100.200/32",
    "0.0.0.0/8",
    "::/128",
];

/// Private and loopback ranges: what a production deployment denies
/// (`--sns-deny-private`): RFC 1918, carrier-grade NAT (RFC 6598), loopback, IPv6
/// unique-local and loopback.
pub const PRIVATE_RANGES: &[&str] = &[
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "::1/128",
    "fc00::/7",
];

/// An IP range: an address and a prefix length (`10.0.0.0/8`, `fe80::/10`), written
/// without host bits (see [`crate::cidr`], which parses and matches it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr(IpNet);

/// Why a CIDR string did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CidrError(pub String);

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CidrError {}

impl FromStr for Cidr {
    type Err = CidrError;

    /// Parses `ADDR/PREFIX` or a bare address (a /32 or /128). Host bits set below the
    /// prefix are an error (`10.0.0.1/8`), so a typo does not silently widen a range.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let net = cidr::parse(s).ok_or_else(|| {
            CidrError(format!(
                "{s:?} is not an IP address or CIDR range (ADDRESS/PREFIX, the prefix 0 to 32 for IPv4, 0 to 128 for IPv6)"
            ))
        })?;
        if cidr::has_host_bits(&net) {
            return Err(CidrError(format!(
                "{s:?} has host bits set; the range is {}",
                net.trunc()
            )));
        }
        Ok(Cidr(net))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0.addr(), self.0.prefix_len())
    }
}

impl Cidr {
    /// The range's first address (the address with the host bits cleared).
    pub fn network(&self) -> IpAddr {
        self.0.network()
    }

    /// Whether `ip` is in the range. An IPv4 range never holds an IPv6 address and the
    /// other way round; see [`EndpointPolicy::permits`] for IPv4 written as IPv6.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.contains(&ip)
    }
}

/// The IPv4 address an IPv6 address stands for, when it is IPv4-mapped (`::ffff:0:0/96`),
/// IPv4-compatible (`::a.b.c.d`, RFC 4291 section 2.5.5.1, deprecated but still parsed and
/// routed by some systems; not `::` nor `::1`) or NAT64 well-known-prefix (`64:ff9b::/96`,
/// RFC 6052).
pub fn embedded_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    if s[..6] == [0, 0, 0, 0, 0, 0] && u128::from(ip) > 1 {
        return Some(Ipv4Addr::from(u128::from(ip) as u32));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let bits = u128::from(ip) as u32;
        return Some(Ipv4Addr::from(bits));
    }
    None
}

/// Which addresses SNS HTTP/S deliveries may reach (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPolicy {
    deny: Vec<Cidr>,
    allow: Vec<Cidr>,
}

impl Default for EndpointPolicy {
    /// [`DEFAULT_DENY`], no exceptions: loopback and private ranges are reachable, which
    /// local development needs.
    fn default() -> Self {
        EndpointPolicy::new(Vec::new(), Vec::new())
    }
}

impl EndpointPolicy {
    /// [`DEFAULT_DENY`] plus `deny`, with `allow` as exceptions that win over both.
    pub fn new(deny: Vec<Cidr>, allow: Vec<Cidr>) -> Self {
        let mut all: Vec<Cidr> = DEFAULT_DENY
            .iter()
            .map(|c| c.parse().expect("DEFAULT_DENY entries are valid"))
            .collect();
        all.extend(deny);
        EndpointPolicy { deny: all, allow }
    }

    /// Every denied range, [`DEFAULT_DENY`] first.
    pub fn denied(&self) -> &[Cidr] {
        &self.deny
    }

    /// Every allowed exception.
    pub fn allowed(&self) -> &[Cidr] {
        &self.allow
    }

    fn verdict_one(&self, ip: IpAddr) -> Result<(), Cidr> {
        if self.allow.iter().any(|c| c.contains(ip)) {
            return Ok(());
        }
        match self.deny.iter().find(|c| c.contains(ip)) {
            Some(c) => Err(*c),
            None => Ok(()),
        }
    }

    /// Whether deliveries may connect to `ip`; `Err` names the denying range. An IPv6
    /// address holding an IPv4 one ([`embedded_ipv4`]) must be permitted in both forms.
    pub fn verdict(&self, ip: IpAddr) -> Result<(), Cidr> {
        self.verdict_one(ip)?;
        if let IpAddr::V6(v6) = ip {
            if let Some(v4) = embedded_ipv4(v6) {
                self.verdict_one(IpAddr::V4(v4))?;
            }
        }
        Ok(())
    }

    /// Whether deliveries may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        self.verdict(ip).is_ok()
    }

    /// Checks an HTTP/S endpoint URL at Subscribe: a host that is an IP literal (in any
    /// form the URL standard accepts, such as `http://2852039166/` or `http://[::ffff:a9fe:a9fe]/`)
    /// must be permitted. Host names pass here; their addresses are checked at each
    /// delivery, after DNS resolution.
    ///
    /// Errors: a reason for people, naming the address and the denying range, or saying
    /// the URL does not parse.
    pub fn check_url(&self, endpoint: &str) -> Result<(), String> {
        let url = url::Url::parse(endpoint).map_err(|e| format!("not a valid URL: {e}"))?;
        let ip = match url.host() {
            Some(url::Host::Ipv4(a)) => IpAddr::V4(a),
            Some(url::Host::Ipv6(a)) => IpAddr::V6(a),
            Some(url::Host::Domain(_)) => return Ok(()),
            None => return Err("the URL has no host".into()),
        };
        self.verdict(ip).map_err(|range| {
            format!("the address {ip} is in {range}, which the endpoint policy denies")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn cidr(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_ranges_and_bare_addresses() {
        assert_eq!(cidr("10.0.0.0/8").to_string(), "10.0.0.0/8");
        assert_eq!(cidr("127.0.0.1").to_string(), "127.0.0.1/32");
        assert_eq!(cidr("::1").to_string(), "::1/128");
        assert_eq!(cidr("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert!("10.0.0.1/8".parse::<Cidr>().is_err(), "host bits set");
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("fe80::/129".parse::<Cidr>().is_err());
        assert!("localhost".parse::<Cidr>().is_err());
        assert!("10.0.0.0/x".parse::<Cidr>().is_err());
    }

    #[test]
    fn containment_respects_the_prefix() {
        let c = cidr("169.254.0.0/16");
        assert!(c.contains(ip("169.254.169.254")));
        assert!(c.contains(ip("169.254.0.0")));
        assert!(!c.contains(ip("169.253.255.255")));
        assert!(
            !c.contains(ip("::ffff:169.254.169.254")),
            "families never mix"
        );
        let v6 = cidr("fe80::/10");
        assert!(v6.contains(ip("fe80::1")));
        assert!(v6.contains(ip("febf:ffff::1")));
        assert!(!v6.contains(ip("fec0::1")));
        assert!(cidr("0.0.0.0/0").contains(ip("8.8.8.8")));
        assert!(cidr("::/0").contains(ip("2001:db8::1")));
    }

    #[test]
    fn default_policy_refuses_link_local_and_metadata_and_allows_loopback() {
        let p = EndpointPolicy::default();
        for denied in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "100.100.100.200",
            "0.0.0.0",
            "::",
            "::ffff:169.254.169.254",
            "64:ff9b::169.254.169.254",
        ] {
            assert!(!p.permits(ip(denied)), "{denied} should be denied");
        }
        for allowed in [
            "127.0.0.1",
            "::1",
            "10.1.2.3",
            "192.168.1.1",
            "8.8.8.8",
            "2001:db8::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(p.permits(ip(allowed)), "{allowed} should be allowed");
        }
    }

    #[test]
    fn allow_ranges_are_exceptions_to_deny_ranges() {
        let deny = PRIVATE_RANGES.iter().map(|c| cidr(c)).collect();
        let p = EndpointPolicy::new(deny, vec![cidr("10.1.2.0/24")]);
        assert!(!p.permits(ip("10.9.9.9")));
        assert!(p.permits(ip("10.1.2.3")));
        assert!(!p.permits(ip("127.0.0.1")));
        assert!(
            !p.permits(ip("::ffff:127.0.0.1")),
            "mapped form of a denied address"
        );
        assert!(
            !p.permits(ip("::127.0.0.1")),
            "IPv4-compatible form of a denied address"
        );
        assert!(!p.permits(ip("::10.9.9.9")));
        assert!(!p.permits(ip("::1")));
        assert!(!p.permits(ip("fd12::1")));
        assert!(p.permits(ip("93.184.216.34")));
        let metadata_allowed = EndpointPolicy::new(Vec::new(), vec![cidr("169.254.0.0/16")]);
        assert!(metadata_allowed.permits(ip("169.254.169.254")));
    }

    #[test]
    fn check_url_reads_every_ip_literal_form() {
        let p = EndpointPolicy::default();
        for denied in [
            "http://169.254.169.254/latest/meta-data/",
            "http://169.254.169.254:80/",
            "http://user:pw@169.254.169.254/",
            "http://2852039166/",
            "http://0xA9.0xFE.0xA9.0xFE/",
            "http://169.254.43518/",
            "http://[::ffff:169.254.169.254]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[fe80::1]/",
            "http://[fd00:ec2::254]/",
            "http://0.0.0.0:8080/",
        ] {
            let err = p.check_url(denied).expect_err(denied);
            assert!(err.contains("denies"), "{denied}: {err}");
        }
        for allowed in [
            "http://127.0.0.1:9000/hook",
            "https://example.com/hook",
            "http://metadata.google.internal/",
            "http://[::1]:8080/",
        ] {
            assert_eq!(p.check_url(allowed), Ok(()), "{allowed}");
        }
        assert!(p.check_url("http://").is_err());
    }
}
