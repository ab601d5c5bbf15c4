//! Requests a web page makes without being invited: cross-site request forgery (a page
//! on another site posting a form or `text/plain` body to Loft, which browsers send
//! without a preflight and without asking Loft) and DNS rebinding (a page whose own name
//! the attacker re-points at 127.0.0.1, so its requests are same-origin to the browser).
//! Either lets any site a developer visits drive an open Loft: create queues, read and
//! reset everything, subscribe an outside URL to a topic.
//!
//! Only requests a browser made are looked at: those carrying `Origin` or
//! `Sec-Fetch-Site` (the SDKs, the CLI and other programs send neither). Such a request
//! is refused, `403 {"error": ...}`, unless
//!
//! 1. its `Origin` is one of `cors_allowed_origins` (or that list is `*`), or
//! 2. it comes from a page Loft served under a name a rebinding page cannot have: an
//!    `Origin` equal to the request's own scheme-less authority (the `Host`), or no
//!    `Origin` and a `Sec-Fetch-Site` that is not `cross-site` or `same-site` (a
//!    cross-site `<img>` or link GET carries no `Origin`; the one such request answered
//!    is a navigation to the console's page), **and** that host is an IP address,
//!    `localhost` (or a `.localhost` name), the host of `--advertised-url`, or the host
//!    of an allowed origin.
//!
//! A browser that sends neither header (Safari before 16.4 on a same-origin GET) is not
//! told from a program: a rebinding page there can still read what a GET reads.
//!
//! So the console opened at `http://127.0.0.1:9324`, `http://localhost:9324` or the
//! advertised URL works as before, a page of an allowed origin calls Loft as before, and
//! what a browser would have hidden the answer of (a page of any other origin) is no
//! longer carried out. A console reached under another name needs that name as
//! `--advertised-url` or among the allowed origins.
//!
//! Source: the Fetch standard (`Origin` on every CORS and every non-GET/HEAD request,
//! `Sec-Fetch-Site`), OWASP's "Cross-Site Request Forgery Prevention" (verifying the
//! origin with standard headers) and the usual defence against DNS rebinding (refusing
//! unknown `Host` names, as development servers do).

use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Which browser requests Loft answers (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct BrowserGuard {
    /// `cors_allowed_origins` holds `*`: every page may call Loft.
    any: bool,
    /// The allowed origins, `scheme://host[:port]` in lower case.
    origins: Vec<String>,
    /// Host names (no port, lower case) a page Loft served may be reached under besides
    /// IP addresses and `localhost`: the advertised URL's and the allowed origins'.
    hosts: Vec<String>,
}

impl BrowserGuard {
    /// The guard for `origins` (checked by [`crate::cors::check_origin`]) and Loft's
    /// advertised URL (`http://host[:port]`).
    pub fn new(origins: &[String], advertised_url: &str) -> BrowserGuard {
        let any = origins.iter().any(|o| o == "*");
        let origins: Vec<String> = origins
            .iter()
            .filter(|o| *o != "*")
            .map(|o| o.to_ascii_lowercase())
            .collect();
        let hosts = origins
            .iter()
            .map(String::as_str)
            .chain([advertised_url])
            .filter_map(|u| u.split_once("://").map(|(_, rest)| rest))
            .map(|rest| host_of(rest.split('/').next().unwrap_or("")).to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        BrowserGuard {
            any,
            origins,
            hosts,
        }
    }

    /// Why a request with these `headers` and `uri` is refused, or `None` when Loft
    /// answers it: always `None` for a request no browser made.
    pub fn refusal(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Option<String> {
        let origin = headers.get(header::ORIGIN);
        let fetch_site = headers.get("sec-fetch-site");
        if origin.is_none() && fetch_site.is_none() {
            return None;
        }
        if self.any {
            return None;
        }
        // A cross-site GET (an `<img>`, a `<script>`, a link) carries no `Origin`, only
        // `Sec-Fetch-Site`: from another site (or another port of this one) it is refused
        // too, except a navigation to the console's page.
        let from_elsewhere = fetch_site.and_then(|v| v.to_str().ok()).is_some_and(|v| {
            v.eq_ignore_ascii_case("cross-site") || v.eq_ignore_ascii_case("same-site")
        });
        if origin.is_none() && from_elsewhere {
            let navigation = headers
                .get("sec-fetch-mode")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("navigate"));
            let console_page = uri.path() == "/console" || uri.path().starts_with("/console/");
            if !(navigation && *method == Method::GET && console_page) {
                return Some(
                    "a request from a page of another site may not reach Loft: add the page's origin to cors_allowed_origins (--cors-allowed-origin) to allow it"
                        .into(),
                );
            }
        }
        let origin = match origin.map(|o| o.to_str()) {
            Some(Ok(o)) => Some(o.trim().trim_end_matches('/').to_ascii_lowercase()),
            Some(Err(_)) => return Some("the request's Origin is not text".into()),
            None => None,
        };
        if let Some(o) = &origin {
            if self.origins.iter().any(|a| a == o) {
                return None;
            }
        }
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            })
            .unwrap_or_default()
            .to_ascii_lowercase();
        if let Some(o) = &origin {
            let page = o.split_once("://").map_or(o.as_str(), |(_, rest)| rest);
            if page != authority {
                return Some(format!(
                    "a web page at {o} may not call Loft: add its origin to cors_allowed_origins (--cors-allowed-origin) to allow it"
                ));
            }
        }
        if !self.trusted_host(host_of(&authority)) {
            return Some(format!(
                "a browser reached Loft as {authority}, a name Loft does not know: use an IP address, localhost or the advertised URL's host, or add the page's origin to cors_allowed_origins"
            ));
        }
        None
    }

    /// Whether a page served under `host` (no port) is Loft's own: an IP address,
    /// `localhost` or a `.localhost` name, or one of [`BrowserGuard::hosts`].
    fn trusted_host(&self, host: &str) -> bool {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        !host.is_empty()
            && (bare.parse::<std::net::IpAddr>().is_ok()
                || host == "localhost"
                || host.ends_with(".localhost")
                || self.hosts.iter().any(|h| h == host))
    }
}

/// The host of an authority `host[:port]` (`[v6]:port` keeps its brackets).
fn host_of(authority: &str) -> &str {
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if authority.starts_with('[') {
        return authority
            .find(']')
            .map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or("")
}

/// The refusal: `403 {"error": reason}` (the seeds' error shape; the page that sent the
/// request cannot read it, the developer sees it in the browser's tools).
pub fn refuse(reason: String) -> Response {
    (StatusCode::FORBIDDEN, Json(json!({"error": reason}))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(guard: &BrowserGuard, host: &str, pairs: &[(&str, &str)]) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        for (k, v) in pairs {
            headers.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        guard.refusal(&Method::POST, &Uri::from_static("/"), &headers)
    }

    #[test]
    fn programs_are_never_looked_at() {
        let g = BrowserGuard::new(&[], "http://127.0.0.1:9324");
        assert_eq!(ask(&g, "rebound.evil.example:9324", &[]), None);
    }

    #[test]
    fn pages_of_other_origins_are_refused_unless_allowed() {
        let g = BrowserGuard::new(&[], "http://127.0.0.1:9324");
        for origin in ["http://evil.example", "http://localhost:3000", "null"] {
            assert!(
                ask(&g, "127.0.0.1:9324", &[("origin", origin)]).is_some(),
                "{origin}"
            );
        }
        let allowed = BrowserGuard::new(&["http://localhost:3000".into()], "http://x:1");
        assert_eq!(
            ask(
                &allowed,
                "127.0.0.1:9324",
                &[("origin", "http://localhost:3000")]
            ),
            None
        );
        let any = BrowserGuard::new(&["*".into()], "http://x:1");
        assert_eq!(
            ask(&any, "127.0.0.1:9324", &[("origin", "http://evil.example")]),
            None
        );
    }

    #[test]
    fn the_console_under_loopback_or_the_advertised_name_is_answered() {
        let g = BrowserGuard::new(&[], "http://loft.internal:9324");
        for host in [
            "127.0.0.1:9324",
            "localhost:9324",
            "app.localhost:9324",
            "[::1]:9324",
            "10.1.2.3:9324",
            "loft.internal:9324",
        ] {
            let origin = format!("http://{host}");
            assert_eq!(ask(&g, host, &[("origin", &origin)]), None, "{host}");
            assert_eq!(ask(&g, host, &[("sec-fetch-site", "same-origin")]), None);
        }
    }

    #[test]
    fn cross_site_requests_without_origin_are_refused_but_a_link_to_the_console() {
        let g = BrowserGuard::new(&[], "http://127.0.0.1:9324");
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:9324".parse().unwrap());
        headers.insert("sec-fetch-site", "cross-site".parse().unwrap());
        headers.insert("sec-fetch-mode", "no-cors".parse().unwrap());
        let ask = |method: &Method, uri: &'static str, headers: &HeaderMap| {
            g.refusal(method, &Uri::from_static(uri), headers)
        };
        let delete = "/000000000000/q?Action=DeleteQueue";
        assert!(ask(&Method::GET, delete, &headers).is_some());
        assert!(ask(&Method::GET, "/queues/q/messages", &headers).is_some());
        headers.insert("sec-fetch-site", "same-site".parse().unwrap());
        assert!(ask(&Method::GET, delete, &headers).is_some());
        headers.insert("sec-fetch-mode", "navigate".parse().unwrap());
        assert!(
            ask(&Method::GET, delete, &headers).is_some(),
            "a link to an action"
        );
        assert_eq!(ask(&Method::GET, "/console", &headers), None);
        assert_eq!(ask(&Method::GET, "/console/queues/q", &headers), None);
        assert!(ask(&Method::POST, "/console", &headers).is_some());
        headers.insert("sec-fetch-site", "none".parse().unwrap());
        assert_eq!(
            ask(&Method::GET, delete, &headers),
            None,
            "typed by the user"
        );
    }

    #[test]
    fn a_rebound_name_is_refused_even_same_origin() {
        let g = BrowserGuard::new(&[], "http://127.0.0.1:9324");
        let host = "rebound.evil.example:9324";
        assert!(ask(&g, host, &[("origin", "http://rebound.evil.example:9324")]).is_some());
        assert!(ask(&g, host, &[("sec-fetch-site", "same-origin")]).is_some());
    }
}
