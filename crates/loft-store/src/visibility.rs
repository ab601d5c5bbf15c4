//! The rule of a ChangeMessageVisibility, shared by both engines: each reads the message's
//! row in its own SQL and hands it here, which says whether the change may be made or why
//! not (SQS API Reference, ChangeMessageVisibility: the receipt handle must be the latest
//! one, the message must have been received, and the new timeout counts from that receive
//! and may not pass the 12-hour maximum).

use loft_core::model::VisibilityChange;

/// What the rule needs of a message's row, as an engine read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VisibilityRow {
    /// How many times it was received (`receive_count`).
    pub receive_count: i64,
    /// The receipt token of its latest receive (`receipt_token`).
    pub receipt_token: i64,
    /// When it was last received (ms), `None` before its first receive.
    pub received_at: Option<i64>,
}

/// Whether the change of `row`'s visibility to `visible_at_ms` (ms) asked with receipt
/// token `token` (`None`: by message, not by handle) may be made:
/// [`VisibilityChange::Changed`] when it may, else why not ([`VisibilityChange::Stale`],
/// [`VisibilityChange::NotInflight`], [`VisibilityChange::TooLong`]). `max_hidden_ms` is
/// the longest a message may stay hidden after its receive (ms).
pub(crate) fn classify(
    row: VisibilityRow,
    token: Option<i64>,
    visible_at_ms: i64,
    max_hidden_ms: i64,
) -> VisibilityChange {
    if token.is_some_and(|t| t != row.receipt_token) {
        return VisibilityChange::Stale;
    }
    // A message received once keeps a changeable visibility after its timeout ran out
    // (AWS answers such a ChangeMessageVisibility 200, and the message hides again).
    if row.receive_count == 0 {
        return VisibilityChange::NotInflight;
    }
    if row
        .received_at
        .is_some_and(|r| visible_at_ms - r > max_hidden_ms)
    {
        return VisibilityChange::TooLong;
    }
    VisibilityChange::Changed
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: VisibilityRow = VisibilityRow {
        receive_count: 1,
        receipt_token: 7,
        received_at: Some(1_000),
    };

    #[test]
    fn stale_handle_then_not_in_flight_then_too_long() {
        assert_eq!(
            classify(ROW, Some(7), 2_000, 5_000),
            VisibilityChange::Changed
        );
        assert_eq!(classify(ROW, None, 2_000, 5_000), VisibilityChange::Changed);
        assert_eq!(
            classify(ROW, Some(8), 2_000, 5_000),
            VisibilityChange::Stale
        );
        let never = VisibilityRow {
            receive_count: 0,
            received_at: None,
            ..ROW
        };
        // A stale handle is stale before anything else.
        assert_eq!(
            classify(never, Some(8), 2_000, 5_000),
            VisibilityChange::Stale
        );
        assert_eq!(
            classify(never, Some(7), 2_000, 5_000),
            VisibilityChange::NotInflight
        );
        // The limit counts from the receive, inclusive.
        assert_eq!(
            classify(ROW, Some(7), 6_000, 5_000),
            VisibilityChange::Changed
        );
        assert_eq!(
            classify(ROW, Some(7), 6_001, 5_000),
            VisibilityChange::TooLong
        );
    }
}
