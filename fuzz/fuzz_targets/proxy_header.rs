//! The client behind a load balancer (`loft_server::proxy`): PROXY protocol v2 headers
//! and `X-Forwarded-For` values from a trusted proxy, and `--trusted-proxy` values.
//!
//! Input: at least 16 bytes are a PROXY v2 head (the signature is put in front when the
//! input does not start with it, so that the fuzzer reaches the fields behind it) and
//! what follows its body; the input as text, line by line, is also `X-Forwarded-For`
//! values read from a trusted proxy, and each line a `--trusted-proxy` value.
#![no_main]

use axum::http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use loft_server::proxy::{
    parse_cidr, parse_proxy_v2, proxy_v2_len, TrustedProxies, PROXY_V2_SIGNATURE,
};

fuzz_target!(|data: &[u8]| {
    let mut header = data.to_vec();
    if !header.starts_with(&PROXY_V2_SIGNATURE) {
        header.splice(0..0, PROXY_V2_SIGNATURE);
    }
    if let Some(head) = header.get(..16) {
        let head: [u8; 16] = head.try_into().expect("16 bytes");
        if let Ok(len) = proxy_v2_len(&head) {
            let body = &header[16..];
            let _ = parse_proxy_v2(&head, &body[..len.min(body.len())]);
        }
        let _ = parse_proxy_v2(&head, &header[16..]);
    }
    let text = String::from_utf8_lossy(data);
    let mut headers = HeaderMap::new();
    let mut ranges = vec!["10.0.0.0/8".parse().expect("range")];
    for line in text.lines() {
        if let Ok(v) = HeaderValue::from_str(line) {
            headers.append("x-forwarded-for", v);
        }
        if let Ok(net) = parse_cidr(line) {
            ranges.push(net);
        }
    }
    let trusted = TrustedProxies(ranges);
    for peer in ["10.0.0.1", "::ffff:10.0.0.2", "192.0.2.1"] {
        let _ = trusted.client(peer.parse().expect("address"), &headers);
    }
});
