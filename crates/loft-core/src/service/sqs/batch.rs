//! The rules of batch requests, SQS's (SendMessageBatch, DeleteMessageBatch,
//! ChangeMessageVisibilityBatch) and SNS's (PublishBatch): how many entries, which ids, how
//! large, and each entry's outcome under its id.
//!
//! The protocol adapters hand over every entry as they read it ([`BatchEntry`]): its `Id`
//! and the entry, or the error that kept it from being read. The checks of the whole batch
//! come first, in AWS's order: at least one entry, at most 10, every entry with an `Id`,
//! each id well formed, all ids distinct. Then each entry that could not be read fails on
//! its own, and the others run.
//!
//! Sources: the SQS API Reference (SendMessageBatch, DeleteMessageBatch,
//! ChangeMessageVisibilityBatch: "Errors"), the SNS API Reference (PublishBatch), AWS's
//! recorded responses ("Maximum number of entries per request are 10. You have sent 20.";
//! SNS "The Id of a batch entry in the batch request contains an impermissible character:
//! ...", "... is too long: ...").

use super::messages::{SendMessage, SendResult};
use super::Sqs;
use crate::error::{Error, ErrorCode, Result};

/// Most entries of a batch request (SQS and SNS).
pub const MAX_BATCH_ENTRIES: usize = 10;

/// Longest batch entry id, characters.
pub const MAX_BATCH_ID: usize = 80;

/// One entry of a batch request as the protocol read it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchEntry<T> {
    /// The entry's `Id`, when it has one.
    pub id: Option<String>,
    /// The entry, or why it could not be read.
    pub entry: Result<T>,
}

/// Each entry's outcome, in the request's order, under its id.
pub type BatchOutcome<T> = Vec<(String, Result<T>)>;

/// Which service's batch rules and words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    /// An SQS batch; `entry` is the Query name of its entries
    /// (`SendMessageBatchRequestEntry`), which AWS's EmptyBatchRequest message names.
    Sqs {
        /// The entry shape's name.
        entry: &'static str,
    },
    /// SNS PublishBatch.
    Sns,
}

fn id_char_ok(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Checks a batch as a whole and returns each entry's id.
///
/// Errors, in this order: `EmptyBatchRequest`; `TooManyEntriesInBatchRequest` (SQS: "You
/// have sent N."); `MissingParameter` for an entry without `Id`; `InvalidBatchEntryId`
/// (1 to 80 alphanumerics, hyphens and underscores); `BatchEntryIdsNotDistinct`. SNS uses
/// its own codes of these rows (`SnsEmptyBatchRequest`, ...).
pub fn check_batch<T>(entries: &[BatchEntry<T>], kind: BatchKind) -> Result<Vec<String>> {
    let sns = kind == BatchKind::Sns;
    if entries.is_empty() {
        return Err(match kind {
            BatchKind::Sqs { entry } => {
                Error::with(ErrorCode::EmptyBatchRequest, &[("entry", &entry)])
            }
            BatchKind::Sns => Error::with(ErrorCode::SnsEmptyBatchRequest, &[]),
        });
    }
    if entries.len() > MAX_BATCH_ENTRIES {
        return Err(if sns {
            Error::with(ErrorCode::SnsTooManyEntriesInBatchRequest, &[])
        } else {
            Error::with(
                ErrorCode::TooManyEntriesInBatchRequest,
                &[("sent", &entries.len())],
            )
        });
    }
    let mut ids: Vec<String> = Vec::with_capacity(entries.len());
    for e in entries {
        let id = e.id.as_deref().ok_or_else(|| Error::missing("Id"))?;
        let too_long = id.chars().count() > MAX_BATCH_ID;
        let bad_char = id.is_empty() || !id.bytes().all(id_char_ok);
        if too_long || bad_char {
            return Err(if sns {
                let reason = if too_long {
                    "is too long"
                } else {
                    "contains an impermissible character"
                };
                Error::with(
                    ErrorCode::SnsInvalidBatchEntryId,
                    &[("reason", &reason), ("id", &id)],
                )
            } else {
                Error::with(ErrorCode::InvalidBatchEntryId, &[])
            });
        }
        if ids.iter().any(|i| i == id) {
            return Err(if sns {
                Error::with(ErrorCode::SnsBatchEntryIdsNotDistinct, &[])
            } else {
                Error::with(ErrorCode::BatchEntryIdsNotDistinct, &[("id", &id)])
            });
        }
        ids.push(id.to_owned());
    }
    Ok(ids)
}

/// Each entry's id and, once known, its outcome.
type Pending<R> = Vec<(String, Option<Result<R>>)>;

/// Splits checked entries into the readable ones (with their positions) and the outcome
/// list with the unreadable ones already failed.
fn split<T, R>(entries: Vec<BatchEntry<T>>, ids: Vec<String>) -> (Vec<(usize, T)>, Pending<R>) {
    let mut readable = Vec::with_capacity(entries.len());
    let mut outcome = Vec::with_capacity(entries.len());
    for (i, (e, id)) in entries.into_iter().zip(ids).enumerate() {
        match e.entry {
            Ok(t) => {
                readable.push((i, t));
                outcome.push((id, None));
            }
            Err(err) => outcome.push((id, Some(Err(err)))),
        }
    }
    (readable, outcome)
}

/// Puts the results of the readable entries back into their places.
fn join<R>(
    mut outcome: Pending<R>,
    positions: Vec<usize>,
    results: Vec<Result<R>>,
) -> BatchOutcome<R> {
    for (i, r) in positions.into_iter().zip(results) {
        outcome[i].1 = Some(r);
    }
    outcome
        .into_iter()
        .map(|(id, r)| {
            (
                id,
                r.unwrap_or_else(|| Err(Error::internal("batch entry without a result"))),
            )
        })
        .collect()
}

impl Sqs {
    /// SendMessageBatch: [`check_batch`], then each readable entry sent as
    /// [`Sqs::send_message_batch`] sends them (one transaction).
    ///
    /// Errors for the whole call: those of [`check_batch`], `QueueDoesNotExist`,
    /// `BatchRequestTooLong`.
    pub async fn send_message_batch_entries(
        &self,
        queue_name: &str,
        entries: Vec<BatchEntry<SendMessage>>,
    ) -> Result<BatchOutcome<SendResult>> {
        let ids = check_batch(
            &entries,
            BatchKind::Sqs {
                entry: "SendMessageBatchRequestEntry",
            },
        )?;
        let (readable, outcome) = split(entries, ids);
        let (positions, messages): (Vec<usize>, Vec<SendMessage>) = readable.into_iter().unzip();
        let results = self.send_message_batch(queue_name, messages).await?;
        Ok(join(outcome, positions, results))
    }

    /// DeleteMessageBatch of receipt handles: [`check_batch`], then
    /// [`Sqs::delete_message_batch`].
    ///
    /// Errors for the whole call: those of [`check_batch`], `QueueDoesNotExist`.
    pub async fn delete_message_batch_entries(
        &self,
        queue_name: &str,
        entries: Vec<BatchEntry<String>>,
    ) -> Result<BatchOutcome<()>> {
        let ids = check_batch(
            &entries,
            BatchKind::Sqs {
                entry: "DeleteMessageBatchRequestEntry",
            },
        )?;
        let (readable, outcome) = split(entries, ids);
        let (positions, handles): (Vec<usize>, Vec<String>) = readable.into_iter().unzip();
        let results = self.delete_message_batch(queue_name, &handles).await?;
        Ok(join(outcome, positions, results))
    }

    /// ChangeMessageVisibilityBatch of (receipt handle, timeout in seconds):
    /// [`check_batch`], then [`Sqs::change_visibility_batch`].
    ///
    /// Errors for the whole call: those of [`check_batch`], `QueueDoesNotExist`.
    pub async fn change_visibility_batch_entries(
        &self,
        queue_name: &str,
        entries: Vec<BatchEntry<(String, i64)>>,
    ) -> Result<BatchOutcome<()>> {
        let ids = check_batch(
            &entries,
            BatchKind::Sqs {
                entry: "ChangeMessageVisibilityBatchRequestEntry",
            },
        )?;
        let (readable, outcome) = split(entries, ids);
        let (positions, items): (Vec<usize>, Vec<(String, i64)>) = readable.into_iter().unzip();
        let results = self.change_visibility_batch(queue_name, &items).await?;
        Ok(join(outcome, positions, results))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(ids: &[Option<&str>]) -> Vec<BatchEntry<()>> {
        ids.iter()
            .map(|id| BatchEntry {
                id: id.map(str::to_owned),
                entry: Ok(()),
            })
            .collect()
    }

    const SQS: BatchKind = BatchKind::Sqs {
        entry: "SendMessageBatchRequestEntry",
    };

    #[test]
    fn counts_ids_and_their_words() {
        let e = check_batch(&entries(&[]), SQS).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::EmptyBatchRequest,
                "There should be at least one SendMessageBatchRequestEntry in the request."
            )
        );
        let twenty: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
        let many: Vec<Option<&str>> = twenty.iter().map(|s| Some(s.as_str())).collect();
        let e = check_batch(&entries(&many), SQS).unwrap_err();
        assert_eq!(
            e.message,
            "Maximum number of entries per request are 10. You have sent 20."
        );
        let e = check_batch(&entries(&many), BatchKind::Sns).unwrap_err();
        assert_eq!(e.code, ErrorCode::SnsTooManyEntriesInBatchRequest);
        let e = check_batch(&entries(&[Some("a"), None]), SQS).unwrap_err();
        assert_eq!(e.code, ErrorCode::MissingParameter);
        let e = check_batch(&entries(&[Some("msg@1")]), SQS).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidBatchEntryId);
        let e = check_batch(&entries(&[Some("message.id")]), BatchKind::Sns).unwrap_err();
        assert_eq!(
            e.message,
            "The Id of a batch entry in the batch request contains an impermissible character: message.id"
        );
        let long = "a".repeat(81);
        let e = check_batch(&entries(&[Some(&long)]), BatchKind::Sns).unwrap_err();
        assert!(e.message.contains("is too long"), "{}", e.message);
        let e = check_batch(&entries(&[Some("a"), Some("a")]), SQS).unwrap_err();
        assert_eq!(e.code, ErrorCode::BatchEntryIdsNotDistinct);
        assert_eq!(
            check_batch(&entries(&[Some("a"), Some("B-_9")]), SQS).unwrap(),
            vec!["a", "B-_9"]
        );
    }

    #[test]
    fn unreadable_entries_fail_in_place() {
        let batch = vec![
            BatchEntry {
                id: Some("a".into()),
                entry: Ok(1),
            },
            BatchEntry {
                id: Some("b".into()),
                entry: Err(Error::missing("MessageBody")),
            },
            BatchEntry {
                id: Some("c".into()),
                entry: Ok(3),
            },
        ];
        let ids = check_batch(&batch, SQS).unwrap();
        let (readable, outcome) = split::<i32, i32>(batch, ids);
        let positions: Vec<usize> = readable.iter().map(|(i, _)| *i).collect();
        let results = readable.into_iter().map(|(_, v)| Ok(v * 10)).collect();
        let joined = join(outcome, positions, results);
        assert_eq!(joined[0], ("a".into(), Ok(10)));
        assert_eq!(
            joined[1].1.as_ref().unwrap_err().code,
            ErrorCode::MissingParameter
        );
        assert_eq!(joined[2], ("c".into(), Ok(30)));
    }
}
