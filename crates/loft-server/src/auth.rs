//! Who may call Loft: the configured credentials and where SigV4 is required.
//!
//! - No credentials configured: Loft accepts every request, signed or not (and says so in
//!   a warning at start).
//! - Credentials configured: every AWS-protocol request (`/` and queue URLs) must carry a
//!   valid Signature Version 4 ([`crate::sigv4`]) by one of the keys, in the `Authorization`
//!   header or as a presigned URL; failures are answered in the protocol's own error shape
//!   with AWS's codes and HTTP 403. The seeds' API (`/queues...`, `/topics...`) and the
//!   recorded-messages inspection route take the same signature, with any service name in
//!   the scope (`curl --aws-sigv4 "aws:amz:us-east-1:sqs" --user AKID:SECRET` signs them),
//!   and answer `401 {"error"}` without one and `403 {"error"}` for a bad one.
//! - The web console (`/console...`) and the JSON routes its page calls (`/_loft/queues...`,
//!   `/_loft/topics`, `/_loft/sns/messages`) take SigV4 too, and HTTP Basic authentication
//!   (user: an access key id, password: its secret), so that a browser can sign in: they
//!   answer `401` with `WWW-Authenticate: Basic realm="loft"`, which makes it ask
//!   ([`require_console_auth`]). Basic is accepted nowhere else: the AWS protocols and the
//!   seeds' API take SigV4 only.
//! - Always open: `GET /health`, `GET /ready`, `GET /metrics`, the SNS signing certificate
//!   (subscribers fetch it to check messages), and the two SNS actions a subscriber's
//!   endpoint calls from the links SNS sends it when it carries no signature
//!   ([`UNSIGNED_SNS_ACTIONS`]): the token of ConfirmSubscription and the unguessable
//!   subscription ARN of Unsubscribe are the authorization, as on AWS.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRef, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use loft_core::{Error, Service};

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::body::{AlreadyCounted, BodyBudget};
use crate::native::NativeError;
use crate::sigv4::{self, Location, Verified};

/// SNS actions allowed without a signature: the SubscribeURL and UnsubscribeURL links SNS
/// sends to endpoints. A request for them that *is* signed must still be signed right.
pub const UNSIGNED_SNS_ACTIONS: &[&str] = &["ConfirmSubscription", "Unsubscribe"];

/// The `WWW-Authenticate` challenge of the console's routes: HTTP Basic, realm `loft`.
pub const BASIC_CHALLENGE: &str = "Basic realm=\"loft\"";

/// The header the console's script sends with each request. A Basic-authenticated request
/// other than `GET` or `HEAD` must carry it: a browser sends remembered Basic credentials
/// with every request to the origin, a form another site posts included, and such a form
/// cannot set a header (cross-site request forgery).
pub const CONSOLE_HEADER: &str = "x-loft-console";

/// Access keys and their secrets.
///
/// Source: `--credentials-file PATH` (one `AKID:SECRET` a line; blank lines and `#`
/// comments skipped) and `LOFT_CREDENTIALS` (`AKID:SECRET,AKID2:SECRET2`). `Debug` shows
/// key ids only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    keys: BTreeMap<String, String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_keys", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Credentials {
    /// Parses `AKID:SECRET` entries separated by commas or newlines; empty entries and
    /// lines starting with `#` are skipped. The secret is everything after the first `:`.
    ///
    /// Errors: an entry without `:`, with an empty key or secret, or with white space
    /// inside (a comment after an entry counts as white space inside). The message names
    /// the line and the entry's position on it, never the secret.
    pub fn parse(list: &str) -> Result<Credentials, String> {
        let mut keys = BTreeMap::new();
        for (line_no, line) in list.split('\n').enumerate() {
            let entries = line
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty() && !e.starts_with('#'));
            for (i, entry) in entries.enumerate() {
                let (key, secret) = entry
                    .split_once(':')
                    .filter(|(k, s)| !k.is_empty() && !s.is_empty())
                    .filter(|(k, s)| {
                        !k.contains(char::is_whitespace) && !s.contains(char::is_whitespace)
                    })
                    .ok_or_else(|| {
                        format!(
                            "line {}, entry {}: not ACCESS_KEY_ID:SECRET_ACCESS_KEY (no spaces; `#` comments on lines of their own)",
                            line_no + 1,
                            i + 1
                        )
                    })?;
                keys.insert(key.to_owned(), secret.to_owned());
            }
        }
        Ok(Credentials { keys })
    }

    /// Adds every key of `other` (its secret wins for a key both have).
    pub fn extend(&mut self, other: Credentials) {
        self.keys.extend(other.keys);
    }

    /// Whether no key is configured (Loft is then open).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// How many keys are configured.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The secret of access key `key`.
    pub fn secret(&self, key: &str) -> Option<&str> {
        self.keys.get(key).map(String::as_str)
    }
}

/// The authentication policy of a router: open, or SigV4 by [`Credentials`].
#[derive(Debug, Clone, Default)]
pub struct Auth {
    credentials: Credentials,
}

impl Auth {
    /// No credentials: every request is accepted.
    pub fn open() -> Auth {
        Auth::default()
    }

    /// SigV4 required by `credentials` (open when it is empty).
    pub fn new(credentials: Credentials) -> Auth {
        Auth { credentials }
    }

    /// Whether signatures are required.
    pub fn enabled(&self) -> bool {
        !self.credentials.is_empty()
    }

    /// Checks an HTTP Basic `Authorization` value (`Basic base64(AKID:SECRET)`): the
    /// access key id when it is a configured key and the password its secret. The secrets
    /// are compared in constant time (their SHA-256 digests, so not even the length shows).
    /// `None` for anything else, and always when Loft is open (nothing to check against).
    pub fn check_basic(&self, authorization: &str) -> Option<String> {
        let (key, password) = parse_basic(authorization)?;
        let secret = self.credentials.secret(&key)?;
        let (given, expected) = (Sha256::digest(password), Sha256::digest(secret));
        let same = given.as_slice().ct_eq(expected.as_slice());
        bool::from(same).then_some(key)
    }

    /// Checks one request at `now` (seconds since the epoch). `Ok(None)` when Loft is
    /// open; `Ok(Some(who))` for a valid signature.
    ///
    /// Errors: the authentication errors of [`sigv4::verify`].
    pub fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<Option<Verified>, Error> {
        if !self.enabled() {
            return Ok(None);
        }
        let req = sigv4::Request {
            method: method.as_str(),
            path: uri.path(),
            query: uri.query(),
            headers,
            authority: uri.authority().map(|a| a.as_str()),
            body,
        };
        let verified = sigv4::verify(&req, now, |key| self.credentials.secret(key));
        if let Err(e) = &verified {
            tracing::debug!(code = e.code.aws_code(), message = %e.message, path = uri.path(), "request refused");
        }
        verified.map(Some)
    }
}

/// Router state: the service and the authentication policy. Handlers take either part
/// (`State<Arc<Service>>`, `State<Arc<Auth>>`).
#[derive(Clone)]
pub struct AppState {
    /// The service.
    pub service: Arc<Service>,
    /// Who may call.
    pub auth: Arc<Auth>,
}

impl FromRef<AppState> for Arc<Service> {
    fn from_ref(s: &AppState) -> Self {
        s.service.clone()
    }
}

impl FromRef<AppState> for Arc<Auth> {
    fn from_ref(s: &AppState) -> Self {
        s.auth.clone()
    }
}

/// The user and password of an HTTP Basic `Authorization` value (RFC 7617: the scheme in
/// any case, then base64 of `user:password`; the user ends at the first `:`).
fn parse_basic(authorization: &str) -> Option<(String, String)> {
    let (scheme, token) = authorization.trim().split_once([' ', '\t'])?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// `401 {"error": message}` with `WWW-Authenticate: challenge`.
fn unauthorized(message: &str, challenge: &'static str) -> Response {
    let mut resp = NativeError(StatusCode::UNAUTHORIZED, message.to_owned()).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    resp
}

/// Middleware of the seeds' API: requires a valid SigV4 signature when credentials are
/// configured (any service name in the scope). `401 {"error"}` (with `WWW-Authenticate:
/// AWS4-HMAC-SHA256`) without one, `403 {"error": "CODE: message"}` for a bad one, and a
/// body that cannot be read answered as [`crate::native`] answers it (413 over
/// [`crate::routes::NATIVE_BODY_LIMIT`], 503, 408, 400).
pub async fn require_signature(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if !state.auth.enabled() {
        return next.run(req).await;
    }
    if sigv4::location(req.headers(), req.uri().query()) == Location::None {
        return unauthorized(
            "authentication required: sign the request with AWS Signature Version 4 \
             (e.g. curl --aws-sigv4 \"aws:amz:us-east-1:sqs\" --user ACCESS_KEY_ID:SECRET)",
            sigv4::ALGORITHM,
        );
    }
    verify_signature(&state, req, next).await
}

/// Middleware of the web console (`/console...`) and the JSON routes its page calls
/// (`/_loft/...`): when credentials are configured, accepts HTTP Basic authentication
/// (user: an access key id, password: its secret, [`Auth::check_basic`]) or a SigV4
/// signature (as [`require_signature`]).
///
/// Without either, or with a wrong key or secret in Basic: `401 {"error"}` with
/// `WWW-Authenticate: Basic realm="loft"` ([`BASIC_CHALLENGE`]), which makes a browser
/// ask for them. A Basic-authenticated request other than `GET` or `HEAD` without the
/// [`CONSOLE_HEADER`] header: `403 {"error"}`. A bad signature: `403`, as
/// [`require_signature`].
pub async fn require_console_auth(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if !state.auth.enabled() {
        return next.run(req).await;
    }
    let basic = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            v.trim_start()
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("basic "))
        })
        .map(str::to_owned);
    if let Some(basic) = basic {
        if state.auth.check_basic(&basic).is_none() {
            tracing::debug!(path = req.uri().path(), "console sign-in refused");
            return unauthorized(
                "wrong access key id or secret: sign in with one of Loft's access key ids \
                 and its secret",
                BASIC_CHALLENGE,
            );
        }
        let safe = matches!(*req.method(), Method::GET | Method::HEAD);
        if !safe && !req.headers().contains_key(CONSOLE_HEADER) {
            return NativeError(
                StatusCode::FORBIDDEN,
                format!(
                    "a {} with Basic authentication must carry the {CONSOLE_HEADER} header \
                     (the console's page sends it; a form posted from another site cannot)",
                    req.method()
                ),
            )
            .into_response();
        }
        return next.run(req).await;
    }
    if sigv4::location(req.headers(), req.uri().query()) == Location::None {
        return unauthorized(
            "authentication required: sign in with one of Loft's access key ids and its \
             secret (HTTP Basic), or sign the request with AWS Signature Version 4",
            BASIC_CHALLENGE,
        );
    }
    verify_signature(&state, req, next).await
}

/// Verifies a request that carries a SigV4 signature, then runs `next`: `403 {"error":
/// "CODE: message"}` for a bad one. The body is read first, under
/// [`crate::routes::NATIVE_BODY_LIMIT`] and the body budget ([`crate::body`]); one that
/// cannot be read is answered as the seeds' API answers it (413, 503, 408 or 400). Its
/// bytes stay counted in the budget until `next` has answered.
async fn verify_signature(state: &AppState, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let budget = parts.extensions.get::<Arc<BodyBudget>>().cloned();
    let (bytes, reservation) = match crate::body::read(
        &parts.headers,
        budget.as_ref(),
        body,
        crate::routes::NATIVE_BODY_LIMIT,
    )
    .await
    {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    let now = state.service.now_ms().div_euclid(1000);
    match state
        .auth
        .check(&parts.method, &parts.uri, &parts.headers, &bytes, now)
    {
        Ok(_) => {
            parts.extensions.insert(AlreadyCounted);
            let resp = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            drop(reservation);
            resp
        }
        Err(e) => NativeError(
            StatusCode::FORBIDDEN,
            format!("{}: {}", e.code.aws_code(), e.message),
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_parse_from_env_and_file_shapes() {
        let c = Credentials::parse("AKID:SECRET,AKID2:se/cr+et:x").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.secret("AKID"), Some("SECRET"));
        assert_eq!(c.secret("AKID2"), Some("se/cr+et:x"));
        assert_eq!(c.secret("nope"), None);
        let file = "# Loft keys\nAKID:SECRET\n\n  AKID3:S3  \n";
        let c = Credentials::parse(file).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.secret("AKID3"), Some("S3"));
        assert!(Credentials::parse("").unwrap().is_empty());
        for bad in ["AKID", "AKID:", ":hunter2", "AK ID:hunter2"] {
            let e = Credentials::parse(bad).unwrap_err();
            assert!(!e.contains("hunter2"), "the error shows no secret: {e}");
        }
        // The error points at the line of the file, not the count of entries.
        let e = Credentials::parse("# keys\nAKID:S\n\nAKID2:hunter2 # old").unwrap_err();
        assert!(e.starts_with("line 4, entry 1:"), "{e}");
        let e = Credentials::parse("A:B,C").unwrap_err();
        assert!(e.starts_with("line 1, entry 2:"), "{e}");
    }

    #[test]
    fn debug_output_hides_secrets() {
        let c = Credentials::parse("AKID:TOPSECRET").unwrap();
        let shown = format!("{:?}", Auth::new(c));
        assert!(shown.contains("AKID"));
        assert!(!shown.contains("TOPSECRET"));
    }

    fn basic(user_password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_password)
        )
    }

    #[test]
    fn basic_authentication_takes_a_key_and_its_secret() {
        let auth = Auth::new(Credentials::parse("AKID:se:cr/et,AKID2:other").unwrap());
        assert_eq!(
            auth.check_basic(&basic("AKID:se:cr/et")),
            Some("AKID".into())
        );
        assert_eq!(
            auth.check_basic(&basic("AKID:se:cr/et").replacen("Basic", "bAsIc", 1)),
            Some("AKID".into()),
            "the scheme in any case"
        );
        assert_eq!(
            auth.check_basic(&basic("AKID2:other")),
            Some("AKID2".into())
        );
        for wrong in [
            "AKID:other",
            "AKID:se:cr/e",
            "AKID:",
            "NOPE:other",
            "AKID",
            "",
        ] {
            assert_eq!(auth.check_basic(&basic(wrong)), None, "{wrong}");
        }
        assert_eq!(auth.check_basic("Basic !!!"), None, "not base64");
        assert_eq!(auth.check_basic("Basic"), None);
        assert_eq!(
            auth.check_basic(&basic("AKID:se:cr/et").replacen("Basic", "Bearer", 1)),
            None
        );
        assert_eq!(Auth::open().check_basic(&basic("AKID:se:cr/et")), None);
    }

    #[test]
    fn an_open_auth_accepts_anything() {
        let auth = Auth::open();
        assert!(!auth.enabled());
        let uri: Uri = "/".parse().unwrap();
        assert_eq!(
            auth.check(&Method::POST, &uri, &HeaderMap::new(), b"", 0),
            Ok(None)
        );
        let closed = Auth::new(Credentials::parse("A:B").unwrap());
        assert_eq!(
            closed
                .check(&Method::POST, &uri, &HeaderMap::new(), b"", 0)
                .unwrap_err()
                .code,
            loft_core::ErrorCode::MissingAuthenticationToken
        );
    }
}
