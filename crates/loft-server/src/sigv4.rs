//! AWS Signature Version 4 verification, as small pure functions.
//!
//! Source: AWS "Signature Version 4 signing process" (create a canonical request, a string
//! to sign, the signing key and the signature), "Authenticating requests: using query
//! parameters" (presigned URLs), and AWS's SigV4 test suite, whose vectors
//! (`crates/loft-server/tests/sigv4-suite/`) these functions are checked against.
//!
//! The steps, each a function here:
//!
//! 1. [`canonical_request`]: method, [`canonical_uri`], [`canonical_query`],
//!    [`canonical_headers`], the signed header names and the SHA-256 of the body.
//! 2. [`string_to_sign`]: algorithm, request date, credential scope, hash of step 1.
//! 3. [`signing_key`]: HMAC chain over the secret, date, region, service.
//! 4. [`signature`]: HMAC of step 2 under step 3, hex.
//!
//! [`verify`] runs them over a received request, compares the signature in constant time
//! and applies AWS's 15-minute clock-skew window (and `X-Amz-Expires` for presigned URLs).
//! [`authorization`] runs them the other way, for a client (the `loft` admin commands):
//! the `Authorization` header of a request to send.
//!
//! Paths: SQS and SNS, like every AWS service but S3, sign the path *URI-encoded once more*
//! than it is sent (the SDKs "double-encode" it: `%3A` on the wire is `%253A` in the
//! canonical request) and normalize it (`/a/./b//` is `/a/b/`) first. [`verify`] accepts
//! that form, the unnormalized one, and the path as sent (S3-style signers, older curl), so
//! any signer that signs what it sends is understood.

use std::fmt::Write as _;

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use loft_core::{Error, ErrorCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The only algorithm Loft verifies.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far a request's date may be from Loft's clock, either way, seconds (15 minutes).
pub const MAX_SKEW_SECS: i64 = 15 * 60;
/// The longest `X-Amz-Expires` of a presigned URL, seconds (7 days).
pub const MAX_EXPIRES_SECS: i64 = 7 * 24 * 3600;
/// The SHA-256 of an empty payload, hex.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

type HmacSha256 = Hmac<Sha256>;

fn incomplete(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::IncompleteSignature, message)
}

fn mismatch(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::SignatureDoesNotMatch, message)
}

/// Hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// URI-encodes `input` as SigV4 wants: every byte but the unreserved characters
/// (`A-Z a-z 0-9 - _ . ~`) becomes `%XX` with upper-case hex; `/` too unless
/// `keep_slash`.
pub fn uri_encode(input: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(input.len());
    for &b in input {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/')
        {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Decodes `%XX` escapes; a `%` not followed by two hex digits stays as it is, and `+`
/// stays `+` (SigV4 canonicalises what was sent, not form encoding).
pub fn percent_decode(input: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(input).collect()
}

/// Removes `.` and `..` segments and empty segments (`//`) from a path, keeping a trailing
/// slash (RFC 3986 section 5.2.4, as the AWS SDKs normalize before signing).
pub fn normalize_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts {
        match *part {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::from("/");
    out.push_str(&segments.join("/"));
    let last = parts.last().copied().unwrap_or("");
    let trailing = path.len() > 1 && matches!(last, "" | "." | "..");
    if trailing && !segments.is_empty() {
        out.push('/');
    }
    out
}

/// The canonical URI of a path as received (still percent-encoded): normalized when
/// `normalize`, then every byte but unreserved characters and `/` URI-encoded, so a `%`
/// escape sent on the wire is encoded again (SQS's and SNS's double encoding). An empty
/// path is `/`.
pub fn canonical_uri(path: &str, normalize: bool) -> String {
    let path = if path.is_empty() { "/" } else { path };
    if normalize {
        uri_encode(normalize_path(path).as_bytes(), true)
    } else {
        uri_encode(path.as_bytes(), true)
    }
}

/// The canonical query string of a raw query (`a=1&b=2`): each name and value
/// percent-decoded, then URI-encoded, sorted by name then value, joined with `&`. A
/// parameter without `=` has an empty value. With `presigned`, `X-Amz-Signature` is left
/// out, as the signer had not made it yet.
pub fn canonical_query(query: Option<&str>, presigned: bool) -> String {
    let mut pairs: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .filter(|(k, _)| !(presigned && k == "X-Amz-Signature"))
        .collect();
    pairs.sort();
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    out
}

/// Trims a header value and folds each run of spaces and tabs to one space.
pub fn canonical_header_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for word in value.split([' ', '\t']).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The canonical headers block: for each of `signed` (lower-case names, in order), the
/// name, `:`, every value the request has under that name in order, each canonicalised
/// ([`canonical_header_value`]) and joined with `,`, then a newline. `authority` stands in
/// for a missing `host` (HTTP/2 carries it as `:authority`). A signed header the request
/// lacks gets an empty value, so the signature cannot match.
pub fn canonical_headers(
    headers: &HeaderMap,
    signed: &[String],
    authority: Option<&str>,
) -> String {
    let mut out = String::new();
    for name in signed {
        let values: Vec<String> = headers
            .get_all(name.as_str())
            .iter()
            .map(|v| canonical_header_value(&String::from_utf8_lossy(v.as_bytes())))
            .collect();
        out.push_str(name);
        out.push(':');
        if values.is_empty() && name == "host" {
            out.push_str(authority.unwrap_or(""));
        } else {
            out.push_str(&values.join(","));
        }
        out.push('\n');
    }
    out
}

/// Step 1, the canonical request: the six parts joined with newlines
/// (`canonical_headers` already ends with one).
pub fn canonical_request(
    method: &str,
    canonical_uri: &str,
    canonical_query: &str,
    canonical_headers: &str,
    signed_headers: &str,
    payload_hash: &str,
) -> String {
    format!(
        "{method}\n{canonical_uri}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{payload_hash}"
    )
}

/// Step 2, the string to sign: algorithm, request date (`YYYYMMDDTHHMMSSZ`), credential
/// scope (`YYYYMMDD/region/service/aws4_request`) and the hex SHA-256 of the canonical
/// request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

/// Step 3, the signing key: `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region),
/// service), "aws4_request")`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

/// Step 4, the signature: hex HMAC-SHA256 of the string to sign under the signing key.
pub fn signature(signing_key: &[u8; 32], string_to_sign: &str) -> String {
    hex::encode(hmac(signing_key, string_to_sign.as_bytes()))
}

/// A credential scope: `AKID/YYYYMMDD/region/service/aws4_request`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The access key id.
    pub access_key: String,
    /// The scope's date, `YYYYMMDD`.
    pub date: String,
    /// The scope's region.
    pub region: String,
    /// The scope's service (`sqs`, `sns`, anything for the seeds' API).
    pub service: String,
}

impl Credential {
    /// Parses `AKID/YYYYMMDD/region/service/aws4_request`.
    ///
    /// Errors: `IncompleteSignature` for any other shape.
    pub fn parse(s: &str) -> Result<Credential, Error> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [key, date, region, service, "aws4_request"]
                if !key.is_empty()
                    && date.len() == 8
                    && date.bytes().all(|b| b.is_ascii_digit())
                    && !region.is_empty()
                    && !service.is_empty() =>
            {
                Ok(Credential {
                    access_key: (*key).to_owned(),
                    date: (*date).to_owned(),
                    region: (*region).to_owned(),
                    service: (*service).to_owned(),
                })
            }
            _ => Err(incomplete(format!(
                "Credential should be scoped to a valid region, date, service and terminated by 'aws4_request'. Got '{s}'."
            ))),
        }
    }

    /// The scope without the key: `YYYYMMDD/region/service/aws4_request`.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }
}

/// What a request claims about its signature, from the `Authorization` header or the
/// presigned query parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Key and scope.
    pub credential: Credential,
    /// Signed header names, lower case, as listed (`host;x-amz-date`).
    pub signed_headers: Vec<String>,
    /// The hex signature.
    pub signature: String,
    /// The request date, `YYYYMMDDTHHMMSSZ`, when the request gives one.
    pub amz_date: Option<String>,
    /// Presigned only: `X-Amz-Expires`, seconds.
    pub expires: Option<i64>,
}

/// Parses an `Authorization` header value:
/// `AWS4-HMAC-SHA256 Credential=AKID/..., SignedHeaders=a;b, Signature=hex`.
///
/// Errors: `IncompleteSignature` for another algorithm or a missing or malformed part.
pub fn parse_authorization(value: &str) -> Result<Claim, Error> {
    let value = value.trim();
    let rest = value
        .strip_prefix(ALGORITHM)
        .filter(|r| r.starts_with([' ', '\t']))
        .ok_or_else(|| {
            let algorithm = value.split([' ', '\t']).next().unwrap_or("");
            incomplete(format!(
                "Unsupported AWS 'algorithm': '{algorithm}'; Loft accepts {ALGORITHM} (Signature Version 4)."
            ))
        })?;
    let (mut credential, mut signed, mut sig) = (None, None, None);
    for part in rest.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (k, v) = part.split_once('=').ok_or_else(|| {
            incomplete(format!(
                "'{part}' not a valid key=value pair (missing equal-sign) in Authorization header: '{value}'."
            ))
        })?;
        match k.trim() {
            "Credential" => credential = Some(v.trim()),
            "SignedHeaders" => signed = Some(v.trim()),
            "Signature" => sig = Some(v.trim()),
            _ => {}
        }
    }
    let need = |what: &str| {
        incomplete(format!(
            "Authorization header requires '{what}' parameter. Authorization={value}"
        ))
    };
    let credential = Credential::parse(credential.ok_or_else(|| need("Credential"))?)?;
    let signed = signed.ok_or_else(|| need("SignedHeaders"))?;
    let sig = sig.ok_or_else(|| need("Signature"))?;
    Ok(Claim {
        credential,
        signed_headers: split_signed_headers(signed),
        signature: sig.to_owned(),
        amz_date: None,
        expires: None,
    })
}

fn split_signed_headers(s: &str) -> Vec<String> {
    s.split(';')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

/// Whether a query string carries presigned-URL parameters (`X-Amz-Algorithm`,
/// `X-Amz-Credential` or `X-Amz-Signature`).
pub fn is_presigned(query: Option<&str>) -> bool {
    query_params(query).any(|(k, _)| {
        matches!(
            k.as_str(),
            "X-Amz-Algorithm" | "X-Amz-Credential" | "X-Amz-Signature"
        )
    })
}

fn query_params(query: Option<&str>) -> impl Iterator<Item = (String, String)> + '_ {
    query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                String::from_utf8_lossy(&percent_decode(k)).into_owned(),
                String::from_utf8_lossy(&percent_decode(v)).into_owned(),
            )
        })
}

/// Parses the presigned parameters of a query string: `X-Amz-Algorithm`,
/// `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`,
/// `X-Amz-Signature`.
///
/// Errors: `IncompleteSignature` when one is missing, the algorithm is not SigV4 or
/// `X-Amz-Expires` is not 1 to 604800.
pub fn parse_presigned(query: Option<&str>) -> Result<Claim, Error> {
    let mut found = std::collections::HashMap::new();
    for (k, v) in query_params(query) {
        if k.starts_with("X-Amz-") {
            found.entry(k).or_insert(v);
        }
    }
    let get = |name: &str| {
        found.get(name).map(String::as_str).ok_or_else(|| {
            incomplete(format!(
                "AWS query-string parameters must include '{name}'. Re-examine the query-string parameters."
            ))
        })
    };
    let algorithm = get("X-Amz-Algorithm")?;
    if algorithm != ALGORITHM {
        return Err(incomplete(format!(
            "Unsupported AWS 'algorithm': '{algorithm}'; Loft accepts {ALGORITHM} (Signature Version 4)."
        )));
    }
    let credential = Credential::parse(get("X-Amz-Credential")?)?;
    let amz_date = get("X-Amz-Date")?.to_owned();
    let expires_raw = get("X-Amz-Expires")?;
    let expires = expires_raw
        .parse::<i64>()
        .ok()
        .filter(|e| (1..=MAX_EXPIRES_SECS).contains(e))
        .ok_or_else(|| {
            incomplete(format!(
                "X-Amz-Expires must be an integer from 1 to {MAX_EXPIRES_SECS} (seconds); got '{expires_raw}'."
            ))
        })?;
    Ok(Claim {
        credential,
        signed_headers: split_signed_headers(get("X-Amz-SignedHeaders")?),
        signature: get("X-Amz-Signature")?.to_owned(),
        amz_date: Some(amz_date),
        expires: Some(expires),
    })
}

/// Parses `YYYYMMDDTHHMMSSZ` to seconds since the epoch.
pub fn parse_amz_date(s: &str) -> Option<i64> {
    chrono::NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

/// Formats seconds since the epoch as `YYYYMMDDTHHMMSSZ`.
pub fn format_amz_date(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_default()
}

/// A received request, as [`verify`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// The path as received, still percent-encoded.
    pub path: &'a str,
    /// The raw query string, without `?`.
    pub query: Option<&'a str>,
    /// The headers.
    pub headers: &'a HeaderMap,
    /// The URI's authority, standing in for `Host` on HTTP/2.
    pub authority: Option<&'a str>,
    /// The body.
    pub body: &'a [u8],
}

/// Who signed a verified request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The access key id.
    pub access_key: String,
    /// The signing service in the credential scope.
    pub service: String,
    /// The region in the credential scope.
    pub region: String,
}

/// How a request carries its signature, if it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// No `Authorization` header and no presigned parameters.
    None,
    /// The `Authorization` header.
    Header,
    /// Presigned query parameters.
    Query,
}

/// Where `req` carries its signature.
pub fn location(headers: &HeaderMap, query: Option<&str>) -> Location {
    if headers.contains_key(axum::http::header::AUTHORIZATION) {
        Location::Header
    } else if is_presigned(query) {
        Location::Query
    } else {
        Location::None
    }
}

/// The request's one `Authorization` header, as text; `None` when it has none.
///
/// The header is a single credential (RFC 9110 §11.6.2: its value holds commas, so two
/// cannot be joined into one list), and SigV4's is ASCII (AWS General Reference,
/// "Signature Version 4": the algorithm, `Credential=`, `SignedHeaders=`, `Signature=`).
/// Two headers are refused rather than one of them chosen, so no proxy or client that
/// adds a second one decides which credential counts; a value with a byte that is not
/// visible ASCII, space or tab is refused rather than read as empty. AWS's words for
/// these are not recorded; the code is the one AWS gives a malformed `Authorization`.
///
/// Errors: `IncompleteSignature` for either.
pub fn authorization_header(headers: &HeaderMap) -> Result<Option<&str>, Error> {
    let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(incomplete(
            "The request has more than one Authorization header; send exactly one.",
        ));
    }
    let text = value
        .to_str()
        .ok()
        .filter(|t| t.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
        .ok_or_else(|| incomplete("The Authorization header has characters that are not ASCII."))?;
    Ok(Some(text))
}

/// The request's date and the claim, from the header or the query.
fn read_claim(req: &Request<'_>) -> Result<(Claim, String), Error> {
    match location(req.headers, req.query) {
        Location::None => Err(Error::new(
            ErrorCode::MissingAuthenticationToken,
            "Request is missing Authentication Token",
        )),
        Location::Header if is_presigned(req.query) => Err(incomplete(
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified",
        )),
        Location::Header => {
            let value = authorization_header(req.headers)?.unwrap_or("");
            let claim = parse_authorization(value)?;
            let date = match req.headers.get("x-amz-date").and_then(|v| v.to_str().ok()) {
                Some(d) => d.trim().to_owned(),
                None => req
                    .headers
                    .get(axum::http::header::DATE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|d| chrono::DateTime::parse_from_rfc2822(d.trim()).ok())
                    .map(|d| format_amz_date(d.timestamp()))
                    .ok_or_else(|| {
                        incomplete(
                            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
                        )
                    })?,
            };
            Ok((claim, date))
        }
        Location::Query => {
            let claim = parse_presigned(req.query)?;
            let date = claim.amz_date.clone().unwrap_or_default();
            Ok((claim, date))
        }
    }
}

/// Checks the request date against Loft's clock `now` (seconds): within
/// [`MAX_SKEW_SECS`] either way for a signed header; for a presigned URL, not more than
/// that in the future and not past `X-Amz-Expires`.
///
/// Errors: `SignatureDoesNotMatch` with AWS's "Signature expired" / "Signature not yet
/// current" messages; `RequestExpired` for a presigned URL past its expiry;
/// `IncompleteSignature` for a malformed date or a scope date that differs from it.
pub fn check_time(claim: &Claim, amz_date: &str, now: i64) -> Result<(), Error> {
    let t = parse_amz_date(amz_date).ok_or_else(|| {
        incomplete(format!(
            "Date must be in ISO-8601 'basic format'. Got '{amz_date}'. See http://en.wikipedia.org/wiki/ISO_8601"
        ))
    })?;
    if !amz_date.starts_with(&claim.credential.date) {
        return Err(mismatch(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '{}' != '{}', from '{amz_date}'.",
            claim.credential.date,
            &amz_date[..8.min(amz_date.len())]
        )));
    }
    if t > now + MAX_SKEW_SECS {
        return Err(mismatch(format!(
            "Signature not yet current: {amz_date} is still later than {} ({} + 15 min.)",
            format_amz_date(now + MAX_SKEW_SECS),
            format_amz_date(now)
        )));
    }
    match claim.expires {
        Some(expires) => {
            if now > t + expires {
                return Err(Error::new(
                    ErrorCode::RequestExpired,
                    format!(
                        "Request has expired: it was signed at {amz_date} for {expires} seconds and it is now {}.",
                        format_amz_date(now)
                    ),
                ));
            }
        }
        None => {
            if t < now - MAX_SKEW_SECS {
                return Err(mismatch(format!(
                    "Signature expired: {amz_date} is now earlier than {} ({} - 15 min.)",
                    format_amz_date(now - MAX_SKEW_SECS),
                    format_amz_date(now)
                )));
            }
        }
    }
    Ok(())
}

/// The canonical-request candidates of `req` under `claim`: the SQS/SNS form (normalized
/// path, double-encoded), then forms other signers use, without repeats.
pub fn canonical_requests(req: &Request<'_>, claim: &Claim) -> Vec<String> {
    let presigned = claim.expires.is_some();
    let payload = sha256_hex(req.body);
    let headers = canonical_headers(req.headers, &claim.signed_headers, req.authority);
    let signed = claim.signed_headers.join(";");
    let path = if req.path.is_empty() { "/" } else { req.path };
    let mut uris = vec![canonical_uri(path, true), canonical_uri(path, false)];
    uris.push(path.to_owned());
    let mut queries = vec![canonical_query(req.query, presigned)];
    if !presigned {
        queries.push(req.query.unwrap_or("").to_owned());
    }
    let mut out: Vec<String> = Vec::new();
    for uri in &uris {
        for query in &queries {
            let c = canonical_request(req.method, uri, query, &headers, &signed, &payload);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Verifies `req`'s SigV4 signature at time `now` (seconds since the epoch); `secret`
/// maps an access key id to its secret key.
///
/// Errors (each with AWS's code, all HTTP 403): `MissingAuthenticationToken` (no
/// signature), `IncompleteSignature` (malformed, `host` not signed, an `X-Amz-Target`
/// header not signed, another algorithm),
/// `SignatureDoesNotMatch` (wrong signature, date outside the window), `RequestExpired`
/// (presigned URL past `X-Amz-Expires`), `InvalidClientTokenId` (unknown key).
pub fn verify<'s>(
    req: &Request<'_>,
    now: i64,
    secret: impl Fn(&str) -> Option<&'s str>,
) -> Result<Verified, Error> {
    let (claim, amz_date) = read_claim(req)?;
    if !claim.signed_headers.iter().any(|h| h == "host") {
        return Err(incomplete(
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    // X-Amz-Target names the operation of an AWS JSON request, so a signature that does
    // not cover it would let whoever holds the request (a presigned URL) run another
    // operation with it. Every SDK signs it.
    if req.headers.contains_key("x-amz-target")
        && !claim.signed_headers.iter().any(|h| h == "x-amz-target")
    {
        return Err(incomplete(
            "'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    check_time(&claim, &amz_date, now)?;
    let secret = secret(&claim.credential.access_key).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidClientTokenId,
            "The security token included in the request is invalid.",
        )
    })?;
    let c = &claim.credential;
    let key = signing_key(secret, &c.date, &c.region, &c.service);
    let scope = c.scope();
    let given = claim.signature.to_ascii_lowercase();
    let mut matched = subtle::Choice::from(0u8);
    for creq in canonical_requests(req, &claim) {
        let expected = signature(&key, &string_to_sign(&amz_date, &scope, &creq));
        matched |= expected.as_bytes().ct_eq(given.as_bytes());
    }
    if bool::from(matched) {
        Ok(Verified {
            access_key: c.access_key.clone(),
            service: c.service.clone(),
            region: c.region.clone(),
        })
    } else {
        Err(mismatch(SIGNATURE_MISMATCH))
    }
}

/// Who signs a request, for which scope, when: the input of [`authorization`].
#[derive(Clone, Copy)]
pub struct SigningParams<'a> {
    /// The access key id.
    pub access_key: &'a str,
    /// Its secret access key.
    pub secret: &'a str,
    /// The scope's region (`us-east-1`).
    pub region: &'a str,
    /// The scope's service: `sqs`, `sns`, anything for the seeds' API and Loft's routes.
    pub service: &'a str,
    /// The request date, `YYYYMMDDTHHMMSSZ`: the value of the request's `x-amz-date`.
    pub amz_date: &'a str,
}

impl std::fmt::Debug for SigningParams<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningParams")
            .field("access_key", &self.access_key)
            .field("region", &self.region)
            .field("service", &self.service)
            .field("amz_date", &self.amz_date)
            .finish_non_exhaustive()
    }
}

/// The `Authorization` header value that signs `req` (a request about to be sent) with
/// `params`, as the SQS and SNS SDKs sign: the normalized, double-encoded path
/// ([`canonical_uri`]), the sorted query, **every** header of `req.headers` (so add the
/// headers to sign, and only those, before calling: at least `host` and `x-amz-date` set
/// to `params.amz_date`, plus `x-amz-security-token` with a session token) and the
/// SHA-256 of the body. The same steps [`verify`] checks, so anything signed here verifies
/// there; checked against AWS's SigV4 test suite too.
pub fn authorization(req: &Request<'_>, params: &SigningParams<'_>) -> String {
    let mut signed: Vec<String> = req
        .headers
        .keys()
        .map(|name| name.as_str().to_owned())
        .collect();
    signed.sort();
    signed.dedup();
    let signed_headers = signed.join(";");
    let creq = canonical_request(
        req.method,
        &canonical_uri(req.path, true),
        &canonical_query(req.query, false),
        &canonical_headers(req.headers, &signed, req.authority),
        &signed_headers,
        &sha256_hex(req.body),
    );
    let credential = Credential {
        access_key: params.access_key.to_owned(),
        date: params.amz_date.chars().take(8).collect(),
        region: params.region.to_owned(),
        service: params.service.to_owned(),
    };
    let scope = credential.scope();
    let key = signing_key(
        params.secret,
        &credential.date,
        params.region,
        params.service,
    );
    let sig = signature(&key, &string_to_sign(params.amz_date, &scope, &creq));
    format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={sig}",
        params.access_key
    )
}

#[cfg(test)]
#[path = "sigv4_suite_tests.rs"]
mod suite_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_encoding_keeps_only_unreserved() {
        assert_eq!(uri_encode(b"a-b_c.d~e", false), "a-b_c.d~e");
        assert_eq!(uri_encode(b"a b/c", false), "a%20b%2Fc");
        assert_eq!(uri_encode(b"a b/c", true), "a%20b/c");
        assert_eq!(uri_encode("ሴ".as_bytes(), false), "%E1%88%B4");
        assert_eq!(uri_encode(b"%3A", true), "%253A", "double encoding");
    }

    #[test]
    fn percent_decoding_leaves_bad_escapes() {
        assert_eq!(percent_decode("a%20b"), b"a b");
        assert_eq!(percent_decode("a+b"), b"a+b");
        assert_eq!(percent_decode("100%"), b"100%");
        assert_eq!(percent_decode("%zz%4"), b"%zz%4");
        assert_eq!(percent_decode("%e1%88%b4"), "ሴ".as_bytes());
    }

    #[test]
    fn paths_normalize_like_the_sdks() {
        for (path, want) in [
            ("/", "/"),
            ("", "/"),
            ("//", "/"),
            ("/./", "/"),
            ("/example/..", "/"),
            ("/example1/example2/../..", "/"),
            ("/./example", "/example"),
            ("//example//", "/example/"),
            ("/a/b/../c", "/a/c"),
            ("/a/b/..", "/a/"),
            ("/000000000000/q", "/000000000000/q"),
        ] {
            assert_eq!(
                normalize_path(if path.is_empty() { "/" } else { path }),
                want,
                "{path:?}"
            );
        }
    }

    #[test]
    fn query_is_sorted_and_reencoded() {
        assert_eq!(
            canonical_query(Some("b=2&a=1&a=0&c"), false),
            "a=0&a=1&b=2&c="
        );
        assert_eq!(
            canonical_query(Some("X-Amz-Signature=abc&Action=ListQueues"), true),
            "Action=ListQueues"
        );
        assert_eq!(
            canonical_query(Some("QueueUrl=http%3A%2F%2Fh%2Fq&x=a%20b"), false),
            "QueueUrl=http%3A%2F%2Fh%2Fq&x=a%20b"
        );
    }

    #[test]
    fn header_values_are_trimmed_and_folded() {
        assert_eq!(canonical_header_value("  a   b\t c  "), "a b c");
        assert_eq!(canonical_header_value("\"a   b   c\""), "\"a b c\"");
    }

    #[test]
    fn authorization_header_parses() {
        let c = parse_authorization(
            "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sqs/aws4_request,SignedHeaders=host;X-Amz-Date, Signature=abc",
        )
        .unwrap();
        assert_eq!(c.credential.access_key, "AKID");
        assert_eq!(c.credential.service, "sqs");
        assert_eq!(c.signed_headers, ["host", "x-amz-date"]);
        assert_eq!(c.signature, "abc");
        for bad in [
            "AWS AKID:sig",
            "AWS4-HMAC-SHA256",
            "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sqs/aws4_request, Signature=abc",
            "AWS4-HMAC-SHA256 Credential=AKID/2015/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=abc",
            "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sqs, SignedHeaders=host, Signature=abc",
            "AWS4-HMAC-SHA256X Credential=AKID/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=abc",
        ] {
            let e = parse_authorization(bad).expect_err(bad);
            assert_eq!(e.code, ErrorCode::IncompleteSignature, "{bad}");
        }
    }

    /// Two `Authorization` headers, or one with bytes beyond ASCII, are IncompleteSignature
    /// (before: the first one counted, and a non-ASCII one was read as empty).
    #[test]
    fn authorization_header_is_one_ascii_value() {
        use axum::http::HeaderValue;
        const GOOD: &str = "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/sqs/aws4_request, SignedHeaders=host, Signature=abc";
        type Row<'a> = (&'a str, Vec<&'a [u8]>, Option<&'a str>);
        let rows: [Row; 7] = [
            ("none", vec![], None),
            ("one", vec![GOOD.as_bytes()], Some(GOOD)),
            (
                "with a tab",
                vec![b"AWS4-HMAC-SHA256\tCredential=x"],
                Some("AWS4-HMAC-SHA256\tCredential=x"),
            ),
            (
                "two alike",
                vec![GOOD.as_bytes(), GOOD.as_bytes()],
                Some("refused"),
            ),
            (
                "two others",
                vec![GOOD.as_bytes(), b"AWS4-HMAC-SHA256 Credential=B"],
                Some("refused"),
            ),
            (
                "a Latin-1 byte",
                vec![b"AWS4-HMAC-SHA256 Credential=\xe9/x"],
                Some("refused"),
            ),
            (
                "UTF-8",
                vec!["AWS4-HMAC-SHA256 Credential=\u{e9}".as_bytes()],
                Some("refused"),
            ),
        ];
        for (what, values, want) in rows {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(
                    axum::http::header::AUTHORIZATION,
                    HeaderValue::from_bytes(v).unwrap(),
                );
            }
            match (authorization_header(&h), want) {
                (Err(e), Some("refused")) => {
                    assert_eq!(e.code, ErrorCode::IncompleteSignature, "{what}")
                }
                (Ok(got), want) => assert_eq!(got, want, "{what}"),
                (got, want) => panic!("{what}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn dates_round_trip() {
        let t = parse_amz_date("20150830T123600Z").unwrap();
        assert_eq!(t, 1_440_938_160);
        assert_eq!(format_amz_date(t), "20150830T123600Z");
        assert_eq!(parse_amz_date("2015-08-30T12:36:00Z"), None);
    }

    fn claim(expires: Option<i64>) -> Claim {
        Claim {
            credential: Credential::parse("AKID/20150830/us-east-1/sqs/aws4_request").unwrap(),
            signed_headers: vec!["host".into()],
            signature: String::new(),
            amz_date: None,
            expires,
        }
    }

    #[test]
    fn the_clock_skew_window_is_fifteen_minutes_either_way() {
        let date = "20150830T123600Z";
        let t = parse_amz_date(date).unwrap();
        let c = claim(None);
        assert!(check_time(&c, date, t).is_ok());
        assert!(check_time(&c, date, t + 900).is_ok());
        assert!(check_time(&c, date, t - 900).is_ok());
        let late = check_time(&c, date, t + 901).unwrap_err();
        assert_eq!(late.code, ErrorCode::SignatureDoesNotMatch);
        assert_eq!(
            late.message,
            "Signature expired: 20150830T123600Z is now earlier than 20150830T123601Z (20150830T125101Z - 15 min.)"
        );
        let early = check_time(&c, date, t - 901).unwrap_err();
        assert_eq!(early.code, ErrorCode::SignatureDoesNotMatch);
        assert!(
            early
                .message
                .starts_with("Signature not yet current: 20150830T123600Z is still later than"),
            "{}",
            early.message
        );
        let other_day = check_time(&c, "20150831T000000Z", t).unwrap_err();
        assert_eq!(other_day.code, ErrorCode::SignatureDoesNotMatch);
        assert!(check_time(&c, "2015-08-30", t).is_err());
    }

    #[test]
    fn presigned_requests_last_x_amz_expires() {
        let date = "20150830T123600Z";
        let t = parse_amz_date(date).unwrap();
        let c = claim(Some(3600));
        assert!(
            check_time(&c, date, t + 3600).is_ok(),
            "longer than the skew window"
        );
        let e = check_time(&c, date, t + 3601).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestExpired);
        assert_eq!(
            check_time(&c, date, t - 901).unwrap_err().code,
            ErrorCode::SignatureDoesNotMatch
        );
        let short = claim(Some(60));
        assert_eq!(
            check_time(&short, date, t + 61).unwrap_err().code,
            ErrorCode::RequestExpired
        );
    }

    #[test]
    fn presigned_parameters_parse() {
        let q = "Action=ListQueues&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20150830%2Fus-east-1%2Fsqs%2Faws4_request&X-Amz-Date=20150830T123600Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=abc";
        assert!(is_presigned(Some(q)));
        let c = parse_presigned(Some(q)).unwrap();
        assert_eq!(c.expires, Some(60));
        assert_eq!(c.amz_date.as_deref(), Some("20150830T123600Z"));
        assert_eq!(c.credential.access_key, "AKID");
        let too_long = q.replace("X-Amz-Expires=60", "X-Amz-Expires=604801");
        assert_eq!(
            parse_presigned(Some(&too_long)).unwrap_err().code,
            ErrorCode::IncompleteSignature
        );
        let missing = q.replace("&X-Amz-Date=20150830T123600Z", "");
        assert_eq!(
            parse_presigned(Some(&missing)).unwrap_err().code,
            ErrorCode::IncompleteSignature
        );
        assert!(!is_presigned(Some("Action=ListQueues")));
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn lookup(key: &str) -> Option<&'static str> {
        (key == "AKIDEXAMPLE").then_some(SECRET)
    }

    #[test]
    fn verify_reports_each_failure_with_its_code() {
        // get-vanilla from AWS's suite, at its own time.
        let h = headers(&[
            ("host", "example.amazonaws.com"),
            ("x-amz-date", "20150830T123600Z"),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ]);
        let now = parse_amz_date("20150830T123600Z").unwrap();
        let req = Request {
            method: "GET",
            path: "/",
            query: None,
            headers: &h,
            authority: None,
            body: b"",
        };
        let ok = verify(&req, now, lookup).unwrap();
        assert_eq!(ok.access_key, "AKIDEXAMPLE");
        assert_eq!(ok.service, "service");
        let code = |r: &Request<'_>, now: i64, f: fn(&str) -> Option<&'static str>| {
            verify(r, now, f).unwrap_err().code
        };
        assert_eq!(code(&req, now, |_| None), ErrorCode::InvalidClientTokenId);
        assert_eq!(
            code(&req, now, |_| Some("wrong")),
            ErrorCode::SignatureDoesNotMatch
        );
        assert_eq!(
            code(&req, now + 3600, lookup),
            ErrorCode::SignatureDoesNotMatch
        );
        let post = Request {
            method: "POST",
            ..req
        };
        assert_eq!(code(&post, now, lookup), ErrorCode::SignatureDoesNotMatch);
        let body = Request { body: b"x", ..req };
        assert_eq!(code(&body, now, lookup), ErrorCode::SignatureDoesNotMatch);
        let path = Request {
            path: "/other",
            ..req
        };
        assert_eq!(code(&path, now, lookup), ErrorCode::SignatureDoesNotMatch);
        let query = Request {
            query: Some("a=1"),
            ..req
        };
        assert_eq!(code(&query, now, lookup), ErrorCode::SignatureDoesNotMatch);
        let empty = HeaderMap::new();
        let unsigned = Request {
            headers: &empty,
            ..req
        };
        assert_eq!(
            code(&unsigned, now, lookup),
            ErrorCode::MissingAuthenticationToken
        );
        let no_host = headers(&[
            ("host", "example.amazonaws.com"),
            ("x-amz-date", "20150830T123600Z"),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ]);
        let no_host = Request {
            headers: &no_host,
            ..req
        };
        assert_eq!(code(&no_host, now, lookup), ErrorCode::IncompleteSignature);
        let moved = headers(&[
            ("host", "other.example.com"),
            ("x-amz-date", "20150830T123600Z"),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        ]);
        let moved = Request {
            headers: &moved,
            ..req
        };
        assert_eq!(code(&moved, now, lookup), ErrorCode::SignatureDoesNotMatch);
    }
}
