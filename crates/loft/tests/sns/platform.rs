//! Mobile push platform applications and endpoints, SMS and push publishes, as rules with
//! their variants (issue 33): the application attributes SetPlatformApplicationAttributes
//! lists, each platform ARN checked for the operation's kind before anything is done
//! (a DeleteEndpoint never deletes an application), PlatformApplicationDisabled, the
//! `application` subscription endpoint, paged platform lists, and the message attributes
//! AWS defines for SMS and push.
//!
//! Sources: SNS API Reference (CreatePlatformApplication, SetPlatformApplicationAttributes,
//! ListPlatformApplications, ListEndpointsByPlatformApplication, Publish's
//! PlatformApplicationDisabled); SNS Developer Guide ("Publishing to a mobile phone",
//! "Amazon SNS message attributes"); AWS's recorded answers where they exist (the words of
//! each refusal, docs/conformance.md "Rules by area").

use aws_sdk_sns::error::ProvideErrorMetadata;
use aws_sdk_sns::operation::publish::PublishError;
use aws_sdk_sns::types::MessageAttributeValue;

use crate::*;

/// `(code, message)` of an SDK error.
fn err_of(e: &dyn ProvideErrorMetadata) -> (String, String) {
    (
        e.code().unwrap_or_default().to_owned(),
        e.message().unwrap_or_default().to_owned(),
    )
}

fn invalid(message: &str) -> Option<(String, String)> {
    Some(("InvalidParameter".to_owned(), message.to_owned()))
}

async fn create_app(sns: &aws_sdk_sns::Client, name: &str, platform: &str) -> String {
    let mut req = sns
        .create_platform_application()
        .name(name)
        .platform(platform)
        .attributes("PlatformCredential", "c");
    if platform != "GCM" {
        req = req.attributes("PlatformPrincipal", "p");
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("CreatePlatformApplication {name}: {e:?}"))
        .platform_application_arn()
        .expect("arn")
        .to_owned()
}

async fn create_endpoint(sns: &aws_sdk_sns::Client, app: &str, token: &str) -> String {
    sns.create_platform_endpoint()
        .platform_application_arn(app)
        .token(token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("CreatePlatformEndpoint {token}: {e:?}"))
        .endpoint_arn()
        .expect("arn")
        .to_owned()
}

/// SetPlatformApplicationAttributes' list, for CreatePlatformApplication and Set alike:
/// a name outside it, an `Event*` that is not a topic ARN, a `*FeedbackRoleArn` that is not
/// a role ARN, a sample rate outside 0-100, the Apple ids off APNs; accepted values are
/// reported back (the credentials never).
#[tokio::test]
async fn application_attributes_follow_the_api_reference() {
    let server = Server::start();
    let sns = server.sns();
    let reason = |name: &str, why: &str| {
        invalid(&format!(
            "Invalid parameter: Attributes Reason: Invalid value for attribute: {name}: {why}"
        ))
    };
    let topic = server.topic_arn("events");
    let role = "arn:aws:iam::000000000000:role/feedback";
    type Row<'a> = (&'a str, &'a str, &'a str, Option<(String, String)>);
    let rows: Vec<Row> = vec![
        (
            "ADM",
            "Foo",
            "bar",
            invalid("Invalid parameter: Attributes Reason: Invalid attribute name: Foo"),
        ),
        (
            "ADM",
            "CustomUserData",
            "x",
            invalid("Invalid parameter: Attributes Reason: Invalid attribute name: CustomUserData"),
        ),
        ("ADM", "SuccessFeedbackSampleRate", "50", None),
        (
            "ADM",
            "SuccessFeedbackSampleRate",
            "101",
            reason(
                "SuccessFeedbackSampleRate",
                "must be a whole number from 0 to 100",
            ),
        ),
        (
            "ADM",
            "SuccessFeedbackSampleRate",
            "ten",
            reason(
                "SuccessFeedbackSampleRate",
                "must be a whole number from 0 to 100",
            ),
        ),
        ("ADM", "EventEndpointCreated", &topic, None),
        (
            "ADM",
            "EventEndpointDeleted",
            "not-an-arn",
            reason("EventEndpointDeleted", "must be a topic ARN"),
        ),
        (
            "ADM",
            "EventDeliveryFailure",
            "arn:aws:sqs:us-east-1:000000000000:q",
            reason("EventDeliveryFailure", "must be a topic ARN"),
        ),
        ("ADM", "SuccessFeedbackRoleArn", role, None),
        (
            "ADM",
            "FailureFeedbackRoleArn",
            "x",
            reason("FailureFeedbackRoleArn", "must be an IAM role ARN"),
        ),
        ("APNS", "ApplePlatformTeamID", "TEAM123456", None),
        (
            "APNS_SANDBOX",
            "ApplePlatformBundleID",
            "com.example.app",
            None,
        ),
        (
            "GCM",
            "ApplePlatformTeamID",
            "TEAM123456",
            reason(
                "ApplePlatformTeamID",
                "applies only to APNs token-based authentication",
            ),
        ),
    ];
    for (i, (platform, name, value, want)) in rows.into_iter().enumerate() {
        let mut create = sns
            .create_platform_application()
            .name(format!("app-{i}"))
            .platform(platform)
            .attributes("PlatformCredential", "c")
            .attributes(name, value);
        if platform != "GCM" {
            create = create.attributes("PlatformPrincipal", "p");
        }
        let created = create.send().await;
        let app = create_app(&sns, &format!("set-{i}"), platform).await;
        let set = sns
            .set_platform_application_attributes()
            .platform_application_arn(&app)
            .attributes(name, value)
            .send()
            .await;
        match want {
            None => {
                let arn = created
                    .unwrap_or_else(|e| panic!("create {name}={value}: {e:?}"))
                    .platform_application_arn()
                    .expect("arn")
                    .to_owned();
                set.unwrap_or_else(|e| panic!("set {name}={value}: {e:?}"));
                for arn in [arn, app] {
                    let attrs = sns
                        .get_platform_application_attributes()
                        .platform_application_arn(&arn)
                        .send()
                        .await
                        .expect("GetPlatformApplicationAttributes");
                    let attrs = attrs.attributes().expect("attributes");
                    assert_eq!(attrs.get(name).map(String::as_str), Some(value), "{arn}");
                    assert!(!attrs.contains_key("PlatformCredential"), "{attrs:?}");
                }
            }
            Some(want) => {
                let e = created.expect_err(name);
                assert_eq!(err_of(&e), want, "create {platform} {name}={value}");
                let e = set.expect_err(name);
                assert_eq!(err_of(&e), want, "set {platform} {name}={value}");
            }
        }
    }
}

/// Every operation that names a platform application or endpoint checks that its ARN is
/// one of that kind (six elements, then the slashes of `app/P/NAME` or
/// `endpoint/P/APP/ID`) before it does anything: DeleteEndpoint given an application's ARN
/// deletes nothing, nor DeletePlatformApplication given an endpoint's.
#[tokio::test]
async fn platform_arns_are_checked_for_their_kind_before_anything_is_done() {
    let server = Server::start();
    let sns = server.sns();
    let app = create_app(&sns, "keep", "GCM").await;
    let endpoint = create_endpoint(&sns, &app, "tok").await;
    let elements = |param: &str| {
        invalid(&format!(
            "Invalid parameter: {param} Reason: An ARN must have at least 6 elements, not 1"
        ))
    };
    let slashes = |param: &str| {
        invalid(&format!(
            "Invalid parameter: {param} Reason: Wrong number of slashes in relative portion of the ARN."
        ))
    };
    // (operation, ARN given, refusal).
    type Row<'a> = (&'a str, &'a str, Option<(String, String)>);
    let rows: Vec<Row> = vec![
        ("DeleteEndpoint", &app, slashes("EndpointArn")),
        ("DeleteEndpoint", "invalid", elements("EndpointArn")),
        (
            "DeletePlatformApplication",
            &endpoint,
            slashes("PlatformApplicationArn"),
        ),
        (
            "DeletePlatformApplication",
            "invalid",
            elements("PlatformApplicationArn"),
        ),
        (
            "CreatePlatformEndpoint",
            &endpoint,
            slashes("PlatformApplicationArn"),
        ),
        (
            "CreatePlatformEndpoint",
            "invalid",
            elements("PlatformApplicationArn"),
        ),
        (
            "ListEndpointsByPlatformApplication",
            &endpoint,
            slashes("PlatformApplicationArn"),
        ),
        (
            "ListEndpointsByPlatformApplication",
            "invalid",
            elements("PlatformApplicationArn"),
        ),
    ];
    for (op, arn, want) in rows {
        let got = match op {
            "DeleteEndpoint" => sns
                .delete_endpoint()
                .endpoint_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err_of(&e)),
            "DeletePlatformApplication" => sns
                .delete_platform_application()
                .platform_application_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err_of(&e)),
            "CreatePlatformEndpoint" => sns
                .create_platform_endpoint()
                .platform_application_arn(arn)
                .token("other")
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err_of(&e)),
            _ => sns
                .list_endpoints_by_platform_application()
                .platform_application_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| err_of(&e)),
        };
        assert_eq!(got.err(), want, "{op} {arn}");
    }
    // Both are still there.
    let listed = sns
        .list_endpoints_by_platform_application()
        .platform_application_arn(&app)
        .send()
        .await
        .expect("ListEndpointsByPlatformApplication");
    let arns: Vec<&str> = listed
        .endpoints()
        .iter()
        .filter_map(|e| e.endpoint_arn())
        .collect();
    assert_eq!(arns, [endpoint.as_str()]);
    // Each in its own operation still goes.
    sns.delete_endpoint()
        .endpoint_arn(&endpoint)
        .send()
        .await
        .expect("DeleteEndpoint");
    sns.delete_platform_application()
        .platform_application_arn(&app)
        .send()
        .await
        .expect("DeletePlatformApplication");
    let e = sns
        .get_platform_application_attributes()
        .platform_application_arn(&app)
        .send()
        .await
        .expect_err("deleted");
    assert_eq!(
        err_of(&e),
        (
            "NotFound".to_owned(),
            "PlatformApplication does not exist".to_owned()
        )
    );
}

/// Publish to an endpoint: its application disabled is PlatformApplicationDisabled (the
/// botocore model's exception, 400), checked before the endpoint's own EndpointDisabled;
/// both enabled, the push is recorded.
#[tokio::test]
async fn a_disabled_application_refuses_publishes_to_its_endpoints() {
    let server = Server::start();
    let sns = server.sns();
    let app = create_app(&sns, "push", "APNS").await;
    let endpoint = create_endpoint(&sns, &app, "device").await;
    // (application Enabled, endpoint Enabled, refusal code).
    let rows = [
        ("false", "true", Some("PlatformApplicationDisabled")),
        ("false", "false", Some("PlatformApplicationDisabled")),
        ("true", "false", Some("EndpointDisabled")),
        ("true", "true", None),
    ];
    for (app_enabled, endpoint_enabled, want) in rows {
        sns.set_platform_application_attributes()
            .platform_application_arn(&app)
            .attributes("Enabled", app_enabled)
            .send()
            .await
            .expect("SetPlatformApplicationAttributes");
        sns.set_endpoint_attributes()
            .endpoint_arn(&endpoint)
            .attributes("Enabled", endpoint_enabled)
            .send()
            .await
            .expect("SetEndpointAttributes");
        let got = sns
            .publish()
            .target_arn(&endpoint)
            .message("m")
            .send()
            .await;
        match (got, want) {
            (Ok(_), None) => {}
            (Err(e), Some("PlatformApplicationDisabled")) => {
                let (code, status) = crate::harness::sdk_error(&e);
                assert_eq!(
                    (code.as_str(), status),
                    ("PlatformApplicationDisabled", 400)
                );
                let service = e.into_service_error();
                assert!(
                    matches!(
                        service,
                        PublishError::PlatformApplicationDisabledException(_)
                    ),
                    "{service:?}"
                );
            }
            (Err(e), Some("EndpointDisabled")) => {
                assert_eq!(
                    err_of(&e),
                    (
                        "EndpointDisabled".to_owned(),
                        "Endpoint is disabled".to_owned()
                    )
                );
            }
            (got, want) => {
                panic!("app {app_enabled}, endpoint {endpoint_enabled}: {got:?}, want {want:?}")
            }
        }
    }
}

/// Subscribe with protocol `application` takes an endpoint of the subscriber's that
/// exists; anything else named by an ARN (a deleted endpoint, another account's, an
/// application, a topic, an ARN with a control character) is refused in AWS's words
/// "Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint ARN".
#[tokio::test]
async fn application_subscriptions_need_an_endpoint_that_exists() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "pushes", &[]).await;
    let app = create_app(&sns, "subs", "GCM").await;
    let live = create_endpoint(&sns, &app, "live").await;
    let deleted = create_endpoint(&sns, &app, "gone").await;
    sns.delete_endpoint()
        .endpoint_arn(&deleted)
        .send()
        .await
        .expect("DeleteEndpoint");
    let other_account = live.replace(":000000000000:", ":111111111111:");
    let with_control = format!("{live}\u{1}");
    let missing = format!("{app}/none").replace(":app/", ":endpoint/");
    // (endpoint, None: taken, Some(true): not an endpoint's shape, refused by the
    // protocol's shape rule (`endpoints::check_endpoint`) first, Some(false): an
    // endpoint's shape that names none of the subscriber's endpoints).
    let rows: [(&str, Option<bool>); 7] = [
        (&live, None),
        (&deleted, Some(false)),
        (&missing, Some(false)),
        (&other_account, Some(false)),
        (&app, Some(true)),
        (&topic, Some(true)),
        (&with_control, Some(true)),
    ];
    for (endpoint, refused) in rows {
        let got = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol("application")
            .endpoint(endpoint)
            .send()
            .await;
        match (got, refused) {
            (Ok(_), None) => {}
            (Err(e), Some(shape)) => {
                let (code, message) = err_of(&e);
                assert_eq!(code, "InvalidParameter", "{endpoint}");
                // The wire carries a control character as U+FFFD.
                let shown = endpoint.replace('\u{1}', "\u{FFFD}");
                let expected = if shape {
                    format!("Invalid parameter: Application endpoint arn invalid:{shown}")
                } else {
                    format!("Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint {shown}")
                };
                assert_eq!(message, expected, "{endpoint}");
            }
            (got, _) => panic!("{endpoint}: {got:?}"),
        }
    }
}

/// ListPlatformApplications and ListEndpointsByPlatformApplication give 100 a page and a
/// NextToken for the rest (SNS API Reference); a token no page gave is refused.
#[tokio::test]
async fn platform_lists_page_by_a_hundred() {
    let server = Server::start();
    let sns = server.sns();
    let mut apps = Vec::new();
    for i in 0..101 {
        apps.push(create_app(&sns, &format!("app-{i:03}"), "GCM").await);
    }
    let mut endpoints = Vec::new();
    for i in 0..101 {
        endpoints.push(create_endpoint(&sns, &apps[0], &format!("token-{i}")).await);
    }
    apps.sort();
    endpoints.sort();
    let first = sns
        .list_platform_applications()
        .send()
        .await
        .expect("ListPlatformApplications");
    let token = first.next_token().expect("a second page").to_owned();
    let second = sns
        .list_platform_applications()
        .next_token(&token)
        .send()
        .await
        .expect("ListPlatformApplications page 2");
    assert_eq!(second.next_token(), None);
    let listed: Vec<String> = first
        .platform_applications()
        .iter()
        .chain(second.platform_applications())
        .filter_map(|a| a.platform_application_arn().map(str::to_owned))
        .collect();
    assert_eq!(first.platform_applications().len(), 100);
    assert_eq!(listed, apps);

    let first = sns
        .list_endpoints_by_platform_application()
        .platform_application_arn(&apps[0])
        .send()
        .await
        .expect("ListEndpointsByPlatformApplication");
    let token = first.next_token().expect("a second page").to_owned();
    let second = sns
        .list_endpoints_by_platform_application()
        .platform_application_arn(&apps[0])
        .next_token(&token)
        .send()
        .await
        .expect("ListEndpointsByPlatformApplication page 2");
    assert_eq!(second.next_token(), None);
    assert_eq!(first.endpoints().len(), 100);
    let listed: Vec<String> = first
        .endpoints()
        .iter()
        .chain(second.endpoints())
        .filter_map(|e| e.endpoint_arn().map(str::to_owned))
        .collect();
    assert_eq!(listed, endpoints);

    // Tokens no page gave: not base64, or naming something else.
    let endpoint_token = first.next_token().expect("token").to_owned();
    for bad in ["not a token", "Zm9v"] {
        let e = sns
            .list_platform_applications()
            .next_token(bad)
            .send()
            .await
            .expect_err(bad);
        assert_eq!(
            err_of(&e),
            invalid("Invalid parameter: NextToken").unwrap(),
            "{bad}"
        );
    }
    // An endpoint list's token is not an application list's.
    let e = sns
        .list_platform_applications()
        .next_token(&endpoint_token)
        .send()
        .await
        .expect_err("endpoint token");
    assert_eq!(err_of(&e), invalid("Invalid parameter: NextToken").unwrap());
}

fn string_attribute(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .expect("attribute")
}

/// The `AWS.` prefix is reserved for AWS's own message attributes, which a Publish may
/// carry: the SMS ones to a phone number (or a topic), the mobile push family to an
/// endpoint; any other `AWS.` or `Amazon.` name is refused, in Publish and PublishBatch.
#[tokio::test]
async fn sms_and_push_publishes_take_the_attributes_aws_defines() {
    let server = Server::start();
    let sns = server.sns();
    let app = create_app(&sns, "attrs", "APNS").await;
    let endpoint = create_endpoint(&sns, &app, "device").await;
    let topic = create_topic(&sns, "attrs", &[]).await;
    let rows: [(&str, bool); 9] = [
        ("AWS.SNS.SMS.SMSType", true),
        ("AWS.SNS.SMS.SenderID", true),
        ("AWS.SNS.SMS.MaxPrice", true),
        ("AWS.MM.SMS.OriginationNumber", true),
        ("AWS.SNS.MOBILE.APNS.PUSH_TYPE", true),
        ("AWS.SNS.MOBILE.FCM.TTL", true),
        ("AWS.custom", false),
        ("Amazon.custom", false),
        ("aws.sns.sms.smstype", false),
    ];
    for (name, ok) in rows {
        let attr = string_attribute("1");
        let to_phone = sns
            .publish()
            .phone_number("+15551234567")
            .message("m")
            .message_attributes(name, attr.clone())
            .send()
            .await
            .map(|_| ());
        let to_endpoint = sns
            .publish()
            .target_arn(&endpoint)
            .message("m")
            .message_attributes(name, attr.clone())
            .send()
            .await
            .map(|_| ());
        let to_topic = sns
            .publish_batch()
            .topic_arn(&topic)
            .publish_batch_request_entries(
                aws_sdk_sns::types::PublishBatchRequestEntry::builder()
                    .id("1")
                    .message("m")
                    .message_attributes(name, attr)
                    .build()
                    .expect("entry"),
            )
            .send()
            .await
            .map(|_| ());
        let refusal = (
            "ParameterValueInvalid".to_owned(),
            format!("Message (user) attribute name '{name}' is reserved for use by Amazon."),
        );
        if ok {
            to_phone.unwrap_or_else(|e| panic!("phone {name}: {e:?}"));
            to_endpoint.unwrap_or_else(|e| panic!("endpoint {name}: {e:?}"));
            to_topic.unwrap_or_else(|e| panic!("batch {name}: {e:?}"));
        } else {
            assert_eq!(err_of(&to_phone.expect_err(name)), refusal, "phone {name}");
            assert_eq!(
                err_of(&to_endpoint.expect_err(name)),
                refusal,
                "endpoint {name}"
            );
            assert_eq!(err_of(&to_topic.expect_err(name)), refusal, "batch {name}");
        }
    }
}

/// Put/GetDataProtectionPolicy count a ResourceArn's elements as every SNS ARN parameter
/// is counted, naming their own parameter.
#[tokio::test]
async fn data_protection_resource_arns_are_counted_in_elements() {
    let server = Server::start();
    let sns = server.sns();
    for (arn, n) in [("invalid", 1), ("arn:aws:sns:us-east-1:topic", 5)] {
        let want = invalid(&format!(
            "Invalid parameter: ResourceArn Reason: An ARN must have at least 6 elements, not {n}"
        ))
        .unwrap();
        let e = sns
            .put_data_protection_policy()
            .resource_arn(arn)
            .data_protection_policy("{}")
            .send()
            .await
            .expect_err(arn);
        assert_eq!(err_of(&e), want, "put {arn}");
        let e = sns
            .get_data_protection_policy()
            .resource_arn(arn)
            .send()
            .await
            .expect_err(arn);
        assert_eq!(err_of(&e), want, "get {arn}");
    }
}
