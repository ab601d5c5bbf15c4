//! The one table of errors. Every adapter renders an [`Error`] in its own protocol's shape
//! from [`ErrorCode`]'s table: the AWS code string, the legacy Query code where it differs,
//! Sender or Receiver fault and the HTTP status. Nothing else invents error strings.
//!
//! Source: the SQS API Reference "Common Errors" and each operation's "Errors" section, the
//! botocore `sqs/2012-11-05` and `sns/2010-03-31` models.

use std::fmt;

/// Every error condition Loft reports, named as AWS names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    // --- common to the AWS query/json services
    /// A parameter has a value outside its allowed set or range (400).
    InvalidParameterValue,
    /// A required parameter is missing (400).
    MissingParameter,
    /// The action or operation is unknown (400).
    InvalidAction,
    /// The request is malformed: bad JSON, bad form encoding (400).
    MalformedRequest,
    /// A combination of parameters is not allowed (400).
    InvalidParameterCombination,
    /// Too many requests or too large a request (413 for bodies over the limit).
    RequestTooLarge,
    /// The request (head and body) did not arrive in time: the client stalled (408). Named
    /// as AWS's front ends name it (`RequestTimeout`, S3's "Your socket connection to the
    /// server was not read from or written to within the timeout period").
    RequestTimeout,
    /// The route does not exist on the native API (404).
    NotFoundRoute,
    /// The HTTP method is not allowed on this route (405).
    MethodNotAllowed,
    /// Storage failed; the request may be retried (500).
    InternalError,
    /// The service is shutting down or storage is unavailable (503).
    ServiceUnavailable,
    // --- SQS
    /// The queue does not exist (400, legacy `AWS.SimpleQueueService.NonExistentQueue`).
    QueueDoesNotExist,
    /// A queue with this name exists with other attributes (400, `QueueAlreadyExists`).
    QueueNameExists,
    /// A queue of this name was deleted less than 60 s ago (400).
    QueueDeletedRecently,
    /// A purge ran on this queue in the last 60 s (403).
    PurgeQueueInProgress,
    /// The receipt handle is not valid for this queue (400).
    ReceiptHandleIsInvalid,
    /// The receipt handle has an invalid format (400).
    InvalidIdFormat,
    /// The message is not in flight (400).
    MessageNotInflight,
    /// Unknown attribute name (400).
    InvalidAttributeName,
    /// Attribute value out of range or malformed (400).
    InvalidAttributeValue,
    /// The message contains characters outside the allowed set (400).
    InvalidMessageContents,
    /// Batch has no entries (400).
    EmptyBatchRequest,
    /// Batch has more than 10 entries (400).
    TooManyEntriesInBatchRequest,
    /// Two batch entries share an id (400).
    BatchEntryIdsNotDistinct,
    /// A batch entry id is malformed (400).
    InvalidBatchEntryId,
    /// The batch's messages together exceed the size limit (400).
    BatchRequestTooLong,
    /// A limit was reached: in-flight messages, tags, permissions (403).
    OverLimit,
    /// The operation is not supported on this queue (400).
    UnsupportedOperation,
    /// A move task or other resource does not exist (404).
    ResourceNotFoundException,
    // --- SNS
    /// SNS: the topic, subscription or endpoint does not exist (404).
    NotFound,
    /// SNS: a parameter is invalid (400).
    InvalidParameter,
    /// SNS: authorisation failed (403).
    AuthorizationError,
    /// SNS: a parameter value is invalid (400, `ParameterValueInvalid`).
    ParameterValueInvalid,
    /// SNS: the filter policy is too complex for the account (403).
    FilterPolicyLimitExceeded,
    /// SNS tagging: the resource does not exist (404, `ResourceNotFound`; TagResource,
    /// UntagResource and ListTagsForResource model this, not `NotFound`).
    SnsResourceNotFound,
    /// SNS tagging: more than 50 tags on a resource (400, `TagLimitExceeded`).
    TagLimitExceeded,
    /// SNS: the account already has the most topics allowed (403).
    TopicLimitExceeded,
    // --- authentication (SigV4), common to SQS and SNS. AWS's generic Common Errors page
    // lists some of these as 400; SQS and SNS answer authentication failures with 403, and
    // so does Loft, for every one of them.
    /// The request carries no signature: no `Authorization` header and no presigned
    /// `X-Amz-Signature` (403).
    MissingAuthenticationToken,
    /// The access key id is not one Loft knows (403, "The security token included in the
    /// request is invalid.").
    InvalidClientTokenId,
    /// The signature is wrong, or the request's date is outside the 15-minute window
    /// ("Signature expired: ..."), as SQS and SNS report it (403).
    SignatureDoesNotMatch,
    /// The `Authorization` header or the presigned parameters are malformed or incomplete
    /// (403).
    IncompleteSignature,
    /// A presigned request used after its `X-Amz-Expires` (403).
    RequestExpired,
}

impl ErrorCode {
    /// The modern AWS code: the JSON protocol's `__type` shape name.
    pub fn aws_code(self) -> &'static str {
        use ErrorCode::*;
        match self {
            InvalidParameterValue => "InvalidParameterValue",
            MissingParameter => "MissingParameter",
            InvalidAction => "InvalidAction",
            MalformedRequest => "MalformedQueryString",
            InvalidParameterCombination => "InvalidParameterCombination",
            RequestTooLarge => "RequestEntityTooLarge",
            RequestTimeout => "RequestTimeout",
            NotFoundRoute => "NotFound",
            MethodNotAllowed => "MethodNotAllowed",
            InternalError => "InternalError",
            ServiceUnavailable => "ServiceUnavailable",
            QueueDoesNotExist => "QueueDoesNotExist",
            QueueNameExists => "QueueNameExists",
            QueueDeletedRecently => "QueueDeletedRecently",
            PurgeQueueInProgress => "PurgeQueueInProgress",
            ReceiptHandleIsInvalid => "ReceiptHandleIsInvalid",
            InvalidIdFormat => "InvalidIdFormat",
            MessageNotInflight => "MessageNotInflight",
            InvalidAttributeName => "InvalidAttributeName",
            InvalidAttributeValue => "InvalidAttributeValue",
            InvalidMessageContents => "InvalidMessageContents",
            EmptyBatchRequest => "EmptyBatchRequest",
            TooManyEntriesInBatchRequest => "TooManyEntriesInBatchRequest",
            BatchEntryIdsNotDistinct => "BatchEntryIdsNotDistinct",
            InvalidBatchEntryId => "InvalidBatchEntryId",
            BatchRequestTooLong => "BatchRequestTooLong",
            OverLimit => "OverLimit",
            UnsupportedOperation => "UnsupportedOperation",
            ResourceNotFoundException => "ResourceNotFoundException",
            NotFound => "NotFound",
            InvalidParameter => "InvalidParameter",
            AuthorizationError => "AuthorizationError",
            ParameterValueInvalid => "ParameterValueInvalid",
            FilterPolicyLimitExceeded => "FilterPolicyLimitExceeded",
            SnsResourceNotFound => "ResourceNotFound",
            TagLimitExceeded => "TagLimitExceeded",
            TopicLimitExceeded => "TopicLimitExceeded",
            MissingAuthenticationToken => "MissingAuthenticationToken",
            InvalidClientTokenId => "InvalidClientTokenId",
            SignatureDoesNotMatch => "SignatureDoesNotMatch",
            IncompleteSignature => "IncompleteSignature",
            RequestExpired => "RequestExpired",
        }
    }

    /// The legacy Query code: what the Query protocol's `<Code>` carries and what the JSON
    /// protocol's `x-amzn-query-error` header names. Equal to [`Self::aws_code`] unless AWS
    /// gave the error a different legacy name.
    pub fn query_code(self) -> &'static str {
        use ErrorCode::*;
        match self {
            QueueDoesNotExist => "AWS.SimpleQueueService.NonExistentQueue",
            QueueNameExists => "QueueAlreadyExists",
            QueueDeletedRecently => "AWS.SimpleQueueService.QueueDeletedRecently",
            PurgeQueueInProgress => "AWS.SimpleQueueService.PurgeQueueInProgress",
            MessageNotInflight => "AWS.SimpleQueueService.MessageNotInflight",
            EmptyBatchRequest => "AWS.SimpleQueueService.EmptyBatchRequest",
            TooManyEntriesInBatchRequest => "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
            BatchEntryIdsNotDistinct => "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
            InvalidBatchEntryId => "AWS.SimpleQueueService.InvalidBatchEntryId",
            BatchRequestTooLong => "AWS.SimpleQueueService.BatchRequestTooLong",
            UnsupportedOperation => "AWS.SimpleQueueService.UnsupportedOperation",
            other => other.aws_code(),
        }
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

    /// Whether the caller (Sender) or the service (Receiver) is at fault.
    pub fn is_sender_fault(self) -> bool {
        !matches!(
            self,
            ErrorCode::InternalError | ErrorCode::ServiceUnavailable
        )
    }

    /// The HTTP status AWS answers with.
    pub fn http_status(self) -> u16 {
        use ErrorCode::*;
        match self {
            PurgeQueueInProgress
            | OverLimit
            | AuthorizationError
            | FilterPolicyLimitExceeded
            | TopicLimitExceeded
            | MissingAuthenticationToken
            | InvalidClientTokenId
            | SignatureDoesNotMatch
            | IncompleteSignature
            | RequestExpired => 403,
            NotFound | NotFoundRoute | ResourceNotFoundException | SnsResourceNotFound => 404,
            MethodNotAllowed => 405,
            RequestTimeout => 408,
            RequestTooLarge => 413,
            InternalError => 500,
            ServiceUnavailable => 503,
            _ => 400,
        }
    }
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
    /// An error of `code` with `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// `QueueDoesNotExist` with AWS's message.
    pub fn no_queue() -> Self {
        Error::new(
            ErrorCode::QueueDoesNotExist,
            "The specified queue does not exist.",
        )
    }

    /// `InvalidParameterValue` with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidParameterValue, message)
    }

    /// `MissingParameter` for parameter `name`.
    pub fn missing(name: &str) -> Self {
        Error::new(
            ErrorCode::MissingParameter,
            format!("The request must contain the parameter {name}."),
        )
    }

    /// `InternalError` for a storage failure; `detail` is logged, not shown.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "internal error");
        Error::new(
            ErrorCode::InternalError,
            "We encountered an internal error. Please try again.",
        )
    }
}

impl Error {
    /// `ServiceUnavailable` (503) for a write that storage could not take because it is
    /// full: no space left on the device, or a file-size limit. Nothing was changed; the
    /// request may be retried once space is freed.
    pub fn storage_full() -> Self {
        Error::new(
            ErrorCode::ServiceUnavailable,
            "The request was not applied: storage is full (no space left on the device, or a file size limit). Retry when space is freed.",
        )
    }

    /// `ServiceUnavailable` (503) for a write refused because the database is read-only.
    /// Nothing was changed.
    pub fn storage_read_only() -> Self {
        Error::new(
            ErrorCode::ServiceUnavailable,
            "The request was not applied: storage is read-only (the database file cannot be written).",
        )
    }

    /// `ServiceUnavailable` (503) for an I/O error of storage (a failed read or write of
    /// the database file). Nothing was changed; `detail` is logged, not shown.
    pub fn storage_io(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "storage I/O error");
        Error::new(
            ErrorCode::ServiceUnavailable,
            "The request was not applied: storage failed to read or write the database (I/O error).",
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
