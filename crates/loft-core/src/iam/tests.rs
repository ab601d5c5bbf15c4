//! The evaluator alone, with the examples of AWS's IAM User Guide ("Policy evaluation
//! logic", "Cross-account policy evaluation logic", "IAM JSON policy elements: Condition
//! operators") and the SQS and SNS developer guides' queue and topic policies.

use super::*;
use proptest::prelude::*;

const A: &str = "111111111111";
const B: &str = "222222222222";

fn user(account: &str, name: &str) -> Caller {
    Caller::Iam {
        account: account.into(),
        arn: format!("arn:aws:iam::{account}:user/{name}"),
    }
}

fn queue(account: &str, name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{account}:{name}")
}

fn identity(text: &str) -> Policy {
    Policy::parse(text, PolicyKind::Identity).expect("identity policy parses")
}

fn resource(text: &str) -> Policy {
    Policy::parse(text, PolicyKind::Resource).expect("resource policy parses")
}

fn decide(ids: &[Policy], res: Option<&Policy>, owner: &str, req: &Request) -> Decision {
    authorize(Identity::Policies(ids), res, owner, req)
}

// ---- parsing ----

#[test]
fn single_statement_object_and_list_both_parse() {
    let one = identity(
        r#"{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"sqs:*","Resource":"*"}}"#,
    );
    let list = identity(
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["sqs:*"],"Resource":["*"]}]}"#,
    );
    assert_eq!(one.statements.len(), 1);
    assert_eq!(list.statements.len(), 1);
    assert_eq!(one.statements[0].action.patterns, vec!["sqs:*"]);
}

#[test]
fn version_2008_and_absent_are_accepted_others_refused() {
    let body = r#""Statement":{"Effect":"Allow","Action":"sqs:*","Resource":"*"}"#;
    assert!(Policy::parse(
        &format!(r#"{{"Version":"2008-10-17",{body}}}"#),
        PolicyKind::Identity
    )
    .is_ok());
    assert!(Policy::parse(&format!(r#"{{{body}}}"#), PolicyKind::Identity).is_ok());
    assert!(Policy::parse(
        &format!(r#"{{"Version":"2020-01-01",{body}}}"#),
        PolicyKind::Identity
    )
    .is_err());
}

#[test]
fn malformed_documents_are_errors() {
    for bad in [
        "",
        "not json",
        "[]",
        "{}",
        r#"{"Statement":[]}"#,
        r#"{"Statement":"x"}"#,
        r#"{"Statement":{"Effect":"Maybe","Action":"*","Resource":"*"}}"#,
        r#"{"Statement":{"Action":"*","Resource":"*"}}"#,
        r#"{"Statement":{"Effect":"Allow","Resource":"*"}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","NotAction":"*","Resource":"*"}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":[],"Resource":"*"}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":7,"Resource":"*"}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"Bogus":{"a":"b"}}}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"IpAddress":{"aws:SourceIp":"nope"}}}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Condition":{"NumericLessThan":{"k":"ten"}}}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*","Extra":1}}"#,
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*"},"Other":1}"#,
    ] {
        assert!(
            Policy::parse(bad, PolicyKind::Identity).is_err(),
            "accepted {bad:?}"
        );
    }
}

#[test]
fn identity_policies_may_not_name_a_principal_and_need_a_resource() {
    let e = Policy::parse(
        r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"*","Resource":"*"}}"#,
        PolicyKind::Identity,
    )
    .unwrap_err();
    assert_eq!(e.0, "Policy document should not specify a principal.");
    assert!(Policy::parse(
        r#"{"Statement":{"Effect":"Allow","Action":"*"}}"#,
        PolicyKind::Identity
    )
    .is_err());
}

#[test]
fn resource_policies_need_a_principal_but_not_a_resource() {
    assert!(Policy::parse(
        r#"{"Statement":{"Effect":"Allow","Action":"*"}}"#,
        PolicyKind::Resource
    )
    .is_err());
    let p = resource(
        r#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"222222222222"},"Action":"sqs:SendMessage"}}"#,
    );
    assert!(p.statements[0].resource.is_none());
    // The lenient form reads what the APIs stored.
    assert!(Policy::parse_lenient(r#"{"Statement":{"Effect":"Allow","Action":"*"}}"#).is_ok());
}

#[test]
fn condition_values_may_be_booleans_and_numbers() {
    let p = identity(
        r#"{"Statement":{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":false},"NumericLessThan":{"sqs:delay":10}}}}"#,
    );
    let c = &p.statements[0].conditions;
    assert_eq!(c.len(), 2);
    assert!(c
        .iter()
        .any(|c| c.key == "aws:securetransport" && c.values == vec!["false"]));
    assert!(c
        .iter()
        .any(|c| c.key == "sqs:delay" && c.values == vec!["10"]));
}

// ---- matching ----

#[test]
fn glob_wildcards() {
    assert!(glob("*", "", false));
    assert!(glob("sqs:*", "sqs:SendMessage", false));
    assert!(glob("sqs:Send*", "sqs:SendMessageBatch", false));
    assert!(glob("sqs:?endMessage", "sqs:SendMessage", false));
    assert!(!glob("sqs:?endMessage", "sqs:endMessage", false));
    assert!(glob("a*b*c", "aXXbYYc", false));
    assert!(!glob("a*b*c", "aXXbYY", false));
    assert!(glob("SQS:sendmessage", "sqs:SendMessage", true));
    assert!(!glob("SQS:sendmessage", "sqs:SendMessage", false));
}

#[test]
fn actions_are_case_insensitive_resources_are_not() {
    let p = identity(
        r#"{"Statement":{"Effect":"Allow","Action":"SQS:sendmessage","Resource":"arn:aws:sqs:us-east-1:111111111111:Orders"}}"#,
    );
    let ok = Request::new("sqs:SendMessage", queue(A, "Orders"), user(A, "u"));
    let wrong_case = Request::new("sqs:SendMessage", queue(A, "orders"), user(A, "u"));
    assert_eq!(p.evaluate(&ok), Decision::Allow);
    assert_eq!(p.evaluate(&wrong_case), Decision::ImplicitDeny);
}

#[test]
fn arn_parts_match_one_by_one() {
    assert!(arn_matches("arn:aws:sqs:*:111111111111:*", &queue(A, "q")));
    assert!(arn_matches(
        "arn:aws:sqs:us-*:111111111111:team-a-*",
        &queue(A, "team-a-orders")
    ));
    assert!(!arn_matches(
        "arn:aws:sqs:*:111111111111:team-a-*",
        &queue(A, "team-b-orders")
    ));
    assert!(!arn_matches("arn:aws:sqs:*:111111111111:*", &queue(B, "q")));
    // A `*` in one part does not swallow the colons of the next.
    assert!(!arn_matches("arn:aws:*:111111111111:q", &queue(A, "q")));
    assert!(arn_matches("*", "anything"));
}

#[test]
fn not_action_allows_everything_but_the_named_actions() {
    let p =
        identity(r#"{"Statement":{"Effect":"Allow","NotAction":"sqs:Delete*","Resource":"*"}}"#);
    let send = Request::new("sqs:SendMessage", queue(A, "q"), user(A, "u"));
    let delete = Request::new("sqs:DeleteQueue", queue(A, "q"), user(A, "u"));
    assert_eq!(p.evaluate(&send), Decision::Allow);
    assert_eq!(p.evaluate(&delete), Decision::ImplicitDeny);
}

#[test]
fn not_resource_denies_everything_outside_the_listed_resources() {
    let p = identity(
        r#"{"Statement":[
        {"Effect":"Allow","Action":"sqs:*","Resource":"*"},
        {"Effect":"Deny","Action":"sqs:*","NotResource":"arn:aws:sqs:*:111111111111:team-a-*"}]}"#,
    );
    let own = Request::new("sqs:ReceiveMessage", queue(A, "team-a-q"), user(A, "u"));
    let other = Request::new("sqs:ReceiveMessage", queue(A, "team-b-q"), user(A, "u"));
    assert_eq!(p.evaluate(&own), Decision::Allow);
    assert_eq!(p.evaluate(&other), Decision::ExplicitDeny);
}

// ---- principals ----

#[test]
fn principal_forms() {
    let caller = user(B, "bob");
    for text in [
        r#""*""#,
        r#"{"AWS":"*"}"#,
        r#"{"AWS":"222222222222"}"#,
        r#"{"AWS":"arn:aws:iam::222222222222:root"}"#,
        r#"{"AWS":["arn:aws:iam::333333333333:root","arn:aws:iam::222222222222:user/bob"]}"#,
    ] {
        let p = resource(&format!(
            r#"{{"Statement":{{"Effect":"Allow","Principal":{text},"Action":"sqs:*"}}}}"#
        ));
        assert!(
            p.statements[0].principal.as_ref().unwrap().matches(&caller),
            "{text}"
        );
    }
    for text in [
        r#"{"AWS":"333333333333"}"#,
        r#"{"AWS":"arn:aws:iam::222222222222:user/alice"}"#,
        r#"{"Service":"sns.amazonaws.com"}"#,
    ] {
        let p = resource(&format!(
            r#"{{"Statement":{{"Effect":"Allow","Principal":{text},"Action":"sqs:*"}}}}"#
        ));
        assert!(
            !p.statements[0].principal.as_ref().unwrap().matches(&caller),
            "{text}"
        );
    }
    let sns = resource(
        r#"{"Statement":{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage"}}"#,
    );
    assert!(sns.statements[0]
        .principal
        .as_ref()
        .unwrap()
        .matches(&Caller::Service("sns.amazonaws.com".into())));
}

#[test]
fn not_principal_applies_to_everyone_else() {
    let p = resource(
        r#"{"Statement":{"Effect":"Deny","NotPrincipal":{"AWS":"111111111111"},"Action":"sqs:*"}}"#,
    );
    let req_b = Request::new("sqs:SendMessage", queue(A, "q"), user(B, "bob"));
    let req_a = Request::new("sqs:SendMessage", queue(A, "q"), user(A, "alice"));
    assert_eq!(p.evaluate(&req_b), Decision::ExplicitDeny);
    assert_eq!(p.evaluate(&req_a), Decision::ImplicitDeny);
}

// ---- conditions ----

fn with_condition(effect: &str, cond: &str) -> Policy {
    identity(&format!(
        r#"{{"Statement":{{"Effect":"{effect}","Action":"*","Resource":"*","Condition":{cond}}}}}"#
    ))
}

fn req() -> Request {
    Request::new("sqs:SendMessage", queue(A, "q"), user(A, "u"))
}

#[test]
fn string_operators() {
    for (cond, want) in [
        (
            r#"{"StringEquals":{"aws:PrincipalAccount":["999999999999","111111111111"]}}"#,
            Decision::Allow,
        ),
        (
            r#"{"StringLike":{"aws:PrincipalArn":"arn:aws:iam::111111111111:user/*"}}"#,
            Decision::Allow,
        ),
        (
            r#"{"StringEquals":{"aws:PrincipalArn":"ARN:AWS:IAM::111111111111:USER/U"}}"#,
            Decision::ImplicitDeny,
        ),
        (
            r#"{"StringEqualsIgnoreCase":{"aws:PrincipalArn":"ARN:AWS:IAM::111111111111:USER/U"}}"#,
            Decision::Allow,
        ),
        (
            r#"{"StringNotEquals":{"aws:PrincipalAccount":"111111111111"}}"#,
            Decision::ImplicitDeny,
        ),
    ] {
        assert_eq!(
            with_condition("Allow", cond).evaluate(&req()),
            want,
            "{cond}"
        );
    }
}

#[test]
fn keys_are_case_insensitive() {
    let p = with_condition(
        "Allow",
        r#"{"StringEquals":{"AWS:PRINCIPALACCOUNT":"111111111111"}}"#,
    );
    assert_eq!(p.evaluate(&req()), Decision::Allow);
}

#[test]
fn several_keys_and_operators_are_all_required() {
    let p = with_condition(
        "Allow",
        r#"{"StringEquals":{"aws:PrincipalAccount":"111111111111","aws:SourceAccount":"222222222222"},"Bool":{"aws:SecureTransport":"true"}}"#,
    );
    let r = req().with("aws:SourceAccount", vec![B.into()]);
    assert_eq!(
        p.evaluate(&r),
        Decision::ImplicitDeny,
        "SecureTransport absent"
    );
    let r = r.with("aws:SecureTransport", vec!["true".into()]);
    assert_eq!(p.evaluate(&r), Decision::Allow);
    let r = r.with("aws:SourceAccount", vec![A.into()]);
    assert_eq!(p.evaluate(&r), Decision::ImplicitDeny);
}

#[test]
fn a_missing_key_fails_positive_operators_and_passes_negated_ones() {
    // IAM User Guide, "Condition operators": a key not in the request context does not
    // match; for StringNotLike, ArnNotLike and the other negated operators the condition
    // is then true.
    let r = req();
    assert_eq!(
        with_condition("Allow", r#"{"ArnLike":{"aws:SourceArn":"*"}}"#).evaluate(&r),
        Decision::ImplicitDeny
    );
    assert_eq!(
        with_condition(
            "Allow",
            r#"{"ArnNotLike":{"aws:SourceArn":"arn:aws:sns:*:*:t"}}"#
        )
        .evaluate(&r),
        Decision::Allow
    );
    assert_eq!(
        with_condition("Allow", r#"{"StringNotLike":{"aws:SourceAccount":"1*"}}"#).evaluate(&r),
        Decision::Allow
    );
    assert_eq!(
        with_condition(
            "Allow",
            r#"{"StringEqualsIfExists":{"aws:SourceAccount":"1"}}"#
        )
        .evaluate(&r),
        Decision::Allow
    );
    let r = r.with("aws:SourceAccount", vec!["2".into()]);
    assert_eq!(
        with_condition(
            "Allow",
            r#"{"StringEqualsIfExists":{"aws:SourceAccount":"1"}}"#
        )
        .evaluate(&r),
        Decision::ImplicitDeny
    );
}

#[test]
fn null_tests_presence() {
    let r = req();
    assert_eq!(
        with_condition("Allow", r#"{"Null":{"aws:SourceArn":"true"}}"#).evaluate(&r),
        Decision::Allow
    );
    assert_eq!(
        with_condition("Allow", r#"{"Null":{"aws:SourceArn":"false"}}"#).evaluate(&r),
        Decision::ImplicitDeny
    );
    let r = r.with("aws:SourceArn", vec!["arn:aws:sns:us-east-1:1:t".into()]);
    assert_eq!(
        with_condition("Allow", r#"{"Null":{"aws:SourceArn":false}}"#).evaluate(&r),
        Decision::Allow
    );
}

#[test]
fn deny_without_tls_the_documented_secure_transport_policy() {
    // SQS Developer Guide, "Amazon SQS security best practices": deny requests that do not
    // use TLS with "Bool": {"aws:SecureTransport": "false"}.
    let p = resource(
        r#"{"Statement":[
        {"Effect":"Allow","Principal":"*","Action":"sqs:*"},
        {"Effect":"Deny","Principal":"*","Action":"sqs:*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
    );
    let plain = req().with("aws:SecureTransport", vec!["false".into()]);
    let tls = req().with("aws:SecureTransport", vec!["true".into()]);
    assert_eq!(p.evaluate(&plain), Decision::ExplicitDeny);
    assert_eq!(p.evaluate(&tls), Decision::Allow);
}

#[test]
fn ip_address_ranges_v4_and_v6() {
    // IAM User Guide, "IP address condition operators": 203.0.113.0/24 and
    // 2001:DB8:1234:5678::/64.
    let p = with_condition(
        "Allow",
        r#"{"IpAddress":{"aws:SourceIp":["203.0.113.0/24","2001:DB8:1234:5678::/64"]}}"#,
    );
    for (ip, want) in [
        ("203.0.113.7", Decision::Allow),
        ("203.0.114.7", Decision::ImplicitDeny),
        ("2001:db8:1234:5678::1", Decision::Allow),
        ("2001:db8:1234:5679::1", Decision::ImplicitDeny),
        ("::ffff:203.0.113.9", Decision::Allow),
        ("not-an-ip", Decision::ImplicitDeny),
    ] {
        assert_eq!(
            p.evaluate(&req().with("aws:SourceIp", vec![ip.into()])),
            want,
            "{ip}"
        );
    }
    let not = with_condition("Deny", r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#);
    assert_eq!(
        not.evaluate(&req().with("aws:SourceIp", vec!["192.0.2.1".into()])),
        Decision::ExplicitDeny
    );
    assert_eq!(
        not.evaluate(&req().with("aws:SourceIp", vec!["10.1.2.3".into()])),
        Decision::ImplicitDeny
    );
}

#[test]
fn numeric_operators() {
    let r = req().with("sqs:n", vec!["5".into()]);
    for (op, v, want) in [
        ("NumericEquals", "5", true),
        ("NumericNotEquals", "5", false),
        ("NumericLessThan", "6", true),
        ("NumericLessThan", "5", false),
        ("NumericLessThanEquals", "5", true),
        ("NumericGreaterThan", "4", true),
        ("NumericGreaterThanEquals", "6", false),
    ] {
        let p = with_condition("Allow", &format!(r#"{{"{op}":{{"sqs:n":"{v}"}}}}"#));
        assert_eq!(p.evaluate(&r) == Decision::Allow, want, "{op} {v}");
    }
}

#[test]
fn date_operators_compare_instants_of_either_form() {
    // IAM User Guide, "Date condition operators": aws:CurrentTime (ISO 8601) and
    // aws:EpochTime (epoch seconds) against W3C ISO 8601 dates or epoch seconds.
    let now = 1_785_024_000_000; // 2026-07-26T00:00:00Z
    let r = req().at(now + 1_500, "us-east-1"); // 00:00:01.500
    for (op, key, v, want) in [
        (
            "DateGreaterThan",
            "aws:CurrentTime",
            "2026-07-26T00:00:00Z",
            true,
        ),
        (
            "DateGreaterThan",
            "aws:CurrentTime",
            "2026-07-26T00:00:02Z",
            false,
        ),
        (
            "DateLessThan",
            "aws:CurrentTime",
            "2026-07-26T00:00:02Z",
            true,
        ),
        ("DateLessThan", "aws:CurrentTime", "2026-07-26", false),
        (
            "DateGreaterThanEquals",
            "aws:CurrentTime",
            "2026-07-26",
            true,
        ),
        (
            "DateLessThan",
            "aws:CurrentTime",
            "2026-07-26T02:00+02:00",
            false,
        ),
        (
            "DateLessThan",
            "aws:CurrentTime",
            "2026-07-26T02:01+02:00",
            true,
        ),
        (
            "DateLessThan",
            "aws:CurrentTime",
            "2026-07-25T20:00:02-04:00",
            true,
        ),
        ("DateLessThan", "aws:CurrentTime", "1785024002", true),
        ("DateGreaterThan", "aws:CurrentTime", "1785024002", false),
        ("DateEquals", "aws:EpochTime", "1785024001", true),
        ("DateEquals", "aws:EpochTime", "2026-07-26T00:00:01Z", true),
        (
            "DateEquals",
            "aws:EpochTime",
            "2026-07-26T00:00:01.000Z",
            true,
        ),
        ("DateNotEquals", "aws:EpochTime", "1785024001", false),
        ("DateNotEquals", "aws:EpochTime", "1785024000", true),
        ("DateLessThanEquals", "aws:EpochTime", "1785024001", true),
        (
            "DateGreaterThanEquals",
            "aws:EpochTime",
            "1785024002",
            false,
        ),
    ] {
        let p = with_condition("Allow", &format!(r#"{{"{op}":{{"{key}":"{v}"}}}}"#));
        assert_eq!(p.evaluate(&r) == Decision::Allow, want, "{op} {key} {v}");
    }
    // A key the request lacks: only the negated operator (and IfExists) holds.
    let absent = |op: &str| {
        with_condition(
            "Allow",
            &format!(r#"{{"{op}":{{"aws:TokenIssueTime":"2020-01-01"}}}}"#),
        )
        .evaluate(&r)
    };
    assert_eq!(absent("DateGreaterThan"), Decision::ImplicitDeny);
    assert_eq!(absent("DateGreaterThanIfExists"), Decision::Allow);
    assert_eq!(absent("DateNotEquals"), Decision::Allow);
    // Values that name no instant are refused when the policy is set.
    for bad in [
        "yesterday",
        "2026-13-01",
        "2026-07-26T*",
        "",
        "2026-07-26 00:00",
    ] {
        let doc = format!(
            r#"{{"Statement":{{"Effect":"Allow","Action":"*","Resource":"*","Condition":{{"DateLessThan":{{"aws:CurrentTime":"{bad}"}}}}}}}}"#
        );
        assert!(
            Policy::parse(&doc, PolicyKind::Identity).is_err(),
            "accepted {bad:?}"
        );
    }
}

#[test]
fn for_all_values_and_for_any_value() {
    // IAM User Guide, "Multivalued context keys": ForAllValues is true when every request
    // value matches (and when there are none); ForAnyValue when at least one does.
    let all = with_condition(
        "Allow",
        r#"{"ForAllValues:StringEquals":{"aws:TagKeys":["a","b"]}}"#,
    );
    let any = with_condition(
        "Allow",
        r#"{"ForAnyValue:StringEquals":{"aws:TagKeys":["a","b"]}}"#,
    );
    let ab = req().with("aws:TagKeys", vec!["a".into(), "b".into()]);
    let ac = req().with("aws:TagKeys", vec!["a".into(), "c".into()]);
    assert_eq!(all.evaluate(&ab), Decision::Allow);
    assert_eq!(all.evaluate(&ac), Decision::ImplicitDeny);
    assert_eq!(all.evaluate(&req()), Decision::Allow);
    assert_eq!(any.evaluate(&ac), Decision::Allow);
    assert_eq!(any.evaluate(&req()), Decision::ImplicitDeny);
}

// ---- the evaluation logic ----

#[test]
fn same_account_identity_or_resource_allow_suffices() {
    // IAM User Guide, "Example identity-based and resource-based policy evaluation": within
    // one account, an Allow in either the identity policy or the resource policy allows.
    let ids = [identity(
        r#"{"Statement":{"Effect":"Allow","Action":["sqs:ReceiveMessage","sqs:GetQueueAttributes"],"Resource":"*"}}"#,
    )];
    let res = resource(
        r#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:user/carlos"},"Action":"sqs:SendMessage"}}"#,
    );
    let carlos = user(A, "carlos");
    let send = Request::new("sqs:SendMessage", queue(A, "logs"), carlos.clone());
    let recv = Request::new("sqs:ReceiveMessage", queue(A, "logs"), carlos.clone());
    let delete = Request::new("sqs:DeleteQueue", queue(A, "logs"), carlos);
    assert_eq!(decide(&ids, Some(&res), A, &send), Decision::Allow);
    assert_eq!(decide(&ids, Some(&res), A, &recv), Decision::Allow);
    assert_eq!(decide(&ids, Some(&res), A, &delete), Decision::ImplicitDeny);
}

#[test]
fn explicit_deny_in_either_policy_wins() {
    let allow_all = [identity(
        r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}"#,
    )];
    let deny =
        resource(r#"{"Statement":{"Effect":"Deny","Principal":"*","Action":"sqs:DeleteQueue"}}"#);
    let r = Request::new("sqs:DeleteQueue", queue(A, "q"), user(A, "u"));
    assert_eq!(
        decide(&allow_all, Some(&deny), A, &r),
        Decision::ExplicitDeny
    );
    assert_eq!(
        authorize(Identity::Unrestricted, Some(&deny), A, &r),
        Decision::ExplicitDeny
    );
    let deny_id = [
        identity(r#"{"Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}"#),
        identity(r#"{"Statement":{"Effect":"Deny","Action":"sqs:Delete*","Resource":"*"}}"#),
    ];
    let allow_res = resource(r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"*"}}"#);
    assert_eq!(
        decide(&deny_id, Some(&allow_res), A, &r),
        Decision::ExplicitDeny
    );
}

#[test]
fn policies_but_no_matching_allow_is_an_implicit_deny() {
    let ids = [identity(
        r#"{"Statement":{"Effect":"Allow","Action":"sns:*","Resource":"*"}}"#,
    )];
    let r = Request::new("sqs:SendMessage", queue(A, "q"), user(A, "u"));
    assert_eq!(decide(&ids, None, A, &r), Decision::ImplicitDeny);
    assert_eq!(decide(&[], None, A, &r), Decision::ImplicitDeny);
}

#[test]
fn a_key_without_policies_has_its_own_account() {
    let r = Request::new("sqs:DeleteQueue", queue(A, "q"), user(A, "u"));
    assert_eq!(
        authorize(Identity::Unrestricted, None, A, &r),
        Decision::Allow
    );
    let cross = Request::new("sqs:DeleteQueue", queue(B, "q"), user(A, "u"));
    assert_eq!(
        authorize(Identity::Unrestricted, None, B, &cross),
        Decision::ImplicitDeny
    );
}

#[test]
fn cross_account_needs_both_identity_and_resource_allow() {
    // IAM User Guide, "Cross-account policy evaluation logic": the trusting account's
    // resource policy must name the principal, and the principal's identity policy must
    // allow the access.
    let bob = user(B, "bob");
    let r = Request::new("sqs:SendMessage", queue(A, "shared"), bob);
    let grants = resource(
        r#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:root"},"Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-1:111111111111:shared"}}"#,
    );
    let id_allows = [identity(
        r#"{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:*:111111111111:shared"}}"#,
    )];
    let id_silent = [identity(
        r#"{"Statement":{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:*:222222222222:*"}}"#,
    )];
    assert_eq!(decide(&id_allows, Some(&grants), A, &r), Decision::Allow);
    assert_eq!(
        decide(&id_silent, Some(&grants), A, &r),
        Decision::ImplicitDeny
    );
    assert_eq!(decide(&id_allows, None, A, &r), Decision::ImplicitDeny);
    assert_eq!(
        authorize(Identity::Unrestricted, Some(&grants), A, &r),
        Decision::Allow
    );
    // The grant names account B's root: another action is not granted.
    let recv = Request::new("sqs:ReceiveMessage", queue(A, "shared"), user(B, "bob"));
    assert_eq!(
        authorize(Identity::Unrestricted, Some(&grants), A, &recv),
        Decision::ImplicitDeny
    );
}

#[test]
fn sns_topic_to_queue_the_documented_source_arn_policy() {
    // SNS Developer Guide, "Fanout to Amazon SQS queues": the queue policy allows
    // sns.amazonaws.com to sqs:SendMessage when aws:SourceArn is the topic.
    let policy = resource(
        r#"{"Version":"2012-10-17","Statement":[{"Sid":"topic","Effect":"Allow",
        "Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage",
        "Resource":"arn:aws:sqs:us-east-1:111111111111:q",
        "Condition":{"ArnEquals":{"aws:SourceArn":"arn:aws:sns:us-east-1:222222222222:events"}}}]}"#,
    );
    let sns = Caller::Service("sns.amazonaws.com".into());
    let from = |topic: &str| {
        Request::new("sqs:SendMessage", queue(A, "q"), sns.clone())
            .with("aws:SourceArn", vec![topic.into()])
            .with("aws:SourceAccount", vec![B.into()])
    };
    let allowed = from("arn:aws:sns:us-east-1:222222222222:events");
    let other = from("arn:aws:sns:us-east-1:222222222222:other");
    assert_eq!(
        authorize(Identity::None, Some(&policy), A, &allowed),
        Decision::Allow
    );
    assert_eq!(
        authorize(Identity::None, Some(&policy), A, &other),
        Decision::ImplicitDeny
    );
    assert_eq!(
        authorize(Identity::None, None, A, &allowed),
        Decision::ImplicitDeny
    );
}

#[test]
fn source_account_condition() {
    let policy = resource(
        r#"{"Statement":{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Condition":{"StringEquals":{"aws:SourceAccount":"222222222222"}}}}"#,
    );
    let sns = Caller::Service("sns.amazonaws.com".into());
    let r = Request::new("sqs:SendMessage", queue(A, "q"), sns.clone())
        .with("aws:SourceAccount", vec![B.into()]);
    assert_eq!(policy.evaluate(&r), Decision::Allow);
    let r = Request::new("sqs:SendMessage", queue(A, "q"), sns)
        .with("aws:SourceAccount", vec!["333333333333".into()]);
    assert_eq!(policy.evaluate(&r), Decision::ImplicitDeny);
}

#[test]
fn add_permission_statements_evaluate() {
    // What SQS's AddPermission writes: "SQS:SendMessage" with the account's root.
    let policy = Policy::parse_lenient(r#"{"Version":"2008-10-17","Id":"arn:aws:sqs:us-east-1:111111111111:q/SQSDefaultPolicy","Statement":[{"Sid":"l","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::222222222222:root"},"Action":"SQS:SendMessage","Resource":"arn:aws:sqs:us-east-1:111111111111:q"}]}"#).unwrap();
    let r = Request::new("sqs:SendMessage", queue(A, "q"), user(B, "bob"));
    assert_eq!(
        authorize(Identity::Unrestricted, Some(&policy), A, &r),
        Decision::Allow
    );
}

// ---- hostile input ----

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            "Allow",
            "Deny",
            "*",
            "sqs:*",
            "2012-10-17",
            "Version",
            "Statement",
            "Effect",
            "Action",
            "NotAction",
            "Resource",
            "Principal",
            "AWS",
            "Service",
            "Condition",
            "StringLike",
            "IpAddress",
            "Null",
            "ForAllValues:StringEquals",
            "aws:SourceIp",
            "10.0.0.0/33",
            "::/0",
            "arn:aws:sqs:*:*:*",
            "NumericLessThan",
            "Bool",
        ])
        .prop_map(|s| Value::String(s.into())),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "Version",
                    "Statement",
                    "Effect",
                    "Action",
                    "NotAction",
                    "Resource",
                    "NotResource",
                    "Principal",
                    "NotPrincipal",
                    "Condition",
                    "AWS",
                    "Service",
                    "StringEquals",
                    "IpAddressIfExists",
                    "aws:SourceArn",
                    "Sid",
                    "Id",
                ])
                .prop_map(String::from),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = Policy::parse(&text, PolicyKind::Identity);
        let _ = Policy::parse_lenient(&text);
    }

    #[test]
    fn arbitrary_json_never_panics_and_what_parses_evaluates(doc in json_value(), ip in ".{0,20}") {
        let text = doc.to_string();
        let parsed = [
            Policy::parse(&text, PolicyKind::Identity),
            Policy::parse(&text, PolicyKind::Resource),
            Policy::parse_lenient(&text),
        ];
        for p in parsed.into_iter().flatten() {
            let r = Request::new("sqs:SendMessage", queue(A, "q"), user(B, "b"))
                .with("aws:SourceIp", vec![ip.clone()])
                .with("aws:SourceArn", vec!["arn:aws:sns:us-east-1:1:t".into()]);
            let _ = authorize(Identity::Policies(std::slice::from_ref(&p)), Some(&p), A, &r);
        }
    }

    #[test]
    fn glob_never_panics_and_star_matches_all(p in "[a*?]{0,30}", t in "[ab]{0,30}") {
        let _ = glob(&p, &t, false);
        prop_assert!(glob("*", &t, false));
    }
}

/// The principal keys AWS includes in every request, from the caller alone, and the
/// request's moment and region ([`Request::at`]).
#[test]
fn every_request_carries_the_global_keys() {
    let key = |r: &Request, k: &str| r.context.get(&k.to_ascii_lowercase()).cloned();
    let iam = |arn: &str| Caller::Iam {
        account: "111111111111".into(),
        arn: arn.into(),
    };
    let rows: &[(&str, &str, Option<&str>)] = &[
        ("arn:aws:iam::111111111111:root", "Account", None),
        (
            "arn:aws:iam::111111111111:user/team-a",
            "User",
            Some("team-a"),
        ),
        (
            "arn:aws:iam::111111111111:user/ops/team-a",
            "User",
            Some("team-a"),
        ),
        ("arn:aws:iam::111111111111:role/team-b", "AssumedRole", None),
    ];
    for (arn, kind, name) in rows {
        let r = Request::new("sqs:SendMessage", "arn:aws:sqs:us-east-1:1:q", iam(arn));
        assert_eq!(
            key(&r, "aws:PrincipalType"),
            Some(vec![kind.to_string()]),
            "{arn}"
        );
        assert_eq!(
            key(&r, "aws:username"),
            name.map(|n| vec![n.to_string()]),
            "{arn}"
        );
        assert_eq!(
            key(&r, "aws:PrincipalIsAWSService"),
            Some(vec!["false".into()])
        );
        assert_eq!(key(&r, "aws:ViaAWSService"), Some(vec!["false".into()]));
    }
    let r = Request::new(
        "sqs:SendMessage",
        "arn:aws:sqs:us-east-1:1:q",
        Caller::Service("sns.amazonaws.com".into()),
    )
    .at(1_700_000_000_123, "eu-west-1");
    assert_eq!(
        key(&r, "aws:PrincipalIsAWSService"),
        Some(vec!["true".into()])
    );
    assert_eq!(key(&r, "aws:PrincipalType"), None);
    assert_eq!(key(&r, "aws:EpochTime"), Some(vec!["1700000000".into()]));
    assert_eq!(
        key(&r, "aws:CurrentTime"),
        Some(vec!["2023-11-14T22:13:20.123Z".into()])
    );
    assert_eq!(
        key(&r, "aws:RequestedRegion"),
        Some(vec!["eu-west-1".into()])
    );
}
