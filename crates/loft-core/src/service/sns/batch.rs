//! PublishBatch's rules beyond those every batch shares ([`check_batch`]): the size of the
//! whole batch, and the batch run as [`Sns::publish_batch`] runs it.
//!
//! Source: the SNS API Reference (PublishBatch), AWS's recorded responses ("The length of
//! all the messages put together is more than the limit.").

use super::envelope::PublishRequest;
use super::publish::PublishResult;
use super::Sns;
use crate::error::{Error, ErrorCode, Result};
use crate::service::sqs::batch::{check_batch, BatchEntry, BatchKind, BatchOutcome};

/// Largest PublishBatch, bytes: every entry's Message and message attributes (names, data
/// types and values) together (256 KiB).
pub const MAX_PUBLISH_BATCH_BYTES: usize = 262_144;

/// Checks that a PublishBatch's Messages and their attributes (names, data types and
/// values) together are at most [`MAX_PUBLISH_BATCH_BYTES`], as AWS counts them.
///
/// Errors: `SnsBatchRequestTooLong`.
pub fn check_publish_batch_size(requests: &[PublishRequest]) -> Result<()> {
    let total: usize = requests
        .iter()
        .map(|r| r.message.len() + crate::message::attributes_size(&r.message_attributes))
        .sum();
    if total > MAX_PUBLISH_BATCH_BYTES {
        return Err(Error::with(ErrorCode::SnsBatchRequestTooLong, &[]));
    }
    Ok(())
}

impl Sns {
    /// PublishBatch: [`check_batch`], the whole batch's Messages and their attributes at
    /// most [`MAX_PUBLISH_BATCH_BYTES`] (as AWS counts them: a batch whose bodies fit and
    /// whose attributes push it over is refused), then [`Sns::publish_batch`].
    ///
    /// Errors for the whole call: those of [`check_batch`], an entry that could not be read
    /// (SNS refuses the whole batch), `SnsBatchRequestTooLong`, `NotFound`,
    /// `InvalidParameter`.
    pub async fn publish_batch_entries(
        &self,
        topic_arn: &str,
        entries: Vec<BatchEntry<PublishRequest>>,
    ) -> Result<BatchOutcome<PublishResult>> {
        let ids = check_batch(&entries, BatchKind::Sns)?;
        let requests = entries
            .into_iter()
            .map(|e| e.entry)
            .collect::<Result<Vec<_>>>()?;
        check_publish_batch_size(&requests)?;
        let results = self.publish_batch(topic_arn, requests).await?;
        Ok(ids.into_iter().zip(results).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(message: String, attributes: crate::message::MessageAttributes) -> PublishRequest {
        PublishRequest {
            message,
            subject: None,
            message_structure: None,
            message_attributes: attributes,
            ..PublishRequest::default()
        }
    }

    /// AWS's recorded PublishBatch: bodies of 131,072 and 131,073 bytes are refused, and so
    /// are bodies that fit whose attributes push the batch over 256 KiB.
    #[test]
    fn publish_batches_count_bodies_and_attributes() {
        use crate::message::{MessageAttributeValue, MessageAttributes};
        let half = MAX_PUBLISH_BATCH_BYTES / 2;
        let e = check_publish_batch_size(&[
            publish("a".repeat(half), Default::default()),
            publish("b".repeat(half + 1), Default::default()),
        ])
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::SnsBatchRequestTooLong);
        assert_eq!(
            e.message,
            "The length of all the messages put together is more than the limit."
        );
        let attrs = MessageAttributes::from([(
            "attr1".to_string(),
            MessageAttributeValue {
                data_type: "Number".into(),
                string_value: Some("1".into()),
                binary_value: None,
            },
        )]);
        let body = "a".repeat(MAX_PUBLISH_BATCH_BYTES - "attr1Number1".len());
        assert_eq!(
            check_publish_batch_size(&[publish(body.clone(), attrs.clone())]),
            Ok(())
        );
        let e = check_publish_batch_size(&[
            publish(body, attrs),
            publish("b".into(), Default::default()),
        ])
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::SnsBatchRequestTooLong);
    }
}
