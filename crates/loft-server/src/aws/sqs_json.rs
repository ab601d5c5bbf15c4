//! SQS over AWS JSON 1.0: `X-Amz-Target: AmazonSQS.<Operation>` and a JSON body in, a JSON
//! body out (`application/x-amz-json-1.0`).
//!
//! [`decode`] turns the target and body into an [`SqsRequest`]; [`response`] writes an
//! [`SqsResponse`] with serde (its shape is the output type's); [`error`] writes an error
//! from the table: `{"__type": "com.amazonaws.sqs#<JSON shape name>", "message"}` and the
//! `x-amzn-query-error: <Query code>;<Sender|Receiver>` header the AWS SDKs read for
//! Query-compatible codes.
//!
//! Source: the botocore model `sqs/2012-11-05` (`awsQueryCompatible`, `targetPrefix`
//! `AmazonSQS`), AWS's recorded responses (`QueryErrorCode` is the `__type` shape name).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use loft_core::{Error, ErrorCode, Result};
use serde_json::Value;

use super::shape::Wire;
use super::sqs::types::{SqsRequest, SqsResponse};

/// The JSON protocol's content type.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// The SQS operation an `X-Amz-Target` header names (`AmazonSQS.SendMessage` names
/// `SendMessage`).
///
/// Errors: `InvalidAction` when the target is not `AmazonSQS.*`.
pub fn target(target: &str) -> Result<&str> {
    target.strip_prefix("AmazonSQS.").ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidAction,
            format!("The target {target} is not an operation of this service."),
        )
    })
}

/// The body as a JSON object; an empty (or all-whitespace) body is the empty object, as
/// the SDKs send for operations without input.
///
/// A body that is not one JSON object is refused before any member is read, in the JSON
/// protocol's own shape: AWS's JSON front end answers input it cannot deserialize with
/// `SerializationException` (400), as it answers a member of the wrong type
/// ([`ErrorCode::Serialization`]), never with a Query code. That covers text that is not
/// JSON, bytes that are not UTF-8 (RFC 8259 §8.1: JSON text is UTF-8), and a `\u` escape
/// of a lone UTF-16 surrogate (`"\ud800"`), which names no Unicode character: the Query
/// protocol refuses the same text (`%ED%A0%80`, not UTF-8) as `MalformedQueryString`
/// ([`super::query::check_utf8`]), so neither protocol lets it reach the service changed.
/// AWS's message for these is not recorded; the words are Loft's.
///
/// Errors: `Serialization` (`SerializationException`) for anything but a JSON object.
pub fn body(body: &[u8]) -> Result<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    let reason = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => return Ok(v),
        Ok(_) => "The request body is not a JSON object.".to_owned(),
        Err(e) => format!("The request body is not valid JSON: {e}."),
    };
    Err(Error::with(
        ErrorCode::Serialization,
        &[("reason", &reason)],
    ))
}

/// The request of operation `op` (from [`target`]) with `body`.
///
/// Errors: `Serialization` ([`body`]), `InvalidAction` for an operation SQS does not
/// have, and the input's own (`MissingParameter`, `InvalidParameterValue`).
pub fn decode(op: &str, raw: &[u8]) -> Result<SqsRequest> {
    SqsRequest::from_json(op, body(raw)?, Wire::SqsJson)
}

fn with_headers(mut resp: Response, request_id: &str) -> Response {
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

/// The JSON body of an answer.
pub fn encode(out: &SqsResponse) -> Vec<u8> {
    serde_json::to_vec(out).unwrap_or_else(|_| b"{}".to_vec())
}

/// A 200 answer with `out`'s JSON.
pub fn response(out: &SqsResponse, request_id: &str) -> Response {
    with_headers((StatusCode::OK, encode(out)).into_response(), request_id)
}

/// An error answer, from the table's row for `e.code`.
pub fn error(e: &Error, request_id: &str) -> Response {
    let row = e.code.row();
    let status = StatusCode::from_u16(row.status).unwrap_or(StatusCode::BAD_REQUEST);
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.sqs#{}", row.json_type),
        "message": e.message,
    });
    let mut resp = with_headers((status, body.to_string()).into_response(), request_id);
    if let Ok(v) = HeaderValue::from_str(&format!("{};{}", row.query_code, row.fault.as_str())) {
        resp.headers_mut().insert("x-amzn-query-error", v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::shape::Entry;
    use crate::aws::sqs::types::*;

    #[test]
    fn decodes_raw_requests() {
        let req = decode(
            "SendMessageBatch",
            br#"{"QueueUrl": "http://h/0/q", "Entries": [
                {"Id": "a", "MessageBody": "one", "DelaySeconds": 5,
                 "MessageAttributes": {"k": {"DataType": "Binary", "BinaryValue": "AQID"}}},
                {"Id": "b"},
                {"Id": "c", "MessageBody": 7}
            ]}"#,
        )
        .unwrap();
        let SqsRequest::SendMessageBatch(i) = req else {
            panic!("{req:?}")
        };
        assert_eq!(i.queue_url, "http://h/0/q");
        let entries = i.entries.unwrap();
        let Entry::Ok(a) = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!((a.id.as_str(), a.delay_seconds), ("a", Some(5)));
        let attr = &a.message_attributes.as_ref().unwrap()["k"];
        assert_eq!(attr.binary_value.as_ref().unwrap().0, vec![1, 2, 3]);
        for (entry, code) in [
            (&entries[1], ErrorCode::MissingParameter),
            (&entries[2], ErrorCode::InvalidParameterValue),
        ] {
            let Entry::Bad { id: Some(_), error } = entry else {
                panic!("{entry:?}")
            };
            assert_eq!(error.code, code);
        }
        // A surrogate pair escape is one character, taken as it is.
        let req = decode(
            "SendMessage",
            br#"{"QueueUrl": "u", "MessageBody": "\ud83d\ude00"}"#,
        )
        .unwrap();
        let SqsRequest::SendMessage(i) = req else {
            panic!("{req:?}")
        };
        assert_eq!(i.message_body, "\u{1F600}");
        assert_eq!(
            decode("ListQueues", b"").unwrap(),
            SqsRequest::ListQueues(ListQueuesRequest {
                queue_name_prefix: None,
                next_token: None,
                max_results: None,
            })
        );
    }

    #[test]
    fn refuses_what_is_not_a_request() {
        assert_eq!(
            target("AmazonSNS.Publish").unwrap_err().code,
            ErrorCode::InvalidAction
        );
        assert_eq!(target("AmazonSQS.SendMessage").unwrap(), "SendMessage");
        for (op, body, code) in [
            ("Bogus", &b"{}"[..], ErrorCode::InvalidAction),
            // A body that is not one JSON object: the JSON front end's SerializationException,
            // never a Query code (each row was MalformedQueryString before).
            ("ListQueues", b"[1]", ErrorCode::Serialization),
            ("ListQueues", b"\"x\"", ErrorCode::Serialization),
            ("ListQueues", b"{", ErrorCode::Serialization),
            ("ListQueues", b"{}}", ErrorCode::Serialization),
            ("ListQueues", b"{\"QueueNamePrefix\": \"a\",}", ErrorCode::Serialization),
            ("SendMessage", b"{\"MessageBody\": \"\xff\"}", ErrorCode::Serialization),
            (
                "SendMessage",
                br#"{"QueueUrl": "u", "MessageBody": "a\ud800b"}"#,
                ErrorCode::Serialization,
            ),
            (
                "SendMessage",
                br#"{"QueueUrl": "u", "MessageBody": "\udc00"}"#,
                ErrorCode::Serialization,
            ),
            (
                "SendMessage",
                br#"{"QueueUrl": "u", "MessageBody": "b", "MessageAttributes": {"a": {"DataType": "String", "StringValue": "\ud800"}}}"#,
                ErrorCode::Serialization,
            ),
            (
                "SendMessage",
                br#"{"QueueUrl": "u"}"#,
                ErrorCode::MissingParameter,
            ),
            (
                "ReceiveMessage",
                br#"{"QueueUrl": "u", "MaxNumberOfMessages": "ten"}"#,
                ErrorCode::Serialization,
            ),
            // Even a numeric string: AWS's "STRING_VALUE can not be converted to an
            // Integer".
            (
                "SendMessage",
                br#"{"QueueUrl": "u", "MessageBody": "b", "DelaySeconds": "5"}"#,
                ErrorCode::Serialization,
            ),
            (
                "ReceiveMessage",
                br#"{"QueueUrl": "u", "MaxNumberOfMessages": true}"#,
                ErrorCode::InvalidParameterValue,
            ),
            (
                "DeleteMessageBatch",
                br#"{"QueueUrl": "u", "Entries": [{"Id": 5}]}"#,
                ErrorCode::InvalidParameterValue,
            ),
        ] {
            assert_eq!(decode(op, body).unwrap_err().code, code, "{op} {body:?}");
        }
    }

    #[test]
    fn encodes_outputs_from_their_types() {
        let out = SqsResponse::SendMessageBatch(SendMessageBatchResult {
            successful: vec![],
            failed: None,
        });
        assert_eq!(encode(&out), br#"{"Successful":[]}"#);
        let out = SqsResponse::ReceiveMessage(ReceiveMessageResult { messages: None });
        assert_eq!(encode(&out), b"{}");
        assert_eq!(encode(&SqsResponse::DeleteQueue(Default::default())), b"{}");
    }
}
