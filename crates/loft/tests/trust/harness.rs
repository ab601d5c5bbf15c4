//! The real `loft serve` on `127.0.0.1:0` with chosen flags and environment, clients that
//! sign with chosen credentials and clocks (aws-sdk-sqs, aws-sigv4 over reqwest), and an
//! HTTP sink that records SNS deliveries.

use std::time::{Duration, SystemTime};

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sigv4::http_request::{
    sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
};
use aws_sigv4::sign::v4;

use crate::loft::{LoftProcess, TestLoft};

/// The access key the signed servers know.
pub const KEY: &str = "AKIDLOFTTRUST";
/// Its secret.
pub const SECRET: &str = "loft/trust+Secret0";
/// A second key the signed servers know.
pub const KEY2: &str = "AKIDSECOND";
/// Its secret.
pub const SECRET2: &str = "second-secret";

/// `LOFT_CREDENTIALS` of a server that requires signatures by [`KEY`] and [`KEY2`].
pub fn credentials_env() -> (&'static str, String) {
    (
        "LOFT_CREDENTIALS",
        format!("{KEY}:{SECRET},{KEY2}:{SECRET2}"),
    )
}

/// How long a test waits for something that should happen at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running `loft serve` (a [`LoftProcess`]; SIGTERM on drop).
pub struct Loft {
    loft: LoftProcess,
    /// The first listener: `http://127.0.0.1:PORT` (`https://` for a TLS listener).
    pub url: String,
}

impl Loft {
    /// Starts `loft serve` with `args` and `env` on a fresh database; waits for its
    /// listening line. The child's `LOFT_*` and trust-store (`SSL_CERT_*`) variables are
    /// the test's `env` only, so the machine's settings never leak into a test.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Loft {
        let loft = TestLoft::new().args(args).envs(env).start();
        Loft {
            url: loft.url.clone(),
            loft,
        }
    }

    /// The URLs of the first `n` listeners, in the order Loft announced them; waits for
    /// them.
    pub fn urls(&self, n: usize) -> Vec<String> {
        self.loft.urls(n)
    }

    /// A server that requires signatures by [`KEY`] or [`KEY2`], with `args`.
    pub fn signed(args: &[&str]) -> Loft {
        let (k, v) = credentials_env();
        Loft::start(args, &[(k, &v)])
    }

    /// Loft's stderr so far.
    pub fn stderr(&self) -> String {
        self.loft.stderr()
    }

    /// Waits until Loft's stderr contains `needle`, at most [`PATIENCE`].
    pub async fn wait_for_log(&self, needle: &str) -> bool {
        crate::wait::until(PATIENCE, || async { self.stderr().contains(needle) }).await
    }

    /// The URL of queue `name`.
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/000000000000/{name}", self.url)
    }

    /// An aws-sdk-sqs client signing with `key`/`secret` at the real time; no retries.
    pub fn sdk(&self, key: &str, secret: &str) -> aws_sdk_sqs::Client {
        self.sdk_config(key, secret, None)
    }

    /// An aws-sdk-sqs client whose clock reads `at` (to sign with a skewed date).
    pub fn sdk_at(&self, key: &str, secret: &str, at: SystemTime) -> aws_sdk_sqs::Client {
        self.sdk_config(key, secret, Some(at))
    }

    fn sdk_config(&self, key: &str, secret: &str, at: Option<SystemTime>) -> aws_sdk_sqs::Client {
        let http = aws_smithy_http_client::Builder::new().build_http();
        let mut config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new(key, secret, None, None, "loft-trust"))
            .endpoint_url(&self.url)
            .http_client(http)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled());
        if let Some(at) = at {
            config = config.time_source(aws_smithy_async::time::StaticTimeSource::new(at));
        }
        aws_sdk_sqs::Client::from_conf(config.build())
    }
}

/// The error code the SDK read (from `x-amzn-query-error`), the HTTP status and the
/// message of a failed SDK call.
pub fn sdk_error<E: ProvideErrorMetadata>(
    err: &aws_sdk_sqs::error::SdkError<E>,
) -> (String, u16, String) {
    (
        err.code().unwrap_or("<none>").to_owned(),
        err.raw_response().map_or(0, |r| r.status().as_u16()),
        err.message().unwrap_or("").to_owned(),
    )
}

/// A plain HTTP client.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("reqwest client")
}

/// Who signs a request, for which service, when.
#[derive(Clone, Copy)]
pub struct Signer<'a> {
    /// Access key id.
    pub key: &'a str,
    /// Secret.
    pub secret: &'a str,
    /// The service in the scope (`sqs`, `sns`, anything for the seeds' API).
    pub service: &'a str,
    /// The signing time.
    pub at: SystemTime,
}

impl<'a> Signer<'a> {
    /// [`KEY`] signing for `service` now.
    pub fn now(service: &'a str) -> Signer<'a> {
        Signer {
            key: KEY,
            secret: SECRET,
            service,
            at: SystemTime::now(),
        }
    }
}

/// Name and value pairs: headers or query parameters.
type Pairs = Vec<(String, String)>;

/// Signs a request with aws-sigv4; returns the headers and the query parameters to add.
fn sign_with(
    signer: &Signer<'_>,
    settings: SigningSettings,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (Pairs, Pairs) {
    let identity = Credentials::new(signer.key, signer.secret, None, None, "loft-trust").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name(signer.service)
        .time(signer.at)
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .expect("signable request");
    let (instructions, _) = sign(request, &params).expect("sign").into_parts();
    let headers = instructions
        .headers()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let params = instructions
        .params()
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_string()))
        .collect();
    (headers, params)
}

/// Sends `method url` with `headers` and `body`, signed by `signer` in the
/// `Authorization` header (aws-sigv4, as the SDKs sign).
pub async fn send_signed(
    signer: &Signer<'_>,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> reqwest::Response {
    send_signed_via(&http(), signer, method, url, headers, body).await
}

/// The headers that sign `method url` with `headers` and `body` for `signer`
/// (`Authorization`, `X-Amz-Date`), for a request written by hand.
pub fn signed_headers(
    signer: &Signer<'_>,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<(String, String)> {
    sign_with(
        signer,
        SigningSettings::default(),
        method,
        url,
        headers,
        body,
    )
    .0
}

/// [`send_signed`] on `client` (e.g. one bound to another local address).
pub async fn send_signed_via(
    client: &reqwest::Client,
    signer: &Signer<'_>,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> reqwest::Response {
    let signed = signed_headers(signer, method, url, headers, body);
    let mut req = client.request(method.parse().expect("method"), url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    for (k, v) in signed {
        req = req.header(k, v);
    }
    req.body(body.to_vec()).send().await.expect("send")
}

/// `url` presigned by `signer` for `expires` (a GET with an empty body).
pub fn presign(signer: &Signer<'_>, url: &str, expires: Duration) -> String {
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(expires);
    let (_, params) = sign_with(signer, settings, "GET", url, &[], b"");
    let mut out = url.to_owned();
    let mut sep = if url.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        let v: String = form_urlencoded::byte_serialize(v.as_bytes()).collect();
        out.push(sep);
        out.push_str(&k);
        out.push('=');
        out.push_str(&v.replace('+', "%20"));
        sep = '&';
    }
    out
}

/// A form body (`a=1&b=2`), as the Query protocol sends it.
pub fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

pub use crate::http_sink::Sink;
