//! Cross-origin requests from browsers (CORS), so that a page using the AWS SDK for
//! JavaScript can call Loft: preflights (`OPTIONS` with `Origin` and
//! `Access-Control-Request-Method`) are answered before any route, authentication included
//! (a browser never signs a preflight), and answers to the allowed origins carry
//! `Access-Control-Allow-Origin` and expose `x-amzn-requestid` and `x-amzn-query-error`.
//!
//! Off by default: with no allowed origin, [`apply`] leaves the router as it is and no
//! response carries a CORS header. Origins come from `--cors-allowed-origin` (repeatable),
//! `LOFT_CORS_ALLOWED_ORIGINS` (comma-separated) or `cors_allowed_origins` under `[server]`
//! in the configuration file; `*` allows every origin.
//!
//! Request headers a preflight may ask for: `authorization`, `content-type` and every
//! `x-amz-*`, `x-amzn-*` and `amz-sdk-*` header, the ones the SDK sends (SigV4's
//! `x-amz-date`, `x-amz-security-token`, `x-amz-content-sha256`; `x-amz-target`,
//! `x-amz-user-agent`, `x-amzn-query-mode`, `amz-sdk-invocation-id`, `amz-sdk-request`).
//! A preflight asking for any other header gets an answer without it, so the browser does
//! not send the request. Credentials (cookies, HTTP Basic) are not allowed cross-origin:
//! the SDK signs with SigV4 instead, and the console's Basic sign-in stays same-origin.
//!
//! The layer is tower-http's `CorsLayer` (tower-rs's middleware crate, which axum's
//! ecosystem maintains alongside axum); [`filter_requested_headers`] narrows what it
//! mirrors to the patterns above.
//!
//! Source: the Fetch standard's CORS protocol; the AWS SDK for JavaScript v3's request
//! headers.

use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer, ExposeHeaders};

/// Response headers a cross-origin page may read.
pub const EXPOSED_HEADERS: &[&str] = &["x-amzn-requestid", "x-amzn-query-error"];

/// How long a browser may cache a preflight's answer (seconds).
pub const MAX_AGE_SECONDS: u64 = 600;

/// Whether a preflight may ask for request header `name` (lower case).
pub fn header_allowed(name: &str) -> bool {
    matches!(name, "authorization" | "content-type")
        || name.starts_with("x-amz-")
        || name.starts_with("x-amzn-")
        || name.starts_with("amz-sdk-")
}

/// Checks one allowed origin and returns it as browsers send it: `*`, or
/// `scheme://host[:port]` (a trailing `/` is dropped).
///
/// Errors: anything else (a path, a query, no scheme, white space), with what was wrong.
pub fn check_origin(origin: &str) -> Result<String, String> {
    let o = origin.trim();
    if o == "*" {
        return Ok(o.to_owned());
    }
    let o = o.strip_suffix('/').unwrap_or(o);
    let Some((scheme, rest)) = o.split_once("://") else {
        return Err(format!(
            "CORS origin {origin:?}: write it as scheme://host[:port], e.g. http://localhost:3000, or *"
        ));
    };
    let scheme_ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host_ok = !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@'])
        && !rest.chars().any(char::is_whitespace);
    if !scheme_ok || !host_ok || HeaderValue::from_str(o).is_err() {
        return Err(format!(
            "CORS origin {origin:?}: an origin is scheme://host[:port] with no path, e.g. http://localhost:3000, or *"
        ));
    }
    Ok(o.to_ascii_lowercase())
}

/// The CORS layer for `origins` (already checked with [`check_origin`]); `None` when the
/// list is empty (CORS off).
pub fn layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow_origin = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow_origin)
            .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::DELETE])
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers(ExposeHeaders::list(
                EXPOSED_HEADERS.iter().map(|h| HeaderName::from_static(h)),
            ))
            .max_age(Duration::from_secs(MAX_AGE_SECONDS)),
    )
}

/// Middleware run before the CORS layer: in a preflight's
/// `Access-Control-Request-Headers`, keeps only the names [`header_allowed`] accepts, so
/// the layer's mirrored `Access-Control-Allow-Headers` never allows another one.
pub async fn filter_requested_headers(mut req: Request, next: Next) -> Response {
    if req.method() == Method::OPTIONS {
        if let Some(v) = req
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .and_then(|v| v.to_str().ok())
        {
            let kept: Vec<String> = v
                .split(',')
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| header_allowed(h))
                .collect();
            match HeaderValue::from_str(&kept.join(",")) {
                Ok(v) if !kept.is_empty() => {
                    req.headers_mut()
                        .insert(header::ACCESS_CONTROL_REQUEST_HEADERS, v);
                }
                _ => {
                    req.headers_mut()
                        .remove(header::ACCESS_CONTROL_REQUEST_HEADERS);
                }
            }
        }
    }
    next.run(req).await
}

/// `router` answering cross-origin requests from `origins` (checked with
/// [`check_origin`]); unchanged when `origins` is empty. The layers wrap every route and
/// the fallback, outside authentication and request metrics, so preflights need no
/// signature.
pub fn apply(router: Router, origins: &[String]) -> Router {
    match layer(origins) {
        None => router,
        Some(cors) => router
            .layer(cors)
            .layer(axum::middleware::from_fn(filter_requested_headers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked_and_normalised() {
        assert_eq!(check_origin("*").unwrap(), "*");
        assert_eq!(
            check_origin("http://localhost:3000/").unwrap(),
            "http://localhost:3000"
        );
        assert_eq!(
            check_origin("HTTPS://App.Example.com").unwrap(),
            "https://app.example.com"
        );
        for bad in [
            "localhost:3000",
            "http://",
            "http://a.com/path",
            "http://a.com?x",
            "http://a b",
            "",
        ] {
            assert!(check_origin(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn only_the_sdks_headers_may_be_requested() {
        for ok in [
            "authorization",
            "content-type",
            "x-amz-date",
            "x-amz-target",
            "x-amz-user-agent",
            "x-amzn-query-mode",
            "amz-sdk-invocation-id",
            "amz-sdk-request",
        ] {
            assert!(header_allowed(ok), "{ok}");
        }
        for no in ["x-loft-console", "cookie", "x-custom"] {
            assert!(!header_allowed(no), "{no}");
        }
    }

    #[test]
    fn no_origins_no_layer() {
        assert!(layer(&[]).is_none());
        assert!(layer(&["*".into()]).is_some());
    }
}
