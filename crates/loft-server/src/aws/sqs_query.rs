//! SQS over the Query protocol: `Action=<Operation>` and form parameters (query string and
//! form body, POST or GET) in, XML out in the `2012-11-05` namespace.
//!
//! [`decode`] reads the parameter tree into an [`SqsRequest`], with the queue URL a
//! request was sent to standing in for a missing `QueueUrl`; an operation of the account
//! ([`ACCOUNT_ACTIONS`]: CreateQueue, ListQueues) sent to a queue URL is `InvalidAction`,
//! as AWS answers. [`response`] writes an [`SqsResponse`] (its flattened lists and maps come from
//! the output type, [`super::shape`]); [`error`] writes `<ErrorResponse>` with Type, Code,
//! Message and the empty `<Detail/>` SQS sends. A request whose `Accept` header asks for
//! `application/json` is answered in JSON (`{"<Op>Response": {"<Op>Result": ...,
//! "ResponseMetadata": ...}}`, maps as lists of their entries, [`super::shape::query_json`];
//! errors `{"Error": {"Type", "Code", "Message"}, "RequestId"}`), as AWS negotiates it
//! (AWS's answers recorded by LocalStack `test_get_queue_attributes_json_format` and
//! `test_get_list_queues_fails_json_format`, both `aws.validated`).
//!
//! Sources: the SQS API Reference's Query examples; AWS's recorded responses (GET on a
//! queue URL; `Accept: application/json`; "The action CreateQueue is not valid for this
//! endpoint."; "... does not exist for this wsdl version.").

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use loft_core::{Error, ErrorCode, Result};

use super::query::{self, Node};
use super::shape::Wire;
use super::sqs::types::{SqsRequest, SqsResponse, OPERATIONS};

/// The SQS Query protocol's XML namespace.
pub const NAMESPACE: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

/// The operations a queue URL does not serve: those of the account rather than of a queue.
/// AWS answers them with `InvalidAction` "The action CreateQueue is not valid for this
/// endpoint." there, while GetQueueUrl, which names its queue by name, is served (its
/// recorded responses: `test_get_create_queue_fails`, `test_get_list_queues_fails`,
/// `test_get_queue_url_work_for_different_queue`).
pub const ACCOUNT_ACTIONS: &[&str] = &["CreateQueue", "ListQueues"];

/// Whether `path` is a queue URL's: `/{account}/{queue}`, or
/// `/queue/{region}/{account}/{queue}` (a queue of a region other than the configured one).
pub fn is_queue_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [_, _] => true,
        ["queue", region, account, _] => {
            loft_core::names::is_region(region) && loft_core::names::is_account_id(account)
        }
        _ => false,
    }
}

/// Whether `path` is a queue URL's with an account id for its account part
/// (`/000000000000/orders`, `/queue/eu-west-1/000000000000/orders`): what a request without
/// any action must be sent to for SQS to answer it (`/queue/q` is the seeds' API's unknown
/// route).
pub fn is_account_queue_path(path: &str) -> bool {
    is_queue_path(path)
        && path
            .split('/')
            .rev()
            .filter(|s| !s.is_empty())
            .nth(1)
            .is_some_and(|a| a.bytes().all(|b| b.is_ascii_digit()))
}

/// The request `action` names, from the parameter `pairs` sent to `path`; `base_url` is
/// how the client reached Loft (`http://host:port`), from which a queue URL path becomes
/// the `QueueUrl` of the operations that have one and lack it.
///
/// Errors: `MalformedRequest` (a name of too many parts), `InvalidAction` (an operation
/// SQS does not have, or one of [`ACCOUNT_ACTIONS`] sent to a queue URL), `MalformedInput`
/// (a list index that is not a positive integer), and the input's own.
pub fn decode(
    action: &str,
    pairs: &[(String, String)],
    path: &str,
    base_url: &str,
) -> Result<SqsRequest> {
    let mut tree = query::tree(pairs)?;
    if is_queue_path(path) {
        if ACCOUNT_ACTIONS.contains(&action) {
            return Err(Error::with(
                ErrorCode::InvalidAction,
                &[("action", &action)],
            ));
        }
        let takes_queue = OPERATIONS
            .iter()
            .find(|o| o.name == action)
            .is_some_and(|o| o.member("QueueUrl").is_some());
        if takes_queue {
            tree.children
                .entry("QueueUrl".into())
                .or_insert_with(|| Node {
                    value: Some(format!("{base_url}{path}")),
                    children: Default::default(),
                });
        }
    }
    SqsRequest::from_query(action, &tree, Wire::SqsQuery)
}

/// Whether the client asked for JSON (`Accept: application/json`).
pub fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/json"))
}

fn answer(status: StatusCode, body: String, json: bool, request_id: &str) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if json { "application/json" } else { "text/xml" }),
    );
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

/// The XML document of an answer.
pub fn encode(out: &SqsResponse, request_id: &str) -> String {
    query::response(
        out.name(),
        NAMESPACE,
        out.has_result(),
        |w| out.write_members(Wire::SqsQuery, w),
        request_id,
    )
}

/// A 200 answer with `out`, as XML, or JSON when `json`.
pub fn response(out: &SqsResponse, request_id: &str, json: bool) -> Response {
    let body = if json {
        let op = out.name();
        let mut inner = serde_json::Map::new();
        if out.has_result() {
            let kind = OPERATIONS
                .iter()
                .find(|o| o.name == op)
                .map_or(&super::shape::Kind::Nothing, |o| o.output);
            inner.insert(
                format!("{op}Result"),
                super::shape::query_json(serde_json::to_value(out).unwrap_or_default(), kind),
            );
        }
        inner.insert(
            "ResponseMetadata".into(),
            serde_json::json!({"RequestId": request_id}),
        );
        serde_json::json!({ format!("{op}Response"): inner }).to_string()
    } else {
        encode(out, request_id)
    };
    answer(StatusCode::OK, body, json, request_id)
}

/// An error answer from the table's row for `e.code`, worded as the Query protocol words it
/// ([`Error::query_message`]); as JSON when `json`. `UnknownOperation` is AWS's bare
/// `<UnknownOperationException/>` document, always XML.
pub fn error(e: &Error, request_id: &str, json: bool) -> Response {
    let row = e.code.row();
    let status = StatusCode::from_u16(row.status).unwrap_or(StatusCode::BAD_REQUEST);
    if e.code == ErrorCode::UnknownOperation {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><UnknownOperationException/>";
        return answer(status, body.into(), false, request_id);
    }
    if json {
        let body = serde_json::json!({
            "Error": {"Type": row.fault.as_str(), "Code": row.query_code, "Message": e.query_message()},
            "RequestId": request_id,
        });
        return answer(status, body.to_string(), true, request_id);
    }
    let body = query::error_response(
        NAMESPACE,
        e.code.is_sender_fault(),
        row.query_code,
        e.query_message(),
        request_id,
        true,
    );
    answer(status, body, false, request_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::query::pairs;
    use crate::aws::shape::Entry;

    #[test]
    fn decodes_flattened_lists_maps_and_entries() {
        let req = decode(
            "SendMessageBatch",
            &pairs(&[
                ("Action", "SendMessageBatch"),
                ("QueueUrl", "http://h/0/q"),
                ("SendMessageBatchRequestEntry.2.Id", "b"),
                ("SendMessageBatchRequestEntry.2.MessageBody", "two"),
                ("SendMessageBatchRequestEntry.1.Id", "a"),
                ("SendMessageBatchRequestEntry.1.MessageBody", "one"),
                (
                    "SendMessageBatchRequestEntry.1.MessageAttribute.1.Name",
                    "k",
                ),
                (
                    "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType",
                    "String",
                ),
                (
                    "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue",
                    "v",
                ),
            ]),
            "/",
            "http://h",
        )
        .unwrap();
        let SqsRequest::SendMessageBatch(i) = req else {
            panic!("{req:?}")
        };
        let entries = i.entries.unwrap();
        let ids: Vec<&str> = entries
            .iter()
            .map(|e| match e {
                Entry::Ok(e) => e.id.as_str(),
                Entry::Bad { .. } => "bad",
            })
            .collect();
        assert_eq!(ids, ["a", "b"]);
        let Entry::Ok(a) = &entries[0] else {
            unreachable!()
        };
        let v = &a.message_attributes.as_ref().unwrap()["k"];
        assert_eq!(
            (v.data_type.as_deref(), v.string_value.as_deref()),
            (Some("String"), Some("v"))
        );

        let req = decode(
            "CreateQueue",
            &pairs(&[
                ("QueueName", "q"),
                ("Attribute.1.Name", "VisibilityTimeout"),
                ("Attribute.1.Value", "60"),
                ("Tag.1.Key", "team"),
                ("Tag.1.Value", "core"),
            ]),
            "/",
            "http://h",
        )
        .unwrap();
        let SqsRequest::CreateQueue(i) = req else {
            panic!("{req:?}")
        };
        assert_eq!(i.attributes.unwrap()["VisibilityTimeout"], "60");
        assert_eq!(i.tags.unwrap()["team"], "core");
    }

    #[test]
    fn empty_list_parameters_are_empty_lists() {
        let req = decode(
            "ReceiveMessage",
            &pairs(&[
                ("QueueUrl", "http://h/0/q"),
                ("AttributeName.1", "All"),
                ("MessageAttributeName", ""),
            ]),
            "/",
            "http://h",
        )
        .unwrap();
        let SqsRequest::ReceiveMessage(i) = req else {
            panic!("{req:?}")
        };
        assert_eq!(i.attribute_names.unwrap(), ["All"]);
        assert_eq!(i.message_attribute_names, None);
    }

    #[test]
    fn a_regional_queue_url_path_is_a_queue_path() {
        assert!(is_queue_path("/queue/eu-west-1/000000000000/q"));
        assert!(is_account_queue_path("/queue/eu-west-1/000000000000/q"));
        assert!(!is_queue_path("/queue/local/000000000000/q"));
        assert!(!is_queue_path("/queue/eu-west-1/orders/q"));
        assert!(!is_queue_path("/a/b/c"));
        let path = "/queue/eu-west-1/000000000000/q";
        let req = decode("PurgeQueue", &[], path, "http://h:1").unwrap();
        assert!(
            matches!(req, SqsRequest::PurgeQueue(ref i) if i.queue_url == format!("http://h:1{path}")),
            "{req:?}"
        );
    }

    #[test]
    fn the_queue_url_path_names_the_queue() {
        let req = decode("PurgeQueue", &[], "/000000000000/q", "http://h:1").unwrap();
        assert_eq!(
            req,
            SqsRequest::PurgeQueue(crate::aws::sqs::types::PurgeQueueRequest {
                queue_url: "http://h:1/000000000000/q".into()
            })
        );
        for op in ["CreateQueue", "ListQueues"] {
            let e = decode(op, &pairs(&[("QueueName", "x")]), "/0/q", "http://h").unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidAction);
            assert_eq!(
                e.message,
                format!("The action {op} is not valid for this endpoint.")
            );
        }
        // GetQueueUrl names its queue by name, any queue's URL serves it.
        let req = decode(
            "GetQueueUrl",
            &pairs(&[("QueueName", "x")]),
            "/0/q",
            "http://h",
        );
        assert!(
            matches!(req, Ok(SqsRequest::GetQueueUrl(ref i)) if i.queue_name == "x"),
            "{req:?}"
        );
    }

    /// Indexes that are not positive integers are refused as AWS refuses
    /// `AttributeName.0` ("0 is not a valid index").
    #[test]
    fn refuses_indexes_that_are_not_positive_integers() {
        for index in ["-1", "0", "12345678901234567890123", "1e3", "one"] {
            let e = decode(
                "DeleteMessageBatch",
                &pairs(&[
                    ("QueueUrl", "http://h/0/q"),
                    (&format!("DeleteMessageBatchRequestEntry.{index}.Id"), "a"),
                    (
                        &format!("DeleteMessageBatchRequestEntry.{index}.ReceiptHandle"),
                        "h",
                    ),
                ]),
                "/",
                "http://h",
            )
            .unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedInput, "{index}");
            assert_eq!(e.message, format!("{index} is not a valid index"));
        }
    }

    #[test]
    fn writes_flattened_xml_from_the_output_type() {
        use crate::aws::sqs::types::*;
        let out = SqsResponse::GetQueueAttributes(GetQueueAttributesResult {
            attributes: Some(
                std::collections::BTreeMap::from([("DelaySeconds".to_string(), "0".to_string())])
                    .into(),
            ),
        });
        assert_eq!(
            encode(&out, "r"),
            format!(
                "<?xml version=\"1.0\"?><GetQueueAttributesResponse xmlns=\"{NAMESPACE}\"><GetQueueAttributesResult><Attribute><Name>DelaySeconds</Name><Value>0</Value></Attribute></GetQueueAttributesResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetQueueAttributesResponse>"
            )
        );
    }
}
