//! Subscribe's `Endpoint`, protocol by protocol: the shape each protocol's endpoint must
//! have, and SNS's refusal of one that has not (empty and missing endpoints included).
//!
//! Sources: SNS API Reference, Subscribe, `Endpoint` (what each protocol's endpoint is:
//! an URL beginning `http://` or `https://`, an email address, a phone number, a queue's
//! ARN, a mobile app's endpoint ARN, a Lambda function's ARN, a Firehose delivery
//! stream's ARN). The refusals' words, where AWS's are known:
//!
//! | protocol | refusal | source of the words |
//! |---|---|---|
//! | `email`, `email-json` | `Invalid parameter: Email address` | AWS's answers quoted from real accounts (an address list `a@b;c@d`, `this is not an email`) |
//! | `lambda` | `Invalid parameter: Lambda endpoint ARN` | AWS's answer quoted from a real account |
//! | `application` | `Invalid parameter: Application endpoint arn invalid:{endpoint}` | AWS's answers quoted from a real account (for `invalid arn` and a topic's ARN); whether AWS adds words after the endpoint is not known |
//! | `sqs` | `Invalid parameter: SQS endpoint ARN` | recorded |
//! | `sms` | `Invalid SMS endpoint: {endpoint}` | recorded |
//! | `http`, `https` | `Invalid parameter: Endpoint must match the specified protocol` | not recorded: LocalStack's words |
//! | `firehose` | `Invalid parameter: Firehose endpoint ARN` | not known: Loft's, in the form of the SQS and Lambda answers |

use super::sns_errors::invalid;
use crate::error::{Error, ErrorCode, Result};
use crate::model::SubscriptionProtocol;
use crate::names;

/// Checks `endpoint` (trimmed) for `protocol`; `region` is the service's own region,
/// accepted in an ARN beside the names of AWS's regions.
///
/// Errors: `InvalidParameter`, in the words of the module's table.
pub(crate) fn check_endpoint(
    protocol: SubscriptionProtocol,
    endpoint: &str,
    region: &str,
) -> Result<()> {
    use SubscriptionProtocol as P;
    match protocol {
        P::Http | P::Https => {
            let scheme = if protocol == P::Http {
                "http://"
            } else {
                "https://"
            };
            let ok = endpoint
                .strip_prefix(scheme)
                .is_some_and(|rest| !rest.is_empty() && !rest.chars().any(is_space_or_control));
            if !ok {
                return Err(invalid("Endpoint must match the specified protocol"));
            }
        }
        P::Email | P::EmailJson => {
            if !is_email_address(endpoint) {
                return Err(invalid("Email address"));
            }
        }
        P::Sqs => {
            if !is_queue_arn(endpoint, region) {
                return Err(invalid("SQS endpoint ARN"));
            }
        }
        P::Sms => {
            if !names::is_phone_number(endpoint) {
                return Err(Error::new(
                    ErrorCode::InvalidParameter,
                    format!("Invalid SMS endpoint: {endpoint}"),
                ));
            }
        }
        P::Lambda => {
            if !is_function_arn(endpoint, region) {
                return Err(invalid("Lambda endpoint ARN"));
            }
        }
        P::Firehose => {
            let ok = arn_in(endpoint, "firehose", region)
                .and_then(|r| r.strip_prefix("deliverystream/"))
                .is_some_and(|name| {
                    (1..=64).contains(&name.len())
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
                });
            if !ok {
                return Err(invalid("Firehose endpoint ARN"));
            }
        }
        P::Application => {
            // `endpoint/PLATFORM/APPLICATION/ID`: three slashes, no part empty.
            let ok = arn_in(endpoint, "sns", region)
                .and_then(|r| r.strip_prefix("endpoint/"))
                .is_some_and(|rest| {
                    let parts: Vec<&str> = rest.split('/').collect();
                    parts.len() == 3
                        && parts
                            .iter()
                            .all(|p| !p.is_empty() && !p.chars().any(is_space_or_control))
                });
            if !ok {
                return Err(invalid(&format!(
                    "Application endpoint arn invalid:{endpoint}"
                )));
            }
        }
    }
    Ok(())
}

fn is_space_or_control(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// The resource part of `arn` when it is `arn:aws:{service}:{region}:{account}:{resource}`
/// with a region (AWS's form, or `own_region`) and a 12-digit account.
fn arn_in<'a>(arn: &'a str, service: &str, own_region: &str) -> Option<&'a str> {
    let resource = names::arn_resource(arn, service)?;
    let partition_ok = arn.split(':').nth(1) == Some("aws");
    let region_ok = names::arn_region(arn).is_some_and(|r| names::is_region(r) || r == own_region);
    let account_ok = names::arn_account(arn).is_some_and(names::is_account_id);
    (partition_ok && region_ok && account_ok).then_some(resource)
}

/// A queue's ARN: `arn:PARTITION:sqs:REGION:ACCOUNT:NAME`, a region (AWS's form or
/// `own_region`), a 12-digit account, a name without `/` or control characters. An ARN
/// of a queue that does not exist is one (recorded).
pub(crate) fn is_queue_arn(endpoint: &str, own_region: &str) -> bool {
    let Some(name) = names::arn_resource(endpoint, "sqs") else {
        return false;
    };
    names::arn_region(endpoint).is_some_and(|r| names::is_region(r) || r == own_region)
        && names::arn_account(endpoint).is_some_and(names::is_account_id)
        && !name.contains('/')
        && !name.chars().any(char::is_control)
}

/// A Lambda function's ARN: `arn:aws:lambda:REGION:ACCOUNT:function:NAME`, optionally
/// `:QUALIFIER` (a version or alias); the name 1 to 64 of `A-Z a-z 0-9 - _`, the
/// qualifier 1 to 128 of those and `$` (`$LATEST`) (Lambda API Reference, Invoke,
/// FunctionName and Qualifier patterns).
fn is_function_arn(endpoint: &str, own_region: &str) -> bool {
    let Some(rest) =
        arn_in(endpoint, "lambda", own_region).and_then(|r| r.strip_prefix("function:"))
    else {
        return false;
    };
    let (name, qualifier) = match rest.split_once(':') {
        Some((n, q)) => (n, Some(q)),
        None => (rest, None),
    };
    let word = |s: &str, max: usize, extra: &[u8]| {
        (1..=max).contains(&s.len())
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') || extra.contains(&b)
            })
    };
    word(name, 64, &[]) && qualifier.is_none_or(|q| word(q, 128, b"$"))
}

/// An email address as SNS takes one: one `@`; a local part of 1 to 64 of RFC 5322's
/// `atext` characters and dots (no dot first, last or twice in a row); a domain of 1 to
/// 253 characters, dot-separated labels of 1 to 63 letters, digits and hyphens (no hyphen
/// first or last); at most 254 in all. No spaces, control characters, lists (`a@b;c@d`)
/// or display names (`Name <a@b>`). AWS's exact grammar is not documented: this is the
/// RFC's common form (RFC 5321 lengths), so every address of that form is taken.
fn is_email_address(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let atext = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-/=?^_`{|}~".contains(&b);
    let local_ok = (1..=64).contains(&local.len())
        && local
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(atext));
    let domain_ok = (1..=253).contains(&domain.len())
        && domain.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    s.len() <= 254 && local_ok && domain_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use SubscriptionProtocol as P;

    const EMAIL: &str = "Invalid parameter: Email address";
    const LAMBDA: &str = "Invalid parameter: Lambda endpoint ARN";
    const FIREHOSE: &str = "Invalid parameter: Firehose endpoint ARN";
    const HTTP: &str = "Invalid parameter: Endpoint must match the specified protocol";
    const SQS: &str = "Invalid parameter: SQS endpoint ARN";

    fn answer(protocol: SubscriptionProtocol, endpoint: &str) -> std::result::Result<(), String> {
        check_endpoint(protocol, endpoint, "local-region").map_err(|e| {
            assert_eq!(
                e.code,
                ErrorCode::InvalidParameter,
                "{protocol} {endpoint:?}"
            );
            e.message
        })
    }

    /// One row per variant: the protocol, the endpoint, `None` when taken, else the
    /// refusal's words.
    #[test]
    fn each_protocol_takes_its_own_endpoint_shape() {
        let app_refusal =
            |e: &str| format!("Invalid parameter: Application endpoint arn invalid:{e}");
        let rows: &[(SubscriptionProtocol, &str, Option<&str>)] = &[
            // email and email-json: one address.
            (P::Email, "user@example.com", None),
            (P::Email, "first.last+tag@mail.example.co.uk", None),
            (P::Email, "o'brien_x-y@ex-ample.com", None),
            (P::Email, "a@b", None),
            (P::EmailJson, "user@example.com", None),
            (P::Email, "not-an-email", Some(EMAIL)),
            (P::Email, "this is not an email", Some(EMAIL)),
            (P::Email, "", Some(EMAIL)),
            (P::Email, "@", Some(EMAIL)),
            (P::Email, "a@", Some(EMAIL)),
            (P::Email, "@b.com", Some(EMAIL)),
            (P::Email, "a@b@c.com", Some(EMAIL)),
            (P::Email, "foo@bar.com;foo@baz.io", Some(EMAIL)),
            (P::Email, "a b@c.com", Some(EMAIL)),
            (P::Email, "a\u{1}@b.com", Some(EMAIL)),
            (P::Email, "a@b\u{0}.com", Some(EMAIL)),
            (P::Email, ".a@b.com", Some(EMAIL)),
            (P::Email, "a..b@b.com", Some(EMAIL)),
            (P::Email, "a@-b.com", Some(EMAIL)),
            (P::Email, "a@b..com", Some(EMAIL)),
            (P::Email, "Name <a@b.com>", Some(EMAIL)),
            (P::EmailJson, "not-an-email", Some(EMAIL)),
            (P::EmailJson, "", Some(EMAIL)),
            // http and https: the protocol's scheme and something after it.
            (P::Http, "http://example.com/hook", None),
            (P::Https, "https://example.com:8443/hook?x=1", None),
            (P::Http, "http://", Some(HTTP)),
            (P::Https, "https://", Some(HTTP)),
            (P::Http, "https://example.com", Some(HTTP)),
            (P::Https, "http://example.com", Some(HTTP)),
            (P::Http, "ftp://example.com", Some(HTTP)),
            (P::Http, "example.com", Some(HTTP)),
            (P::Http, "", Some(HTTP)),
            (P::Https, "https://exa mple.com", Some(HTTP)),
            (P::Http, "http://exa\u{1}mple.com", Some(HTTP)),
            // lambda: a function's ARN, with or without a qualifier.
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:function:f",
                None,
            ),
            (
                P::Lambda,
                "arn:aws:lambda:local-region:000000000000:function:f-1_2",
                None,
            ),
            (
                P::Lambda,
                "arn:aws:lambda:eu-west-1:111111111111:function:f:prod",
                None,
            ),
            (
                P::Lambda,
                "arn:aws:lambda:eu-west-1:111111111111:function:f:$LATEST",
                None,
            ),
            (
                P::Lambda,
                "arn:aws:lambda:eu-west-1:111111111111:function:f:7",
                None,
            ),
            (P::Lambda, "", Some(LAMBDA)),
            (P::Lambda, "f", Some(LAMBDA)),
            (P::Lambda, "arn:aws:lambda", Some(LAMBDA)),
            (P::Lambda, "arn:aws:lambda:", Some(LAMBDA)),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:f",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:function:",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:function:f:",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:function:f\u{1}",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:0000:function:f",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda::000000000000:function:f",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:sqs:us-east-1:000000000000:function:f",
                Some(LAMBDA),
            ),
            (
                P::Lambda,
                "arn:aws:lambda:us-east-1:000000000000:function:a.b",
                Some(LAMBDA),
            ),
            // firehose: a delivery stream's ARN.
            (
                P::Firehose,
                "arn:aws:firehose:us-east-1:000000000000:deliverystream/s",
                None,
            ),
            (
                P::Firehose,
                "arn:aws:firehose:us-east-1:000000000000:deliverystream/s.1-_x",
                None,
            ),
            (P::Firehose, "", Some(FIREHOSE)),
            (P::Firehose, "arn:aws:firehose", Some(FIREHOSE)),
            (
                P::Firehose,
                "arn:aws:firehose:us-east-1:000000000000:s",
                Some(FIREHOSE),
            ),
            (
                P::Firehose,
                "arn:aws:firehose:us-east-1:000000000000:deliverystream/",
                Some(FIREHOSE),
            ),
            (
                P::Firehose,
                "arn:aws:firehose:us-east-1:000000000000:deliverystream/a\u{1}",
                Some(FIREHOSE),
            ),
            // application: a platform endpoint's ARN.
            (
                P::Application,
                "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1-2",
                None,
            ),
            (
                P::Application,
                "arn:aws:sns:us-east-1:000000000000:endpoint/APNS_SANDBOX/a.b/x",
                None,
            ),
            // sqs (recorded words): a queue's ARN.
            (P::Sqs, "arn:aws:sqs:us-east-1:000000000000:q", None),
            (P::Sqs, "q", Some(SQS)),
            (P::Sqs, "", Some(SQS)),
        ];
        for (protocol, endpoint, refusal) in rows {
            let got = answer(*protocol, endpoint);
            match refusal {
                None => assert_eq!(got, Ok(()), "{protocol} {endpoint:?}"),
                Some(words) => assert_eq!(got, Err((*words).to_owned()), "{protocol} {endpoint:?}"),
            }
        }
        // Application refusals name the endpoint.
        for endpoint in [
            "",
            "invalid arn",
            "arn:",
            "arn:aws:sns:us-east-1:000000000000:topic",
            "arn:aws:sns:us-east-1:000000000000:app/GCM/app",
            "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app",
            "arn:aws:sns:us-east-1:000000000000:endpoint/GCM//1",
            "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1/2",
            "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1\u{1}",
            "arn:aws:sqs:us-east-1:000000000000:endpoint/GCM/app/1",
        ] {
            assert_eq!(
                answer(P::Application, endpoint),
                Err(app_refusal(endpoint)),
                "{endpoint:?}"
            );
        }
        // SMS keeps its recorded words.
        assert_eq!(
            answer(P::Sms, "abc"),
            Err("Invalid SMS endpoint: abc".to_owned())
        );
    }
}
