//! SNS over the Query protocol: `Action=<Operation>` and form parameters in, XML out in the
//! `2010-03-31` namespace.
//!
//! [`decode`] reads the parameter tree (lists as `Name.member.N`, maps as
//! `Name.entry.N.key` / `.value`) into an [`SnsRequest`]; [`response`] writes an
//! [`SnsResponse`] (wrapped `member` lists, `entry` maps, from the output type); [`error`]
//! writes `<ErrorResponse>` with Type, Code and Message only, as AWS's SNS does (no
//! `<Detail/>`).
//!
//! Sources: the botocore model `sns/2010-03-31`; AWS's recorded responses.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use loft_core::{Error, Result};

use super::query;
use super::shape::Wire;
use super::sns::types::{SnsRequest, SnsResponse};
use super::sns::SNS_NAMESPACE;

/// The request `action` names, from the parameter `pairs`.
///
/// Errors: `MalformedRequest` (a name of too many parts), `InvalidAction` (an operation
/// Loft's SNS does not have), `MalformedInput` (an index that is not a positive integer),
/// and the input's own (`InvalidParameter`, `ValidationError`).
pub fn decode(action: &str, pairs: &[(String, String)]) -> Result<SnsRequest> {
    SnsRequest::from_query(action, &query::tree(pairs)?, Wire::SnsQuery)
}

fn answer(status: StatusCode, body: String, request_id: &str) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

/// The XML document of an answer.
pub fn encode(out: &SnsResponse, request_id: &str) -> String {
    query::response(
        out.name(),
        SNS_NAMESPACE,
        out.has_result(),
        |w| out.write_members(Wire::SnsQuery, w),
        request_id,
    )
}

/// A 200 answer with `out`.
pub fn response(out: &SnsResponse, request_id: &str) -> Response {
    answer(StatusCode::OK, encode(out, request_id), request_id)
}

/// An error answer from the table's row for `e.code`.
pub fn error(e: &Error, request_id: &str) -> Response {
    let row = e.code.row();
    let status = StatusCode::from_u16(row.status).unwrap_or(StatusCode::BAD_REQUEST);
    let body = query::error_response(
        SNS_NAMESPACE,
        e.code.is_sender_fault(),
        row.query_code,
        &e.message,
        request_id,
        false,
    );
    answer(status, body, request_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::query::pairs;
    use crate::aws::sns::types::*;
    use loft_core::ErrorCode;

    #[test]
    fn decodes_members_and_entries() {
        let req = decode(
            "CreateTopic",
            &pairs(&[
                ("Name", "t"),
                ("Attributes.entry.1.key", "DisplayName"),
                ("Attributes.entry.1.value", "d"),
                ("Tags.member.1.Key", "k"),
                ("Tags.member.1.Value", "v"),
            ]),
        )
        .unwrap();
        let SnsRequest::CreateTopic(i) = req else {
            panic!("{req:?}")
        };
        assert_eq!(i.attributes.unwrap()["DisplayName"], "d");
        assert_eq!(
            i.tags.unwrap(),
            vec![Tag {
                key: "k".into(),
                value: "v".into()
            }]
        );
        let req = decode(
            "PublishBatch",
            &pairs(&[
                ("TopicArn", "arn:aws:sns:us-east-1:0:t"),
                ("PublishBatchRequestEntries.member.1.Id", "a"),
                ("PublishBatchRequestEntries.member.1.Message", "m"),
                (
                    "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name",
                    "x",
                ),
                (
                    "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType",
                    "String",
                ),
                (
                    "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue",
                    "y",
                ),
            ]),
        )
        .unwrap();
        let SnsRequest::PublishBatch(i) = req else {
            panic!("{req:?}")
        };
        let entries = i.publish_batch_request_entries.unwrap();
        let attr = &entries[0].message_attributes.as_ref().unwrap()["x"];
        assert_eq!(attr.string_value.as_deref(), Some("y"));
    }

    #[test]
    fn missing_members_as_sns_words_them() {
        let e = decode("Unsubscribe", &[]).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid parameter: SubscriptionArn Reason: no value for required parameter"
        );
        let e = decode(
            "SetEndpointAttributes",
            &pairs(&[("EndpointArn", "arn"), ("Attributes", "")]),
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::ValidationError,
                "1 validation error detected: Value null at 'attributes' failed to satisfy constraint: Member must not be null"
            )
        );
        let e = decode(
            "PublishBatch",
            &pairs(&[
                ("TopicArn", "t"),
                ("PublishBatchRequestEntries.member.1.Id", "a"),
                ("PublishBatchRequestEntries.member.1.Message", "m"),
                (
                    "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name",
                    "attr1",
                ),
                (
                    "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue",
                    "v",
                ),
            ]),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "1 validation error detected: Value null at 'publishBatchRequestEntries.1.member.messageAttributes.attr1.member.dataType' failed to satisfy constraint: Member must not be null"
        );
        let e = decode("Tag", &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAction);
        let e = decode(
            "TagResource",
            &pairs(&[("ResourceArn", "a"), ("Tags.member.-1.Key", "k")]),
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedInput);
    }

    #[test]
    fn writes_member_lists_and_entry_maps() {
        let out = SnsResponse::ListTopics(ListTopicsResponse {
            topics: vec![Topic {
                topic_arn: Some("arn:t".into()),
            }],
            next_token: None,
        });
        assert!(encode(&out, "r").contains(
            "<ListTopicsResult><Topics><member><TopicArn>arn:t</TopicArn></member></Topics></ListTopicsResult>"
        ));
        let out = SnsResponse::GetTopicAttributes(GetTopicAttributesResponse {
            attributes: Some(
                std::collections::BTreeMap::from([("Owner".to_string(), "0".to_string())]).into(),
            ),
        });
        assert!(encode(&out, "r")
            .contains("<Attributes><entry><key>Owner</key><value>0</value></entry></Attributes>"));
        let out = SnsResponse::TagResource(TagResourceResponse {});
        assert!(encode(&out, "r").contains("<TagResourceResult/>"));
        let out = SnsResponse::DeleteTopic(Default::default());
        assert!(!encode(&out, "r").contains("Result"));
    }
}
