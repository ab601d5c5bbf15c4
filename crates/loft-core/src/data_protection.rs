//! SNS message data protection: the policy grammar, the managed data identifiers Loft can
//! match honestly, and the Audit, Deny and Deidentify (mask or redact) operations, as pure
//! functions. The service calls them from Publish (Inbound) and from each subscription's
//! delivery (Outbound); nothing here touches storage.
//!
//! Sources: SNS Developer Guide, "Amazon SNS message data protection": "Understanding data
//! protection policies" (Name, Description, Version `2021-06-01`, Statement with Sid,
//! DataDirection, Principal, DataIdentifier, Operation; one audit statement at most), "Data
//! protection policy operations" (Audit with SampleRate and Findings/NoFindingsDestination,
//! Deidentify with MaskConfig.MaskWithCharacter or RedactConfig, Deny, `AuthorizationError`
//! for a denied publish, the audit log's shape), "Deleting data protection policies" (an
//! empty string removes the policy), "Using managed data identifiers" and its "Sensitive
//! data types" pages (identifier names, ARNs, keyword requirements, the credit card numbers
//! reserved for testing); the keyword proximity of 30 characters, inclusive, is the one
//! AWS's managed data identifiers document (Macie and CloudWatch Logs "Keyword
//! requirements"). The botocore model `sns/2010-03-31` (PutDataProtectionPolicy: at most
//! 30,720 characters).
//!
//! What Loft matches ([`DataIdentifier::ALL`]): e-mail addresses, credit card numbers
//! (13 to 19 digits, a card network's prefix and the Luhn check), IPv4 and IPv6 addresses,
//! AWS secret access keys, OpenSSH, PKCS, PGP and PuTTY private keys, US Social Security
//! numbers, Canadian Social Insurance numbers (Luhn) and UK National Insurance numbers. The
//! other managed identifiers AWS lists (names, addresses, phone numbers, passports, driving
//! licences, ...) need AWS's machine learning or rules Loft does not have, so a policy
//! naming them is refused rather than accepted and silently not enforced.

use std::collections::BTreeMap;

use regex_lite::Regex;
use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorCode, Result};

/// The one policy language version (`Version`).
pub const POLICY_VERSION: &str = "2021-06-01";

/// Longest policy document, characters (botocore: "Maximum length of 30,720").
pub const MAX_POLICY_LENGTH: usize = 30_720;

/// How near a keyword must be to data whose identifier requires one: within this many
/// characters before its start or after its end, inclusive.
pub const KEYWORD_DISTANCE: usize = 30;

/// ARN prefix of AWS's managed data identifiers (`arn:aws:dataprotection::aws:data-identifier/NAME`).
pub const IDENTIFIER_ARN_PREFIX: &str = "arn:aws:dataprotection::aws:data-identifier/";

/// Loft's extension to an audit destination: `{"Sqs": {"QueueArn": "arn:aws:sqs:..."}}`
/// sends each finding (or no-finding) record to that queue as a message.
pub const SQS_DESTINATION: &str = "Sqs";

/// The managed data identifiers AWS documents that Loft does not match (it refuses
/// policies naming them, with a message saying so). Region-bound ones are listed by their
/// base name; any `-CC` suffix is accepted with them.
const AWS_ONLY_IDENTIFIERS: &[&str] = &[
    "Address",
    "BankAccountNumber",
    "CepCode",
    "Cnpj",
    "CpfCode",
    "CreditCardExpiration",
    "CreditCardMagneticStripe",
    "CreditCardSecurityCode",
    "DateOfBirth",
    "DriversLicense",
    "DrugEnforcementAgencyNumber",
    "ElectoralRollNumber",
    "HealthInsuranceCardNumber",
    "HealthInsuranceClaimNumber",
    "HealthInsuranceNumber",
    "HealthcareProcedureCode",
    "IndividualTaxIdentificationNumber",
    "InseeCode",
    "LatLong",
    "MedicareBeneficiaryNumber",
    "Name",
    "NationalDrugCode",
    "NationalIdentificationNumber",
    "NationalInsuranceNumber",
    "NationalProviderId",
    "NhsNumber",
    "NieNumber",
    "NifNumber",
    "PassportNumber",
    "PermanentResidenceNumber",
    "PersonalHealthNumber",
    "PhoneNumber",
    "PostalCode",
    "RgNumber",
    "SocialInsuranceNumber",
    "Ssn",
    "TaxId",
    "VehicleIdentificationNumber",
    "ZipCode",
];

/// A managed data identifier Loft detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataIdentifier {
    /// `AwsSecretKey`: 40 characters of base64's alphabet, mixed case with a digit, `/` or
    /// `+`, near a keyword (aws_secret_access_key, credentials, secret access key, secret
    /// key, set-awscredential).
    AwsSecretKey,
    /// `CreditCardNumber`: 13 to 19 digits (spaces or hyphens between them allowed) with
    /// a card network's prefix (American Express, Dankort, Diners Club, Discover, Electron,
    /// JCB, Mastercard, UnionPay, Visa) passing the Luhn check, near a keyword (card,
    /// credit, visa, ...). The numbers AWS lists as reserved for testing are not reported.
    CreditCardNumber,
    /// `EmailAddress`: `local@domain.tld`. No keyword.
    EmailAddress,
    /// `IpAddress`: an IPv4 dotted quad or an IPv6 address, as the standard library
    /// parses them. No keyword.
    IpAddress,
    /// `NationalInsuranceNumber-GB`: two prefix letters (HMRC's allowed ones), six digits,
    /// a suffix letter A to D, near a keyword (nino, national insurance number, ...).
    NationalInsuranceNumberGb,
    /// `OpenSshPrivateKey`: a `-----BEGIN OPENSSH PRIVATE KEY-----` block.
    OpenSshPrivateKey,
    /// `PgpPrivateKey`: a `-----BEGIN PGP PRIVATE KEY BLOCK-----` block.
    PgpPrivateKey,
    /// `PkcsPrivateKey`: a `-----BEGIN [RSA |EC |DSA |ENCRYPTED ]PRIVATE KEY-----` block.
    PkcsPrivateKey,
    /// `PuttyPrivateKey`: a `PuTTY-User-Key-File-2:` or `-3:` file up to its Private-MAC.
    PuttyPrivateKey,
    /// `SocialInsuranceNumber-CA`: nine digits passing the Luhn check, not starting with 0
    /// or 8, near a keyword (sin, social insurance number, ...).
    SocialInsuranceNumberCa,
    /// `Ssn-US`: `AAA-GG-SSSS` (hyphens, spaces or none) with a valid area (not 000, 666
    /// or 900-999), group (not 00) and serial (not 0000), near a keyword (ssn, ss#,
    /// social security).
    SsnUs,
}

/// Credit card numbers AWS reserves for public testing and does not report (SNS Developer
/// Guide, "Sensitive data types: Financial", note 1).
const TEST_CARD_NUMBERS: &[&str] = &[
    "122000000000003",
    "2222405343248877",
    "2222990905257051",
    "2223007648726984",
    "2223577120017656",
    "30569309025904",
    "34343434343434",
    "3528000700000000",
    "3530111333300000",
    "3566002020360505",
    "36148900647913",
    "36700102000000",
    "371449635398431",
    "378282246310005",
    "378734493671000",
    "38520000023237",
    "4012888888881881",
    "4111111111111111",
    "4222222222222",
    "4444333322221111",
    "4462030000000000",
    "4484070000000000",
    "4911830000000",
    "4917300800000000",
    "4917610000000000",
    "4917610000000000003",
    "5019717010103742",
    "5105105105105100",
    "5111010030175156",
    "5185540810000019",
    "5200828282828210",
    "5204230080000017",
    "5204740009900014",
    "5420923878724339",
    "5454545454545454",
    "5455330760000018",
    "5506900490000436",
    "5506900490000444",
    "5506900510000234",
    "5506920809243667",
    "5506922400634930",
    "5506927427317625",
    "5553042241984105",
    "5555553753048194",
    "5555555555554444",
    "5610591081018250",
    "6011000990139424",
    "6011000400000000",
    "6011111111111117",
    "630490017740292441",
    "630495060000000000",
    "6331101999990016",
    "6759649826438453",
    "6799990100000000019",
    "76009244561",
];

impl DataIdentifier {
    /// Every identifier Loft detects, by name.
    pub const ALL: &'static [DataIdentifier] = &[
        DataIdentifier::AwsSecretKey,
        DataIdentifier::CreditCardNumber,
        DataIdentifier::EmailAddress,
        DataIdentifier::IpAddress,
        DataIdentifier::NationalInsuranceNumberGb,
        DataIdentifier::OpenSshPrivateKey,
        DataIdentifier::PgpPrivateKey,
        DataIdentifier::PkcsPrivateKey,
        DataIdentifier::PuttyPrivateKey,
        DataIdentifier::SocialInsuranceNumberCa,
        DataIdentifier::SsnUs,
    ];

    /// AWS's name: `EmailAddress`, `Ssn-US`, ...
    pub fn name(self) -> &'static str {
        use DataIdentifier::*;
        match self {
            AwsSecretKey => "AwsSecretKey",
            CreditCardNumber => "CreditCardNumber",
            EmailAddress => "EmailAddress",
            IpAddress => "IpAddress",
            NationalInsuranceNumberGb => "NationalInsuranceNumber-GB",
            OpenSshPrivateKey => "OpenSshPrivateKey",
            PgpPrivateKey => "PgpPrivateKey",
            PkcsPrivateKey => "PkcsPrivateKey",
            PuttyPrivateKey => "PuttyPrivateKey",
            SocialInsuranceNumberCa => "SocialInsuranceNumber-CA",
            SsnUs => "Ssn-US",
        }
    }

    /// The identifier named `name` (AWS's spelling, case-sensitive).
    pub fn from_name(name: &str) -> Option<DataIdentifier> {
        DataIdentifier::ALL
            .iter()
            .copied()
            .find(|d| d.name() == name)
    }

    /// The keywords one of which must be near the data; empty when none is needed.
    fn keywords(self) -> &'static [&'static str] {
        use DataIdentifier::*;
        match self {
            AwsSecretKey => &[
                "aws_secret_access_key",
                "credentials",
                "secret access key",
                "secret key",
                "set-awscredential",
            ],
            CreditCardNumber => &[
                "account number",
                "american express",
                "amex",
                "bank card",
                "card",
                "card num",
                "card number",
                "cc #",
                "ccn",
                "check card",
                "credit",
                "credit card#",
                "dankort",
                "debit",
                "debit card",
                "diners club",
                "discover",
                "electron",
                "elo verification code",
                "japanese card bureau",
                "jcb",
                "mastercard",
                "mc",
                "pan",
                "payment account number",
                "payment card number",
                "pcn",
                "union pay",
                "visa",
            ],
            NationalInsuranceNumberGb => &[
                "insurance no.",
                "insurance number",
                "insurance#",
                "national insurance number",
                "nationalinsurance#",
                "nationalinsurancenumber",
                "nin",
                "nino",
            ],
            SocialInsuranceNumberCa => &[
                "canadian id",
                "numéro d'assurance sociale",
                "social insurance number",
                "sin",
            ],
            SsnUs => &["social security", "ss#", "ssn"],
            EmailAddress | IpAddress | OpenSshPrivateKey | PgpPrivateKey | PkcsPrivateKey
            | PuttyPrivateKey => &[],
        }
    }
}

/// Whether a statement applies to Publish requests or to deliveries (`DataDirection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataDirection {
    /// `Inbound`: Publish and PublishBatch requests.
    Inbound,
    /// `Outbound`: each subscription's delivery.
    Outbound,
}

impl DataDirection {
    /// `Inbound` or `Outbound`.
    pub fn as_str(self) -> &'static str {
        match self {
            DataDirection::Inbound => "Inbound",
            DataDirection::Outbound => "Outbound",
        }
    }
}

/// How Deidentify rewrites what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deidentify {
    /// `MaskConfig`: every character of the finding becomes this one (`#` makes
    /// `123-45-6789` `###########`).
    Mask(char),
    /// `RedactConfig`: the finding is removed.
    Redact,
}

/// Where an audit record goes, besides Loft's log and `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditDestination {
    /// `CloudWatchLogs.LogGroup`: Loft has no CloudWatch; the record is written to Loft's
    /// own log (as every audit record is), with this group named in the line.
    pub log_group: Option<String>,
    /// Loft's extension `Sqs.QueueArn`: the record is sent to this queue as a message.
    pub queue_arn: Option<String>,
}

/// The `Audit` operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// `SampleRate`: the percentage of messages audited, 0 to 99; `None` (absent) audits
    /// every message.
    pub sample_rate: Option<u32>,
    /// `FindingsDestination`: for messages with findings.
    pub findings: Option<AuditDestination>,
    /// `NoFindingsDestination`: for messages without.
    pub no_findings: Option<AuditDestination>,
}

/// A statement's `Operation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Records findings without changing the message.
    Audit(Audit),
    /// Refuses the publish (Inbound) or the delivery (Outbound) of a message with findings.
    Deny,
    /// Masks or redacts the findings.
    Deidentify(Deidentify),
}

/// One `Statement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// `Sid`, optional.
    pub sid: Option<String>,
    /// `DataDirection`.
    pub direction: DataDirection,
    /// `Principal`: `*`, account ids and account root ARNs.
    pub principals: Vec<String>,
    /// `DataIdentifier`, resolved.
    pub identifiers: Vec<DataIdentifier>,
    /// `Operation`.
    pub operation: Operation,
}

impl Statement {
    /// Whether the statement covers `principal` (an IAM ARN such as
    /// `arn:aws:iam::000000000000:root`): a `*`, the principal itself, or its account
    /// (by id or root ARN) in `Principal`.
    pub fn covers(&self, principal: &str) -> bool {
        let account = principal
            .strip_prefix("arn:aws:iam::")
            .and_then(|r| r.split(':').next())
            .unwrap_or("");
        self.principals.iter().any(|p| {
            p == "*"
                || p == principal
                || (!account.is_empty()
                    && (p == account || *p == format!("arn:aws:iam::{account}:root")))
        })
    }
}

/// A parsed data protection policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `Name`.
    pub name: String,
    /// `Description`, optional.
    pub description: Option<String>,
    /// `Statement`, in order.
    pub statements: Vec<Statement>,
}

fn bad(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: DataProtectionPolicy Reason: {why}"),
    )
}

fn string_field<'a>(obj: &'a Map<String, Value>, key: &str, at: &str) -> Result<Option<&'a str>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(format!("{at}{key} must be a string"))),
    }
}

fn check_keys(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<()> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            let hint = if k == "Configuration" {
                " (custom data identifiers are not supported by Loft)"
            } else {
                ""
            };
            return Err(bad(format!("{at}{k} is not a supported property{hint}")));
        }
    }
    Ok(())
}

/// The identifier an ARN names: `arn:aws:dataprotection::aws:data-identifier/NAME` as AWS
/// documents it, or the regional form `arn:aws:dataprotection:REGION::data-identifier/NAME`
/// AWS also accepts. Errors: `InvalidParameter` for another ARN, an unknown name, or a
/// managed identifier Loft does not match (the message lists what it matches).
pub fn parse_identifier(arn: &str) -> Result<DataIdentifier> {
    let name = arn
        .strip_prefix(IDENTIFIER_ARN_PREFIX)
        .or_else(|| {
            let rest = arn.strip_prefix("arn:aws:dataprotection:")?;
            let (region, rest) = rest.split_once(':')?;
            let name = rest.strip_prefix(":data-identifier/")?;
            (!region.is_empty()).then_some(name)
        })
        .ok_or_else(|| {
            bad(format!(
                "DataIdentifier {arn} is not a managed data identifier ARN ({IDENTIFIER_ARN_PREFIX}NAME)"
            ))
        })?;
    if let Some(d) = DataIdentifier::from_name(name) {
        return Ok(d);
    }
    let base = name.split('-').next().unwrap_or(name);
    let supported: Vec<&str> = DataIdentifier::ALL.iter().map(|d| d.name()).collect();
    if AWS_ONLY_IDENTIFIERS.contains(&base) {
        Err(bad(format!(
            "Loft cannot detect the managed data identifier {name}: it matches only {}",
            supported.join(", ")
        )))
    } else {
        Err(bad(format!(
            "{name} is not a managed data identifier; Loft matches {}",
            supported.join(", ")
        )))
    }
}

fn parse_principal(p: &Value, at: &str) -> Result<Vec<String>> {
    let list = match p {
        Value::Array(items) if !items.is_empty() => items,
        _ => return Err(bad(format!("{at}Principal must be a non-empty list"))),
    };
    let mut out = Vec::new();
    for item in list {
        let Some(s) = item.as_str() else {
            return Err(bad(format!("{at}Principal entries must be strings")));
        };
        let account_root = s
            .strip_prefix("arn:aws:iam::")
            .and_then(|r| r.strip_suffix(":root"))
            .is_some_and(is_account_id);
        if !(s == "*" || is_account_id(s) || account_root) {
            return Err(bad(format!(
                "{at}Principal {s}: Loft matches data protection statements by account; name \"*\", an account id or arn:aws:iam::ACCOUNT:root"
            )));
        }
        out.push(s.to_owned());
    }
    Ok(out)
}

fn is_account_id(s: &str) -> bool {
    s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit())
}

fn parse_destination(v: &Value, at: &str) -> Result<AuditDestination> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("{at} must be an object")))?;
    let mut dest = AuditDestination::default();
    for (k, v) in obj {
        let inner = v
            .as_object()
            .ok_or_else(|| bad(format!("{at}.{k} must be an object")))?;
        match k.as_str() {
            "CloudWatchLogs" => {
                check_keys(inner, &["LogGroup"], &format!("{at}.CloudWatchLogs."))?;
                let group = string_field(inner, "LogGroup", &format!("{at}.CloudWatchLogs."))?
                    .ok_or_else(|| bad(format!("{at}.CloudWatchLogs.LogGroup is required")))?;
                dest.log_group = Some(group.to_owned());
            }
            SQS_DESTINATION => {
                check_keys(inner, &["QueueArn"], &format!("{at}.Sqs."))?;
                let arn = string_field(inner, "QueueArn", &format!("{at}.Sqs."))?
                    .ok_or_else(|| bad(format!("{at}.Sqs.QueueArn is required")))?;
                if crate::names::arn_resource(arn, "sqs").is_none() {
                    return Err(bad(format!("{at}.Sqs.QueueArn {arn} is not an SQS queue ARN")));
                }
                dest.queue_arn = Some(arn.to_owned());
            }
            "Firehose" | "S3" => {
                return Err(bad(format!(
                    "{at}.{k}: Loft cannot write audit findings to {k}; use CloudWatchLogs (Loft's log) or Sqs {{\"QueueArn\"}}"
                )))
            }
            other => return Err(bad(format!("{at}.{other} is not a supported destination"))),
        }
    }
    if dest == AuditDestination::default() {
        return Err(bad(format!("{at} names no destination")));
    }
    Ok(dest)
}

fn parse_operation(v: &Value, direction: DataDirection, at: &str) -> Result<Operation> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("{at}Operation must be an object")))?;
    if obj.len() != 1 {
        return Err(bad(format!(
            "{at}Operation must hold exactly one of Audit, Deny and Deidentify"
        )));
    }
    let (name, body) = obj.iter().next().expect("one entry");
    let body = body
        .as_object()
        .ok_or_else(|| bad(format!("{at}Operation.{name} must be an object")))?;
    let at = format!("{at}Operation.{name}");
    Ok(match name.as_str() {
        "Deny" => {
            check_keys(body, &[], &format!("{at}."))?;
            Operation::Deny
        }
        "Deidentify" => {
            check_keys(body, &["MaskConfig", "RedactConfig"], &format!("{at}."))?;
            match (body.get("MaskConfig"), body.get("RedactConfig")) {
                (Some(mask), None) => {
                    let mask = mask
                        .as_object()
                        .ok_or_else(|| bad(format!("{at}.MaskConfig must be an object")))?;
                    check_keys(mask, &["MaskWithCharacter"], &format!("{at}.MaskConfig."))?;
                    let c = string_field(mask, "MaskWithCharacter", &format!("{at}.MaskConfig."))?
                        .unwrap_or("*");
                    let mut chars = c.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) if c.is_ascii_punctuation() => {
                            Operation::Deidentify(Deidentify::Mask(c))
                        }
                        _ => {
                            return Err(bad(format!(
                                "{at}.MaskConfig.MaskWithCharacter must be one punctuation character such as * or #"
                            )))
                        }
                    }
                }
                (None, Some(redact)) => {
                    let redact = redact
                        .as_object()
                        .ok_or_else(|| bad(format!("{at}.RedactConfig must be an object")))?;
                    check_keys(redact, &[], &format!("{at}.RedactConfig."))?;
                    Operation::Deidentify(Deidentify::Redact)
                }
                _ => {
                    return Err(bad(format!(
                        "{at} must hold exactly one of MaskConfig and RedactConfig"
                    )))
                }
            }
        }
        "Audit" => {
            if direction == DataDirection::Outbound {
                return Err(bad(format!(
                    "{at}: the Audit operation samples a topic's inbound messages; use DataDirection Inbound"
                )));
            }
            check_keys(
                body,
                &["SampleRate", "FindingsDestination", "NoFindingsDestination"],
                &format!("{at}."),
            )?;
            let sample_rate = match body.get("SampleRate") {
                None => None,
                Some(v) => {
                    let n = match v {
                        Value::String(s) => s.trim().parse::<u32>().ok(),
                        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                        _ => None,
                    };
                    match n {
                        Some(n) if n <= 99 => Some(n),
                        _ => {
                            return Err(bad(format!(
                                "{at}.SampleRate must be an integer from 0 to 99"
                            )))
                        }
                    }
                }
            };
            let findings = body
                .get("FindingsDestination")
                .map(|v| parse_destination(v, &format!("{at}.FindingsDestination")))
                .transpose()?;
            let no_findings = body
                .get("NoFindingsDestination")
                .map(|v| parse_destination(v, &format!("{at}.NoFindingsDestination")))
                .transpose()?;
            if findings.is_none() && no_findings.is_none() {
                return Err(bad(format!(
                    "{at} requires a FindingsDestination or a NoFindingsDestination"
                )));
            }
            Operation::Audit(Audit {
                sample_rate,
                findings,
                no_findings,
            })
        }
        other => {
            return Err(bad(format!(
                "{other} is not an operation; use Audit, Deny or Deidentify"
            )))
        }
    })
}

impl Policy {
    /// Parses and validates a policy document.
    ///
    /// Errors: `InvalidParameter` (`Invalid parameter: DataProtectionPolicy Reason: ...`)
    /// for anything outside the grammar: longer than [`MAX_POLICY_LENGTH`], not a JSON
    /// object, a missing Name, Version other than [`POLICY_VERSION`], no statements, an
    /// unknown property, a bad DataDirection, Principal, DataIdentifier or Operation, more
    /// than one Audit statement, and every identifier, principal or destination Loft
    /// cannot honour (the message says which and what it can).
    pub fn parse(text: &str) -> Result<Policy> {
        if text.chars().count() > MAX_POLICY_LENGTH {
            return Err(bad(format!(
                "the policy is longer than {MAX_POLICY_LENGTH} characters"
            )));
        }
        let doc: Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        let obj = doc
            .as_object()
            .ok_or_else(|| bad("the policy must be a JSON object"))?;
        check_keys(obj, &["Name", "Description", "Version", "Statement"], "")?;
        let name = string_field(obj, "Name", "")?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("Name is required"))?
            .to_owned();
        let description = string_field(obj, "Description", "")?.map(str::to_owned);
        match string_field(obj, "Version", "")? {
            Some(POLICY_VERSION) => {}
            Some(v) => {
                return Err(bad(format!(
                    "Version {v} is not supported; use {POLICY_VERSION}"
                )))
            }
            None => return Err(bad("Version is required")),
        }
        let statements = match obj.get("Statement") {
            Some(Value::Array(items)) if !items.is_empty() => items,
            _ => return Err(bad("Statement must be a non-empty list")),
        };
        let mut out = Vec::with_capacity(statements.len());
        for (i, s) in statements.iter().enumerate() {
            let at = format!("Statement[{i}].");
            let s = s
                .as_object()
                .ok_or_else(|| bad(format!("Statement[{i}] must be an object")))?;
            check_keys(
                s,
                &[
                    "Sid",
                    "DataDirection",
                    "Principal",
                    "DataIdentifier",
                    "Operation",
                ],
                &at,
            )?;
            let sid = string_field(s, "Sid", &at)?.map(str::to_owned);
            let direction = match string_field(s, "DataDirection", &at)? {
                Some("Inbound") => DataDirection::Inbound,
                Some("Outbound") => DataDirection::Outbound,
                Some(d) => {
                    return Err(bad(format!(
                        "{at}DataDirection {d} must be Inbound or Outbound"
                    )))
                }
                None => return Err(bad(format!("{at}DataDirection is required"))),
            };
            let principals = parse_principal(
                s.get("Principal")
                    .ok_or_else(|| bad(format!("{at}Principal is required")))?,
                &at,
            )?;
            let identifiers = match s.get("DataIdentifier") {
                Some(Value::Array(items)) if !items.is_empty() => {
                    let mut ids = Vec::new();
                    for item in items {
                        let arn = item.as_str().ok_or_else(|| {
                            bad(format!("{at}DataIdentifier entries must be strings"))
                        })?;
                        let id = parse_identifier(arn)?;
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                    ids
                }
                _ => return Err(bad(format!("{at}DataIdentifier must be a non-empty list"))),
            };
            let operation = parse_operation(
                s.get("Operation")
                    .ok_or_else(|| bad(format!("{at}Operation is required")))?,
                direction,
                &at,
            )?;
            out.push(Statement {
                sid,
                direction,
                principals,
                identifiers,
                operation,
            });
        }
        let audits = out
            .iter()
            .filter(|s| matches!(s.operation, Operation::Audit(_)))
            .count();
        if audits > 1 {
            return Err(bad("a policy may have only one audit statement"));
        }
        Ok(Policy {
            name,
            description,
            statements: out,
        })
    }

    /// The audit statement, when there is one and it covers `principal`.
    pub fn audit(&self, principal: &str) -> Option<(&Statement, &Audit)> {
        self.statements.iter().find_map(|s| match &s.operation {
            Operation::Audit(a) if s.covers(principal) => Some((s, a)),
            _ => None,
        })
    }

    /// The queues (`Sqs.QueueArn`) the audit statement's `FindingsDestination` and
    /// `NoFindingsDestination` name, whoever the statement covers: the queues this policy
    /// may write audit records into.
    pub fn audit_queue_arns(&self) -> Vec<&str> {
        self.statements
            .iter()
            .filter_map(|s| match &s.operation {
                Operation::Audit(a) => Some(a),
                _ => None,
            })
            .flat_map(|a| [a.findings.as_ref(), a.no_findings.as_ref()])
            .flatten()
            .filter_map(|d| d.queue_arn.as_deref())
            .collect()
    }

    /// Applies the Deny and Deidentify statements of `direction` that cover `principal`
    /// to `text`: Deny statements first, on the text as given, then each Deidentify
    /// statement in order. A message whose every non-blank character is de-identified is
    /// denied too (AWS: the publish fails "when the entire message is sensitive").
    pub fn enforce(&self, direction: DataDirection, principal: &str, text: &str) -> Verdict {
        let applicable = || {
            self.statements
                .iter()
                .filter(move |s| s.direction == direction && s.covers(principal))
        };
        for s in applicable().filter(|s| s.operation == Operation::Deny) {
            let found = detect(text, &s.identifiers);
            if !found.is_empty() {
                return Verdict::Denied {
                    sid: s.sid.clone(),
                    identifiers: identifier_names(&found),
                };
            }
        }
        let mut out = text.to_owned();
        let mut changed = false;
        for s in applicable() {
            let Operation::Deidentify(how) = s.operation else {
                continue;
            };
            let found = detect(&out, &s.identifiers);
            if found.is_empty() {
                continue;
            }
            if covers_all(&out, &found) {
                return Verdict::Denied {
                    sid: s.sid.clone(),
                    identifiers: identifier_names(&found),
                };
            }
            out = deidentify(&out, &found, how);
            changed = true;
        }
        if changed {
            Verdict::Rewritten(out)
        } else {
            Verdict::Unchanged
        }
    }
}

/// What [`Policy::enforce`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to do: the message goes as it is.
    Unchanged,
    /// The message goes de-identified, as this text.
    Rewritten(String),
    /// The message does not go: the statement (its Sid) and the identifiers found.
    Denied {
        /// The denying statement's Sid.
        sid: Option<String>,
        /// Names of the identifiers found.
        identifiers: Vec<&'static str>,
    },
}

/// One piece of sensitive data found: which identifier, and where, in bytes of the text
/// (`start..end`, on character boundaries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detection {
    /// The identifier that matched.
    pub identifier: DataIdentifier,
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
}

fn identifier_names(found: &[Detection]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = found.iter().map(|d| d.identifier.name()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn covers_all(text: &str, found: &[Detection]) -> bool {
    text.char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .all(|(i, _)| found.iter().any(|d| d.start <= i && i < d.end))
}

struct Patterns {
    email: Regex,
    card: Regex,
    ipv4: Regex,
    ipv6: Regex,
    secret: Regex,
    ssn: Regex,
    sin: Regex,
    nino: Regex,
    openssh: Regex,
    pkcs: Regex,
    pgp: Regex,
    putty: Regex,
}

fn patterns() -> &'static Patterns {
    static P: std::sync::OnceLock<Patterns> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let re = |p: &str| Regex::new(p).expect("data identifier pattern");
        Patterns {
            email: re(r"(?i)[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}"),
            card: re(r"\d(?:[ -]?\d){12,18}"),
            ipv4: re(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}"),
            ipv6: re(r"(?i)[0-9a-f:]*:[0-9a-f:]*:[0-9a-f:.]*"),
            secret: re(r"[A-Za-z0-9/+]{40}"),
            ssn: re(r"\d{3}[- ]?\d{2}[- ]?\d{4}"),
            sin: re(r"\d{3}[- ]?\d{3}[- ]?\d{3}"),
            nino: re(r"(?i)[a-z]{2} ?\d{2} ?\d{2} ?\d{2} ?[a-d]"),
            openssh: re(r"(?s)-----BEGIN OPENSSH PRIVATE KEY-----.*?(?:-----END OPENSSH PRIVATE KEY-----|\z)"),
            pkcs: re(r"(?s)-----BEGIN (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----.*?(?:-----END (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----|\z)"),
            pgp: re(r"(?s)-----BEGIN PGP PRIVATE KEY BLOCK-----.*?(?:-----END PGP PRIVATE KEY BLOCK-----|\z)"),
            putty: re(r"(?s)PuTTY-User-Key-File-[23]:.*?(?:Private-MAC: *[0-9a-fA-F]+|\z)"),
        }
    })
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

/// The Luhn (mod 10) check of a string of digits.
pub fn luhn(digits: &str) -> bool {
    let mut sum = 0u32;
    for (i, c) in digits.bytes().rev().enumerate() {
        let mut d = u32::from(c - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    !digits.is_empty() && sum.is_multiple_of(10)
}

fn card_prefix(d: &str) -> bool {
    let p = |n: usize| d.get(..n).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
    d.starts_with('4')
        || matches!(p(2), 34 | 36 | 37 | 38 | 39 | 51..=55 | 62 | 65)
        || (2221..=2720).contains(&p(4))
        || matches!(p(4), 3095 | 5019 | 6011)
        || (3528..=3589).contains(&p(4))
        || (300..=305).contains(&p(3))
        || (644..=649).contains(&p(3))
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Whether the match `start..end` of `text` stands alone: not glued to a letter or digit
/// (or, with `extra`, to one of those bytes) on either side.
fn standalone(text: &str, start: usize, end: usize, extra: &[u8]) -> bool {
    let glued = |b: u8| is_word_byte(b) || extra.contains(&b);
    let before = text.as_bytes()[..start].last().copied();
    let after = text.as_bytes().get(end).copied();
    !before.is_some_and(glued) && !after.is_some_and(glued)
}

/// Whether one of `keywords` is within [`KEYWORD_DISTANCE`] characters of `start..end`.
/// Keywords match case-insensitively; a space in a keyword also matches no space, `_` or
/// `-`; a keyword must not be glued to letters or digits.
fn keyword_near(text: &str, start: usize, end: usize, keywords: &[&str]) -> bool {
    if keywords.is_empty() {
        return true;
    }
    let lo = text[..start]
        .char_indices()
        .rev()
        .nth(KEYWORD_DISTANCE - 1)
        .map_or(0, |(i, _)| i);
    let hi = text[end..]
        .char_indices()
        .nth(KEYWORD_DISTANCE)
        .map_or(text.len(), |(i, _)| end + i);
    let window = text[lo..hi].to_lowercase();
    keywords.iter().any(|kw| {
        let variants: Vec<String> = if kw.contains(' ') {
            ["", " ", "_", "-"]
                .iter()
                .map(|sep| kw.replace(' ', sep))
                .collect()
        } else {
            vec![(*kw).to_owned()]
        };
        variants.iter().any(|v| {
            window.match_indices(v.as_str()).any(|(i, m)| {
                let first_word = v.as_bytes().first().is_some_and(|b| is_word_byte(*b));
                let last_word = v.as_bytes().last().is_some_and(|b| is_word_byte(*b));
                let before_ok = !first_word
                    || !window.as_bytes()[..i]
                        .last()
                        .is_some_and(|b| is_word_byte(*b));
                let after_ok = !last_word
                    || !window
                        .as_bytes()
                        .get(i + m.len())
                        .is_some_and(|b| is_word_byte(*b));
                before_ok && after_ok
            })
        })
    })
}

fn detect_one(text: &str, id: DataIdentifier, out: &mut Vec<Detection>) {
    let p = patterns();
    let mut push = |start: usize, end: usize| {
        if keyword_near(text, start, end, id.keywords()) {
            out.push(Detection {
                identifier: id,
                start,
                end,
            });
        }
    };
    match id {
        DataIdentifier::EmailAddress => {
            for m in p.email.find_iter(text) {
                if standalone(text, m.start(), m.end(), b"@") {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::CreditCardNumber => {
            for m in p.card.find_iter(text) {
                let d = digits(m.as_str());
                if standalone(text, m.start(), m.end(), b"")
                    && (13..=19).contains(&d.len())
                    && card_prefix(&d)
                    && luhn(&d)
                    && !TEST_CARD_NUMBERS.contains(&d.as_str())
                {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::IpAddress => {
            for m in p.ipv4.find_iter(text) {
                let dotted_on = |b: Option<&u8>| b == Some(&b'.');
                let before = text.as_bytes()[..m.start()].last();
                let after = text.as_bytes().get(m.end());
                let longer = (dotted_on(before)
                    && text.as_bytes()[..m.start().saturating_sub(1)]
                        .last()
                        .is_some_and(u8::is_ascii_digit))
                    || (dotted_on(after)
                        && text
                            .as_bytes()
                            .get(m.end() + 1)
                            .is_some_and(u8::is_ascii_digit));
                if standalone(text, m.start(), m.end(), b"")
                    && !longer
                    && m.as_str().parse::<std::net::Ipv4Addr>().is_ok()
                {
                    push(m.start(), m.end());
                }
            }
            for m in p.ipv6.find_iter(text) {
                let s = m.as_str().trim_end_matches('.');
                let end = m.start() + s.len();
                if standalone(text, m.start(), end, b"") && s.parse::<std::net::Ipv6Addr>().is_ok()
                {
                    push(m.start(), end);
                }
            }
        }
        DataIdentifier::AwsSecretKey => {
            for m in p.secret.find_iter(text) {
                let s = m.as_str();
                let mixed = s.bytes().any(|b| b.is_ascii_uppercase())
                    && s.bytes().any(|b| b.is_ascii_lowercase())
                    && s.bytes()
                        .any(|b| b.is_ascii_digit() || b == b'/' || b == b'+');
                let before = text.as_bytes()[..m.start()].last().copied();
                let after = text.as_bytes().get(m.end()).copied();
                let alone = !before.is_some_and(|b| is_word_byte(b) || b == b'/' || b == b'+')
                    && !after.is_some_and(|b| is_word_byte(b) || b"/+=".contains(&b));
                if mixed && alone {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::SsnUs => {
            for m in p.ssn.find_iter(text) {
                let s = m.as_str();
                let seps: Vec<char> = s.chars().filter(|c| !c.is_ascii_digit()).collect();
                let consistent = seps.is_empty() || (seps.len() == 2 && seps[0] == seps[1]);
                let d = digits(s);
                let (area, group, serial) = (&d[..3], &d[3..5], &d[5..]);
                let area_ok = area != "000" && area != "666" && !area.starts_with('9');
                if consistent
                    && area_ok
                    && group != "00"
                    && serial != "0000"
                    && standalone(text, m.start(), m.end(), b"-")
                {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::SocialInsuranceNumberCa => {
            for m in p.sin.find_iter(text) {
                let s = m.as_str();
                let seps: Vec<char> = s.chars().filter(|c| !c.is_ascii_digit()).collect();
                let consistent = seps.is_empty() || (seps.len() == 2 && seps[0] == seps[1]);
                let d = digits(s);
                if consistent
                    && !d.starts_with('0')
                    && !d.starts_with('8')
                    && luhn(&d)
                    && standalone(text, m.start(), m.end(), b"-")
                {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::NationalInsuranceNumberGb => {
            for m in p.nino.find_iter(text) {
                let s = m.as_str().to_ascii_uppercase();
                let b = s.as_bytes();
                let first_ok = !b"DFIQUV".contains(&b[0]);
                let second_ok = !b"DFIQUVO".contains(&b[1]);
                let prefix = &s[..2];
                let banned = ["BG", "GB", "NK", "KN", "TN", "NT", "ZZ"].contains(&prefix);
                if first_ok && second_ok && !banned && standalone(text, m.start(), m.end(), b"") {
                    push(m.start(), m.end());
                }
            }
        }
        DataIdentifier::OpenSshPrivateKey => {
            for m in p.openssh.find_iter(text) {
                push(m.start(), m.end());
            }
        }
        DataIdentifier::PkcsPrivateKey => {
            for m in p.pkcs.find_iter(text) {
                push(m.start(), m.end());
            }
        }
        DataIdentifier::PgpPrivateKey => {
            for m in p.pgp.find_iter(text) {
                push(m.start(), m.end());
            }
        }
        DataIdentifier::PuttyPrivateKey => {
            for m in p.putty.find_iter(text) {
                push(m.start(), m.end());
            }
        }
    }
}

/// Every piece of data in `text` that one of `identifiers` matches, ordered by position
/// (then by identifier). Matches of different identifiers may overlap.
pub fn detect(text: &str, identifiers: &[DataIdentifier]) -> Vec<Detection> {
    let mut out = Vec::new();
    for id in identifiers {
        detect_one(text, *id, &mut out);
    }
    out.sort_by_key(|d| (d.start, d.end, d.identifier));
    out
}

/// `text` with every detection masked (each character replaced by the mask character) or
/// redacted (removed). Overlapping detections are merged first.
pub fn deidentify(text: &str, found: &[Detection], how: Deidentify) -> String {
    let mut spans: Vec<(usize, usize)> = found.iter().map(|d| (d.start, d.end)).collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e) in merged {
        out.push_str(&text[at..s]);
        if let Deidentify::Mask(c) = how {
            out.extend(std::iter::repeat_n(c, text[s..e].chars().count()));
        }
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// The audit record of one message, in the shape of AWS's audit destination log:
/// `{"messageId","auditTimestamp","callerPrincipal","resourceArn","dataIdentifiers":[{"name",
/// "count","detections":[{"start","end"}]}]}`, offsets in characters (zero-based, `end`
/// exclusive). `dataIdentifiers` is empty for a message without findings.
pub fn audit_record(
    message_id: &str,
    audit_timestamp: &str,
    caller_principal: &str,
    resource_arn: &str,
    text: &str,
    found: &[Detection],
) -> Value {
    let char_at = |byte: usize| text[..byte].chars().count();
    let mut by_name: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for d in found {
        by_name
            .entry(d.identifier.name())
            .or_default()
            .push(json!({"start": char_at(d.start), "end": char_at(d.end)}));
    }
    let identifiers: Vec<Value> = by_name
        .into_iter()
        .map(|(name, detections)| {
            json!({"name": name, "count": detections.len(), "detections": detections})
        })
        .collect();
    json!({
        "messageId": message_id,
        "auditTimestamp": audit_timestamp,
        "callerPrincipal": caller_principal,
        "resourceArn": resource_arn,
        "dataIdentifiers": identifiers,
    })
}

/// Whether message number `n` (1-based, counted per topic) is audited at `rate` percent
/// (`None`: every one). Deterministic: of every 100 consecutive messages exactly `rate`
/// are audited, the first of a topic's always when `rate` > 0.
pub fn sampled(rate: Option<u32>, n: u64) -> bool {
    match rate {
        None => true,
        Some(r) => {
            let r = u64::from(r);
            (n * r).div_ceil(100) > ((n - 1) * r).div_ceil(100)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "arn:aws:iam::000000000000:root";

    fn arn(name: &str) -> String {
        format!("{IDENTIFIER_ARN_PREFIX}{name}")
    }

    fn policy(statements: Value) -> String {
        json!({"Name": "p", "Description": "d", "Version": "2021-06-01", "Statement": statements})
            .to_string()
    }

    fn found(text: &str, id: DataIdentifier) -> Vec<&str> {
        detect(text, &[id])
            .iter()
            .map(|d| &text[d.start..d.end])
            .collect()
    }

    // The deny example of the AWS CLI reference (put-data-protection-policy).
    #[test]
    fn parses_the_aws_cli_deny_example() {
        let text = r#"{"Name":"data_protection_policy","Description":"Example data protection policy","Version":"2021-06-01","Statement":[{"DataDirection":"Inbound","Principal":["*"],"DataIdentifier":["arn:aws:dataprotection::aws:data-identifier/CreditCardNumber"],"Operation":{"Deny":{}}}]}"#;
        let p = Policy::parse(text).unwrap();
        assert_eq!(p.name, "data_protection_policy");
        assert_eq!(p.statements.len(), 1);
        assert_eq!(p.statements[0].direction, DataDirection::Inbound);
        assert_eq!(
            p.statements[0].identifiers,
            vec![DataIdentifier::CreditCardNumber]
        );
        assert_eq!(p.statements[0].operation, Operation::Deny);
    }

    // The regional ARN form AWS accepted in a recorded CreateTopic/PutDataProtectionPolicy.
    #[test]
    fn accepts_the_regional_identifier_arn() {
        assert_eq!(
            parse_identifier("arn:aws:dataprotection:us-east-1::data-identifier/EmailAddress")
                .unwrap(),
            DataIdentifier::EmailAddress
        );
    }

    // The audit example of "Data protection policy operations", with Loft's SQS
    // destination added and Firehose/S3 (which Loft cannot write to) left out.
    #[test]
    fn parses_an_audit_statement_with_destinations() {
        let text = policy(json!([{
            "Sid": "audit", "DataDirection": "Inbound", "Principal": ["*"],
            "DataIdentifier": [arn("EmailAddress"), arn("Ssn-US")],
            "Operation": {"Audit": {"SampleRate": "99",
                "FindingsDestination": {"CloudWatchLogs": {"LogGroup": "/aws/vendedlogs/x"},
                    "Sqs": {"QueueArn": "arn:aws:sqs:us-east-1:000000000000:findings"}},
                "NoFindingsDestination": {"CloudWatchLogs": {"LogGroup": "/aws/vendedlogs/y"}}}}
        }]));
        let p = Policy::parse(&text).unwrap();
        let (_, audit) = p.audit(ROOT).unwrap();
        assert_eq!(audit.sample_rate, Some(99));
        let f = audit.findings.as_ref().unwrap();
        assert_eq!(f.log_group.as_deref(), Some("/aws/vendedlogs/x"));
        assert_eq!(
            f.queue_arn.as_deref(),
            Some("arn:aws:sqs:us-east-1:000000000000:findings")
        );
        assert!(audit.no_findings.as_ref().unwrap().queue_arn.is_none());
    }

    fn refused(text: &str) -> String {
        let e = Policy::parse(text).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParameter, "{e}");
        e.message
    }

    #[test]
    fn refuses_what_is_outside_the_grammar() {
        let deny = |ids: Value| {
            policy(json!([{"DataDirection": "Inbound", "Principal": ["*"],
                "DataIdentifier": ids, "Operation": {"Deny": {}}}]))
        };
        assert!(refused("not json").contains("not valid JSON"));
        assert!(
            refused(r#"{"Name":"p","Version":"2012-10-17","Statement":[]}"#)
                .contains("Version 2012-10-17")
        );
        assert!(refused(r#"{"Version":"2021-06-01","Statement":[]}"#).contains("Name"));
        assert!(refused(&policy(json!([]))).contains("Statement"));
        assert!(refused(&deny(json!([]))).contains("DataIdentifier"));
        assert!(refused(&deny(json!([
            "arn:aws:dataprotection::aws:data-identifier/Nope"
        ])))
        .contains("Nope is not a managed data identifier"));
        let m = refused(&deny(json!([arn("Name")])));
        assert!(
            m.contains("Loft cannot detect the managed data identifier Name"),
            "{m}"
        );
        assert!(m.contains("EmailAddress"), "{m}");
        assert!(refused(&deny(json!([arn("PhoneNumber-US")])))
            .contains("cannot detect the managed data identifier PhoneNumber-US"));
        let two = |op: Value| {
            policy(json!([{"DataDirection": "Inbound", "Principal": ["*"],
                "DataIdentifier": [arn("EmailAddress")], "Operation": op}]))
        };
        assert!(refused(&two(
            json!({"Deny": {}, "Deidentify": {"RedactConfig": {}}})
        ))
        .contains("exactly one"));
        assert!(refused(&two(json!({"Block": {}}))).contains("Block is not an operation"));
        assert!(refused(&two(
            json!({"Deidentify": {"MaskConfig": {"MaskWithCharacter": "ab"}}})
        ))
        .contains("MaskWithCharacter"));
        assert!(refused(&two(
            json!({"Deidentify": {"MaskConfig": {}, "RedactConfig": {}}})
        ))
        .contains("exactly one of MaskConfig and RedactConfig"));
        assert!(refused(&two(json!({"Audit": {"SampleRate": "100",
            "FindingsDestination": {"CloudWatchLogs": {"LogGroup": "g"}}}})))
        .contains("SampleRate"));
        assert!(refused(&two(json!({"Audit": {"SampleRate": "5"}})))
            .contains("requires a FindingsDestination"));
        assert!(refused(&two(
            json!({"Audit": {"FindingsDestination": {"S3": {"Bucket": "b"}}}})
        ))
        .contains("cannot write audit findings to S3"));
        let audit = json!({"DataDirection": "Inbound", "Principal": ["*"],
            "DataIdentifier": [arn("EmailAddress")],
            "Operation": {"Audit": {"FindingsDestination": {"CloudWatchLogs": {"LogGroup": "g"}}}}});
        assert!(
            refused(&policy(json!([audit.clone(), audit]))).contains("only one audit statement")
        );
        let outbound_audit = json!({"DataDirection": "Outbound", "Principal": ["*"],
            "DataIdentifier": [arn("EmailAddress")],
            "Operation": {"Audit": {"FindingsDestination": {"CloudWatchLogs": {"LogGroup": "g"}}}}});
        assert!(refused(&policy(json!([outbound_audit]))).contains("inbound"));
        let user = json!([{"DataDirection": "Inbound",
            "Principal": ["arn:aws:iam::123456789012:user/ExampleUser"],
            "DataIdentifier": [arn("EmailAddress")], "Operation": {"Deny": {}}}]);
        assert!(refused(&policy(user)).contains("matches data protection statements by account"));
        let sideways = json!([{"DataDirection": "Sideways", "Principal": ["*"],
            "DataIdentifier": [arn("EmailAddress")], "Operation": {"Deny": {}}}]);
        assert!(refused(&policy(sideways)).contains("Inbound or Outbound"));
        assert!(refused(
            &json!({"Name": "p", "Version": "2021-06-01", "Configuration": {}, "Statement": []})
                .to_string()
        )
        .contains("custom data identifiers"));
        assert!(refused(&"x".repeat(MAX_POLICY_LENGTH + 1)).contains("longer than"));
    }

    // "Data protection policy operations": with MaskWithCharacter "#", ssn: 123-45-6789
    // becomes ssn: ###########; with RedactConfig it becomes ssn: (nothing).
    #[test]
    fn masks_and_redacts_as_the_guide_shows() {
        let text = "ssn: 123-45-6789";
        let d = detect(text, &[DataIdentifier::SsnUs]);
        assert_eq!(
            deidentify(text, &d, Deidentify::Mask('#')),
            "ssn: ###########"
        );
        assert_eq!(deidentify(text, &d, Deidentify::Redact), "ssn: ");
    }

    #[test]
    fn enforce_denies_then_deidentifies_per_direction_and_principal() {
        let text = policy(json!([
            {"Sid": "no-cards", "DataDirection": "Inbound", "Principal": ["*"],
             "DataIdentifier": [arn("CreditCardNumber")], "Operation": {"Deny": {}}},
            {"Sid": "mask-mail", "DataDirection": "Inbound", "Principal": ["000000000000"],
             "DataIdentifier": [arn("EmailAddress")],
             "Operation": {"Deidentify": {"MaskConfig": {"MaskWithCharacter": "*"}}}},
            {"Sid": "redact-ip", "DataDirection": "Outbound", "Principal": ["*"],
             "DataIdentifier": [arn("IpAddress")], "Operation": {"Deidentify": {"RedactConfig": {}}}}
        ]));
        let p = Policy::parse(&text).unwrap();
        let v = p.enforce(
            DataDirection::Inbound,
            ROOT,
            "visa card 4539 1488 0343 6467",
        );
        assert_eq!(
            v,
            Verdict::Denied {
                sid: Some("no-cards".into()),
                identifiers: vec!["CreditCardNumber"]
            }
        );
        assert_eq!(
            p.enforce(DataDirection::Inbound, ROOT, "mail a@b.io from 10.0.0.1"),
            Verdict::Rewritten("mail ****** from 10.0.0.1".into())
        );
        // Another account's caller is not covered by the account-scoped statement.
        assert_eq!(
            p.enforce(
                DataDirection::Inbound,
                "arn:aws:iam::111111111111:root",
                "mail a@b.io"
            ),
            Verdict::Unchanged
        );
        assert_eq!(
            p.enforce(DataDirection::Outbound, ROOT, "mail a@b.io from 10.0.0.1"),
            Verdict::Rewritten("mail a@b.io from ".into())
        );
        // A message that is nothing but sensitive data is refused, not emptied.
        assert!(matches!(
            p.enforce(DataDirection::Outbound, ROOT, " 10.0.0.1 "),
            Verdict::Denied { .. }
        ));
    }

    #[test]
    fn email_addresses() {
        use DataIdentifier::EmailAddress as E;
        assert_eq!(
            found("to jane.doe+x@example.co.uk, cc bob@mail.example.com.", E),
            vec!["jane.doe+x@example.co.uk", "bob@mail.example.com"]
        );
        assert!(found("no address @ here, user@localhost, a@@b.com", E).is_empty());
    }

    #[test]
    fn credit_card_numbers_need_luhn_prefix_keyword_and_no_test_number() {
        use DataIdentifier::CreditCardNumber as C;
        assert_eq!(
            found("card: 4539 1488 0343 6467", C),
            vec!["4539 1488 0343 6467"]
        );
        assert_eq!(found("mastercard 5425-2334-3010-9903", C).len(), 1);
        // Luhn fails.
        assert!(found("card: 4539 1488 0343 6468", C).is_empty());
        // No keyword within 30 characters.
        assert!(found("order 4539148803436467 shipped", C).is_empty());
        assert!(found(
            &format!("card{}4539148803436467", " ".repeat(KEYWORD_DISTANCE + 1)),
            C
        )
        .is_empty());
        assert_eq!(
            found(
                &format!("card{}4539148803436467", " ".repeat(KEYWORD_DISTANCE - 4)),
                C
            )
            .len(),
            1
        );
        // A keyword glued inside a word is no keyword ("mc" in "mcdonald").
        assert!(found("mcdonald 4539148803436467", C).is_empty());
        // A test number AWS reserves, and a Luhn-valid number without a card prefix.
        assert!(found("visa 4111111111111111", C).is_empty());
        assert!(found("card 1234567812345670", C).is_empty());
    }

    #[test]
    fn ip_addresses() {
        use DataIdentifier::IpAddress as I;
        assert_eq!(
            found("from 192.168.1.20 and 2001:db8::8a2e:370:7334 and ::1.", I),
            vec!["192.168.1.20", "2001:db8::8a2e:370:7334", "::1"]
        );
        assert!(found("version 1.2.3.4.5, 999.1.1.1, at 12:30:45", I).is_empty());
    }

    #[test]
    fn aws_secret_keys_need_a_keyword() {
        use DataIdentifier::AwsSecretKey as K;
        let key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_eq!(found(&format!("aws_secret_access_key={key}"), K), vec![key]);
        assert_eq!(found(&format!("Secret-Key: {key}"), K), vec![key]);
        assert!(found(&format!("value {key}"), K).is_empty());
        // A SHA-1 in hex is 40 characters too, all lower case.
        assert!(found("credentials 356a192b7913b04c54574d18c28d46e6395428ab", K).is_empty());
    }

    #[test]
    fn private_keys() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            found(&format!("key:\n{pem}\nbye"), DataIdentifier::PkcsPrivateKey),
            vec![pem]
        );
        let ssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(found(ssh, DataIdentifier::OpenSshPrivateKey), vec![ssh]);
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ\n-----END PGP PRIVATE KEY BLOCK-----";
        assert_eq!(found(pgp, DataIdentifier::PgpPrivateKey), vec![pgp]);
        let putty = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-MAC: 0a1b2c";
        assert_eq!(found(putty, DataIdentifier::PuttyPrivateKey), vec![putty]);
        // A public key is not a private key.
        assert!(found(
            "-----BEGIN PUBLIC KEY-----\nMII\n-----END PUBLIC KEY-----",
            DataIdentifier::PkcsPrivateKey
        )
        .is_empty());
    }

    #[test]
    fn national_ids() {
        use DataIdentifier::*;
        assert_eq!(found("SSN 123-45-6789", SsnUs), vec!["123-45-6789"]);
        assert_eq!(found("ssn# 123456789", SsnUs), vec!["123456789"]);
        assert!(found("ssn 666-45-6789, ssn 123-00-6789, ssn 123-45 6789", SsnUs).is_empty());
        assert!(found("order 123-45-6789", SsnUs).is_empty());
        assert_eq!(
            found("SIN: 130 692 544", SocialInsuranceNumberCa),
            vec!["130 692 544"]
        );
        assert!(found("SIN: 130 692 545", SocialInsuranceNumberCa).is_empty());
        assert_eq!(
            found("NINO QQ 12 34 56 C", NationalInsuranceNumberGb).len(),
            0,
            "Q is not a valid first letter"
        );
        assert_eq!(
            found("nino: AB123456C", NationalInsuranceNumberGb),
            vec!["AB123456C"]
        );
        assert!(found("nino: GB123456C", NationalInsuranceNumberGb).is_empty());
    }

    #[test]
    fn keyword_variants_match_without_space_or_with_underscore_or_hyphen() {
        use DataIdentifier::SsnUs;
        for kw in [
            "social security",
            "socialsecurity",
            "social_security",
            "social-security",
        ] {
            assert_eq!(found(&format!("{kw} 123-45-6789"), SsnUs).len(), 1, "{kw}");
        }
    }

    #[test]
    fn audit_record_has_aws_shape_with_character_offsets() {
        let text = "é a@b.io";
        let d = detect(text, &[DataIdentifier::EmailAddress]);
        let r = audit_record(
            "m-1",
            "2024-01-01T00:00:00Z",
            ROOT,
            "arn:aws:sns:us-east-1:000000000000:t",
            text,
            &d,
        );
        assert_eq!(
            r,
            json!({"messageId": "m-1", "auditTimestamp": "2024-01-01T00:00:00Z",
                "callerPrincipal": ROOT, "resourceArn": "arn:aws:sns:us-east-1:000000000000:t",
                "dataIdentifiers": [{"name": "EmailAddress", "count": 1,
                    "detections": [{"start": 2, "end": 8}]}]})
        );
    }

    #[test]
    fn sampling_audits_exactly_the_rate() {
        for rate in [0u32, 1, 50, 99] {
            let n = (1..=200).filter(|n| sampled(Some(rate), *n)).count();
            assert_eq!(n as u32, rate * 2, "rate {rate}");
        }
        assert!(sampled(Some(1), 1));
        assert!(!sampled(Some(0), 1));
        assert!((1..=10).all(|n| sampled(None, n)));
    }
}
