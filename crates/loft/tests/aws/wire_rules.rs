//! Wire-level rules (issue 33), each over raw HTTP to a real Loft, in both SQS protocols
//! (JSON 1.0 and Query) where both carry the case, so that the two agree: text that is not
//! Unicode, characters outside SQS's set, bodies that are not JSON, `Authorization`
//! headers that are not one ASCII value, and NextTokens no page gave. The sources of each
//! rule are in docs/conformance.md, "Rules by area".

use serde_json::{json, Value};

use crate::harness::Server;
use crate::wire::{self, Outcome};

/// What a raw call answered: the Query-compatible error code and HTTP status, or `ok`.
#[derive(Debug, PartialEq)]
struct Answer {
    code: String,
    status: u16,
}

fn ok() -> Answer {
    Answer {
        code: "ok".into(),
        status: 200,
    }
}

fn err(code: &str, status: u16) -> Answer {
    Answer {
        code: code.into(),
        status,
    }
}

/// A JSON 1.0 call of `op` with `body` as raw bytes and extra headers `headers`.
async fn json_raw(
    http: &reqwest::Client,
    url: &str,
    op: &str,
    body: &[u8],
    headers: &[(&str, &[u8])],
) -> Answer {
    let mut req = http
        .post(url)
        .header("X-Amz-Target", format!("AmazonSQS.{op}"))
        .header("Content-Type", "application/x-amz-json-1.0")
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, reqwest::header::HeaderValue::from_bytes(v).unwrap());
    }
    let resp = req.send().await.expect("JSON request");
    let status = resp.status().as_u16();
    let query_error = resp
        .headers()
        .get("x-amzn-query-error")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let text = resp.text().await.unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{op}: {e}: {text}"));
    if status == 200 {
        return ok();
    }
    let shape = v["__type"].as_str().unwrap_or_default();
    assert!(shape.starts_with("com.amazonaws.sqs#"), "{op}: {text}");
    let code = query_error.expect("x-amzn-query-error");
    Answer {
        code: code.split(';').next().unwrap().to_owned(),
        status,
    }
}

/// A Query call with the form body `form` as raw bytes (already percent-encoded) and
/// extra headers `headers`.
async fn query_raw(
    http: &reqwest::Client,
    url: &str,
    op: &str,
    form: &[u8],
    headers: &[(&str, &[u8])],
) -> Answer {
    let mut req = http
        .post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form.to_vec());
    for (k, v) in headers {
        req = req.header(*k, reqwest::header::HeaderValue::from_bytes(v).unwrap());
    }
    let resp = req.send().await.expect("Query request");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    match wire::decode_query(op, status, &text) {
        Outcome::Ok(_) => ok(),
        Outcome::Err { code, status, .. } => Answer { code, status },
    }
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A message body or String attribute value with a character outside SQS's set is
/// `InvalidMessageContents` / `InvalidParameterValue` in both protocols, never stored as
/// U+FFFD; text that is not Unicode at all (bytes that are not UTF-8 in a Query form, a
/// lone surrogate escape or such bytes in a JSON body) is refused at the door in each
/// protocol's own shape: `MalformedQueryString` over Query, `SerializationException` over
/// JSON (before: MalformedQueryString, a Query code, over JSON). Characters inside the
/// set, a surrogate pair among them, are taken.
#[tokio::test]
async fn text_outside_the_character_set_is_refused_alike_in_both_protocols() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let url = wire::json(
        &http,
        &server.url,
        "CreateQueue",
        &json!({"QueueName": "chars"}),
    )
    .await
    .ok()["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let q = enc(&url);
    // (what, Query form suffix after QueueUrl, Query answer, JSON body, JSON answer)
    let rows: Vec<(&str, String, Answer, Vec<u8>, Answer)> = vec![
        (
            "U+0001 in a body",
            "&MessageBody=a%01b".into(),
            err("InvalidMessageContents", 400),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"a\u0001b"}}"#).into_bytes(),
            err("InvalidMessageContents", 400),
        ),
        (
            "U+FFFF in a body",
            "&MessageBody=a%EF%BF%BFb".into(),
            err("InvalidMessageContents", 400),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"a\uffffb"}}"#).into_bytes(),
            err("InvalidMessageContents", 400),
        ),
        (
            "U+0001 in a String attribute value",
            "&MessageBody=b&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=v%01".into(),
            err("InvalidParameterValue", 400),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"b","MessageAttributes":{{"a":{{"DataType":"String","StringValue":"v\u0001"}}}}}}"#).into_bytes(),
            err("InvalidParameterValue", 400),
        ),
        (
            "a byte that is not UTF-8 in a body",
            "&MessageBody=a%FFb".into(),
            err("MalformedQueryString", 400),
            [format!(r#"{{"QueueUrl":"{url}","MessageBody":"a"#).as_bytes(), &b"\xff"[..], &b"b\"}"[..]].concat(),
            err("SerializationException", 400),
        ),
        (
            "a lone surrogate in a body",
            "&MessageBody=a%ED%A0%80b".into(),
            err("MalformedQueryString", 400),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"a\ud800b"}}"#).into_bytes(),
            err("SerializationException", 400),
        ),
        (
            "a lone surrogate in a String attribute value",
            "&MessageBody=b&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=%ED%B0%80".into(),
            err("MalformedQueryString", 400),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"b","MessageAttributes":{{"a":{{"DataType":"String","StringValue":"\udc00"}}}}}}"#).into_bytes(),
            err("SerializationException", 400),
        ),
        (
            "a character beyond the BMP (a surrogate pair in JSON)",
            "&MessageBody=%F0%9F%98%80".into(),
            ok(),
            format!(r#"{{"QueueUrl":"{url}","MessageBody":"\ud83d\ude00"}}"#).into_bytes(),
            ok(),
        ),
    ];
    for (what, form, want_query, body, want_json) in rows {
        let form = format!("Action=SendMessage&Version=2012-11-05&QueueUrl={q}{form}");
        let got = query_raw(&http, &server.url, "SendMessage", form.as_bytes(), &[]).await;
        assert_eq!(got, want_query, "Query: {what}");
        let got = json_raw(&http, &server.url, "SendMessage", &body, &[]).await;
        assert_eq!(got, want_json, "JSON: {what}");
    }
    // Only the two accepted sends are in the queue, each as sent.
    let got = wire::json(
        &http,
        &server.url,
        "ReceiveMessage",
        &json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 60}),
    )
    .await
    .ok();
    let mut bodies: Vec<&str> = got["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Body"].as_str().unwrap())
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["\u{1F600}", "\u{1F600}"]);
}

/// A JSON-protocol body that is not one JSON object is `SerializationException` (400) in
/// the JSON shape, whatever the operation (before: `MalformedQueryString`).
#[tokio::test]
async fn a_json_body_that_is_not_a_json_object_is_a_serialization_exception() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let rows: [(&str, &[u8]); 6] = [
        ("cut short", b"{\"QueueNamePrefix\": \"a"),
        ("a trailing comma", b"{\"QueueNamePrefix\": \"a\",}"),
        ("an array", b"[]"),
        ("a string", b"\"ListQueues\""),
        ("two objects", b"{}{}"),
        ("not JSON", b"QueueNamePrefix=a"),
    ];
    for (what, body) in rows {
        for op in ["ListQueues", "SendMessage", "ReceiveMessage"] {
            let got = json_raw(&http, &server.url, op, body, &[]).await;
            assert_eq!(got, err("SerializationException", 400), "{op}: {what}");
        }
    }
    assert_eq!(
        json_raw(&http, &server.url, "ListQueues", b"{}", &[]).await,
        ok()
    );
}

/// Two `Authorization` headers, or one with bytes beyond ASCII, are `IncompleteSignature`
/// (403) in the protocol's shape (SQS JSON, SQS Query, SNS Query), never the first one
/// counted nor the header read as absent; one ASCII header is read as before.
#[tokio::test]
async fn an_authorization_header_must_be_one_ascii_value() {
    let server = Server::start();
    let http = reqwest::Client::new();
    // Each header's credential scope names the service called, as an SDK's does.
    let header = |key: &str, region: &str, service: &str| {
        format!(
            "AWS4-HMAC-SHA256 Credential={key}/20260101/{region}/{service}/aws4_request, SignedHeaders=host, Signature=00"
        )
        .into_bytes()
    };
    let latin1 = |service: &str| {
        let mut h = header("AKID", "us-east-1", service);
        h[32] = 0xE9;
        h
    };
    // (protocol, operation, service, form or JSON body)
    let calls = [
        ("SQS JSON", "ListQueues", "sqs", &b"{}"[..]),
        (
            "SQS Query",
            "ListQueues",
            "sqs",
            b"Action=ListQueues&Version=2012-11-05",
        ),
        (
            "SNS Query",
            "ListTopics",
            "sns",
            b"Action=ListTopics&Version=2010-03-31",
        ),
    ];
    for (protocol, op, service, body) in calls {
        let a = header("AKIDA", "us-east-1", service);
        let b = header("AKIDB", "eu-west-1", service);
        let bad = latin1(service);
        let (a, b, bad) = (a.as_slice(), b.as_slice(), bad.as_slice());
        let rows: [(&str, Vec<&[u8]>, Answer); 4] = [
            ("one", vec![a], ok()),
            ("two", vec![a, b], err("IncompleteSignature", 403)),
            ("two alike", vec![a, a], err("IncompleteSignature", 403)),
            ("not ASCII", vec![bad], err("IncompleteSignature", 403)),
        ];
        for (what, values, want) in rows {
            let headers: Vec<(&str, &[u8])> =
                values.into_iter().map(|v| ("authorization", v)).collect();
            let got = if protocol == "SQS JSON" {
                json_raw(&http, &server.url, op, body, &headers).await
            } else {
                query_raw(&http, &server.url, op, body, &headers).await
            };
            assert_eq!(got, want, "{protocol}: {what}");
        }
    }
}

/// ListQueues and ListDeadLetterSourceQueues take back only a NextToken a page of the same
/// listing gave; any other (the base64 of a queue's name, which earlier versions gave and
/// took, another listing's token, a made-up one, one edited) is `InvalidParameterValue`
/// "Invalid NextToken value." in both protocols (before: read as a place in the list,
/// an empty or arbitrary page).
#[tokio::test]
async fn a_next_token_no_page_gave_is_refused() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let call = |proto: &'static str, op: &'static str, input: Value| {
        let (http, url) = (http.clone(), server.url.clone());
        async move {
            match proto {
                "json" => wire::json(&http, &url, op, &input).await,
                _ => wire::query(&http, &url, op, &input).await,
            }
        }
    };
    let dlq = call("json", "CreateQueue", json!({"QueueName": "tok-dlq"}))
        .await
        .ok()["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let redrive = json!({
        "deadLetterTargetArn": server.queue_arn("tok-dlq"),
        "maxReceiveCount": "3"
    })
    .to_string();
    for n in ["tok-a", "tok-b", "tok-c"] {
        call(
            "json",
            "CreateQueue",
            json!({"QueueName": n, "Attributes": {"RedrivePolicy": redrive}}),
        )
        .await
        .ok();
    }
    for proto in ["json", "query"] {
        let first = call(
            proto,
            "ListQueues",
            json!({"QueueNamePrefix": "tok-", "MaxResults": 1}),
        )
        .await
        .ok();
        let queues_token = first["NextToken"].as_str().unwrap().to_owned();
        let sources_token = call(
            proto,
            "ListDeadLetterSourceQueues",
            json!({"QueueUrl": dlq, "MaxResults": 1}),
        )
        .await
        .ok()["NextToken"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut edited: Vec<char> = queues_token.chars().collect();
        edited[4] = if edited[4] == 'A' { 'B' } else { 'A' };
        let edited: String = edited.into_iter().collect();
        // The default account's keys in the default region are bare names.
        let plain_name = wire::b64(b"tok-a");
        let bad: [(&str, &str); 4] = [
            ("the base64 of a queue's name", &plain_name),
            ("the base64 of a word", "Zm9v"),
            ("an edited token", &edited),
            ("not base64", "%%%"),
        ];
        for (what, token) in bad {
            for (op, input) in [
                (
                    "ListQueues",
                    json!({"QueueNamePrefix": "tok-", "MaxResults": 1, "NextToken": token}),
                ),
                (
                    "ListDeadLetterSourceQueues",
                    json!({"QueueUrl": dlq, "MaxResults": 1, "NextToken": token}),
                ),
            ] {
                match call(proto, op, input).await {
                    Outcome::Err {
                        code,
                        status,
                        message,
                        ..
                    } => assert_eq!(
                        (code.as_str(), status, message.as_str()),
                        ("InvalidParameterValue", 400, "Invalid NextToken value."),
                        "{proto} {op}: {what}"
                    ),
                    Outcome::Ok(v) => panic!("{proto} {op}: {what}: taken: {v}"),
                }
            }
        }
        // Each listing's token is its own: the other's is refused, its own resumes.
        let crossed = call(
            proto,
            "ListQueues",
            json!({"QueueNamePrefix": "tok-", "MaxResults": 1, "NextToken": sources_token}),
        )
        .await;
        assert!(
            matches!(&crossed, Outcome::Err { code, .. } if code == "InvalidParameterValue"),
            "{proto}: {crossed:?}"
        );
        let second = call(
            proto,
            "ListQueues",
            json!({"QueueNamePrefix": "tok-", "MaxResults": 1, "NextToken": queues_token}),
        )
        .await
        .ok();
        assert_eq!(
            second["QueueUrls"],
            json!([server.queue_url("tok-b")]),
            "{proto}"
        );
        let next = call(
            proto,
            "ListDeadLetterSourceQueues",
            json!({"QueueUrl": dlq, "MaxResults": 1, "NextToken": sources_token}),
        )
        .await
        .ok();
        assert_eq!(
            next["queueUrls"],
            json!([server.queue_url("tok-b")]),
            "{proto}"
        );
    }
}
