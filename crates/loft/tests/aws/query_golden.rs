//! Golden tests of the Query protocol's XML: raw form posts, each response compared with the
//! shape the SQS API Reference's Query examples show (flattened lists and maps, `Result`
//! and `ResponseMetadata` elements, the 2012-11-05 namespace, `ErrorResponse`).
//!
//! Volatile values (ids, receipt handles, request ids, timestamps, the server's port) become
//! placeholders, and siblings are compared in any order (AWS's own order varies and no
//! client depends on it); names, nesting, counts and values are exact.

use crate::harness::{http, Server, ACCOUNT};
use crate::md5::{self, Value};
use crate::wire::{b64, parse_xml, Node};

const NS: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

const VOLATILE: &[&str] = &["MessageId", "ReceiptHandle", "RequestId", "TaskHandle"];
const TIMESTAMPS: &[&str] = &[
    "SentTimestamp",
    "ApproximateFirstReceiveTimestamp",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
];

/// Posts `params` (Version added) to `path` and returns the status and raw XML.
async fn post(server: &Server, path: &str, params: &[(&str, &str)]) -> (u16, String) {
    let mut all: Vec<(String, String)> = vec![("Version".into(), "2012-11-05".into())];
    all.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    crate::wire::post_form(&http(), &format!("{}{path}", server.url), &all).await
}

fn normalize(node: &mut Node, server: &Server) {
    if VOLATILE.contains(&node.name.as_str()) {
        assert!(!node.text.is_empty(), "empty {}", node.name);
        node.text = format!("{{{}}}", node.name);
    }
    if node.name == "Message" && node.children.is_empty() {
        assert!(!node.text.is_empty(), "empty error message");
        node.text = "{Message}".into();
    }
    if node.name == "Attribute" {
        let name = node
            .child("Name")
            .map(|n| n.text.clone())
            .unwrap_or_default();
        if TIMESTAMPS.contains(&name.as_str()) {
            if let Some(v) = node.children.iter_mut().find(|c| c.name == "Value") {
                assert!(v.text.parse::<i64>().is_ok(), "{name} = {}", v.text);
                v.text = format!("{{{name}}}");
            }
        }
    }
    node.text = node.text.replace(&server.url, "http://loft");
    for c in &mut node.children {
        normalize(c, server);
    }
}

/// Asserts `actual` (raw XML) equals `expected` (XML with placeholders) as trees.
fn assert_golden(server: &Server, actual: &str, expected: &str) {
    assert!(
        actual.starts_with("<?xml version=\"1.0\"?>"),
        "XML declaration: {actual}"
    );
    let mut got = parse_xml(actual);
    normalize(&mut got, server);
    let want = parse_xml(expected);
    assert_eq!(
        got.canonical(),
        want.canonical(),
        "\nactual XML:\n{actual}\n"
    );
}

/// Request parameters, expected HTTP status and expected error code.
type ErrorCase<'a> = (&'a [(&'a str, &'a str)], u16, &'a str);

async fn create(server: &Server, name: &str) -> String {
    let (status, xml) = post(
        server,
        "/",
        &[("Action", "CreateQueue"), ("QueueName", name)],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    server.queue_url(name)
}

#[tokio::test]
async fn create_queue_and_get_queue_url() {
    let server = Server::start();
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "CreateQueue"),
            ("QueueName", "golden"),
            ("Attribute.1.Name", "VisibilityTimeout"),
            ("Attribute.1.Value", "40"),
            ("Tag.1.Key", "team"),
            ("Tag.1.Value", "core"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<CreateQueueResponse xmlns="{NS}">
                 <CreateQueueResult><QueueUrl>http://loft/{ACCOUNT}/golden</QueueUrl></CreateQueueResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </CreateQueueResponse>"#
        ),
    );
    let (status, xml) = post(
        &server,
        "/",
        &[("Action", "GetQueueUrl"), ("QueueName", "golden")],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<GetQueueUrlResponse xmlns="{NS}">
                 <GetQueueUrlResult><QueueUrl>http://loft/{ACCOUNT}/golden</QueueUrl></GetQueueUrlResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </GetQueueUrlResponse>"#
        ),
    );
}

#[tokio::test]
async fn send_message_with_attributes() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    let body = "hello";
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "SendMessage"),
            ("QueueUrl", &url),
            ("MessageBody", body),
            ("MessageAttribute.1.Name", "city"),
            ("MessageAttribute.1.Value.DataType", "String"),
            ("MessageAttribute.1.Value.StringValue", "Any City"),
            ("MessageAttribute.2.Name", "bin"),
            ("MessageAttribute.2.Value.DataType", "Binary"),
            ("MessageAttribute.2.Value.BinaryValue", &b64(&[1, 2, 3])),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let attr_md5 = md5::of_attributes(&[
        ("city", "String", Value::Text("Any City")),
        ("bin", "Binary", Value::Bytes(&[1, 2, 3])),
    ]);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<SendMessageResponse xmlns="{NS}">
                 <SendMessageResult>
                   <MD5OfMessageBody>{}</MD5OfMessageBody>
                   <MD5OfMessageAttributes>{attr_md5}</MD5OfMessageAttributes>
                   <MessageId>{{MessageId}}</MessageId>
                 </SendMessageResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </SendMessageResponse>"#,
            md5::hex_md5(body.as_bytes())
        ),
    );
}

#[tokio::test]
async fn send_message_batch_with_a_failed_entry() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "SendMessageBatch"),
            ("QueueUrl", &url),
            ("SendMessageBatchRequestEntry.1.Id", "first"),
            ("SendMessageBatchRequestEntry.1.MessageBody", "one"),
            ("SendMessageBatchRequestEntry.2.Id", "bad"),
            ("SendMessageBatchRequestEntry.2.MessageBody", "bad\u{1}"),
            ("SendMessageBatchRequestEntry.3.Id", "third"),
            ("SendMessageBatchRequestEntry.3.MessageBody", "three"),
            ("SendMessageBatchRequestEntry.3.DelaySeconds", "1"),
            (
                "SendMessageBatchRequestEntry.3.MessageAttribute.1.Name",
                "n",
            ),
            (
                "SendMessageBatchRequestEntry.3.MessageAttribute.1.Value.DataType",
                "Number",
            ),
            (
                "SendMessageBatchRequestEntry.3.MessageAttribute.1.Value.StringValue",
                "7",
            ),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<SendMessageBatchResponse xmlns="{NS}">
                 <SendMessageBatchResult>
                   <SendMessageBatchResultEntry>
                     <Id>first</Id><MessageId>{{MessageId}}</MessageId>
                     <MD5OfMessageBody>{}</MD5OfMessageBody>
                   </SendMessageBatchResultEntry>
                   <SendMessageBatchResultEntry>
                     <Id>third</Id><MessageId>{{MessageId}}</MessageId>
                     <MD5OfMessageBody>{}</MD5OfMessageBody>
                     <MD5OfMessageAttributes>{}</MD5OfMessageAttributes>
                   </SendMessageBatchResultEntry>
                   <BatchResultErrorEntry>
                     <Id>bad</Id><SenderFault>true</SenderFault>
                     <Code>InvalidMessageContents</Code><Message>{{Message}}</Message>
                   </BatchResultErrorEntry>
                 </SendMessageBatchResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </SendMessageBatchResponse>"#,
            md5::hex_md5(b"one"),
            md5::hex_md5(b"three"),
            md5::of_attributes(&[("n", "Number", Value::Text("7"))]),
        ),
    );
}

#[tokio::test]
async fn receive_message_with_attributes_and_escaped_body() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    // A carriage return, quotes, markup and an entity-looking text must come back exactly.
    let body = "line1\r\nline2 \"quoted\" <tag> &amp; &quot; it's\r";
    let (status, _) = post(
        &server,
        "/",
        &[
            ("Action", "SendMessage"),
            ("QueueUrl", &url),
            ("MessageBody", body),
            ("MessageAttribute.1.Name", "city"),
            ("MessageAttribute.1.Value.DataType", "String"),
            ("MessageAttribute.1.Value.StringValue", "Any \"City\"\r"),
            ("MessageAttribute.2.Name", "bin"),
            ("MessageAttribute.2.Value.DataType", "Binary"),
            ("MessageAttribute.2.Value.BinaryValue", &b64(&[0, 255])),
            ("MessageAttribute.3.Name", "num"),
            ("MessageAttribute.3.Value.DataType", "Number.int"),
            ("MessageAttribute.3.Value.StringValue", "12"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "ReceiveMessage"),
            ("QueueUrl", &url),
            ("AttributeName.1", "SenderId"),
            ("AttributeName.2", "ApproximateReceiveCount"),
            ("MessageSystemAttributeName.1", "SentTimestamp"),
            ("MessageAttributeName.1", "All"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    // The raw XML escapes the carriage return as a character reference, so that an XML
    // parser's end-of-line normalisation keeps it, and the quote as &quot;.
    assert!(xml.contains("line1&#xD;\nline2"), "{xml}");
    assert!(xml.contains("&quot;quoted&quot;"), "{xml}");
    assert!(xml.contains("&amp;amp; &amp;quot;"), "{xml}");
    assert!(
        !xml.contains('\r'),
        "a raw CR would be lost by XML parsers: {xml:?}"
    );
    let attr_md5 = md5::of_attributes(&[
        ("city", "String", Value::Text("Any \"City\"\r")),
        ("bin", "Binary", Value::Bytes(&[0, 255])),
        ("num", "Number.int", Value::Text("12")),
    ]);
    let escaped_body =
        "line1&#xD;\nline2 &quot;quoted&quot; &lt;tag&gt; &amp;amp; &amp;quot; it&apos;s&#xD;";
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ReceiveMessageResponse xmlns="{NS}">
                 <ReceiveMessageResult>
                   <Message>
                     <MessageId>{{MessageId}}</MessageId>
                     <ReceiptHandle>{{ReceiptHandle}}</ReceiptHandle>
                     <MD5OfBody>{}</MD5OfBody>
                     <Body>{escaped_body}</Body>
                     <Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>
                     <Attribute><Name>SenderId</Name><Value>{ACCOUNT}</Value></Attribute>
                     <Attribute><Name>SentTimestamp</Name><Value>{{SentTimestamp}}</Value></Attribute>
                     <MD5OfMessageAttributes>{attr_md5}</MD5OfMessageAttributes>
                     <MessageAttribute><Name>bin</Name><Value><BinaryValue>{}</BinaryValue><DataType>Binary</DataType></Value></MessageAttribute>
                     <MessageAttribute><Name>city</Name><Value><StringValue>Any &quot;City&quot;&#xD;</StringValue><DataType>String</DataType></Value></MessageAttribute>
                     <MessageAttribute><Name>num</Name><Value><StringValue>12</StringValue><DataType>Number.int</DataType></Value></MessageAttribute>
                   </Message>
                 </ReceiveMessageResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ReceiveMessageResponse>"#,
            md5::hex_md5(body.as_bytes()),
            b64(&[0, 255]),
        ),
    );
    // Decoded, the body is the original, byte for byte.
    let tree = parse_xml(&xml);
    let message = tree
        .child("ReceiveMessageResult")
        .and_then(|r| r.child("Message"))
        .unwrap();
    assert_eq!(message.child("Body").unwrap().text, body);
}

/// An empty receive: AWS answers `<ReceiveMessageResult/>` (an output shape with no
/// members is still written), as do ListQueues and ListQueueTags with nothing to list.
#[tokio::test]
async fn empty_results_keep_their_result_element() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    let (_, xml) = post(
        &server,
        "/",
        &[("Action", "ReceiveMessage"), ("QueueUrl", &url)],
    )
    .await;
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ReceiveMessageResponse xmlns="{NS}"><ReceiveMessageResult/>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ReceiveMessageResponse>"#
        ),
    );
    let (_, xml) = post(
        &server,
        "/",
        &[("Action", "ListQueueTags"), ("QueueUrl", &url)],
    )
    .await;
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ListQueueTagsResponse xmlns="{NS}"><ListQueueTagsResult/>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ListQueueTagsResponse>"#
        ),
    );
}

#[tokio::test]
async fn get_queue_attributes_all() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "GetQueueAttributes"),
            ("QueueUrl", &url),
            ("AttributeName.1", "All"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    let attr =
        |n: &str, v: &str| format!("<Attribute><Name>{n}</Name><Value>{v}</Value></Attribute>");
    let attrs = [
        attr("ApproximateNumberOfMessages", "0"),
        attr("ApproximateNumberOfMessagesNotVisible", "0"),
        attr("ApproximateNumberOfMessagesDelayed", "0"),
        attr("CreatedTimestamp", "{CreatedTimestamp}"),
        attr("LastModifiedTimestamp", "{LastModifiedTimestamp}"),
        attr("QueueArn", &server.queue_arn("golden")),
        attr("VisibilityTimeout", "30"),
        attr("MaximumMessageSize", "1048576"),
        attr("MessageRetentionPeriod", "345600"),
        attr("DelaySeconds", "0"),
        attr("ReceiveMessageWaitTimeSeconds", "0"),
        attr("SqsManagedSseEnabled", "true"),
    ]
    .concat();
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<GetQueueAttributesResponse xmlns="{NS}">
                 <GetQueueAttributesResult>{attrs}</GetQueueAttributesResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </GetQueueAttributesResponse>"#
        ),
    );
}

#[tokio::test]
async fn list_queues_and_list_queue_tags() {
    let server = Server::start();
    let url = create(&server, "golden-a").await;
    create(&server, "golden-b").await;
    create(&server, "other").await;
    let (status, xml) = post(
        &server,
        "/",
        &[("Action", "ListQueues"), ("QueueNamePrefix", "golden")],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ListQueuesResponse xmlns="{NS}">
                 <ListQueuesResult>
                   <QueueUrl>http://loft/{ACCOUNT}/golden-a</QueueUrl>
                   <QueueUrl>http://loft/{ACCOUNT}/golden-b</QueueUrl>
                 </ListQueuesResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ListQueuesResponse>"#
        ),
    );
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "TagQueue"),
            ("QueueUrl", &url),
            ("Tag.1.Key", "team"),
            ("Tag.1.Value", "core"),
            ("Tag.2.Key", "cost-centre"),
            ("Tag.2.Value", "42"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<TagQueueResponse xmlns="{NS}">
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </TagQueueResponse>"#
        ),
    );
    let (status, xml) = post(
        &server,
        "/",
        &[("Action", "ListQueueTags"), ("QueueUrl", &url)],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ListQueueTagsResponse xmlns="{NS}">
                 <ListQueueTagsResult>
                   <Tag><Key>cost-centre</Key><Value>42</Value></Tag>
                   <Tag><Key>team</Key><Value>core</Value></Tag>
                 </ListQueueTagsResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ListQueueTagsResponse>"#
        ),
    );
}

#[tokio::test]
async fn delete_message_batch_with_a_failure_and_delete_message() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    for body in ["a", "b"] {
        post(
            &server,
            "/",
            &[
                ("Action", "SendMessage"),
                ("QueueUrl", &url),
                ("MessageBody", body),
            ],
        )
        .await;
    }
    let (_, xml) = post(
        &server,
        "/",
        &[
            ("Action", "ReceiveMessage"),
            ("QueueUrl", &url),
            ("MaxNumberOfMessages", "10"),
        ],
    )
    .await;
    let tree = parse_xml(&xml);
    let handles: Vec<String> = tree
        .child("ReceiveMessageResult")
        .unwrap()
        .children
        .iter()
        .map(|m| m.child("ReceiptHandle").unwrap().text.clone())
        .collect();
    assert!(!handles.is_empty());
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "DeleteMessageBatch"),
            ("QueueUrl", &url),
            ("DeleteMessageBatchRequestEntry.1.Id", "ok"),
            (
                "DeleteMessageBatchRequestEntry.1.ReceiptHandle",
                &handles[0],
            ),
            ("DeleteMessageBatchRequestEntry.2.Id", "nope"),
            ("DeleteMessageBatchRequestEntry.2.ReceiptHandle", "garbage"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<DeleteMessageBatchResponse xmlns="{NS}">
                 <DeleteMessageBatchResult>
                   <DeleteMessageBatchResultEntry><Id>ok</Id></DeleteMessageBatchResultEntry>
                   <BatchResultErrorEntry>
                     <Id>nope</Id><SenderFault>true</SenderFault>
                     <Code>ReceiptHandleIsInvalid</Code><Message>{{Message}}</Message>
                   </BatchResultErrorEntry>
                 </DeleteMessageBatchResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </DeleteMessageBatchResponse>"#
        ),
    );
    // Operations without output: only ResponseMetadata.
    if let Some(h) = handles.get(1) {
        let (status, xml) = post(
            &server,
            "/",
            &[
                ("Action", "DeleteMessage"),
                ("QueueUrl", &url),
                ("ReceiptHandle", h),
            ],
        )
        .await;
        assert_eq!(status, 200);
        assert_golden(
            &server,
            &xml,
            &format!(
                r#"<DeleteMessageResponse xmlns="{NS}">
                     <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
                   </DeleteMessageResponse>"#
            ),
        );
    }
}

#[tokio::test]
async fn error_responses() {
    let server = Server::start();
    let url = create(&server, "golden").await;
    let cases: [ErrorCase<'_>; 5] = [
        (
            &[("Action", "GetQueueUrl"), ("QueueName", "missing")],
            400,
            "AWS.SimpleQueueService.NonExistentQueue",
        ),
        (
            &[
                ("Action", "ReceiveMessage"),
                ("QueueUrl", &url),
                ("MaxNumberOfMessages", "11"),
            ],
            400,
            "InvalidParameterValue",
        ),
        (
            &[
                ("Action", "CreateQueue"),
                ("QueueName", "golden"),
                ("Attribute.1.Name", "VisibilityTimeout"),
                ("Attribute.1.Value", "99"),
            ],
            400,
            "QueueAlreadyExists",
        ),
        (
            &[("Action", "SendMessageBatch"), ("QueueUrl", &url)],
            400,
            "AWS.SimpleQueueService.EmptyBatchRequest",
        ),
        (&[("Action", "CreateQueue")], 400, "MissingParameter"),
    ];
    for (params, want_status, code) in cases {
        let (status, xml) = post(&server, "/", params).await;
        assert_eq!(status, want_status, "{params:?}: {xml}");
        assert_golden(
            &server,
            &xml,
            &format!(
                r#"<ErrorResponse xmlns="{NS}">
                     <Error><Type>Sender</Type><Code>{code}</Code><Message>{{Message}}</Message><Detail/></Error>
                     <RequestId>{{RequestId}}</RequestId>
                   </ErrorResponse>"#
            ),
        );
    }
    // PurgeQueueInProgress is a 403.
    let (status, _) = post(
        &server,
        "/",
        &[("Action", "PurgeQueue"), ("QueueUrl", &url)],
    )
    .await;
    assert_eq!(status, 200);
    let (status, xml) = post(
        &server,
        "/",
        &[("Action", "PurgeQueue"), ("QueueUrl", &url)],
    )
    .await;
    assert_eq!(status, 403, "{xml}");
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ErrorResponse xmlns="{NS}">
                 <Error><Type>Sender</Type><Code>AWS.SimpleQueueService.PurgeQueueInProgress</Code><Message>{{Message}}</Message><Detail/></Error>
                 <RequestId>{{RequestId}}</RequestId>
               </ErrorResponse>"#
        ),
    );
}

#[tokio::test]
async fn queue_url_path_without_queue_url_parameter() {
    let server = Server::start();
    create(&server, "by-path").await;
    let path = format!("/{ACCOUNT}/by-path");
    let (status, xml) = post(
        &server,
        &path,
        &[("Action", "SendMessage"), ("MessageBody", "via path")],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    let (status, xml) = post(
        &server,
        &path,
        &[
            ("Action", "GetQueueAttributes"),
            ("AttributeName.1", "ApproximateNumberOfMessages"),
            ("AttributeName.2", "QueueArn"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<GetQueueAttributesResponse xmlns="{NS}">
                 <GetQueueAttributesResult>
                   <Attribute><Name>ApproximateNumberOfMessages</Name><Value>1</Value></Attribute>
                   <Attribute><Name>QueueArn</Name><Value>{}</Value></Attribute>
                 </GetQueueAttributesResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </GetQueueAttributesResponse>"#,
            server.queue_arn("by-path")
        ),
    );
    let (status, xml) = post(&server, &path, &[("Action", "ReceiveMessage")]).await;
    assert_eq!(status, 200);
    let tree = parse_xml(&xml);
    let body = tree
        .child("ReceiveMessageResult")
        .and_then(|r| r.child("Message"))
        .and_then(|m| m.child("Body"))
        .map(|b| b.text.clone());
    assert_eq!(body.as_deref(), Some("via path"));
    // A path naming no queue.
    let (status, xml) = post(
        &server,
        &format!("/{ACCOUNT}/missing"),
        &[("Action", "SendMessage"), ("MessageBody", "x")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        xml.contains("<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"),
        "{xml}"
    );
    // Query parameters in a GET work too.
    let resp = http()
        .get(format!(
            "{}/?Action=ListQueues&Version=2012-11-05&QueueNamePrefix=by",
            server.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let xml = resp.text().await.unwrap();
    assert_golden(
        &server,
        &xml,
        &format!(
            r#"<ListQueuesResponse xmlns="{NS}">
                 <ListQueuesResult><QueueUrl>http://loft/{ACCOUNT}/by-path</QueueUrl></ListQueuesResult>
                 <ResponseMetadata><RequestId>{{RequestId}}</RequestId></ResponseMetadata>
               </ListQueuesResponse>"#
        ),
    );
}

/// The error table as each protocol renders it: the JSON protocol's `__type` is the model's
/// shape name (`InvalidParameterValueException`) while `x-amzn-query-error` carries the
/// Query code; the Query protocol words QueueDoesNotExist as AWS does ("... for this wsdl
/// version."); SNS's `<Error>` has Type, Code and Message, no `<Detail/>`. Source: AWS's
/// recorded responses (LocalStack's SQS and SNS snapshots).
#[tokio::test]
async fn error_table_renderings() {
    let server = Server::start();
    let url = create(&server, "rendered").await;
    let resp = http()
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.ReceiveMessage")
        .header("Content-Type", "application/x-amz-json-1.0")
        .body(serde_json::json!({"QueueUrl": url, "MaxNumberOfMessages": 11}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(
        resp.headers()["x-amzn-query-error"],
        "InvalidParameterValue;Sender"
    );
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        body["__type"],
        "com.amazonaws.sqs#InvalidParameterValueException"
    );
    let resp = http()
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.SendMessage")
        .header("Content-Type", "application/x-amz-json-1.0")
        .body(serde_json::json!({"QueueUrl": url}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.headers()["x-amzn-query-error"],
        "MissingParameter;Sender"
    );
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(
        body["__type"],
        "com.amazonaws.sqs#MissingRequiredParameterException"
    );

    let (status, xml) = post(
        &server,
        "/",
        &[("Action", "GetQueueUrl"), ("QueueName", "missing")],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        xml.contains(
            "<Message>The specified queue does not exist for this wsdl version.</Message>"
        ),
        "{xml}"
    );
    let resp = http()
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.GetQueueUrl")
        .body(r#"{"QueueName": "missing"}"#)
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "The specified queue does not exist.");

    let missing = format!("arn:aws:sns:us-east-1:{ACCOUNT}:missing");
    let params: Vec<(String, String)> = [
        ("Action", "GetTopicAttributes"),
        ("Version", "2010-03-31"),
        ("TopicArn", missing.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let (status, xml) = crate::wire::post_form(&http(), &server.url, &params).await;
    assert_eq!(status, 404, "{xml}");
    let mut tree = parse_xml(&xml);
    normalize(&mut tree, &server);
    assert_eq!(
        tree.canonical(),
        parse_xml(
            r#"<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">
                 <Error><Type>Sender</Type><Code>NotFound</Code><Message>{Message}</Message></Error>
                 <RequestId>{RequestId}</RequestId>
               </ErrorResponse>"#
        )
        .canonical(),
        "{xml}"
    );
}

async fn get(server: &Server, path_and_query: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut req = http().get(format!("{}{path_and_query}", server.url));
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (status, content_type, resp.text().await.unwrap())
}

/// The Query protocol over GET on a queue URL, as AWS answers it (its recorded responses):
/// no action at all is a 404 `<UnknownOperationException/>`, whatever `Accept` says;
/// operations that name no queue are `InvalidAction` there; `Accept: application/json`
/// gets JSON, and without it XML.
#[tokio::test]
async fn get_on_queue_urls_and_content_negotiation() {
    let server = Server::start();
    create(&server, "getq").await;
    let path = format!("/{ACCOUNT}/getq");
    for accept in [None, Some("application/json")] {
        let (status, content_type, body) = get(&server, &path, accept).await;
        assert_eq!(status, 404, "{body}");
        assert!(content_type.starts_with("text/xml"), "{content_type}");
        assert!(body.contains("<UnknownOperationException/>"), "{body}");
    }
    for op in ["CreateQueue", "ListQueues"] {
        let (status, _, body) = get(
            &server,
            &format!("{path}?Action={op}&QueueName=other&Version=2012-11-05"),
            None,
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("<Code>InvalidAction</Code>"), "{body}");
        assert!(
            body.contains(&format!(
                "<Message>The action {op} is not valid for this endpoint.</Message>"
            )),
            "{body}"
        );
    }
    let (status, _, body) = get(
        &server,
        &format!("{path}?Action=GetQueueAttributes&AttributeName.1=QueueArn"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<Name>QueueArn</Name>"), "{body}");
    // GetQueueUrl names its queue by name: any queue's URL serves it, as on AWS.
    create(&server, "other").await;
    let (status, _, body) = get(
        &server,
        &format!("{path}?Action=GetQueueUrl&QueueName=other"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(&format!(
            "<QueueUrl>{}</QueueUrl>",
            server.queue_url("other")
        )),
        "{body}"
    );

    let list = "/?Action=ListQueues&Version=2012-11-05";
    let (status, content_type, body) = get(&server, list, Some("application/json")).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["ListQueuesResponse"]["ListQueuesResult"]["QueueUrls"][0],
        server.queue_url("getq")
    );
    assert!(v["ListQueuesResponse"]["ResponseMetadata"]["RequestId"].is_string());
    let (status, content_type, body) = get(&server, list, None).await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/xml"), "{content_type}");
    assert!(body.contains("<ListQueuesResponse"), "{body}");

    // In the JSON form a map is a list of its Query entries (GetQueueAttributes'
    // Name/Value, ListQueueTags' Key/Value), and an error is `{"Error": {..},
    // "RequestId"}` (AWS's recorded answers).
    let json = |body: &str| serde_json::from_str::<serde_json::Value>(body).expect(body);
    let (status, _, body) = get(
        &server,
        &format!("{path}?Action=GetQueueAttributes&AttributeName.1=All"),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v = json(&body);
    let attributes = v["GetQueueAttributesResponse"]["GetQueueAttributesResult"]["Attributes"]
        .as_array()
        .unwrap_or_else(|| panic!("Attributes is a list: {body}"));
    let arn = attributes
        .iter()
        .find(|a| a["Name"] == "QueueArn")
        .unwrap_or_else(|| panic!("QueueArn entry: {body}"));
    assert!(arn["Value"].as_str().unwrap().ends_with(":getq"), "{body}");
    let (status, _, body) = get(
        &server,
        &format!("{path}?Action=TagQueue&Tag.1.Key=team&Tag.1.Value=blue"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = get(
        &server,
        &format!("{path}?Action=ListQueueTags"),
        Some("application/json"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        json(&body)["ListQueueTagsResponse"]["ListQueueTagsResult"]["Tags"],
        serde_json::json!([{"Key": "team", "Value": "blue"}]),
        "{body}"
    );
    for op in ["CreateQueue", "ListQueues"] {
        let (status, content_type, body) = get(
            &server,
            &format!("{path}?Action={op}&QueueName=other"),
            Some("application/json"),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            content_type.starts_with("application/json"),
            "{content_type}"
        );
        let v = json(&body);
        assert_eq!(v["Error"]["Code"], "InvalidAction", "{body}");
        assert_eq!(v["Error"]["Type"], "Sender", "{body}");
        assert_eq!(
            v["Error"]["Message"],
            format!("The action {op} is not valid for this endpoint."),
            "{body}"
        );
        assert!(v["RequestId"].is_string(), "{body}");
    }
}

/// Query parameters as the SDKs send them: an empty list is the bare name
/// (`MessageAttributeNames=`, botocore's serializer), and a list index is a positive
/// integer: `.0.`, `.-1.` and numbers past 32 bits are refused as AWS refuses `.0.`
/// (`MalformedInput` "0 is not a valid index") and nothing is changed (docs/security.md,
/// "Hostile input").
#[tokio::test]
async fn empty_lists_and_list_indexes() {
    let server = Server::start();
    let url = create(&server, "indexes").await;
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "SendMessage"),
            ("QueueUrl", &url),
            ("MessageBody", "kept"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    for index in ["-1", "0", "12345678901234567890123"] {
        let id = format!("DeleteMessageBatchRequestEntry.{index}.Id");
        let handle = format!("DeleteMessageBatchRequestEntry.{index}.ReceiptHandle");
        let (status, xml) = post(
            &server,
            "/",
            &[
                ("Action", "DeleteMessageBatch"),
                ("QueueUrl", &url),
                (&id, "a"),
                (&handle, "AQEB"),
            ],
        )
        .await;
        assert_eq!(status, 400, "{xml}");
        assert_golden(
            &server,
            &xml,
            &format!(
                r#"<ErrorResponse xmlns="{NS}">
                     <Error><Type>Sender</Type><Code>MalformedInput</Code><Message>{{Message}}</Message><Detail/></Error>
                     <RequestId>{{RequestId}}</RequestId>
                   </ErrorResponse>"#
            ),
        );
        assert!(
            xml.contains(&format!("{index} is not a valid index")),
            "{xml}"
        );
    }
    let (status, xml) = post(
        &server,
        "/",
        &[
            ("Action", "ReceiveMessage"),
            ("QueueUrl", &url),
            ("AttributeName.1", "All"),
            ("MessageAttributeNames", ""),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert!(xml.contains("<Body>kept</Body>"), "{xml}");
}
