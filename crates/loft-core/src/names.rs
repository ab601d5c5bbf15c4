//! Names and ARNs: validation of queue and topic names and the ARN forms AWS uses.
//!
//! Sources: SQS Developer Guide "Quotas related to queues" (names: 1-80 characters of
//! alphanumerics, `-` and `_`; FIFO names end in `.fifo`); SNS API Reference CreateTopic
//! (1-256 characters of alphanumerics, `-` and `_`, FIFO names end in `.fifo`).

use crate::error::{Error, ErrorCode, Result};

/// Which naming rules a create call follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// AWS's rules (the SQS and SNS protocols).
    Aws,
    /// The seeds' API: any name that is a path segment (1-256 bytes, no `/`, no control
    /// characters, not `.` or `..`, which URL normalization removes), so
    /// `s3:ObjectCreated` works.
    Seed,
}

/// Whether `name` is a queue or topic name as SQS and SNS take it: 1 to `max` bytes, of
/// ASCII letters, digits, `-` and `_`, with an optional `.fifo` suffix after at least one
/// of them (CreateQueue's QueueName: 80; CreateTopic's Name: 256).
fn is_aws_name(name: &str, max: usize) -> bool {
    let stem = name.strip_suffix(".fifo").unwrap_or(name);
    !name.is_empty()
        && name.len() <= max
        && !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks a queue name. Errors: `InvalidParameterValue` naming the rule broken.
pub fn check_queue_name(name: &str, naming: Naming) -> Result<()> {
    match naming {
        // The seeds' API makes standard queues only: a `.fifo` name would make a standard
        // queue that SQS clients could never turn into the FIFO queue its name promises.
        Naming::Seed if name.ends_with(".fifo") => Err(Error::invalid(
            "queue names ending in .fifo are FIFO queues: create them through SQS (FifoQueue)",
        )),
        Naming::Seed => check_seed_name(name),
        Naming::Aws if is_aws_name(name, 80) => Ok(()),
        Naming::Aws => Err(Error::invalid(
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        )),
    }
}

/// Checks a topic name. Errors: `InvalidParameter` naming the rule broken.
pub fn check_topic_name(name: &str, naming: Naming) -> Result<()> {
    match naming {
        // As for queues: the seeds' API has no MessageGroupId and its endpoints are HTTP,
        // which a FIFO topic does not deliver to.
        Naming::Seed if name.ends_with(".fifo") => Err(Error::invalid(
            "topic names ending in .fifo are FIFO topics: create and use them through SNS (FifoTopic)",
        )),
        Naming::Seed => check_seed_name(name),
        Naming::Aws if is_aws_name(name, 256) => Ok(()),
        Naming::Aws => Err(Error::new(
            ErrorCode::InvalidParameter,
            "Invalid parameter: Topic Name",
        )),
    }
}

fn check_seed_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 256
        || name.contains('/')
        || name.chars().any(char::is_control)
        || name == "."
        || name == ".."
    {
        return Err(Error::invalid(
            "name must be 1 to 256 bytes with no '/' or control characters, and not '.' or '..'",
        ));
    }
    Ok(())
}

/// The separator of an account- or region-qualified store key (`111111111111/orders`,
/// `000000000000/eu-west-1/orders`): no AWS or seed queue or topic name holds a `/`.
pub const ACCOUNT_SEPARATOR: char = '/';

/// Where a queue or topic lives: its account and region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope<'a> {
    /// The 12-digit account id.
    pub account: &'a str,
    /// The region (`us-east-1`).
    pub region: &'a str,
}

/// The store key of resource `name` in `scope`, given the configured default account and
/// region (`default`). The one place keys are made ([`split_scoped_key`] reads them):
///
/// - default account and default region: the bare name (so a database written before
///   accounts and regions existed is already theirs, and nothing migrates);
/// - another account, default region: `ACCOUNT/NAME` (the form accounts introduced);
/// - another region (any account): `ACCOUNT/REGION/NAME`.
pub fn scoped_key(default: Scope<'_>, scope: Scope<'_>, name: &str) -> String {
    let sep = ACCOUNT_SEPARATOR;
    if scope.region != default.region {
        format!("{}{sep}{}{sep}{name}", scope.account, scope.region)
    } else if scope.account != default.account {
        format!("{}{sep}{name}", scope.account)
    } else {
        name.to_owned()
    }
}

/// Whether store key `key` names a resource of the default account and region: a bare
/// name, as [`scoped_key`] makes it (no AWS or seed name holds the separator).
pub fn is_default_scope_key(key: &str) -> bool {
    !key.contains(ACCOUNT_SEPARATOR)
}

/// The scope and name of a store key made by [`scoped_key`]: `ACCOUNT/REGION/NAME`,
/// `ACCOUNT/NAME` (the default region) or a bare name (`default`'s).
pub fn split_scoped_key<'a>(default: Scope<'a>, key: &'a str) -> (Scope<'a>, &'a str) {
    if let Some((account, rest)) = key.split_once(ACCOUNT_SEPARATOR) {
        if is_account_id(account) {
            if let Some((region, name)) = rest.split_once(ACCOUNT_SEPARATOR) {
                if is_region(region) {
                    return (Scope { account, region }, name);
                }
            }
            let scope = Scope {
                account,
                region: default.region,
            };
            return (scope, rest);
        }
    }
    (default, key)
}

/// Whether `s` has the shape of an AWS region name: lower-case letter groups joined by
/// `-`, ending in a number (`us-east-1`, `eu-central-2`, `us-gov-west-1`,
/// `ap-southeast-5`), at most 32 bytes. Only such names become a resource's region, so a
/// client signing for a made-up region such as `local` stays in the default region.
pub fn is_region(s: &str) -> bool {
    // Letters groups, then the number after the last hyphen (no allocation: it is asked of
    // the host and path of every queue URL).
    let Some((letters, number)) = s.rsplit_once('-') else {
        return false;
    };
    s.len() <= 32
        && letters.contains('-')
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && letters
            .split('-')
            .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_lowercase()))
}

/// The region part of an ARN (`arn:aws:sqs:us-east-1:111111111111:q` → `us-east-1`).
pub fn arn_region(arn: &str) -> Option<&str> {
    arn.split(':').nth(3)
}

/// Whether `s` is a 12-digit AWS account id.
pub fn is_account_id(s: &str) -> bool {
    s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit())
}

/// The account part of an ARN (`arn:aws:sqs:us-east-1:111111111111:q` → `111111111111`).
pub fn arn_account(arn: &str) -> Option<&str> {
    arn.split(':').nth(4)
}

/// `arn:aws:sqs:{region}:{account}:{name}`.
pub fn queue_arn(region: &str, account: &str, name: &str) -> String {
    format!("arn:aws:sqs:{region}:{account}:{name}")
}

/// `arn:aws:sns:{region}:{account}:{name}`.
pub fn topic_arn(region: &str, account: &str, name: &str) -> String {
    format!("arn:aws:sns:{region}:{account}:{name}")
}

/// The resource name (last `:` field after the account) of an `arn:aws:{service}:` ARN.
/// Returns `None` for anything else. Topic names of the seeds may contain `:`, so
/// everything after the fifth colon is the name.
pub fn arn_resource<'a>(arn: &'a str, service: &str) -> Option<&'a str> {
    let mut parts = arn.splitn(6, ':');
    let (p, partition, svc) = (parts.next()?, parts.next()?, parts.next()?);
    if p != "arn" || partition.is_empty() || svc != service {
        return None;
    }
    let _region = parts.next()?;
    let _account = parts.next()?;
    parts.next().filter(|name| !name.is_empty())
}

/// How many `:`-separated elements `arn` has (an empty string has one), as SNS counts
/// them in "An ARN must have at least 6 elements, not N".
pub fn arn_elements(arn: &str) -> usize {
    arn.split(':').count()
}

/// Whether `number` is a phone number SNS takes for SMS (PhoneNumber, `sms` endpoints): an
/// optional `+`, then digits, with single `-`, `.` or `/` between digit groups
/// (`+12/34-567.890`), 1 to 15 digits. Source: the SNS Developer Guide's E.164 format,
/// and AWS's recorded answers (`+15--551234567`, `+15551234567.`, `/+1555...` refused).
pub fn is_phone_number(number: &str) -> bool {
    let digits = number.strip_prefix('+').unwrap_or(number);
    let count = digits.bytes().filter(u8::is_ascii_digit).count();
    (1..=15).contains(&count)
        && digits
            .split(['-', '.', '/'])
            .all(|g| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_account_and_region_unless_default() {
        let default = Scope {
            account: "000000000000",
            region: "us-east-1",
        };
        let other_account = Scope {
            account: "111111111111",
            region: "us-east-1",
        };
        let other_region = Scope {
            account: "000000000000",
            region: "eu-central-1",
        };
        let both = Scope {
            account: "111111111111",
            region: "eu-west-1",
        };
        for (scope, key) in [
            (default, "q"),
            (other_account, "111111111111/q"),
            (other_region, "000000000000/eu-central-1/q"),
            (both, "111111111111/eu-west-1/q"),
        ] {
            assert_eq!(scoped_key(default, scope, "q"), key);
            assert_eq!(split_scoped_key(default, key), (scope, "q"));
        }
        // Seed names may hold `:` but never `/`; a name that merely looks like an account
        // id is still a name.
        assert_eq!(
            split_scoped_key(default, "s3:Created"),
            (default, "s3:Created")
        );
        assert_eq!(
            split_scoped_key(default, "111111111111"),
            (default, "111111111111")
        );
    }

    #[test]
    fn region_shapes() {
        for r in [
            "us-east-1",
            "eu-central-2",
            "us-gov-west-1",
            "ap-southeast-5",
        ] {
            assert!(is_region(r), "{r}");
        }
        for r in [
            "",
            "local",
            "us-east",
            "US-EAST-1",
            "us--1",
            "us-east-1a",
            "elasticmq",
        ] {
            assert!(!is_region(r), "{r}");
        }
    }

    #[test]
    fn aws_queue_names() {
        assert!(check_queue_name("orders", Naming::Aws).is_ok());
        assert!(check_queue_name("orders.fifo", Naming::Aws).is_ok());
        assert!(check_queue_name(&"a".repeat(80), Naming::Aws).is_ok());
        assert!(check_queue_name(&"a".repeat(81), Naming::Aws).is_err());
        assert!(check_queue_name("a.b", Naming::Aws).is_err());
        assert!(check_queue_name("", Naming::Aws).is_err());
        assert!(check_queue_name(".fifo", Naming::Aws).is_err());
    }

    #[test]
    fn seed_names_allow_colons() {
        assert!(check_topic_name("s3:ObjectCreated", Naming::Seed).is_ok());
        assert!(check_topic_name("s3:ObjectCreated", Naming::Aws).is_err());
        assert!(check_topic_name("a/b", Naming::Seed).is_err());
        assert!(check_topic_name("t.fifo", Naming::Seed).is_err());
        assert!(check_topic_name("t.fifo", Naming::Aws).is_ok());
    }

    /// Regression (the malformed-input suite): `POST /queues/%2e%2e` made a queue named
    /// `..`, which no client that normalizes its URLs (curl, browsers, `url`) can reach.
    #[test]
    fn seed_names_are_not_dot_segments() {
        for name in [".", ".."] {
            assert!(check_queue_name(name, Naming::Seed).is_err(), "{name}");
            assert!(check_topic_name(name, Naming::Seed).is_err(), "{name}");
        }
        for name in ["...", ".a", "a.", "<odd name>", "a b"] {
            assert!(check_queue_name(name, Naming::Seed).is_ok(), "{name}");
        }
        assert!(check_queue_name("a\u{0}b", Naming::Seed).is_err());
    }

    #[test]
    fn phone_numbers() {
        for ok in [
            "+15551234567",
            "15551234567",
            "+12/34-567.890",
            "+430000000000",
        ] {
            assert!(is_phone_number(ok), "{ok}");
        }
        for bad in [
            "+1a234",
            "NAA+15551234567",
            "+15--551234567",
            "+15551234567.",
            "/+15551234567",
            "",
            "+",
            "invalid",
            "+1234567890123456",
        ] {
            assert!(!is_phone_number(bad), "{bad}");
        }
    }

    #[test]
    fn arn_element_counts() {
        assert_eq!(arn_elements(""), 1);
        assert_eq!(arn_elements("randomstring:1"), 2);
        assert_eq!(arn_elements("arn:aws:sns:us-east-1:random"), 5);
    }

    #[test]
    fn arn_parts() {
        assert_eq!(
            arn_resource("arn:aws:sqs:us-east-1:000000000000:q1", "sqs"),
            Some("q1")
        );
        assert_eq!(
            arn_resource("arn:aws:sns:us-east-1:000000000000:s3:ObjectCreated", "sns"),
            Some("s3:ObjectCreated")
        );
        assert_eq!(arn_resource("arn:aws:sns:us-east-1:0:t", "sqs"), None);
        assert_eq!(arn_resource("nope", "sqs"), None);
    }
}
