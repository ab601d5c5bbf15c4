//! TLS for listeners: a certificate chain and private key from PEM files, made into a
//! rustls server configuration (ring provider, TLS 1.2 and 1.3, ALPN `h2` and
//! `http/1.1`) that [`crate::listen::Listener::tls`] accepts connections with.
//!
//! The files are read once, at start; a changed certificate takes effect on restart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// Why a certificate or key could not be loaded; `Display` names the file and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    /// The file at fault: the certificate or the key (the key when they do not match).
    pub path: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for TlsError {}

fn error(path: &Path, reason: impl Into<String>) -> TlsError {
    TlsError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Reads the certificate chain at `cert` (PEM `CERTIFICATE` blocks, the server's own
/// first, then any intermediates) and the private key at `key` (the first PEM
/// `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` block: PKCS#8, PKCS#1 or SEC1),
/// and builds an acceptor for them.
///
/// Errors ([`TlsError`], naming the file): a file cannot be read; `cert` holds no
/// certificate or a malformed PEM block; `key` holds no private key; the key is of a
/// kind ring cannot use; the key does not belong to the first certificate.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, TlsError> {
    Ok(TlsAcceptor::from(Arc::new(server_config(cert, key)?)))
}

/// The rustls server configuration of [`acceptor`], with its errors.
pub fn server_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, TlsError> {
    let cert_pem = std::fs::read(cert)
        .map_err(|e| error(cert, format!("cannot read the TLS certificate: {e}")))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(cert, format!("not a PEM certificate file: {e}")))?;
    if chain.is_empty() {
        return Err(error(
            cert,
            "no PEM certificate (-----BEGIN CERTIFICATE-----) in the file",
        ));
    }
    let key_pem =
        std::fs::read(key).map_err(|e| error(key, format!("cannot read the TLS key: {e}")))?;
    let private_key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        error(
            key,
            format!(
                "no usable PEM private key (PKCS#8 PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE \
                 KEY) in the file: {e}"
            ),
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| error(cert, format!("TLS set-up failed: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private_key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => error(
                key,
                format!(
                    "the private key does not belong to the certificate {}",
                    cert.display()
                ),
            ),
            other => error(key, format!("cannot use the key: {other}")),
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn missing_and_empty_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = write(dir.path(), "empty.pem", "");
        let e = server_config(&missing, &empty).unwrap_err();
        assert_eq!(e.path, missing);
        assert!(e.reason.contains("cannot read the TLS certificate"), "{e}");
        let e = server_config(&empty, &empty).unwrap_err();
        assert!(e.reason.contains("no PEM certificate"), "{e}");
    }

    #[test]
    fn a_certificate_without_a_key_names_the_key_file() {
        let dir = tempfile::tempdir().unwrap();
        // Any well-formed PEM block passes the certificate reader; the key is checked next.
        let cert = write(
            dir.path(),
            "cert.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let key = write(dir.path(), "key.pem", "not a key\n");
        let e = server_config(&cert, &key).unwrap_err();
        assert_eq!(e.path, key);
        assert!(e.reason.contains("no usable PEM private key"), "{e}");
        assert!(e.to_string().starts_with(&key.display().to_string()));
    }
}
