//! TLS to PostgreSQL, with rustls (ring provider), following libpq's `sslmode`:
//!
//! | `sslmode` | TLS | certificate checked |
//! |---|---|---|
//! | `disable` | never | |
//! | `prefer` (default) | when the server offers it | only against `sslrootcert` when given (as verify-ca) |
//! | `require` | always | only against `sslrootcert` when given (as verify-ca) |
//! | `verify-ca` | always | chain to `sslrootcert` (default: the system's roots) |
//! | `verify-full` | always | chain, and the host name or IP address |
//!
//! `sslrootcert` is a PEM file of trusted certificates, or `system` for the system's roots.
//! tokio-postgres knows only `disable`, `prefer` and `require` and no `sslrootcert`, so
//! [`split`] takes these two parameters out of the connection string first. Channel binding
//! is not offered (SCRAM works without it unless the server demands it).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::Socket;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `disable`: plain TCP only.
    Disable,
    /// `prefer` (libpq's default; `allow` reads as this): TLS when the server offers it,
    /// plain TCP otherwise; the chain is checked only when `sslrootcert` is given.
    Prefer,
    /// `require`: TLS; as libpq, the chain is checked only when `sslrootcert` is given,
    /// the name never.
    Require,
    /// `verify-ca`: TLS, the server's certificate chain checked against the root
    /// certificates, not its name.
    VerifyCa,
    /// `verify-full`: TLS, the chain and the server's host name both checked.
    VerifyFull,
}

/// The TLS part of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `sslmode` (default `prefer`).
    pub mode: Mode,
    /// `sslrootcert`: a PEM file, or `system`.
    pub root_cert: Option<String>,
}

fn parse_mode(value: &str) -> Result<Mode, String> {
    Ok(match value {
        "disable" => Mode::Disable,
        "allow" | "prefer" => Mode::Prefer,
        "require" => Mode::Require,
        "verify-ca" => Mode::VerifyCa,
        "verify-full" => Mode::VerifyFull,
        other => return Err(format!("unknown sslmode {other:?}")),
    })
}

/// What tokio-postgres gets for `mode`.
fn driver_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Disable => "disable",
        Mode::Prefer => "prefer",
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => "require",
    }
}

/// A URL query value with its `%XX` escapes decoded (a `%` not followed by two hex digits
/// stays as it is; bytes that are not UTF-8 become U+FFFD).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Takes `sslmode` and `sslrootcert` out of a `postgres://` URL or a `key=value` string;
/// returns the string for tokio-postgres (with a `sslmode` it understands) and the TLS
/// settings.
///
/// Errors: an unknown `sslmode`.
pub fn split(conn: &str) -> Result<(String, Settings), String> {
    let mut settings = Settings {
        mode: Mode::Prefer,
        root_cert: None,
    };
    let is_url = conn.starts_with("postgres://") || conn.starts_with("postgresql://");
    let rebuilt = if is_url {
        let Some((base, query)) = conn.split_once('?') else {
            return Ok((conn.to_owned(), settings));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sslmode" => settings.mode = parse_mode(&percent_decode(v))?,
                "sslrootcert" => settings.root_cert = Some(percent_decode(v)),
                _ => kept.push(pair.to_owned()),
            }
        }
        kept.push(format!("sslmode={}", driver_mode(settings.mode)));
        format!("{base}?{}", kept.join("&"))
    } else {
        let mut kept = Vec::new();
        for token in conn.split_whitespace() {
            match token.split_once('=') {
                Some(("sslmode", v)) => settings.mode = parse_mode(v.trim_matches('\''))?,
                Some(("sslrootcert", v)) => {
                    settings.root_cert = Some(v.trim_matches('\'').to_owned())
                }
                _ => kept.push(token.to_owned()),
            }
        }
        kept.push(format!("sslmode={}", driver_mode(settings.mode)));
        kept.join(" ")
    };
    Ok((rebuilt, settings))
}

fn roots(root_cert: Option<&str>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match root_cert {
        Some(path) if path != "system" => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            for cert in certs {
                let cert = cert.map_err(|e| format!("sslrootcert {path}: {e}"))?;
                store
                    .add(cert)
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = store.add(cert);
            }
        }
    }
    if store.is_empty() {
        return Err(format!(
            "no trusted certificates found in {}",
            root_cert.unwrap_or("the system's roots")
        ));
    }
    Ok(store)
}

/// The connector for `settings`.
///
/// Errors: the root certificates cannot be read.
pub fn connector(settings: &Settings) -> Result<MakeRustls, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verify = |store: RootCertStore| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()
            .map_err(|e| e.to_string())
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (settings.mode, &settings.root_cert) {
        (Mode::Disable, _) | (Mode::Prefer | Mode::Require, None) => Arc::new(Lenient {
            provider: provider.clone(),
            chain: None,
        }),
        (Mode::Prefer | Mode::Require | Mode::VerifyCa, root) => Arc::new(Lenient {
            provider: provider.clone(),
            chain: Some(verify(roots(root.as_deref())?)?),
        }),
        (Mode::VerifyFull, root) => verify(roots(root.as_deref())?)?,
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(MakeRustls {
        config: Arc::new(config),
    })
}

/// The verifier of the modes that do not check everything `verify-full` does: the
/// handshake signature is always checked (with the provider's algorithms, as rustls'
/// own verifier does), the certificate as `chain` says: not at all (`None`: `require`
/// without root certificates, libpq's meaning: encrypted only), or its chain to a trusted
/// root and not its name (`verify-ca`, and `prefer` or `require` with root certificates).
#[derive(Debug)]
struct Lenient {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// tokio-postgres' TLS factory over rustls.
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One TLS handshake to come.
pub struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let tls = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(RustlsStream(Box::new(tls)))
        })
    }
}

/// An established TLS connection.
pub struct RustlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl AsyncRead for RustlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.get_mut().0).poll_shutdown(cx)
    }
}

impl TlsStream for RustlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_takes_out_the_tls_parameters() {
        let (url, s) = split("postgres://u:p@h:5432/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x").unwrap();
        assert_eq!(
            url,
            "postgres://u:p@h:5432/db?application_name=x&sslmode=require"
        );
        assert_eq!(s.mode, Mode::VerifyFull);
        assert_eq!(s.root_cert.as_deref(), Some("/etc/ca.pem"));

        let (url, s) = split("postgres://h/db").unwrap();
        assert_eq!(url, "postgres://h/db");
        assert_eq!((s.mode, s.root_cert), (Mode::Prefer, None));

        let (url, s) = split("postgresql://h/db?sslmode=disable").unwrap();
        assert_eq!(url, "postgresql://h/db?sslmode=disable");
        assert_eq!(s.mode, Mode::Disable);

        let (kv, s) = split("host=h dbname=db sslmode=verify-ca sslrootcert=/ca.pem").unwrap();
        assert_eq!(kv, "host=h dbname=db sslmode=require");
        assert_eq!(s.mode, Mode::VerifyCa);
        assert_eq!(s.root_cert.as_deref(), Some("/ca.pem"));

        assert!(split("postgres://h/db?sslmode=sometimes").is_err());
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("%2Fa%20b+c"), "/a b+c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        // A multi-byte character after a `%` and a sign where a hex digit belongs are
        // left as they are (no slicing inside a character, no `%+1` read as 0x01).
        assert_eq!(percent_decode("%aé"), "%aé");
        assert_eq!(percent_decode("%+1"), "%+1");
    }
}
