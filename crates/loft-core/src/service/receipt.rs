//! Receipt handles: an opaque string naming one receive of one message.
//!
//! A handle is the URL-safe base64 of `{queue_id}:{seq}:{token}`; the token changes on every
//! receive, so each receive gives a new handle (SQS Developer Guide, "Queue and message
//! identifiers").

use base64::Engine;

use crate::error::{Error, ErrorCode, Result};

/// The parts of a receipt handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Store id of the queue the message was received from.
    pub queue_id: i64,
    /// The message's store sequence number.
    pub seq: i64,
    /// The receive's token.
    pub token: i64,
}

impl Receipt {
    /// Encodes the handle.
    pub fn encode(&self) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("{}:{}:{}", self.queue_id, self.seq, self.token))
    }

    /// Decodes a handle. Errors: `ReceiptHandleIsInvalid` for anything Loft did not issue.
    pub fn decode(handle: &str) -> Result<Receipt> {
        let invalid = || {
            Error::new(
                ErrorCode::ReceiptHandleIsInvalid,
                format!("The input receipt handle \"{handle}\" is not a valid receipt handle."),
            )
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(handle.trim())
            .map_err(|_| invalid())?;
        let text = String::from_utf8(bytes).map_err(|_| invalid())?;
        let mut parts = text.split(':').map(|p| p.parse::<i64>());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Ok(queue_id)), Some(Ok(seq)), Some(Ok(token)), None) => Ok(Receipt {
                queue_id,
                seq,
                token,
            }),
            _ => Err(invalid()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let r = Receipt {
            queue_id: 3,
            seq: 99,
            token: 123456789,
        };
        assert_eq!(Receipt::decode(&r.encode()).unwrap(), r);
        assert_eq!(
            Receipt::decode("garbage!").unwrap_err().code,
            ErrorCode::ReceiptHandleIsInvalid
        );
        assert!(Receipt::decode("").is_err());
    }
}
