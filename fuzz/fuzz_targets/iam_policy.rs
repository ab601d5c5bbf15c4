//! IAM policies (`loft_core::iam`): parsing as an identity policy, a resource policy and a
//! stored queue or topic policy, then evaluating what parsed against a cross-account
//! request carrying every condition key Loft sets.
//!
//! Input: the policy text, then optionally a line `---` and a source IP written into
//! `aws:SourceIp` (the policy text otherwise).
#![no_main]

use libfuzzer_sys::fuzz_target;
use loft_core::iam::{authorize, Caller, Identity, Policy, PolicyKind, Request};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (policy, ip) = text.split_once("\n---\n").unwrap_or((text, text));
    let parsed = [
        Policy::parse(policy, PolicyKind::Identity),
        Policy::parse(policy, PolicyKind::Resource),
        Policy::parse_lenient(policy),
    ];
    for p in parsed.into_iter().flatten() {
        let caller = Caller::Iam {
            account: "222222222222".into(),
            arn: "arn:aws:iam::222222222222:user/fuzz".into(),
        };
        let request = Request::new(
            "sqs:SendMessage",
            "arn:aws:sqs:us-east-1:111111111111:q",
            caller,
        )
        .with("aws:SourceIp", vec![ip.to_owned()])
        .with("aws:SourceArn", vec!["arn:aws:sns:us-east-1:222222222222:t".into()])
        .with("aws:SecureTransport", vec!["false".into()]);
        let _ = authorize(
            Identity::Policies(std::slice::from_ref(&p)),
            Some(&p),
            "111111111111",
            &request,
        );
        let service = Request::new(
            "sqs:SendMessage",
            "arn:aws:sqs:us-east-1:111111111111:q",
            Caller::Service("sns.amazonaws.com".into()),
        );
        let _ = authorize(Identity::None, Some(&p), "111111111111", &service);
    }
});
