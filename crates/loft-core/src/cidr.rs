//! IP ranges (CIDR), parsed and matched in one place for every rule that names them: IAM's
//! `IpAddress`/`NotIpAddress` conditions, SNS filter policies' `cidr` operator and the
//! endpoint policy for HTTP/S deliveries. Parsing and matching are the `ipnet` crate's;
//! what this module adds is the two forms the rules share: a bare address is a one-address
//! range, and an IPv4 range also holds an IPv4 address written as IPv4-mapped IPv6
//! (`::ffff:10.0.0.1`), as a dual-stack listener reports it.

use std::net::IpAddr;

pub use ipnet::IpNet;

/// Parses `ADDR/PREFIX` (`203.0.113.0/24`, `2001:db8::/32`) or a bare address (a /32 or
/// /128), surrounding whitespace ignored. Host bits below the prefix are kept
/// (`10.0.0.1/8` is the range `10.0.0.0/8`, as IAM reads it); callers that refuse them check
/// [`has_host_bits`]. `None` for anything else, a prefix past 32 or 128 included.
pub fn parse(s: &str) -> Option<IpNet> {
    let s = s.trim();
    if s.contains('/') {
        s.parse::<IpNet>().ok()
    } else {
        s.parse::<IpAddr>().ok().map(IpNet::from)
    }
}

/// Whether `net` was written with bits set below its prefix (`10.0.0.1/8`).
pub fn has_host_bits(net: &IpNet) -> bool {
    net.addr() != net.network()
}

/// Whether `ip` is in `net`. An IPv4 range also holds the IPv4-mapped form of its
/// addresses; otherwise an IPv4 range never holds an IPv6 address, nor the other way round.
pub fn contains(net: &IpNet, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpNet::V4(_), IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .is_some_and(|v4| net.contains(&IpAddr::V4(v4))),
        _ => net.contains(&ip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parses_ranges_and_bare_addresses() {
        let rows: &[(&str, Option<&str>)] = &[
            ("10.0.0.0/8", Some("10.0.0.0/8")),
            (" 10.0.0.1/8 ", Some("10.0.0.1/8")),
            ("203.0.113.7", Some("203.0.113.7/32")),
            ("2001:db8::/32", Some("2001:db8::/32")),
            ("::1", Some("::1/128")),
            ("0.0.0.0/0", Some("0.0.0.0/0")),
            ("10.0.0.0/33", None),
            ("::/129", None),
            ("10.0.0.0/", None),
            ("10.0.0.0/-1", None),
            ("10.0.0.0/+8", None),
            ("10.0.0/8", None),
            ("nonsense", None),
            ("", None),
        ];
        for (text, want) in rows {
            assert_eq!(
                parse(text).map(|n| n.to_string()).as_deref(),
                *want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn matching_follows_the_prefix_and_the_family() {
        let rows: &[(&str, &str, bool)] = &[
            ("10.0.0.0/8", "10.255.1.2", true),
            ("10.0.0.0/8", "11.0.0.1", false),
            ("10.0.0.1/8", "10.9.9.9", true),
            ("0.0.0.0/0", "192.0.2.1", true),
            ("203.0.113.7", "203.0.113.7", true),
            ("203.0.113.7", "203.0.113.8", false),
            ("10.0.0.0/8", "::ffff:10.1.2.3", true),
            ("10.0.0.0/8", "::ffff:11.1.2.3", false),
            ("10.0.0.0/8", "2001:db8::1", false),
            ("2001:db8::/32", "2001:db8:1::1", true),
            ("2001:db8::/32", "10.0.0.1", false),
            ("::/0", "10.0.0.1", false),
        ];
        for (range, addr, want) in rows {
            let net = parse(range).unwrap();
            assert_eq!(contains(&net, ip(addr)), *want, "{range} holds {addr}");
        }
    }

    #[test]
    fn host_bits_are_seen() {
        assert!(has_host_bits(&parse("10.0.0.1/8").unwrap()));
        assert!(!has_host_bits(&parse("10.0.0.0/8").unwrap()));
        assert!(!has_host_bits(&parse("10.0.0.1").unwrap()));
    }
}
