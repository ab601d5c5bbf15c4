//! The one table of errors. Each [`ErrorCode`] is declared once, by its row: the AWS code,
//! the JSON protocol's `__type` shape name, the Query code (the Query protocol's `<Code>`
//! and the JSON protocol's `x-amzn-query-error` header), Sender or Receiver fault, the HTTP
//! status and the message template. The table is a macro that declares the enum and its
//! rows together, so a code without a row cannot be written, and [`ErrorCode::row`] has no
//! wildcard arm. Every renderer (SQS JSON, SQS Query, SNS Query, the seeds' JSON, the
//! console) reads the row; nothing else invents codes, statuses or faults.
//!
//! Templates name their parameters in braces (`You have sent {sent}.`); [`Error::with`]
//! fills them. A row may word its message differently over the Query protocol
//! ([`ErrorRow::query_message`]), as AWS does for `QueueDoesNotExist`.
//!
//! Sources: the SQS API Reference "Common Errors" and each operation's "Errors" section,
//! the botocore models `sqs/2012-11-05` (JSON shape names) and `sns/2010-03-31` (SNS codes
//! and statuses), and AWS's recorded responses (LocalStack's `test_sqs.snapshot.json` and
//! `test_sns.snapshot.json`: `QueryErrorCode` is the JSON `__type`, `Code` the Query code).

use std::fmt;

/// Who is at fault, as the Query protocol's `<Type>` and `x-amzn-query-error` say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The caller's request is wrong (`Sender`).
    Sender,
    /// The service failed (`Receiver`).
    Receiver,
}

impl Fault {
    /// `Sender` or `Receiver`.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::Sender => "Sender",
            Fault::Receiver => "Receiver",
        }
    }
}

/// One row of the error table (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorRow {
    /// The code as AWS's API references name the error (`QueueDoesNotExist`,
    /// `InvalidParameterValue`, SNS's `NotFound`).
    pub code: &'static str,
    /// The SQS JSON protocol's `__type` shape name, after `com.amazonaws.sqs#`: the
    /// botocore model's error shape (`QueueDoesNotExist`), or for the common errors the
    /// model leaves out the name AWS's recorded responses show
    /// (`InvalidParameterValueException`, `MissingRequiredParameterException`); a common
    /// error no recorded response shows keeps its code. For SNS-only codes, the botocore
    /// shape name.
    pub json_type: &'static str,
    /// The Query code: `<Code>` of both Query protocols and the code in `x-amzn-query-error`
    /// (`AWS.SimpleQueueService.NonExistentQueue`).
    pub query_code: &'static str,
    /// Sender or Receiver.
    pub fault: Fault,
    /// HTTP status.
    pub status: u16,
    /// Message template; `{name}` is a parameter [`Error::with`] fills.
    pub message: &'static str,
    /// The Query protocol's wording of [`Self::message`], where AWS words it differently.
    pub query_message: Option<&'static str>,
}

macro_rules! error_table {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            code: $code:literal,
            json: $json:literal,
            query: $query:literal,
            $fault:ident, $status:literal,
            $message:literal $(, query_message: $qmessage:literal)? $(,)?
        }
    )*) => {
        /// Every error condition Loft reports, named as AWS names it. Each variant is declared
        /// by its row of the table ([`ErrorCode::row`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $name, )*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// This code's row of the table.
            pub const fn row(self) -> &'static ErrorRow {
                match self {
                    $(ErrorCode::$name => &ErrorRow {
                        code: $code,
                        json_type: $json,
                        query_code: $query,
                        fault: Fault::$fault,
                        status: $status,
                        message: $message,
                        query_message: error_table!(@opt $($qmessage)?),
                    },)*
                }
            }
        }
    };
    (@opt) => { None };
    (@opt $m:literal) => { Some($m) };
}

error_table! {
    // --- common to the AWS Query and JSON services
    /// A parameter has a value outside its allowed set or range (400).
    InvalidParameterValue {
        code: "InvalidParameterValue", json: "InvalidParameterValueException",
        query: "InvalidParameterValue", Sender, 400,
        "Value {value} for parameter {parameter} is invalid. Reason: {reason}.",
    }
    /// A required parameter is missing (400).
    MissingParameter {
        code: "MissingParameter", json: "MissingRequiredParameterException",
        query: "MissingParameter", Sender, 400,
        "The request must contain the parameter {parameter}.",
    }
    /// The action or operation is unknown, or not one this endpoint serves (400).
    InvalidAction {
        code: "InvalidAction", json: "InvalidAction", query: "InvalidAction", Sender, 400,
        "The action {action} is not valid for this endpoint.",
    }
    /// A queue URL was requested without any action: AWS answers a bare
    /// `<UnknownOperationException/>` document (404).
    UnknownOperation {
        code: "UnknownOperationException", json: "UnknownOperationException",
        query: "UnknownOperationException", Sender, 404,
        "No operation was named: the request carries neither Action nor X-Amz-Target.",
    }
    /// The request is malformed: bad JSON, bad form encoding (400).
    MalformedRequest {
        code: "MalformedQueryString", json: "MalformedQueryString",
        query: "MalformedQueryString", Sender, 400,
        "{reason}",
    }
    /// A Query list or map index is not a positive integer (`Entry.0.Id`, `Entry.-1.Id`),
    /// as AWS answers "0 is not a valid index" (400).
    MalformedInput {
        code: "MalformedInput", json: "MalformedInput", query: "MalformedInput", Sender, 400,
        "{index} is not a valid index",
    }
    /// An SQS JSON member's value is not of its modelled type: a JSON string where the
    /// model has an integer. AWS's JSON front end answers `SerializationException`
    /// "STRING_VALUE can not be converted to an Integer" (400) before the operation runs.
    Serialization {
        code: "SerializationException", json: "SerializationException",
        query: "SerializationException", Sender, 400,
        "{reason}",
    }
    /// A combination of parameters is not allowed (400).
    InvalidParameterCombination {
        code: "InvalidParameterCombination", json: "InvalidParameterCombination",
        query: "InvalidParameterCombination", Sender, 400,
        "{reason}",
    }
    /// The request body is over the protocol's limit (413).
    RequestTooLarge {
        code: "RequestEntityTooLarge", json: "RequestEntityTooLarge",
        query: "RequestEntityTooLarge", Sender, 413,
        "{reason}",
    }
    /// The request (head and body) did not arrive in time: the client stalled (408). Named
    /// as AWS's front ends name it (`RequestTimeout`, S3's "Your socket connection to the
    /// server was not read from or written to within the timeout period").
    RequestTimeout {
        code: "RequestTimeout", json: "RequestTimeout", query: "RequestTimeout", Sender, 408,
        "{reason}",
    }
    /// The route does not exist on the seeds' API (404).
    NotFoundRoute {
        code: "NotFound", json: "NotFound", query: "NotFound", Sender, 404,
        "no such route",
    }
    /// The HTTP method is not allowed on this route (405).
    MethodNotAllowed {
        code: "MethodNotAllowed", json: "MethodNotAllowed", query: "MethodNotAllowed",
        Sender, 405,
        "method not allowed on this route",
    }
    /// A request to the seeds' API or the console without credentials, or with a wrong
    /// Basic sign-in (401, sent with a `WWW-Authenticate` challenge). Only Loft's own routes
    /// answer it; AWS operations are refused with 403 (`MissingAuthenticationToken` and the
    /// signature rows).
    Unauthorized {
        code: "Unauthorized", json: "Unauthorized", query: "Unauthorized", Sender, 401,
        "{reason}",
    }
    /// Storage failed; the request may be retried (500).
    InternalError {
        code: "InternalError", json: "InternalError", query: "InternalError", Receiver, 500,
        "We encountered an internal error. Please try again.",
    }
    /// The service is shutting down, storage is unavailable, or the PostgreSQL cell of
    /// the resource is down (503; the AWS protocols send it with `Retry-After: 1`).
    ServiceUnavailable {
        code: "ServiceUnavailable", json: "ServiceUnavailable", query: "ServiceUnavailable",
        Receiver, 503,
        "The request was not applied: {reason}",
    }
    // --- SQS
    /// The queue does not exist (400).
    QueueDoesNotExist {
        code: "QueueDoesNotExist", json: "QueueDoesNotExist",
        query: "AWS.SimpleQueueService.NonExistentQueue", Sender, 400,
        "The specified queue does not exist.",
        query_message: "The specified queue does not exist for this wsdl version.",
    }
    /// SQS: the caller's policies, or the queue's `Policy`, do not allow the action (403;
    /// IAM User Guide, "Troubleshoot access denied error messages": "User: ARN is not
    /// authorized to perform: ACTION on resource: ARN ...").
    AccessDenied {
        code: "AccessDenied", json: "AccessDeniedException",
        query: "AccessDenied", Sender, 403,
        "{reason}",
    }
    /// A queue with this name exists with other attributes (400).
    QueueNameExists {
        code: "QueueNameExists", json: "QueueNameExists", query: "QueueAlreadyExists",
        Sender, 400,
        "A queue already exists with the same name and a different value for attribute {attribute}",
    }
    /// A queue of this name was deleted less than 60 s ago (400).
    QueueDeletedRecently {
        code: "QueueDeletedRecently", json: "QueueDeletedRecently",
        query: "AWS.SimpleQueueService.QueueDeletedRecently", Sender, 400,
        "You must wait 60 seconds after deleting a queue before you can create another with the same name.",
    }
    /// A purge ran on this queue in the last 60 s (403).
    PurgeQueueInProgress {
        code: "PurgeQueueInProgress", json: "PurgeQueueInProgress",
        query: "AWS.SimpleQueueService.PurgeQueueInProgress", Sender, 403,
        "Only one PurgeQueue operation on {queue} is allowed every 60 seconds.",
    }
    /// The receipt handle is not valid for this queue (400).
    ReceiptHandleIsInvalid {
        code: "ReceiptHandleIsInvalid", json: "ReceiptHandleIsInvalid",
        query: "ReceiptHandleIsInvalid", Sender, 400,
        "The input receipt handle \"{handle}\" is not a valid receipt handle.",
    }
    /// The receipt handle has an invalid format (400).
    InvalidIdFormat {
        code: "InvalidIdFormat", json: "InvalidIdFormat", query: "InvalidIdFormat",
        Sender, 400,
        "The input receipt handle is invalid.",
    }
    /// The message is not in flight (400).
    MessageNotInflight {
        code: "MessageNotInflight", json: "MessageNotInflight",
        query: "AWS.SimpleQueueService.MessageNotInflight", Sender, 400,
        "The message referred to is not in flight.",
    }
    /// Unknown attribute name (400).
    InvalidAttributeName {
        code: "InvalidAttributeName", json: "InvalidAttributeName",
        query: "InvalidAttributeName", Sender, 400,
        "Unknown Attribute {attribute}.",
    }
    /// Attribute value out of range or malformed (400).
    InvalidAttributeValue {
        code: "InvalidAttributeValue", json: "InvalidAttributeValue",
        query: "InvalidAttributeValue", Sender, 400,
        "Invalid value for the parameter {attribute}. Reason: {reason}",
    }
    /// The message contains characters outside the allowed set (400).
    InvalidMessageContents {
        code: "InvalidMessageContents", json: "InvalidMessageContents",
        query: "InvalidMessageContents", Sender, 400,
        "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
    }
    /// SQS batch without entries (400).
    EmptyBatchRequest {
        code: "EmptyBatchRequest", json: "EmptyBatchRequest",
        query: "AWS.SimpleQueueService.EmptyBatchRequest", Sender, 400,
        "There should be at least one {entry} in the request.",
    }
    /// SQS batch of more than 10 entries (400).
    TooManyEntriesInBatchRequest {
        code: "TooManyEntriesInBatchRequest", json: "TooManyEntriesInBatchRequest",
        query: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Sender, 400,
        "Maximum number of entries per request are 10. You have sent {sent}.",
    }
    /// Two SQS batch entries share an id (400).
    BatchEntryIdsNotDistinct {
        code: "BatchEntryIdsNotDistinct", json: "BatchEntryIdsNotDistinct",
        query: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", Sender, 400,
        "Id {id} repeated.",
    }
    /// An SQS batch entry id is malformed (400).
    InvalidBatchEntryId {
        code: "InvalidBatchEntryId", json: "InvalidBatchEntryId",
        query: "AWS.SimpleQueueService.InvalidBatchEntryId", Sender, 400,
        "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
    }
    /// An SQS batch's messages together exceed the size limit (400).
    BatchRequestTooLong {
        code: "BatchRequestTooLong", json: "BatchRequestTooLong",
        query: "AWS.SimpleQueueService.BatchRequestTooLong", Sender, 400,
        "Batch requests cannot be longer than {max} bytes. You have sent {sent} bytes.",
    }
    /// A limit was reached: in-flight messages, tags, permissions, queues (403).
    OverLimit {
        code: "OverLimit", json: "OverLimit", query: "OverLimit", Sender, 403,
        "{reason}",
    }
    /// A FIFO queue's throughput quota is exceeded (403): the botocore model's
    /// `RequestThrottled` shape, answered by AWS over the Query protocol as HTTP 403,
    /// `Sender`, code `RequestThrottled`; botocore's `_retry.json` retries SQS's
    /// `RequestThrottled` 403 and every SDK counts the code as a throttling error.
    RequestThrottled {
        code: "RequestThrottled", json: "RequestThrottled", query: "RequestThrottled",
        Sender, 403,
        "{reason}",
    }
    /// The operation is not supported on this queue (400).
    UnsupportedOperation {
        code: "UnsupportedOperation", json: "UnsupportedOperation",
        query: "AWS.SimpleQueueService.UnsupportedOperation", Sender, 400,
        "{reason}",
    }
    /// A move task or other resource does not exist (404).
    ResourceNotFoundException {
        code: "ResourceNotFoundException", json: "ResourceNotFoundException",
        query: "ResourceNotFoundException", Sender, 404,
        "{reason}",
    }
    // --- SNS (codes and statuses from the botocore model's `error` traits)
    /// SNS: the topic, subscription or endpoint does not exist (404).
    NotFound {
        code: "NotFound", json: "NotFoundException", query: "NotFound", Sender, 404,
        "{resource} does not exist",
    }
    /// SNS: a parameter is invalid (400).
    InvalidParameter {
        code: "InvalidParameter", json: "InvalidParameterException",
        query: "InvalidParameter", Sender, 400,
        "Invalid parameter: {parameter}",
    }
    /// SNS: a required structure or map is missing, or a required member inside one
    /// (400, "1 validation error detected: ...").
    ValidationError {
        code: "ValidationError", json: "ValidationException", query: "ValidationError",
        Sender, 400,
        "1 validation error detected: Value null at '{path}' failed to satisfy constraint: Member must not be null",
    }
    /// SNS: Publish to a platform endpoint whose `Enabled` attribute is `false` (400; the
    /// botocore model's `EndpointDisabledException`, message as AWS words it).
    EndpointDisabled {
        code: "EndpointDisabled", json: "EndpointDisabledException",
        query: "EndpointDisabled", Sender, 400,
        "Endpoint is disabled",
    }
    /// SNS: Publish to a platform endpoint whose application's `Enabled` attribute is
    /// `false` (400; the botocore model's `PlatformApplicationDisabledException`, "Exception
    /// error indicating platform application disabled."; AWS's message is not recorded:
    /// these words are Loft's, after EndpointDisabled's).
    PlatformApplicationDisabled {
        code: "PlatformApplicationDisabled", json: "PlatformApplicationDisabledException",
        query: "PlatformApplicationDisabled", Sender, 400,
        "Platform application is disabled",
    }
    /// SNS: authorisation failed (403).
    AuthorizationError {
        code: "AuthorizationError", json: "AuthorizationErrorException",
        query: "AuthorizationError", Sender, 403,
        "{reason}",
    }
    /// SNS: a parameter value is invalid (400; the model's `InvalidParameterValueException`).
    ParameterValueInvalid {
        code: "ParameterValueInvalid", json: "InvalidParameterValueException",
        query: "ParameterValueInvalid", Sender, 400,
        "{reason}",
    }
    /// SNS: the filter policy is too complex for the account (403).
    FilterPolicyLimitExceeded {
        code: "FilterPolicyLimitExceeded", json: "FilterPolicyLimitExceededException",
        query: "FilterPolicyLimitExceeded", Sender, 403,
        "Filter policy scope exceeded: {reason}",
    }
    /// SNS tagging: the resource does not exist (404; TagResource, UntagResource and
    /// ListTagsForResource model this, not `NotFound`).
    SnsResourceNotFound {
        code: "ResourceNotFound", json: "ResourceNotFoundException",
        query: "ResourceNotFound", Sender, 404,
        "Resource does not exist",
    }
    /// SNS VerifySMSSandboxPhoneNumber: the one-time password is not the one sent (400;
    /// the botocore model's `VerificationException`, which names no other code).
    VerificationException {
        code: "VerificationException", json: "VerificationException",
        query: "VerificationException", Sender, 400,
        "{reason}",
    }
    /// SNS ListOriginationNumbers: a parameter outside its bounds (400; the botocore
    /// model's `ValidationException`, code `ValidationException`, unlike the common
    /// `ValidationError`).
    SnsValidationException {
        code: "ValidationException", json: "ValidationException",
        query: "ValidationException", Sender, 400,
        "{reason}",
    }
    /// SNS tagging: more than 50 tags on a resource (400).
    TagLimitExceeded {
        code: "TagLimitExceeded", json: "TagLimitExceededException",
        query: "TagLimitExceeded", Sender, 400,
        "Could not complete request: tag quota of per resource exceeded",
    }
    /// SNS: the account already has the most topics allowed (403).
    TopicLimitExceeded {
        code: "TopicLimitExceeded", json: "TopicLimitExceededException",
        query: "TopicLimitExceeded", Sender, 403,
        "Topic already exists or topic limit exceeded",
    }
    /// SNS PublishBatch without entries (400).
    SnsEmptyBatchRequest {
        code: "EmptyBatchRequest", json: "EmptyBatchRequestException",
        query: "EmptyBatchRequest", Sender, 400,
        "The batch request doesn't contain any entries",
    }
    /// SNS PublishBatch of more than 10 entries (400).
    SnsTooManyEntriesInBatchRequest {
        code: "TooManyEntriesInBatchRequest", json: "TooManyEntriesInBatchRequestException",
        query: "TooManyEntriesInBatchRequest", Sender, 400,
        "The batch request contains more entries than permissible.",
    }
    /// Two SNS PublishBatch entries share an Id (400).
    SnsBatchEntryIdsNotDistinct {
        code: "BatchEntryIdsNotDistinct", json: "BatchEntryIdsNotDistinctException",
        query: "BatchEntryIdsNotDistinct", Sender, 400,
        "Two or more batch entries in the request have the same Id.",
    }
    /// An SNS PublishBatch entry Id is malformed (400).
    SnsInvalidBatchEntryId {
        code: "InvalidBatchEntryId", json: "InvalidBatchEntryIdException",
        query: "InvalidBatchEntryId", Sender, 400,
        "The Id of a batch entry in the batch request {reason}: {id}",
    }
    /// An SNS PublishBatch's messages together exceed 256 KiB (400).
    SnsBatchRequestTooLong {
        code: "BatchRequestTooLong", json: "BatchRequestTooLongException",
        query: "BatchRequestTooLong", Sender, 400,
        "The length of all the messages put together is more than the limit.",
    }
    // --- Lambda (REST-JSON; `json` is the `x-amzn-ErrorType` and the botocore error shape,
    // `query` only keeps the table's Query codes distinct: Lambda has no Query protocol)
    /// Lambda: a parameter is out of range or malformed (400).
    LambdaInvalidParameterValue {
        code: "InvalidParameterValueException", json: "InvalidParameterValueException",
        query: "Lambda.InvalidParameterValueException", Sender, 400,
        "{reason}",
    }
    /// Lambda: the function or event source mapping does not exist (404).
    LambdaResourceNotFound {
        code: "ResourceNotFoundException", json: "ResourceNotFoundException",
        query: "Lambda.ResourceNotFoundException", Sender, 404,
        "{reason}",
    }
    /// Lambda: the resource exists already, or is changing (409).
    LambdaResourceConflict {
        code: "ResourceConflictException", json: "ResourceConflictException",
        query: "Lambda.ResourceConflictException", Sender, 409,
        "{reason}",
    }
    /// Lambda: the resource is in use by another operation (400).
    LambdaResourceInUse {
        code: "ResourceInUseException", json: "ResourceInUseException",
        query: "Lambda.ResourceInUseException", Sender, 400,
        "{reason}",
    }
    // --- authentication (SigV4), common to SQS and SNS. AWS's generic Common Errors page
    // lists some of these as 400; SQS and SNS answer authentication failures with 403, and
    // so does Loft, for every one of them.
    /// The request carries no signature: no `Authorization` header and no presigned
    /// `X-Amz-Signature` (403).
    MissingAuthenticationToken {
        code: "MissingAuthenticationToken", json: "MissingAuthenticationToken",
        query: "MissingAuthenticationToken", Sender, 403,
        "Request is missing Authentication Token",
    }
    /// The access key id is not one Loft knows (403).
    InvalidClientTokenId {
        code: "InvalidClientTokenId", json: "InvalidClientTokenId",
        query: "InvalidClientTokenId", Sender, 403,
        "The security token included in the request is invalid.",
    }
    /// The signature is wrong, or the request's date is outside the 15-minute window
    /// ("Signature expired: ..."), as SQS and SNS report it (403).
    SignatureDoesNotMatch {
        code: "SignatureDoesNotMatch", json: "SignatureDoesNotMatch",
        query: "SignatureDoesNotMatch", Sender, 403,
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
    }
    /// The `Authorization` header or the presigned parameters are malformed or incomplete
    /// (403).
    IncompleteSignature {
        code: "IncompleteSignature", json: "IncompleteSignature",
        query: "IncompleteSignature", Sender, 403,
        "{reason}",
    }
    /// A presigned request used after its `X-Amz-Expires` (403).
    RequestExpired {
        code: "RequestExpired", json: "RequestExpired", query: "RequestExpired", Sender, 403,
        "Request has expired.",
    }
}

impl ErrorCode {
    /// The AWS code ([`ErrorRow::code`]).
    pub fn aws_code(self) -> &'static str {
        self.row().code
    }

    /// The SQS JSON protocol's `__type` shape name ([`ErrorRow::json_type`]).
    pub fn json_type(self) -> &'static str {
        self.row().json_type
    }

    /// The Query code ([`ErrorRow::query_code`]): what the Query protocols' `<Code>` and the
    /// JSON protocol's `x-amzn-query-error` header carry.
    pub fn query_code(self) -> &'static str {
        self.row().query_code
    }

    /// Sender or Receiver ([`ErrorRow::fault`]).
    pub fn fault(self) -> Fault {
        self.row().fault
    }

    /// Whether the caller (Sender) rather than the service (Receiver) is at fault.
    pub fn is_sender_fault(self) -> bool {
        self.row().fault == Fault::Sender
    }

    /// The HTTP status ([`ErrorRow::status`]).
    pub fn http_status(self) -> u16 {
        self.row().status
    }

    /// Whether this is one of the authentication (SigV4) failures.
    pub fn is_authentication(self) -> bool {
        use ErrorCode::*;
        matches!(
            self,
            MissingAuthenticationToken
                | InvalidClientTokenId
                | SignatureDoesNotMatch
                | IncompleteSignature
                | RequestExpired
        )
    }
}

/// Fills `{name}` placeholders of `template` from `params`; a placeholder without a
/// parameter stays as written.
fn render(template: &str, params: &[(&str, &dyn fmt::Display)]) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match params.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => out.push_str(&v.to_string()),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// An error with its code from the table and a human-readable message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Which row of the table.
    pub code: ErrorCode,
    /// What went wrong, for people; shown as `Message` / `message` / `error`.
    pub message: String,
}

impl Error {
    /// An error of `code` with a message of its own (AWS words many errors of one code
    /// differently: each `InvalidParameterValue` names its rule).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// An error of `code` with its row's message, the template's `{name}` placeholders
    /// filled from `params`: `Error::with(TooManyEntriesInBatchRequest, &[("sent", &20)])`.
    pub fn with(code: ErrorCode, params: &[(&str, &dyn fmt::Display)]) -> Self {
        Error::new(code, render(code.row().message, params))
    }

    /// The message as the Query protocol words it: the row's
    /// [`ErrorRow::query_message`] when this error carries the row's own message, else the
    /// message itself.
    pub fn query_message(&self) -> &str {
        let row = self.code.row();
        match row.query_message {
            Some(q) if self.message == row.message => q,
            _ => &self.message,
        }
    }

    /// `QueueDoesNotExist` with AWS's message.
    pub fn no_queue() -> Self {
        Error::with(ErrorCode::QueueDoesNotExist, &[])
    }

    /// `InvalidParameterValue` with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidParameterValue, message)
    }

    /// `InvalidParameterValue` in AWS's usual words: "Value {value} for parameter
    /// {parameter} is invalid. Reason: {reason}."
    pub fn value_invalid(
        value: impl fmt::Display,
        parameter: impl fmt::Display,
        reason: impl fmt::Display,
    ) -> Self {
        Error::with(
            ErrorCode::InvalidParameterValue,
            &[
                ("value", &value),
                ("parameter", &parameter),
                ("reason", &reason),
            ],
        )
    }

    /// `MissingParameter` for parameter `name`.
    pub fn missing(name: &str) -> Self {
        Error::with(ErrorCode::MissingParameter, &[("parameter", &name)])
    }

    /// `InternalError` for a storage failure; `detail` is logged, not shown.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "internal error");
        Error::with(ErrorCode::InternalError, &[])
    }

    /// `ServiceUnavailable` (503) for a write that storage could not take because it is
    /// full: no space left on the device, or a file-size limit. Nothing was changed; the
    /// request may be retried once space is freed.
    pub fn storage_full() -> Self {
        Error::with(
            ErrorCode::ServiceUnavailable,
            &[("reason", &"storage is full (no space left on the device, or a file size limit). Retry when space is freed.")],
        )
    }

    /// `ServiceUnavailable` (503) for a write refused because the database is read-only.
    /// Nothing was changed.
    pub fn storage_read_only() -> Self {
        Error::with(
            ErrorCode::ServiceUnavailable,
            &[(
                "reason",
                &"storage is read-only (the database file cannot be written).",
            )],
        )
    }

    /// `ServiceUnavailable` (503) for an I/O error of storage (a failed read or write of
    /// the database file). Nothing was changed; `detail` is logged, not shown.
    pub fn storage_io(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "storage I/O error");
        Error::with(
            ErrorCode::ServiceUnavailable,
            &[(
                "reason",
                &"storage failed to read or write the database (I/O error).",
            )],
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.aws_code(), self.message)
    }
}

impl std::error::Error for Error {}

/// The result type of the service and the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Each code's names are set and its status is one AWS uses (401 only for Loft's own
    /// routes, [`ErrorCode::Unauthorized`]); no two rows share a
    /// Query code unless they are the same AWS error seen by the seeds' API (`NotFound`).
    #[test]
    fn every_row_is_complete_and_distinct() {
        let mut query_codes = HashSet::new();
        for &code in ErrorCode::ALL {
            let row = code.row();
            assert!(
                !row.code.is_empty() && !row.json_type.is_empty(),
                "{code:?}"
            );
            assert!(
                !row.query_code.is_empty() && !row.message.is_empty(),
                "{code:?}"
            );
            assert!(
                [400, 401, 403, 404, 405, 408, 409, 413, 500, 503].contains(&row.status),
                "{code:?}"
            );
            assert_eq!(
                row.fault == Fault::Receiver,
                row.status >= 500,
                "{code:?}: Receiver faults are the 5xx ones"
            );
            if code != ErrorCode::NotFoundRoute {
                assert!(query_codes.insert(row.query_code), "{code:?} repeats");
            }
        }
    }

    /// The JSON `__type` and Query code of the errors AWS's recorded responses show.
    #[test]
    fn recorded_codes() {
        for (code, json, query) in [
            (
                ErrorCode::InvalidParameterValue,
                "InvalidParameterValueException",
                "InvalidParameterValue",
            ),
            (
                ErrorCode::MissingParameter,
                "MissingRequiredParameterException",
                "MissingParameter",
            ),
            (
                ErrorCode::QueueDoesNotExist,
                "QueueDoesNotExist",
                "AWS.SimpleQueueService.NonExistentQueue",
            ),
            (
                ErrorCode::QueueNameExists,
                "QueueNameExists",
                "QueueAlreadyExists",
            ),
            (
                ErrorCode::TooManyEntriesInBatchRequest,
                "TooManyEntriesInBatchRequest",
                "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            ),
        ] {
            assert_eq!((code.json_type(), code.query_code()), (json, query));
        }
    }

    #[test]
    fn templates_fill_their_parameters() {
        let e = Error::with(ErrorCode::TooManyEntriesInBatchRequest, &[("sent", &20)]);
        assert_eq!(
            e.message,
            "Maximum number of entries per request are 10. You have sent 20."
        );
        assert_eq!(
            Error::value_invalid(-1, "WaitTimeSeconds", "Must be >= 0 and <= 20, if provided")
                .message,
            "Value -1 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."
        );
        assert_eq!(render("a {x} {y} {", &[("x", &1)]), "a 1 {y} {");
    }

    #[test]
    fn query_wording_applies_to_the_rows_own_message_only() {
        let e = Error::no_queue();
        assert_eq!(e.message, "The specified queue does not exist.");
        assert_eq!(
            e.query_message(),
            "The specified queue does not exist for this wsdl version."
        );
        let other = Error::new(ErrorCode::QueueDoesNotExist, "custom");
        assert_eq!(other.query_message(), "custom");
    }
}
