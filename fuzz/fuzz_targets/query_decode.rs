//! The Query protocol's decoders: form parameters (query string and body) to every SQS
//! and SNS operation's typed input, and the SQS/SNS routing decision.
//!
//! Input: the query string on the first line (without `?`), the form body after it.
#![no_main]

use axum::http::HeaderMap;
use libfuzzer_sys::fuzz_target;
use loft_server::aws::{self, query, sns_query, sqs_query};

fuzz_target!(|data: &[u8]| {
    let (query_string, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&[][..], data),
    };
    let query_string = String::from_utf8_lossy(query_string);
    let pairs = query::form_pairs(Some(&query_string), body);
    let action = pairs
        .iter()
        .find(|(k, _)| k == "Action")
        .map_or("", |(_, v)| v.as_str());
    let _ = aws::route_query(&HeaderMap::new(), "/000000000000/q", &pairs, action);
    let _ = aws::route_query(&HeaderMap::new(), "/", &pairs, action);
    let _ = query::check_utf8(Some(&query_string), body);

    // Every operation's input decoder, whatever the Action said, so each is reached.
    for op in aws::sqs::types::OPERATIONS {
        for path in ["/", "/000000000000/q"] {
            let _ = sqs_query::decode(op.name, &pairs, path, "http://127.0.0.1:9324");
        }
    }
    for op in aws::sns::types::OPERATIONS {
        let _ = sns_query::decode(op.name, &pairs);
    }
});
