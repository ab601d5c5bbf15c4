//! SNS's `InvalidParameter` answers, shared by topics, subscriptions, publish, platform
//! applications, archive and replay: a leaf that imports no other part of the service.
//!
//! Source: SNS API Reference, the Errors of each action (`InvalidParameter`, HTTP 400,
//! "Indicates that a request parameter does not comply with the associated constraints");
//! the texts are AWS's recorded answers.

use crate::error::{Error, ErrorCode, Result};
use crate::names;

/// SNS's first check of an ARN parameter: at least six `:`-separated elements.
/// Errors: `InvalidParameter` "Invalid parameter: {param} Reason: An ARN must have at
/// least 6 elements, not N" (AWS's recorded answer).
pub(crate) fn check_arn_elements(param: &str, arn: &str) -> Result<()> {
    let n = names::arn_elements(arn);
    if n < 6 {
        return Err(invalid(&format!(
            "{param} Reason: An ARN must have at least 6 elements, not {n}"
        )));
    }
    Ok(())
}

/// `InvalidParameter` with the text "Invalid parameter: {what}", as SNS words it.
pub(crate) fn invalid(what: &str) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: {what}"),
    )
}
