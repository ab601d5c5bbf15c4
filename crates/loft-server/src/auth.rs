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
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use loft_core::service::Principal;
use loft_core::{Error, ErrorCode, Service};

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::body::{AlreadyCounted, BodyBudget};
use crate::reply::{table, NativeError};
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

/// One access key: its secret, and who it is.
#[derive(Clone, Default, PartialEq)]
pub struct Key {
    /// The secret access key.
    pub secret: String,
    /// Its 12-digit account id; `None`: the default account (`--account-id`).
    pub account_id: Option<String>,
    /// Its identity, `user/NAME` or `role/NAME` (`arn:aws:iam::ACCOUNT:IDENTITY`); `None`:
    /// the account's `user/loft`.
    pub identity: Option<String>,
    /// Its identity policies; `None`: everything in its own account.
    pub policies: Option<Arc<Vec<loft_core::iam::Policy>>>,
}

/// Access keys and who they are.
///
/// Source: `--credentials-file PATH` (one `AKID:SECRET[:ACCOUNT_ID[:IDENTITY]]` a line;
/// blank lines and `#` comments skipped), `LOFT_CREDENTIALS` (the same entries separated by
/// commas) and the config file's `[[credentials]]` ([`Credentials::insert`]). `Debug`
/// shows key ids only.
#[derive(Clone, Default, PartialEq)]
pub struct Credentials {
    keys: BTreeMap<String, Key>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_keys", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Checks an identity: `user/NAME` or `role/NAME` (paths allowed: `user/team/a`), of IAM's
/// name characters.
pub fn check_identity(identity: &str) -> Result<(), String> {
    let ok = ["user/", "role/"].iter().any(|p| {
        identity.strip_prefix(p).is_some_and(|rest| {
            !rest.is_empty()
                && !rest.starts_with('/')
                && !rest.ends_with('/')
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-/".contains(&b))
        })
    });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "identity {identity:?} is not user/NAME or role/NAME (letters, digits, +=,.@_-)"
        ))
    }
}

impl Credentials {
    /// Parses entries separated by commas or newlines; empty entries and lines starting
    /// with `#` are skipped. An entry is `AKID:SECRET` (the secret is everything after the
    /// first `:`), or `AKID:SECRET:ACCOUNT_ID[:IDENTITY]` when the third field is 12 digits
    /// (`AKIDA:s3cret:111111111111:user/team-a`).
    ///
    /// Errors: an entry without `:`, with an empty key or secret, with white space inside
    /// (a comment after an entry counts as white space inside), or with a bad identity. The
    /// message names the line and the entry's position on it, never the secret.
    pub fn parse(list: &str) -> Result<Credentials, String> {
        let mut keys = BTreeMap::new();
        for (line_no, line) in list.split('\n').enumerate() {
            let entries = line
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty() && !e.starts_with('#'));
            for (i, entry) in entries.enumerate() {
                let at = || format!("line {}, entry {}", line_no + 1, i + 1);
                let (key, secret) = entry
                    .split_once(':')
                    .filter(|(k, s)| !k.is_empty() && !s.is_empty())
                    .filter(|(k, s)| {
                        !k.contains(char::is_whitespace) && !s.contains(char::is_whitespace)
                    })
                    .ok_or_else(|| {
                        format!(
                            "{}: not ACCESS_KEY_ID:SECRET_ACCESS_KEY[:ACCOUNT_ID[:IDENTITY]] (no spaces; `#` comments on lines of their own)",
                            at()
                        )
                    })?;
                let mut parsed = Key {
                    secret: secret.to_owned(),
                    ..Key::default()
                };
                let mut fields = secret.splitn(3, ':');
                if let (Some(sec), Some(account)) = (fields.next(), fields.next()) {
                    if loft_core::names::is_account_id(account) && !sec.is_empty() {
                        parsed.secret = sec.to_owned();
                        parsed.account_id = Some(account.to_owned());
                        if let Some(identity) = fields.next() {
                            check_identity(identity).map_err(|e| format!("{}: {e}", at()))?;
                            parsed.identity = Some(identity.to_owned());
                        }
                    }
                }
                keys.insert(key.to_owned(), parsed);
            }
        }
        Ok(Credentials { keys })
    }

    /// Adds (or replaces) access key `id`.
    pub fn insert(&mut self, id: String, key: Key) {
        self.keys.insert(id, key);
    }

    /// Adds every key of `other` (its entry wins for a key both have).
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
        self.keys.get(key).map(|k| k.secret.as_str())
    }

    /// Access key `key`.
    pub fn key(&self, key: &str) -> Option<&Key> {
        self.keys.get(key)
    }

    /// The accounts keys name other than `default_account`.
    pub fn other_accounts(&self, default_account: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .keys
            .values()
            .filter_map(|k| k.account_id.clone())
            .filter(|a| a != default_account)
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The authentication policy of a router: open, or SigV4 by [`Credentials`].
#[derive(Debug, Clone, Default)]
pub struct Auth {
    credentials: Credentials,
    metrics_auth: bool,
}

impl Auth {
    /// No credentials: every request is accepted.
    pub fn open() -> Auth {
        Auth::default()
    }

    /// SigV4 required by `credentials` (open when it is empty).
    pub fn new(credentials: Credentials) -> Auth {
        Auth {
            credentials,
            metrics_auth: false,
        }
    }

    /// This policy with `--metrics-auth` on (`on`) or off: when on and signatures are
    /// required, `GET /metrics` needs one too and shows the caller's account's series
    /// only ([`crate::metrics`]).
    pub fn with_metrics_auth(mut self, on: bool) -> Auth {
        self.metrics_auth = on;
        self
    }

    /// Whether `GET /metrics` requires a signature ([`Auth::with_metrics_auth`] on a
    /// policy that requires signatures).
    pub fn metrics_auth(&self) -> bool {
        self.metrics_auth && self.enabled()
    }

    /// The configured keys.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Whether signatures are required.
    pub fn enabled(&self) -> bool {
        !self.credentials.is_empty()
    }

    /// The caller a request signed by access key `key` acts as: its account, identity and
    /// policies ([`Principal::for_key`]); [`Principal::open`] when Loft is open or for no
    /// key (the unsigned SNS actions, whose token or ARN is the authorization).
    pub fn principal(&self, config: &loft_core::ServiceConfig, key: Option<&str>) -> Principal {
        match key.and_then(|k| self.credentials.key(k)) {
            Some(k) if self.enabled() => Principal::for_key(
                config,
                k.account_id.as_deref(),
                k.identity.as_deref(),
                k.policies.clone(),
            ),
            _ => Principal::open(config),
        }
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

/// The caller the authentication middleware ([`require_signature`],
/// [`require_console_auth`]) put in a request's extensions, as a handler extracts it
/// (`Option<Extension<Principal>>`); the open caller ([`Service::open_principal`]) when
/// there is none (an open Loft).
pub fn caller(service: &Service, extension: Option<axum::Extension<Principal>>) -> Principal {
    extension.map_or_else(|| service.open_principal(), |e| e.0)
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
    let mut resp = table(ErrorCode::Unauthorized, message).into_response();
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
/// [`crate::body::NATIVE_BODY_LIMIT`], 503, 408, 400).
pub async fn require_signature(
    State(service): State<Arc<Service>>,
    State(auth): State<Arc<Auth>>,
    req: Request,
    next: Next,
) -> Response {
    signed(
        &service,
        &auth,
        req,
        next,
        "authentication required: sign the request with AWS Signature Version 4 \
         (e.g. curl --aws-sigv4 \"aws:amz:us-east-1:sqs\" --user ACCESS_KEY_ID:SECRET)",
        sigv4::ALGORITHM,
    )
    .await
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
    State(service): State<Arc<Service>>,
    State(auth): State<Arc<Auth>>,
    req: Request,
    next: Next,
) -> Response {
    // Basic only when credentials are configured: else `signed` runs every request.
    let basic = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            v.trim_start()
                .get(..6)
                .is_some_and(|s| s.eq_ignore_ascii_case("basic "))
        })
        .filter(|_| auth.enabled())
        .map(str::to_owned);
    if let Some(basic) = basic {
        let Some(key) = auth.check_basic(&basic) else {
            tracing::debug!(path = req.uri().path(), "console sign-in refused");
            return unauthorized(
                "wrong access key id or secret: sign in with one of Loft's access key ids \
                 and its secret",
                BASIC_CHALLENGE,
            );
        };
        let safe = matches!(*req.method(), Method::GET | Method::HEAD);
        if !safe && !req.headers().contains_key(CONSOLE_HEADER) {
            return table(
                ErrorCode::AccessDenied,
                format!(
                    "a {} with Basic authentication must carry the {CONSOLE_HEADER} header \
                     (the console's page sends it; a form posted from another site cannot)",
                    req.method()
                ),
            )
            .into_response();
        }
        let mut req = req;
        let principal = auth.principal(service.config(), Some(&key));
        req.extensions_mut().insert(principal);
        return next.run(req).await;
    }
    signed(
        &service,
        &auth,
        req,
        next,
        "authentication required: sign in with one of Loft's access key ids and its \
         secret (HTTP Basic), or sign the request with AWS Signature Version 4",
        BASIC_CHALLENGE,
    )
    .await
}

/// The SigV4 rule both middlewares share: with no credentials configured, runs `next`;
/// a request without a signature is answered `401 {"error": missing}` with
/// `WWW-Authenticate: challenge`; one with a signature is verified
/// ([`verify_signature`]).
async fn signed(
    service: &Service,
    auth: &Auth,
    req: Request,
    next: Next,
    missing: &str,
    challenge: &'static str,
) -> Response {
    if !auth.enabled() {
        return next.run(req).await;
    }
    if sigv4::location(req.headers(), req.uri().query()) == Location::None {
        return unauthorized(missing, challenge);
    }
    verify_signature(service, auth, req, next).await
}

/// Verifies a request that carries a SigV4 signature, then runs `next`: `403 {"error":
/// "CODE: message"}` for a bad one. The body is read first, under
/// [`crate::body::NATIVE_BODY_LIMIT`] and the body budget ([`crate::body`]); one that
/// cannot be read is answered as the seeds' API answers it (413, 503, 408 or 400). Its
/// bytes stay counted in the budget until `next` has answered.
async fn verify_signature(service: &Service, auth: &Auth, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let budget = parts.extensions.get::<Arc<BodyBudget>>().cloned();
    let (bytes, reservation) = match crate::body::read(
        &parts.headers,
        budget.as_ref(),
        body,
        crate::body::NATIVE_BODY_LIMIT,
    )
    .await
    {
        Ok(read) => read,
        Err(e) => return e.into_response(),
    };
    let now = service.now_ms().div_euclid(1000);
    match auth.check(&parts.method, &parts.uri, &parts.headers, &bytes, now) {
        Ok(verified) => {
            parts.extensions.insert(AlreadyCounted);
            let principal = auth.principal(
                service.config(),
                verified.as_ref().map(|v| v.access_key.as_str()),
            );
            parts.extensions.insert(principal);
            let resp = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            drop(reservation);
            resp
        }
        Err(e) => NativeError::refused(&e).into_response(),
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
    fn credentials_lines_may_name_an_account_and_an_identity() {
        let c = Credentials::parse(
            "AKA:s3cret:111111111111:user/team-a\nAKB:other:222222222222\nAKC:se/cr+et:x",
        )
        .unwrap();
        let a = c.key("AKA").unwrap();
        assert_eq!(a.secret, "s3cret");
        assert_eq!(a.account_id.as_deref(), Some("111111111111"));
        assert_eq!(a.identity.as_deref(), Some("user/team-a"));
        let b = c.key("AKB").unwrap();
        assert_eq!(
            (
                b.secret.as_str(),
                b.account_id.as_deref(),
                b.identity.as_deref()
            ),
            ("other", Some("222222222222"), None)
        );
        // A third field that is not an account id keeps today's meaning: part of the secret.
        let k = c.key("AKC").unwrap();
        assert_eq!(
            (k.secret.as_str(), k.account_id.as_deref()),
            ("se/cr+et:x", None)
        );
        assert_eq!(c.other_accounts("111111111111"), vec!["222222222222"]);
        let e = Credentials::parse("AKA:s:111111111111:group/x").unwrap_err();
        assert!(
            e.starts_with("line 1, entry 1:") && e.contains("user/NAME"),
            "{e}"
        );
    }

    #[test]
    fn principals_of_keys() {
        let config = loft_core::ServiceConfig::default();
        let auth = Auth::new(Credentials::parse("AKA:s:111111111111:role/app,AKD:d").unwrap());
        let p = auth.principal(&config, Some("AKA"));
        assert_eq!(&*p.account_id, "111111111111");
        assert_eq!(&*p.arn, "arn:aws:iam::111111111111:role/app");
        assert!(p.sender_id.starts_with("AROA") && p.enforced);
        let d = auth.principal(&config, Some("AKD"));
        assert_eq!(&*d.arn, "arn:aws:iam::000000000000:user/loft");
        assert_eq!(&*d.sender_id, "000000000000");
        assert!(!Auth::open().principal(&config, Some("AKA")).enforced);
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
