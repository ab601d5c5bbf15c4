//! SNS message data protection over real HTTP with aws-sdk-sns: Put/GetDataProtectionPolicy
//! and CreateTopic's DataProtectionPolicy validated against AWS's grammar; Inbound Deny
//! refusing a Publish with AuthorizationError; Inbound Deidentify masking and redacting
//! before fan-out; Outbound Deny and Deidentify per delivery; the Audit statement's records
//! in an SQS destination, in Loft's log and in `/metrics`; the policy surviving a restart.
//!
//! Authority: SNS Developer Guide "Amazon SNS message data protection" (policies,
//! operations, managed data identifiers); the botocore model `sns/2010-03-31`.

use aws_sdk_sns::operation::create_topic::CreateTopicError;
use aws_sdk_sns::operation::publish::PublishError;
use aws_sdk_sns::operation::put_data_protection_policy::PutDataProtectionPolicyError;
use aws_sdk_sns::types::PublishBatchRequestEntry;
use serde_json::{json, Value};

use crate::{
    create_queue, create_topic, json_of, receive_exactly, receive_some, subscribe_queue,
    topic_attributes, Server,
};

/// A card number that passes the Luhn check and is not one AWS reserves for testing.
const CARD: &str = "4539 1488 0343 6467";

fn id(name: &str) -> String {
    format!("arn:aws:dataprotection::aws:data-identifier/{name}")
}

fn policy(statements: Value) -> String {
    json!({"Name": "loft-test", "Description": "test policy", "Version": "2021-06-01",
        "Statement": statements})
    .to_string()
}

fn statement(direction: &str, ids: &[&str], operation: Value) -> Value {
    json!({"Sid": format!("{direction}-{}", ids.join("-")), "DataDirection": direction,
        "Principal": ["*"], "DataIdentifier": ids.iter().map(|i| id(i)).collect::<Vec<_>>(),
        "Operation": operation})
}

async fn put(server: &Server, topic: &str, text: &str) {
    server
        .sns()
        .put_data_protection_policy()
        .resource_arn(topic)
        .data_protection_policy(text)
        .send()
        .await
        .unwrap_or_else(|e| panic!("PutDataProtectionPolicy: {e:?}"));
}

async fn get(server: &Server, topic: &str) -> String {
    server
        .sns()
        .get_data_protection_policy()
        .resource_arn(topic)
        .send()
        .await
        .expect("GetDataProtectionPolicy")
        .data_protection_policy()
        .unwrap_or_default()
        .to_owned()
}

/// A topic with a raw-delivery SQS subscription; returns (topic ARN, queue URL).
async fn topic_with_queue(server: &Server, name: &str) -> (String, String) {
    let topic = create_topic(&server.sns(), name, &[]).await;
    let url = create_queue(&server.sqs(), name, &[]).await;
    subscribe_queue(server, &topic, name, &[("RawMessageDelivery", "true")]).await;
    (topic, url)
}

async fn publish(server: &Server, topic: &str, message: &str) -> String {
    server
        .sns()
        .publish()
        .topic_arn(topic)
        .message(message)
        .send()
        .await
        .unwrap_or_else(|e| panic!("Publish {message:?}: {e:?}"))
        .message_id()
        .expect("MessageId")
        .to_owned()
}

fn bodies(msgs: &[aws_sdk_sqs::types::Message]) -> Vec<String> {
    let mut b: Vec<String> = msgs
        .iter()
        .map(|m| m.body().unwrap_or_default().to_owned())
        .collect();
    b.sort();
    b
}

#[tokio::test]
async fn policies_are_validated_stored_and_removed() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "dp-crud", &[]).await;
    assert_eq!(get(&server, &topic).await, "", "no policy yet");

    let text = policy(json!([statement(
        "Inbound",
        &["EmailAddress"],
        json!({"Deny": {}})
    )]));
    put(&server, &topic, &text).await;
    assert_eq!(get(&server, &topic).await, text, "the policy as it was put");
    // AWS does not list the policy among the topic's attributes.
    assert!(!topic_attributes(&sns, &topic)
        .await
        .contains_key("DataProtectionPolicy"));

    // Grammar errors and identifiers Loft cannot match are refused, and the stored policy
    // stays.
    for (bad, expect) in [
        ("{not json".to_owned(), "not valid JSON"),
        (
            json!({"Name": "p", "Version": "2020-01-01", "Statement": []}).to_string(),
            "Version 2020-01-01",
        ),
        (
            policy(json!([statement(
                "Inbound",
                &["Name"],
                json!({"Deny": {}})
            )])),
            "Loft cannot detect the managed data identifier Name",
        ),
        (
            policy(json!([statement(
                "Inbound",
                &["EmailAddress"],
                json!({"Block": {}})
            )])),
            "Block is not an operation",
        ),
    ] {
        let msg = assert_sns_err!(
            sns.put_data_protection_policy()
                .resource_arn(&topic)
                .data_protection_policy(&bad)
                .send()
                .await,
            PutDataProtectionPolicyError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(msg.contains(expect), "{msg:?} should say {expect:?}");
    }
    assert_eq!(get(&server, &topic).await, text);

    assert_sns_err!(
        sns.put_data_protection_policy()
            .resource_arn(server.topic_arn("dp-missing"))
            .data_protection_policy(&text)
            .send()
            .await,
        PutDataProtectionPolicyError::NotFoundException(_),
        "NotFound",
        404
    );

    // An empty policy removes it ("Deleting data protection policies").
    put(&server, &topic, "").await;
    assert_eq!(get(&server, &topic).await, "");

    // CreateTopic's DataProtectionPolicy goes through the same validation.
    let created = sns
        .create_topic()
        .name("dp-created")
        .data_protection_policy(&text)
        .send()
        .await
        .expect("CreateTopic with a policy");
    assert_eq!(get(&server, created.topic_arn().unwrap()).await, text);
    let msg = assert_sns_err!(
        sns.create_topic()
            .name("dp-created-bad")
            .data_protection_policy(policy(json!([statement(
                "Inbound",
                &["PassportNumber-US"],
                json!({"Deny": {}})
            )])))
            .send()
            .await,
        CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert!(msg.contains("PassportNumber-US"), "{msg}");
}

#[tokio::test]
async fn inbound_deny_refuses_the_publish_and_survives_a_restart() {
    let mut server = Server::start();
    let (topic, url) = topic_with_queue(&server, "dp-deny").await;
    put(
        &server,
        &topic,
        &policy(json!([statement(
            "Inbound",
            &["CreditCardNumber"],
            json!({"Deny": {}})
        )])),
    )
    .await;

    let msg = assert_sns_err!(
        server
            .sns()
            .publish()
            .topic_arn(&topic)
            .message(format!("paid with card {CARD}"))
            .send()
            .await,
        PublishError::AuthorizationErrorException(_),
        "AuthorizationError",
        403
    );
    assert!(msg.contains("CreditCardNumber"), "{msg}");
    publish(&server, &topic, "paid in cash").await;

    // PublishBatch: the sensitive entry fails on its own.
    let entry = |id: &str, m: &str| {
        PublishBatchRequestEntry::builder()
            .id(id)
            .message(m)
            .build()
            .expect("entry")
    };
    let out = server
        .sns()
        .publish_batch()
        .topic_arn(&topic)
        .publish_batch_request_entries(entry("ok", "no card here"))
        .publish_batch_request_entries(entry("bad", &format!("credit {CARD}")))
        .send()
        .await
        .expect("PublishBatch");
    assert_eq!(out.successful().len(), 1);
    let failed = out.failed();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].id(), "bad");
    assert_eq!(failed[0].code(), "AuthorizationError");
    assert!(failed[0].sender_fault());

    let got = receive_exactly(&server.sqs(), &url, 2).await;
    assert_eq!(bodies(&got), vec!["no card here", "paid in cash"]);

    // The policy is in the topic's record: a restarted Loft still enforces it.
    server.stop();
    server.start_again();
    assert_sns_err!(
        server
            .sns()
            .publish()
            .topic_arn(&topic)
            .message(format!("card {CARD}"))
            .send()
            .await,
        PublishError::AuthorizationErrorException(_),
        "AuthorizationError",
        403
    );
    assert!(receive_some(&server.sqs(), &url, 0).await.is_empty());
}

#[tokio::test]
async fn inbound_deidentify_masks_and_redacts_before_fan_out() {
    let server = Server::start();
    let (topic, url) = topic_with_queue(&server, "dp-deid").await;
    // A second, enveloped subscriber sees the same de-identified message.
    let enveloped = create_queue(&server.sqs(), "dp-deid-env", &[]).await;
    subscribe_queue(&server, &topic, "dp-deid-env", &[]).await;
    put(
        &server,
        &topic,
        &policy(json!([
            statement(
                "Inbound",
                &["EmailAddress"],
                json!({"Deidentify": {"MaskConfig": {"MaskWithCharacter": "#"}}})
            ),
            statement(
                "Inbound",
                &["Ssn-US"],
                json!({"Deidentify": {"RedactConfig": {}}})
            ),
        ])),
    )
    .await;
    publish(&server, &topic, "mail jo@example.com, ssn: 123-45-6789").await;
    let raw = receive_exactly(&server.sqs(), &url, 1).await;
    assert_eq!(
        raw[0].body(),
        Some("mail ##############, ssn: "),
        "e-mail masked character for character, SSN removed"
    );
    let env = receive_exactly(&server.sqs(), &enveloped, 1).await;
    assert_eq!(
        json_of(env[0].body().unwrap())["Message"],
        "mail ##############, ssn: "
    );

    // A message that is nothing but sensitive data is refused rather than emptied.
    assert_sns_err!(
        server
            .sns()
            .publish()
            .topic_arn(&topic)
            .message("jo@example.com")
            .send()
            .await,
        PublishError::AuthorizationErrorException(_),
        "AuthorizationError",
        403
    );
}

#[tokio::test]
async fn outbound_statements_act_on_each_delivery() {
    let server = Server::start();
    let (topic, url) = topic_with_queue(&server, "dp-out").await;
    put(
        &server,
        &topic,
        &policy(json!([
            statement("Outbound", &["IpAddress"], json!({"Deny": {}})),
            statement(
                "Outbound",
                &["EmailAddress"],
                json!({"Deidentify": {"RedactConfig": {}}})
            ),
        ])),
    )
    .await;
    // The publish itself succeeds (the statements are Outbound) ...
    publish(&server, &topic, "login from 203.0.113.7").await;
    publish(&server, &topic, "reply to jo@example.com today").await;
    // ... the first is not delivered, the second is delivered redacted.
    let got = receive_exactly(&server.sqs(), &url, 1).await;
    assert_eq!(got[0].body(), Some("reply to  today"));
    assert!(
        server
            .stderr()
            .contains("prohibits this message from being delivered"),
        "the denied delivery is logged"
    );
}

#[tokio::test]
async fn audit_records_go_to_the_sqs_destinations_the_log_and_metrics() {
    let server = Server::start();
    let (topic, url) = topic_with_queue(&server, "dp-audit").await;
    let findings = create_queue(&server.sqs(), "dp-findings", &[]).await;
    let clean = create_queue(&server.sqs(), "dp-clean", &[]).await;
    put(
        &server,
        &topic,
        &policy(json!([statement(
            "Inbound",
            &["EmailAddress", "IpAddress"],
            json!({"Audit": {"SampleRate": "99",
                "FindingsDestination": {"Sqs": {"QueueArn": server.queue_arn("dp-findings")},
                    "CloudWatchLogs": {"LogGroup": "/aws/vendedlogs/loft-test"}},
                "NoFindingsDestination": {"Sqs": {"QueueArn": server.queue_arn("dp-clean")}}}})
        )])),
    )
    .await;
    let sensitive = "from a@b.io and c@d.io at 10.1.2.3";
    let mid = publish(&server, &topic, sensitive).await;
    let clean_id = publish(&server, &topic, "nothing to see").await;

    // Audit does not change what subscribers get.
    let delivered = receive_exactly(&server.sqs(), &url, 2).await;
    assert_eq!(
        bodies(&delivered),
        vec![sensitive.to_owned(), "nothing to see".into()]
    );

    let rec = receive_exactly(&server.sqs(), &findings, 1).await;
    let rec = json_of(rec[0].body().unwrap());
    assert_eq!(rec["messageId"], mid.as_str());
    assert_eq!(rec["resourceArn"], topic.as_str());
    assert_eq!(rec["callerPrincipal"], "arn:aws:iam::000000000000:root");
    assert_eq!(
        rec["dataIdentifiers"],
        json!([
            {"name": "EmailAddress", "count": 2,
             "detections": [{"start": 5, "end": 11}, {"start": 16, "end": 22}]},
            {"name": "IpAddress", "count": 1, "detections": [{"start": 26, "end": 34}]},
        ])
    );
    let none = receive_exactly(&server.sqs(), &clean, 1).await;
    let none = json_of(none[0].body().unwrap());
    assert_eq!(none["messageId"], clean_id.as_str());
    assert_eq!(none["dataIdentifiers"], json!([]));

    let log = server.stderr();
    assert!(
        log.contains("data protection audit") && log.contains(&mid),
        "audit log line with the MessageId:\n{log}"
    );
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    for line in [
        r#"loft_sns_data_protection_messages_total{topic="dp-audit",direction="Inbound",result="with_findings"} 1"#,
        r#"loft_sns_data_protection_messages_total{topic="dp-audit",direction="Inbound",result="without_findings"} 1"#,
        r#"loft_sns_data_protection_findings_total{topic="dp-audit",identifier="EmailAddress"} 2"#,
        r#"loft_sns_data_protection_findings_total{topic="dp-audit",identifier="IpAddress"} 1"#,
    ] {
        assert!(
            metrics.contains(line),
            "{line} missing from /metrics:\n{metrics}"
        );
    }
}
