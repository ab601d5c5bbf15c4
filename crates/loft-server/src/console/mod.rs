//! The web console at `/console`: plain HTML, JavaScript and CSS compiled into the binary
//! (no build step), and the JSON routes under `/_loft/` it calls.
//!
//! Pages: `GET /console` (the page), `GET /console/app.js`, `GET /console/style.css`.
//! The JSON routes are in [`api`]; the console refreshes queue counts every 2 seconds.
//!
//! With credentials configured, the page, its assets and its JSON routes answer `401` with
//! `WWW-Authenticate: Basic realm="loft"`, so the browser asks for a user name (an access
//! key id) and password (its secret) and sends them with every request after
//! ([`crate::auth::require_console_auth`]); the script adds the
//! [`crate::auth::CONSOLE_HEADER`] header, without which a Basic-authenticated POST is
//! refused.

pub mod api;

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The page.
pub const INDEX_HTML: &str = include_str!("assets/index.html");
/// The script: fetches `/_loft/...` and renders queues, messages, topics and recorded
/// messages.
pub const APP_JS: &str = include_str!("assets/app.js");
/// The style sheet.
pub const STYLE_CSS: &str = include_str!("assets/style.css");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /console`: the page (`text/html`).
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /console/app.js`.
pub async fn app_js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// `GET /console/style.css`.
pub async fn style_css() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

/// The CSP directive that forbids framing the console (W3C CSP Level 2, `frame-ancestors`).
pub const FRAME_ANCESTORS: &str = "frame-ancestors 'none'";

/// Keeps every other site from framing the console (clickjacking): adds
/// `X-Frame-Options: DENY` (RFC 7034) and `Content-Security-Policy: frame-ancestors 'none'`
/// (W3C CSP Level 2) to each response of the console's routes (the page, its assets, its
/// JSON routes and their refusals). A `Content-Security-Policy` the response already has
/// keeps its directives, with `frame-ancestors 'none'` added unless it names
/// `frame-ancestors` itself.
pub async fn deny_framing(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let headers = resp.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    let csp = match headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
    {
        Some(old) if old.contains("frame-ancestors") => None,
        Some(old) if !old.trim().is_empty() => HeaderValue::from_str(&format!(
            "{}; {FRAME_ANCESTORS}",
            old.trim().trim_end_matches(';')
        ))
        .ok(),
        _ => Some(HeaderValue::from_static(FRAME_ANCESTORS)),
    };
    if let Some(csp) = csp {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    resp
}
