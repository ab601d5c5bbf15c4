//! SigV4 authentication against the real binary: aws-sdk-sqs with right and wrong
//! credentials and a skewed clock, raw JSON and Query requests, presigned URLs, the seeds'
//! API with and without a signature, and an open server.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::harness::*;

async fn create(client: &aws_sdk_sqs::Client, name: &str) -> Result<String, String> {
    client
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .map(|o| o.queue_url().unwrap_or_default().to_owned())
        .map_err(|e| {
            let (code, status, message) = sdk_error(&e);
            format!("{code} {status} {message}")
        })
}

#[tokio::test]
async fn the_sdk_with_a_configured_key_works_and_both_keys_are_accepted() {
    let loft = Loft::signed(&[]);
    let first = loft.sdk(KEY, SECRET);
    let url = create(&first, "jobs").await.expect("create with KEY");
    first
        .send_message()
        .queue_url(&url)
        .message_body("hello")
        .send()
        .await
        .expect("send");
    let second = loft.sdk(KEY2, SECRET2);
    let got = second
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .expect("receive with KEY2");
    assert_eq!(got.messages()[0].body(), Some("hello"));
    assert!(
        loft.stderr().contains("SigV4 authentication required"),
        "{}",
        loft.stderr()
    );
}

#[tokio::test]
async fn the_sdk_with_a_wrong_secret_gets_signature_does_not_match() {
    let loft = Loft::signed(&[]);
    let err = create(&loft.sdk(KEY, "not-the-secret"), "jobs")
        .await
        .unwrap_err();
    assert!(err.starts_with("SignatureDoesNotMatch 403"), "{err}");
    // Nothing was created.
    let queues = loft
        .sdk(KEY, SECRET)
        .list_queues()
        .send()
        .await
        .expect("list");
    assert!(queues.queue_urls().is_empty());
}

#[tokio::test]
async fn the_sdk_with_an_unknown_key_gets_invalid_client_token_id() {
    let loft = Loft::signed(&[]);
    let err = create(&loft.sdk("AKIDUNKNOWN", SECRET), "jobs")
        .await
        .unwrap_err();
    assert!(err.starts_with("InvalidClientTokenId 403"), "{err}");
    assert!(
        err.contains("security token included in the request is invalid"),
        "{err}"
    );
}

#[tokio::test]
async fn a_date_outside_the_fifteen_minute_window_is_refused_either_way() {
    let loft = Loft::signed(&[]);
    let now = SystemTime::now();
    let late = loft.sdk_at(KEY, SECRET, now - Duration::from_secs(20 * 60));
    let err = create(&late, "jobs").await.unwrap_err();
    assert!(err.starts_with("SignatureDoesNotMatch 403"), "{err}");
    assert!(
        err.contains("Signature expired:") && err.contains("- 15 min.)"),
        "{err}"
    );
    let early = loft.sdk_at(KEY, SECRET, now + Duration::from_secs(20 * 60));
    let err = create(&early, "jobs").await.unwrap_err();
    assert!(err.starts_with("SignatureDoesNotMatch 403"), "{err}");
    assert!(err.contains("Signature not yet current:"), "{err}");
    // Within the window: accepted.
    let skewed = loft.sdk_at(KEY, SECRET, now - Duration::from_secs(10 * 60));
    create(&skewed, "jobs")
        .await
        .expect("ten minutes off is within the window");
}

#[tokio::test]
async fn an_unsigned_json_request_gets_missing_authentication_token_in_json() {
    let loft = Loft::signed(&[]);
    let resp = http()
        .post(&loft.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        resp.headers()["x-amzn-query-error"],
        "MissingAuthenticationToken;Sender"
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["__type"],
        "com.amazonaws.sqs#MissingAuthenticationToken"
    );
}

#[tokio::test]
async fn query_requests_are_answered_in_their_own_services_xml() {
    let loft = Loft::signed(&[]);
    let sqs = http()
        .post(&loft.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("Action", "ListQueues"), ("Version", "2012-11-05")]))
        .send()
        .await
        .unwrap();
    assert_eq!(sqs.status(), 403);
    let text = sqs.text().await.unwrap();
    assert!(
        text.contains("<Code>MissingAuthenticationToken</Code>"),
        "{text}"
    );
    assert!(
        text.contains("http://queue.amazonaws.com/doc/2012-11-05/"),
        "{text}"
    );
    // A wrong signature on an SNS call: SNS's namespace.
    let bad = Signer {
        secret: "wrong",
        ..Signer::now("sns")
    };
    let body = form(&[("Action", "ListTopics"), ("Version", "2010-03-31")]);
    let resp = send_signed(
        &bad,
        "POST",
        &format!("{}/", loft.url),
        &[("content-type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(
        text.contains("<Code>SignatureDoesNotMatch</Code>"),
        "{text}"
    );
    assert!(
        text.contains("http://sns.amazonaws.com/doc/2010-03-31/"),
        "{text}"
    );
    // The same call signed right works, over Query with a form body.
    let resp = send_signed(
        &Signer::now("sns"),
        "POST",
        &format!("{}/", loft.url),
        &[("content-type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

/// A signature is good for the service its credential scope names: SQS takes only `sqs`,
/// SNS only `sns`, over JSON, Query and presigned URLs; any other (`sns`, `s3`, `lambda`
/// for SQS) is refused as AWS refuses it (SignatureDoesNotMatch, 403, "Credential should
/// be scoped to correct service: 'sqs'. "), in the protocol's own shape.
#[tokio::test]
async fn a_signature_scoped_to_another_service_is_refused() {
    let loft = Loft::signed(&[]);
    for service in ["sns", "s3", "lambda"] {
        let resp = send_signed(
            &Signer::now(service),
            "POST",
            &format!("{}/", loft.url),
            &[
                ("content-type", "application/x-amz-json-1.0"),
                ("x-amz-target", "AmazonSQS.ListQueues"),
            ],
            b"{}",
        )
        .await;
        assert_eq!(resp.status(), 403, "JSON ListQueues signed for {service}");
        let out: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert!(
            out["__type"]
                .as_str()
                .unwrap()
                .ends_with("SignatureDoesNotMatch"),
            "{out}"
        );
        assert_eq!(
            out["message"], "Credential should be scoped to correct service: 'sqs'. ",
            "{out}"
        );
    }
    // Query: SNS's ListTopics signed for S3 is SNS's refusal, in SNS's XML.
    let body = form(&[("Action", "ListTopics"), ("Version", "2010-03-31")]);
    let resp = send_signed(
        &Signer::now("s3"),
        "POST",
        &format!("{}/", loft.url),
        &[("content-type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(
        text.contains("<Code>SignatureDoesNotMatch</Code>")
            && text.contains(
                "<Message>Credential should be scoped to correct service: &apos;sns&apos;. </Message>"
            ),
        "{text}"
    );
    assert!(
        text.contains("http://sns.amazonaws.com/doc/2010-03-31/"),
        "{text}"
    );
    // A presigned SQS URL scoped to Lambda: refused; the same URL scoped to SQS works.
    let url = format!("{}/?Action=ListQueues&Version=2012-11-05", loft.url);
    let resp = http()
        .get(presign(
            &Signer::now("lambda"),
            &url,
            Duration::from_secs(300),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp
        .text()
        .await
        .unwrap()
        .contains("<Code>SignatureDoesNotMatch</Code>"));
    let resp = http()
        .get(presign(&Signer::now("sqs"), &url, Duration::from_secs(300)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

#[tokio::test]
async fn a_presigned_url_works_until_it_expires_and_only_for_what_it_signs() {
    let loft = Loft::signed(&[]);
    create(&loft.sdk(KEY, SECRET), "jobs").await.unwrap();
    let url = format!("{}/?Action=ListQueues&Version=2012-11-05", loft.url);
    let presigned = presign(&Signer::now("sqs"), &url, Duration::from_secs(300));
    let resp = http().get(&presigned).send().await.unwrap();
    let text = resp.text().await.unwrap();
    assert!(text.contains("<QueueUrl>"), "presigned ListQueues: {text}");
    // Changing a signed parameter breaks it.
    let tampered = presigned.replace("Action=ListQueues", "Action=ListQueues&QueueNamePrefix=x");
    let resp = http().get(&tampered).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("SignatureDoesNotMatch"));
    // Signed 20 minutes ago for 60 seconds: expired.
    let old = Signer {
        at: SystemTime::now() - Duration::from_secs(20 * 60),
        ..Signer::now("sqs")
    };
    let expired = presign(&old, &url, Duration::from_secs(60));
    let resp = http().get(&expired).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(text.contains("<Code>RequestExpired</Code>"), "{text}");
    // Signed 20 minutes ago for an hour: still good (X-Amz-Expires, not the skew window).
    let long = presign(&old, &url, Duration::from_secs(3600));
    let resp = http().get(&long).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
}

#[tokio::test]
async fn a_presigned_url_cannot_be_turned_into_another_operation_by_x_amz_target() {
    let loft = Loft::signed(&[]);
    let queue = create(&loft.sdk(KEY, SECRET), "presigned-target")
        .await
        .unwrap();
    create(&loft.sdk(KEY, SECRET), "secret-neighbour")
        .await
        .unwrap();
    let url = format!("{queue}?Action=GetQueueAttributes&AttributeName.1=All&Version=2012-11-05");
    let presigned = presign(&Signer::now("sqs"), &url, Duration::from_secs(300));
    // As signed: the queue's attributes.
    let resp = http().get(&presigned).send().await.unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    // The same URL with an unsigned X-Amz-Target naming another operation is refused,
    // and lists nothing.
    let resp = http()
        .get(&presigned)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(text.contains("IncompleteSignature"), "{text}");
    assert!(!text.contains("secret-neighbour"), "{text}");
}

#[tokio::test]
async fn the_seeds_api_requires_the_same_signature_and_health_stays_open() {
    let loft = Loft::signed(&[]);
    let c = http();
    let health = c.get(format!("{}/health", loft.url)).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let unsigned = c
        .post(format!("{}/queues/jobs/messages", loft.url))
        .json(&serde_json::json!({"body": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    assert_eq!(unsigned.headers()["www-authenticate"], "AWS4-HMAC-SHA256");
    let body: Value = unsigned.json().await.unwrap();
    assert!(body["error"]
        .as_str()
        .unwrap()
        .contains("authentication required"));
    let list = c.get(format!("{}/queues", loft.url)).send().await.unwrap();
    assert_eq!(list.status(), 401);
    // Any service name in the scope; a wrong secret is a 403.
    let url = format!("{}/queues/jobs/messages", loft.url);
    let json = [("content-type", "application/json")];
    let bad = Signer {
        secret: "wrong",
        ..Signer::now("execute-api")
    };
    let resp = send_signed(&bad, "POST", &url, &json, br#"{"body":"hi"}"#).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("SignatureDoesNotMatch: "),
        "{body}"
    );
    let resp = send_signed(
        &Signer::now("execute-api"),
        "POST",
        &url,
        &json,
        br#"{"body":"hi"}"#,
    )
    .await;
    assert_eq!(resp.status(), 201, "{}", resp.text().await.unwrap());
    let receive = format!(
        "{}/queues/jobs/messages?visibility_timeout=5&wait_seconds=0",
        loft.url
    );
    let resp = send_signed(&Signer::now("sqs"), "GET", &receive, &[], b"").await;
    assert_eq!(resp.status(), 200);
    let got: Value = resp.json().await.unwrap();
    assert_eq!(got["body"], "hi");
    // The inspection route is protected too; the signing certificate is not.
    let recorded = c
        .get(format!("{}/_loft/sns/messages", loft.url))
        .send()
        .await
        .unwrap();
    assert_eq!(recorded.status(), 401);
}

#[tokio::test]
async fn curl_aws_sigv4_signs_the_seeds_api() {
    let curl_missing = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err();
    if curl_missing {
        // `LOFT_TEST_REQUIRE_CURL=1` (CI) makes a missing curl a failure, not a skip.
        return crate::skips::Need {
            missing: Some("curl is not installed (apt-get install curl)".into()),
            require_var: "LOFT_TEST_REQUIRE_CURL",
            how: "install it to run the curl --aws-sigv4 test",
        }
        .skip("curl_aws_sigv4_signs_the_seeds_api");
    }
    let loft = Loft::signed(&[]);
    let curl = |args: &[&str]| {
        let out = std::process::Command::new("curl")
            .args([
                "-s",
                "-w",
                "\n%{http_code}",
                "--aws-sigv4",
                "aws:amz:us-east-1:sqs",
            ])
            .args(args)
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let user = format!("{KEY}:{SECRET}");
    let send = curl(&[
        "--user",
        &user,
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"body":"from curl"}"#,
        &format!("{}/queues/curl/messages", loft.url),
    ]);
    assert!(send.ends_with("\n201"), "curl send: {send}");
    let get = curl(&[
        "--user",
        &user,
        &format!("{}/queues/curl/messages", loft.url),
    ]);
    assert!(
        get.contains("from curl") && get.ends_with("\n200"),
        "curl receive: {get}"
    );
    let wrong = format!("{KEY}:wrong");
    let denied = curl(&["--user", &wrong, &format!("{}/queues", loft.url)]);
    assert!(
        denied.ends_with("\n403"),
        "curl with a wrong secret: {denied}"
    );
}

#[tokio::test]
async fn sns_subscription_links_work_unsigned_but_other_sns_calls_do_not() {
    let loft = Loft::signed(&[]);
    let c = http();
    // ConfirmSubscription from a SubscribeURL: no signature, reaches the service (which
    // answers about the token nobody holds, not about authentication).
    let confirm = c
        .get(format!(
            "{}/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-east-1:000000000000:nope&Token=abc",
            loft.url
        ))
        .send()
        .await
        .unwrap();
    let text = confirm.text().await.unwrap();
    assert!(!text.contains("MissingAuthenticationToken"), "{text}");
    assert!(
        text.contains("<Code>InvalidParameter</Code>") && text.contains("Token"),
        "{text}"
    );
    let list = c
        .get(format!(
            "{}/?Action=ListTopics&Version=2010-03-31",
            loft.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 403);
}

#[tokio::test]
async fn without_credentials_loft_is_open_and_says_so() {
    let loft = Loft::start(&[], &[]);
    let resp = http()
        .post(&loft.url)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        loft.wait_for_log("no credentials configured").await,
        "{}",
        loft.stderr()
    );
}

#[tokio::test]
async fn a_credentials_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys");
    std::fs::write(&file, format!("# test keys\n{KEY}:{SECRET}\n")).unwrap();
    let loft = Loft::start(&["--credentials-file", file.to_str().unwrap()], &[]);
    create(&loft.sdk(KEY, SECRET), "jobs")
        .await
        .expect("key from the file");
    let err = create(&loft.sdk(KEY2, SECRET2), "jobs").await.unwrap_err();
    assert!(err.starts_with("InvalidClientTokenId"), "{err}");
}
