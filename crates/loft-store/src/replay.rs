//! What both engines share of SNS message replay: which archived messages a replay reads
//! ([`ArchiveWindow`]), and leaving out of a FIFO topic's live fan-out the copies of
//! subscriptions whose replay holds live messages
//! ([`loft_core::model::FifoPublishEntry::subscriptions`]).

use std::collections::HashSet;

use loft_core::model::{NewMessage, SentMessage};

/// Which messages of a FIFO topic's archive [`loft_core::store::Store::archived_messages`]
/// reads, as each engine's statement takes them: up to `limit` of topic `topic_id` with a
/// sequence number above `after_sequence`, published at or after `from_ms` and (with
/// `until_ms`) at or before `until_ms`, not expired at `now_ms`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArchiveWindow {
    pub topic_id: i64,
    pub after_sequence: i64,
    pub from_ms: i64,
    pub until_ms: Option<i64>,
    pub now_ms: i64,
    pub limit: u32,
}

/// Splits the copies `built` of one entry: the ones to store, and for each copy whether it
/// was held back (its subscription, by position in `subscriptions`, is in `held`).
pub(crate) fn drop_held(
    built: Vec<(i64, NewMessage)>,
    subscriptions: &[String],
    held: &HashSet<String>,
) -> (Vec<(i64, NewMessage)>, Vec<bool>) {
    if held.is_empty() {
        let n = built.len();
        return (built, vec![false; n]);
    }
    let mut kept = Vec::with_capacity(built.len());
    let mut is_held = Vec::with_capacity(built.len());
    for (i, copy) in built.into_iter().enumerate() {
        let hold = subscriptions.get(i).is_some_and(|s| held.contains(s));
        is_held.push(hold);
        if !hold {
            kept.push(copy);
        }
    }
    (kept, is_held)
}

/// One answer per copy again: the stored copies' answers in order, and for a held copy
/// one that says nothing was stored (`duplicate`, no sequence).
pub(crate) fn merge_held(stored: Vec<SentMessage>, is_held: &[bool]) -> Vec<SentMessage> {
    let mut stored = stored.into_iter();
    is_held
        .iter()
        .filter_map(|held| {
            if *held {
                Some(SentMessage {
                    seq: 0,
                    message_id: None,
                    duplicate: true,
                    sequence: None,
                })
            } else {
                stored.next()
            }
        })
        .collect()
}
