//! SigV4: the `Authorization` header and presigned query parsers, the canonical forms and
//! the whole verification, at the time of AWS's test suite (2015-08-30T12:36:00Z) with its
//! key (`AKIDEXAMPLE`), so the suite's signed requests verify and mutations of them reach
//! every step.
//!
//! Input: an HTTP request as the suite writes it: `METHOD TARGET HTTP/1.1`, `Name:value`
//! header lines, an empty line, the body.
#![no_main]

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use loft_server::sigv4;

/// 2015-08-30T12:36:00Z, the suite's time.
const NOW: i64 = 1_440_938_160;
const KEY: &str = "AKIDEXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.split('\n');
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or("GET");
    let target = parts.next().unwrap_or("/");
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_bytes(value.as_bytes()),
        ) {
            headers.append(n, v);
        }
    }

    for value in headers.get_all("authorization") {
        let value = String::from_utf8_lossy(value.as_bytes());
        if let Ok(claim) = sigv4::parse_authorization(&value) {
            let _ = claim.credential.scope();
            if let Some(date) = headers.get("x-amz-date").and_then(|d| d.to_str().ok()) {
                let _ = sigv4::check_time(&claim, date, NOW);
            }
        }
    }
    let _ = sigv4::is_presigned(query);
    if let Ok(claim) = sigv4::parse_presigned(query) {
        let date = claim.amz_date.clone().unwrap_or_default();
        let _ = sigv4::check_time(&claim, &date, NOW);
    }
    for presigned in [false, true] {
        let _ = sigv4::canonical_query(query, presigned);
    }
    for normalize in [false, true] {
        let _ = sigv4::canonical_uri(path, normalize);
    }
    let request = sigv4::Request {
        method,
        path,
        query,
        headers: &headers,
        authority: None,
        body,
    };
    let _ = sigv4::verify(&request, NOW, |k| (k == KEY).then_some(SECRET));
});
