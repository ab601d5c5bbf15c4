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

use axum::http::header;
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
