//! `loft serve`'s listeners: the `--listen` addresses and which of them speak HTTPS.
//!
//! The rule: with `--tls-cert` and `--tls-key`, every listener speaks HTTPS, except one
//! written `http://IP:PORT`, which stays plain HTTP. Without them every listener is plain
//! HTTP, and one written `https://IP:PORT` is an error at start.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use loft_server::listen::{Listener, Scheme};

/// A `--listen` address: `IP:PORT`, or `http://IP:PORT` / `https://IP:PORT` to choose the
/// listener's scheme whatever the TLS settings say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenAddr {
    /// Where to bind (port 0: the system picks one).
    pub addr: SocketAddr,
    /// The scheme written, if any.
    pub scheme: Option<Scheme>,
}

impl FromStr for ListenAddr {
    type Err = String;

    /// Parses `IP:PORT`, `http://IP:PORT` or `https://IP:PORT` (a trailing `/` is
    /// allowed). Errors: anything else, with an example in the message.
    fn from_str(s: &str) -> Result<ListenAddr, String> {
        let t = s.trim();
        let (scheme, rest) = if let Some(r) = t.strip_prefix("https://") {
            (Some(Scheme::Https), r)
        } else if let Some(r) = t.strip_prefix("http://") {
            (Some(Scheme::Http), r)
        } else {
            (None, t)
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let addr = rest.parse::<SocketAddr>().map_err(|_| {
            format!(
                "{s:?} is not an IP:PORT address (e.g. 127.0.0.1:9324, or https://0.0.0.0:9443 \
                 for an HTTPS listener)"
            )
        })?;
        Ok(ListenAddr { addr, scheme })
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Some(s) => write!(f, "{s}://{}", self.addr),
            None => write!(f, "{}", self.addr),
        }
    }
}

/// The certificate and key files of HTTPS listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain, the server's certificate first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl TlsFiles {
    /// Pairs `--tls-cert` and `--tls-key`. Errors: one given without the other.
    pub fn pair(cert: Option<&Path>, key: Option<&Path>) -> Result<Option<TlsFiles>, String> {
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert: cert.to_owned(),
                key: key.to_owned(),
            })),
            (None, None) => Ok(None),
            (Some(_), None) => {
                Err("--tls-cert needs --tls-key (the certificate's private key)".into())
            }
            (None, Some(_)) => {
                Err("--tls-key needs --tls-cert (the key's certificate chain)".into())
            }
        }
    }
}

/// The scheme each address gets under the rule in the module doc.
///
/// Errors: an `https://` address without TLS files.
pub fn schemes(addrs: &[ListenAddr], tls: bool) -> Result<Vec<Scheme>, String> {
    addrs
        .iter()
        .map(|a| match (a.scheme, tls) {
            (Some(Scheme::Https), false) => Err(format!(
                "--listen {a} needs --tls-cert and --tls-key (LOFT_TLS_CERT, LOFT_TLS_KEY)"
            )),
            (Some(s), _) => Ok(s),
            (None, true) => Ok(Scheme::Https),
            (None, false) => Ok(Scheme::Http),
        })
        .collect()
}

/// Loads the TLS files (when given) and binds every address, HTTPS or plain by
/// [`schemes`]. Loads before binding, so a bad certificate fails before any port is taken.
///
/// Errors: [`schemes`]' error; the certificate or key cannot be read, parsed or paired
/// (the message names the file); an address cannot be bound; no address at all.
pub async fn bind(addrs: &[ListenAddr], tls: Option<&TlsFiles>) -> Result<Vec<Listener>, String> {
    if addrs.is_empty() {
        return Err("at least one --listen address is required".into());
    }
    let schemes = schemes(addrs, tls.is_some())?;
    let acceptor = match tls {
        Some(files) => {
            Some(loft_server::tls::acceptor(&files.cert, &files.key).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    if acceptor.is_some() && !schemes.contains(&Scheme::Https) {
        tracing::warn!("--tls-cert and --tls-key are set but every listener is http://");
    }
    let mut listeners = Vec::with_capacity(addrs.len());
    for (a, scheme) in addrs.iter().zip(schemes) {
        let tcp = loft_server::listen::bind(a.addr)
            .map_err(|e| format!("cannot listen on {}: {e}", a.addr))?;
        listeners.push(match (scheme, &acceptor) {
            (Scheme::Https, Some(acc)) => Listener::tls(tcp, acc.clone()),
            _ => Listener::plain(tcp),
        });
    }
    Ok(listeners)
}

/// One more handle on each of `listeners`' sockets ([`Listener::twin`]), with the same
/// scheme and TLS acceptor, for another runtime to accept on (`--runtime per-core`).
///
/// Errors: a socket's descriptor cannot be duplicated (the message names the address), or
/// the system is not Unix.
pub fn twins(listeners: &[Listener]) -> Result<Vec<Listener>, String> {
    listeners
        .iter()
        .map(|l| {
            l.twin().map_err(|e| {
                let addr = l
                    .local_addr()
                    .map_or_else(|_| "?".into(), |a| a.to_string());
                format!("cannot accept on {addr} from another runtime: {e}")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn la(s: &str) -> ListenAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_parse_with_or_without_a_scheme() {
        assert_eq!(la("127.0.0.1:9324").scheme, None);
        assert_eq!(la("https://0.0.0.0:9443").scheme, Some(Scheme::Https));
        assert_eq!(la("http://[::1]:1/").scheme, Some(Scheme::Http));
        assert_eq!(la("http://[::1]:1").addr, "[::1]:1".parse().unwrap());
        assert_eq!(
            la("https://0.0.0.0:9443").to_string(),
            "https://0.0.0.0:9443"
        );
        assert_eq!(la("127.0.0.1:9324").to_string(), "127.0.0.1:9324");
        for bad in [
            "localhost:9324",
            "ftp://127.0.0.1:1",
            "https://",
            "127.0.0.1",
        ] {
            let e = bad.parse::<ListenAddr>().unwrap_err();
            assert!(e.contains("not an IP:PORT"), "{e}");
        }
    }

    #[test]
    fn tls_files_make_bare_addresses_https_but_not_explicit_http_ones() {
        let addrs = [
            la("127.0.0.1:1"),
            la("http://127.0.0.1:2"),
            la("https://127.0.0.1:3"),
        ];
        assert_eq!(
            schemes(&addrs, true).unwrap(),
            [Scheme::Https, Scheme::Http, Scheme::Https]
        );
        assert_eq!(
            schemes(&addrs[..2], false).unwrap(),
            [Scheme::Http, Scheme::Http]
        );
        let e = schemes(&addrs, false).unwrap_err();
        assert!(
            e.contains("https://127.0.0.1:3") && e.contains("--tls-cert"),
            "{e}"
        );
    }

    #[test]
    fn cert_and_key_go_together() {
        let p = Path::new("x.pem");
        assert!(TlsFiles::pair(None, None).unwrap().is_none());
        assert!(TlsFiles::pair(Some(p), Some(p)).unwrap().is_some());
        assert!(TlsFiles::pair(Some(p), None)
            .unwrap_err()
            .contains("--tls-key"));
        assert!(TlsFiles::pair(None, Some(p))
            .unwrap_err()
            .contains("--tls-cert"));
    }
}
