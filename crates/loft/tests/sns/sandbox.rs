//! The SMS sandbox's destination numbers (CreateSMSSandboxPhoneNumber,
//! VerifySMSSandboxPhoneNumber, ListSMSSandboxPhoneNumbers, DeleteSMSSandboxPhoneNumber)
//! and ListOriginationNumbers, through aws-sdk-sns against a real Loft.
//!
//! Source: the SNS API Reference of the five actions (PhoneNumber's pattern
//! `^(\+[0-9]{8,}|[0-9]{0,9})$` and 20 characters, OneTimePassword 5 to 8 digits,
//! MaxResults 1-100 and 1-30, ResourceNotFound 404, VerificationException 400), the SNS
//! Developer Guide "SMS sandbox" (per account and region). Loft records the one-time
//! password as an SMS to the number (`GET /_loft/sns/messages`), where this test reads it.

use aws_sdk_sns::config::Region;
use aws_sdk_sns::operation::create_sms_sandbox_phone_number::CreateSMSSandboxPhoneNumberError;
use aws_sdk_sns::operation::delete_sms_sandbox_phone_number::DeleteSMSSandboxPhoneNumberError;
use aws_sdk_sns::operation::list_origination_numbers::ListOriginationNumbersError;
use aws_sdk_sns::operation::list_sms_sandbox_phone_numbers::ListSMSSandboxPhoneNumbersError;
use aws_sdk_sns::operation::verify_sms_sandbox_phone_number::VerifySMSSandboxPhoneNumberError;
use serde_json::Value;

use crate::Server;

/// The last one-time password recorded for `number`.
async fn password_sent_to(server: &Server, number: &str) -> String {
    let list: Value = reqwest::get(format!("{}/_loft/sns/messages?protocol=sms", server.url))
        .await
        .expect("GET /_loft/sns/messages")
        .json()
        .await
        .expect("JSON");
    let newest = list
        .as_array()
        .expect("a list")
        .iter()
        .filter(|m| m["endpoint"] == number)
        .max_by_key(|m| m["id"].as_i64())
        .unwrap_or_else(|| panic!("no SMS recorded for {number}: {list}"));
    let text = newest["message"].as_str().expect("message");
    let code: String = text.chars().filter(char::is_ascii_digit).collect();
    assert_eq!(code.len(), 6, "one six-digit password in {text:?}");
    code
}

/// The sandbox as ListSMSSandboxPhoneNumbers pages it, `size` a page.
async fn listed(sns: &aws_sdk_sns::Client, size: Option<i32>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = sns
            .list_sms_sandbox_phone_numbers()
            .set_max_results(size)
            .set_next_token(token)
            .send()
            .await
            .expect("ListSMSSandboxPhoneNumbers");
        let numbers = page.phone_numbers();
        if let Some(size) = size {
            assert!(numbers.len() <= size as usize, "a page over MaxResults");
        }
        out.extend(numbers.iter().map(|n| {
            (
                n.phone_number().unwrap_or_default().to_owned(),
                n.status()
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default(),
            )
        }));
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            return out;
        }
    }
}

#[tokio::test]
async fn sandbox_numbers_are_added_verified_paged_deleted_and_kept() {
    let mut server = Server::start();
    let sns = server.sns();
    assert!(listed(&sns, None).await.is_empty(), "an empty sandbox");
    let numbers = ["+12065550100", "+12065550101", "+12065550102"];
    for n in numbers {
        sns.create_sms_sandbox_phone_number()
            .phone_number(n)
            .send()
            .await
            .expect("CreateSMSSandboxPhoneNumber");
    }
    let pending: Vec<(String, String)> = numbers
        .iter()
        .map(|n| (n.to_string(), "Pending".to_owned()))
        .collect();
    for size in [None, Some(1), Some(2), Some(100)] {
        assert_eq!(listed(&sns, size).await, pending, "MaxResults {size:?}");
    }

    // A wrong password is refused and changes nothing; the right one verifies.
    let code = password_sent_to(&server, numbers[0]).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    assert_sns_err!(
        sns.verify_sms_sandbox_phone_number()
            .phone_number(numbers[0])
            .one_time_password(wrong)
            .send()
            .await,
        VerifySMSSandboxPhoneNumberError::VerificationException(_),
        "VerificationException",
        400
    );
    assert_eq!(listed(&sns, None).await[0].1, "Pending");
    sns.verify_sms_sandbox_phone_number()
        .phone_number(numbers[0])
        .one_time_password(&code)
        .send()
        .await
        .expect("VerifySMSSandboxPhoneNumber with the password sent");

    // Another region of the account has a sandbox of its own.
    let west = aws_sdk_sns::Client::from_conf(
        sns.config()
            .to_builder()
            .region(Region::new("eu-west-1"))
            .build(),
    );
    assert!(listed(&west, None).await.is_empty(), "eu-west-1's sandbox");
    assert_sns_err!(
        west.verify_sms_sandbox_phone_number()
            .phone_number(numbers[1])
            .one_time_password(password_sent_to(&server, numbers[1]).await)
            .send()
            .await,
        VerifySMSSandboxPhoneNumberError::ResourceNotFoundException(_),
        "ResourceNotFound",
        404
    );

    // Kept across a restart; a deleted number is gone, and deleting it again is 404.
    server.stop();
    server.start_again();
    let sns = server.sns();
    let want = vec![
        (numbers[0].to_owned(), "Verified".to_owned()),
        (numbers[1].to_owned(), "Pending".to_owned()),
        (numbers[2].to_owned(), "Pending".to_owned()),
    ];
    assert_eq!(listed(&sns, Some(2)).await, want);
    // Adding a verified number again sends a new password and keeps it verified.
    sns.create_sms_sandbox_phone_number()
        .phone_number(numbers[0])
        .language_code(aws_sdk_sns::types::LanguageCodeString::EnGb)
        .send()
        .await
        .expect("CreateSMSSandboxPhoneNumber again");
    assert_eq!(listed(&sns, None).await, want);
    sns.delete_sms_sandbox_phone_number()
        .phone_number(numbers[1])
        .send()
        .await
        .expect("DeleteSMSSandboxPhoneNumber");
    assert_eq!(
        listed(&sns, None).await,
        vec![want[0].clone(), want[2].clone()]
    );
    let msg = assert_sns_err!(
        sns.delete_sms_sandbox_phone_number()
            .phone_number(numbers[1])
            .send()
            .await,
        DeleteSMSSandboxPhoneNumberError::ResourceNotFoundException(_),
        "ResourceNotFound",
        404
    );
    assert_eq!(
        msg,
        "Can't perform the action on the specified resource. Make sure that the resource exists."
    );
}

/// Each parameter's bounds, one row per variant, for every action that takes it.
#[tokio::test]
async fn sandbox_parameters_are_checked_against_the_api_reference() {
    let server = Server::start();
    let sns = server.sns();
    let formatted = "Invalid parameter: PhoneNumber Reason: input incorrectly formatted";
    for (number, ok) in [
        ("+12345678", true),
        ("123456789", true),
        ("+1234567", false),
        ("1234567890", false),
        ("+1-206-555-0100", false),
        ("+1206555010x", false),
        ("+123456789012345678901", false),
    ] {
        let created = sns
            .create_sms_sandbox_phone_number()
            .phone_number(number)
            .send()
            .await;
        if ok {
            created.unwrap_or_else(|e| panic!("{number}: {e:?}"));
            continue;
        }
        let msg = assert_sns_err!(
            created,
            CreateSMSSandboxPhoneNumberError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, formatted, "{number}");
        let msg = assert_sns_err!(
            sns.delete_sms_sandbox_phone_number()
                .phone_number(number)
                .send()
                .await,
            DeleteSMSSandboxPhoneNumberError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, formatted, "{number}");
    }
    let msg = assert_sns_err!(
        sns.create_sms_sandbox_phone_number()
            .phone_number("+12065550100")
            .language_code(aws_sdk_sns::types::LanguageCodeString::from("xx-XX"))
            .send()
            .await,
        CreateSMSSandboxPhoneNumberError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: LanguageCode");
    for password in ["1234", "123456789", "12a45", ""] {
        assert_sns_err!(
            sns.verify_sms_sandbox_phone_number()
                .phone_number("+12345678")
                .one_time_password(password)
                .send()
                .await,
            VerifySMSSandboxPhoneNumberError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    for size in [0, 101] {
        assert_sns_err!(
            sns.list_sms_sandbox_phone_numbers()
                .max_results(size)
                .send()
                .await,
            ListSMSSandboxPhoneNumbersError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    for (size, ok) in [(1, true), (30, true), (0, false), (31, false)] {
        let got = sns
            .list_origination_numbers()
            .max_results(size)
            .send()
            .await;
        if ok {
            assert!(got
                .expect("ListOriginationNumbers")
                .phone_numbers()
                .is_empty());
        } else {
            assert_sns_err!(
                got,
                ListOriginationNumbersError::ValidationException(_),
                "ValidationException",
                400
            );
        }
    }
    assert!(sns
        .list_origination_numbers()
        .send()
        .await
        .expect("ListOriginationNumbers")
        .phone_numbers()
        .is_empty());
}
