//! The Query protocol's decoder: form parameters (query string and body) to AWS's JSON
//! input shape for SQS and for SNS, the SQS/SNS routing decision, and the XML writer over
//! whatever shape came out.
//!
//! Input: the query string on the first line (without `?`), the form body after it.
#![no_main]

use axum::http::HeaderMap;
use libfuzzer_sys::fuzz_target;
use loft_server::aws::{self, input::Input, query, sns, sqs};

/// XML rules with the SQS adapter's lists and maps, to write decoded shapes.
const SQS_RULES: query::XmlRules = query::XmlRules {
    lists: &[("Entries", "Entry"), ("AttributeNames", "AttributeName")],
    maps: &[
        ("Attributes", "Attribute", "Name", "Value"),
        ("MessageAttributes", "MessageAttribute", "Name", "Value"),
    ],
    member_lists: false,
};

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

    if let Ok(sqs_input) = query::decode(&pairs) {
        let _ = query::response(
            "Fuzz",
            aws::SQS_NAMESPACE,
            &sqs_input,
            &SQS_RULES,
            "rid",
            true,
        );
        let input = Input(&sqs_input);
        let _ = sqs::queue_name(input);
        let _ = input.message_attributes("MessageAttributes");
        if let Ok(entries) = input.objects("Entries") {
            for entry in entries {
                let _ = entry.message_attributes("MessageAttributes");
                let _ = entry.int("DelaySeconds");
            }
        }
    }
    if let Ok(sns_input) = query::decode_sns(&pairs) {
        let _ = query::response(
            "Fuzz",
            sns::SNS_NAMESPACE,
            &sns_input,
            &sns::XML_RULES,
            "rid",
            true,
        );
        let _ = Input(&sns_input).str_map("Attributes");
    }
});
