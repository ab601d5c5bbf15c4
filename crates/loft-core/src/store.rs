//! The storage trait. One async trait, two engines (SQLite, the embedded default;
//! PostgreSQL for several nodes), one conformance suite. Every method is atomic: it either
//! happens whole or not at all. The store is the service's only memory: every piece of
//! state an operation leaves (messages, deduplication windows, receive attempts, purge and
//! delete holds, move tasks, platforms, event source mappings) is written in that operation's transaction. The
//! store applies decisions; the rules themselves (defaults, validation, redrive thresholds,
//! visibility caps, MessageIds, receipt tokens, windows) belong to the service and reach
//! the store as values in each request (DESIGN.md, "The Store").

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::error::Result;
use crate::model::*;
use crate::service::sqs::receipt::ReceiptKey;

/// Persistent state of queues, messages, topics and subscriptions.
///
/// Errors: every method returns `InternalError` when the engine fails; none returns a
/// semantic error (those are the service's).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    // ----- queues

    /// Creates queue `name` unless it exists. Returns the stored queue and whether this call
    /// created it (an existing queue is returned unchanged, whatever `attributes` says).
    async fn create_queue(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(QueueRecord, bool)>;

    /// [`Store::create_queue`], placed beside queue `beside` (the store key of the queue's
    /// dead-letter queue, from its RedrivePolicy) where the engine chooses where a queue
    /// lives: a store over several databases puts it in `beside`'s database when that
    /// one is up, so a dead-letter move stays one transaction. The default ignores
    /// `beside` (one database holds every queue).
    async fn create_queue_beside(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
        beside: Option<&str>,
    ) -> Result<(QueueRecord, bool)> {
        let _ = beside;
        self.create_queue(name, attributes, tags, now_ms).await
    }

    /// The queue named `name`, if any.
    async fn get_queue(&self, name: &str) -> Result<Option<QueueRecord>>;

    /// Every queue, ordered by name.
    async fn list_queues(&self) -> Result<Vec<QueueRecord>>;

    /// The queues of one account in one region ([`key_in_listing`]): those whose store key
    /// is `prefix` (`ACCOUNT/` or `ACCOUNT/REGION/`; any other prefix matches nothing)
    /// followed by a name without `/`, and, when `bare`, those whose key holds no `/` (the
    /// default account's in the default region; see `names::scoped_key`). Ordered as
    /// [`Store::list_queues`] orders them, of which they are the subset. The default
    /// filters [`Store::list_queues`]; engines override it with reads of an index that
    /// touch no other account's rows, so one account's queues do not slow another's
    /// listings.
    async fn list_queues_of(&self, prefix: &str, bare: bool) -> Result<Vec<QueueRecord>> {
        let mut queues = self.list_queues().await?;
        queues.retain(|q| key_in_listing(&q.name, prefix, bare));
        Ok(queues)
    }

    /// How many queues exist. The default counts [`Store::list_queues`]; engines override
    /// it with a cheaper count.
    async fn count_queues(&self) -> Result<u64> {
        Ok(self.list_queues().await?.len() as u64)
    }

    /// How many queues one account has, in every region: those whose store key starts with
    /// `prefix` (`ACCOUNT/`), and, when `bare`, those whose key holds no `/` (the default
    /// account's in the default region; see `names::scoped_key`). The default counts
    /// [`Store::list_queues`]; engines override it with a cheaper count.
    async fn count_queues_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        let queues = self.list_queues().await?;
        Ok(queues
            .iter()
            .filter(|q| key_of_account(&q.name, prefix, bare))
            .count() as u64)
    }

    /// Deletes the queue with all its messages, deduplication keys and receive attempts,
    /// and records, in the same transaction, that its name may not be used again before
    /// `recreate_after_ms` (see [`Store::queue_recreate_after`]). Returns whether it
    /// existed.
    async fn delete_queue(&self, queue_id: i64, recreate_after_ms: i64) -> Result<bool>;

    /// When queue name `name` may be used again (ms), as the latest [`Store::delete_queue`]
    /// of a queue of that name recorded it; `None` when no hold is recorded (or
    /// [`Store::delete_expired`] swept one that ended).
    async fn queue_recreate_after(&self, name: &str) -> Result<Option<i64>>;

    /// Replaces the queue's settable attributes.
    async fn set_queue_attributes(
        &self,
        queue_id: i64,
        attributes: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<()>;

    /// Replaces the queue's tags.
    async fn set_queue_tags(&self, queue_id: i64, tags: BTreeMap<String, String>) -> Result<()>;

    // ----- messages

    /// Stores each message in its queue, all in one transaction. A message whose
    /// [`NewMessage::dedup`] key is already recorded for its queue inside the window is not
    /// stored; the original's sequence numbers and MessageId are reported instead. Returns one
    /// [`SentMessage`] per input, in input order.
    ///
    /// A stored message with a deduplication key (a FIFO queue's) takes its queue's next
    /// number ([`StoredMessage::sequence`], [`SentMessage::sequence`]): one counter per
    /// queue, kept with the queue (across restarts, shared by every node), advanced in input
    /// order, so a queue's numbers say nothing of other queues' traffic. Within a
    /// MessageGroupId numbers increase in the order the group's messages are delivered, also
    /// when several nodes send to the group at once. Numbers may skip (PostgreSQL takes them
    /// outside the send's transaction, so a send rolled back leaves a gap). Whatever stores
    /// a message into a queue this way (SNS fan-out, the cells' relay) numbers it so too.
    ///
    /// Fair queues: a message without a deduplication key (a standard queue's) that has a
    /// [`NewMessage::group_id`] makes its queue fair from then on (SQS Developer Guide,
    /// "Amazon SQS fair queues"); every later message of a fair queue takes a fair key, by
    /// start-time fair queueing over its groups: the queue's virtual time is the smallest
    /// key it holds, a message without a group or of a group with nothing waiting is keyed
    /// there, and each further message of a group one after the group's latest. Keys are
    /// approximate across concurrent sends (PostgreSQL); they only order receives.
    async fn send_messages(&self, messages: Vec<(i64, NewMessage)>) -> Result<Vec<SentMessage>>;

    /// Claims up to `max_messages` visible messages as `request` says, in one transaction:
    /// expired messages are dropped, messages at the redrive threshold move to the DLQ,
    /// the rest get the next of `request.receipt_tokens`, one more receive and their new
    /// visibility. A FIFO receive walks the queue in send order a window at a time and
    /// stops once the receive is decided, so its cost follows the messages it looks at,
    /// not the queue's depth. With [`ReceiveRequest::attempt`] set it replays or records
    /// that attempt, in the same transaction.
    ///
    /// A fair queue's standard receive (not [`ReceiveRequest::send_order`]) takes the
    /// visible messages in fair-key order, so a group with a few messages waiting is
    /// served within about one receive per other group with a backlog, whatever that
    /// backlog's depth; when fewer than wanted have keys, the rest come in the plain
    /// order. It reads past the queue's in-flight messages with smaller keys (SQLite: an
    /// index-only skip; PostgreSQL: their rows), not past the backlog.
    ///
    /// The plain order of a standard receive (SQS's is best effort) is the engine's:
    /// SQLite takes the longest visible first (a received message comes back behind the
    /// messages visible before its return); PostgreSQL takes the first visible first (by
    /// when each message first became visible: sent plus delay, or moved), since its
    /// claim leaves the visibility index as it was (the HOT claim), so a message whose
    /// visibility timeout ended comes back at its old place.
    async fn receive(&self, request: ReceiveRequest) -> Result<ReceiveOutcome>;

    /// The message groups of fair queue `queue_id` with their counts at `now_ms`, in no
    /// particular order; `None` when the queue is not fair (or does not exist). Reads every
    /// message of the queue; for `/metrics`.
    async fn fair_groups(&self, queue_id: i64, now_ms: i64) -> Result<Option<Vec<GroupCounts>>>;

    /// Deletes message `seq` of queue `queue_id`. With `strict = Some((token, now_ms))`
    /// (FIFO queues; legacy receipt handles with `now_ms` = `i64::MIN`, when the token alone
    /// decides), only if `token` is the message's current receipt token and the message
    /// is still in flight at `now_ms` (visible later than it); otherwise reports
    /// [`DeleteOutcome::Stale`].
    async fn delete_message(
        &self,
        queue_id: i64,
        seq: i64,
        strict: Option<(i64, i64)>,
    ) -> Result<DeleteOutcome>;

    /// Deletes several messages of one queue, each as [`Store::delete_message`] would, in one
    /// transaction. Returns one outcome per input, in order. The default calls
    /// `delete_message` for each; engines override it to save round trips.
    async fn delete_messages(
        &self,
        queue_id: i64,
        items: Vec<(i64, Option<(i64, i64)>)>,
    ) -> Result<Vec<DeleteOutcome>> {
        let mut out = Vec::with_capacity(items.len());
        for (seq, strict) in items {
            out.push(self.delete_message(queue_id, seq, strict).await?);
        }
        Ok(out)
    }

    /// Deletes the message of queue `queue_id` whose stored MessageId is `message_id` (the
    /// seeds' `DELETE /queues/{name}/messages/{id}` for a UUID id). Reads the queue's
    /// messages in send order (no MessageId index). Returns whether one was deleted.
    async fn delete_message_by_id(&self, queue_id: i64, message_id: &str) -> Result<bool>;

    /// Deletes message `seq` of queue `queue_id` if it was stored without a MessageId (the
    /// seeds' `DELETE /queues/{name}/messages/msg-N`, N = `seq`). Returns whether one was
    /// deleted.
    async fn delete_unnamed_message(&self, queue_id: i64, seq: i64) -> Result<bool>;

    /// Makes received message `seq` visible at `visible_at_ms`, whether it is still in
    /// flight or its visibility timeout ran out at `now_ms` (as AWS does); a message never
    /// received is [`VisibilityChange::NotInflight`]. With `receipt_token` set, only if it
    /// matches. Refused with [`VisibilityChange::TooLong`] when `visible_at_ms` is more
    /// than `max_hidden_ms` after the receive that hid the message.
    async fn change_visibility(
        &self,
        queue_id: i64,
        seq: i64,
        receipt_token: Option<i64>,
        now_ms: i64,
        visible_at_ms: i64,
        max_hidden_ms: i64,
    ) -> Result<VisibilityChange>;

    /// Moves up to `new_message_ids.len()` visible messages of `source_queue_id` (a
    /// dead-letter queue) back: to `target`'s queue, or each to the queue its
    /// DeadLetterQueueSourceArn names. A moved message keeps its body, attributes and group
    /// but is a new message there: the next of `new_message_ids` as its MessageId, a new
    /// store sequence number and, with a MessageGroupId (a FIFO queue's message), its
    /// destination's next queue number ([`StoredMessage::sequence`], in send order), sent
    /// now, retention counted afresh, receive count 0. Groups with a
    /// message in flight or delayed in the source keep their later messages there. Messages
    /// with no known destination stay, and so do those whose destination queue no longer
    /// exists (deleted while a task ran: nothing is written into a queue that is gone).
    /// Returns how many moved.
    ///
    /// With `task`, one step of that move task, in the same transaction: only while the
    /// task is running under the lease's owner (otherwise nothing moves and the answer is
    /// `None`), and it adds what moved to the task's progress and renews the lease.
    async fn move_messages(
        &self,
        source_queue_id: i64,
        target: MoveTarget,
        new_message_ids: Vec<String>,
        now_ms: i64,
        task: Option<MoveTaskLease>,
    ) -> Result<Option<u64>>;

    // ----- message-move tasks

    /// Records a new task (its `status` is stored as given, normally running) unless a
    /// running task has the same source ARN; returns whether it was recorded.
    async fn create_move_task(&self, task: MoveTaskRecord) -> Result<bool>;

    /// The tasks of source ARN `source_arn`, newest first, at most `limit`.
    async fn list_move_tasks(&self, source_arn: &str, limit: u32) -> Result<Vec<MoveTaskRecord>>;

    /// Cancels the running task `handle`: it is cancelled at once, and the node running it
    /// stops at its next step. Returns the task as it is now, or `None` when no running
    /// task has this handle.
    async fn cancel_move_task(&self, handle: &str) -> Result<Option<MoveTaskRecord>>;

    /// Takes up to `limit` running tasks whose lease ended at or before `now_ms` (their
    /// node stopped or died, or none ran them yet) for `owner`, leasing each until
    /// `lease_until_ms`. Two nodes never take the same task.
    async fn claim_move_tasks(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<MoveTaskRecord>>;

    /// Ends the running task of `lease` with `status` (and `failure_reason`), if it is
    /// still running under that owner. Returns whether it did.
    async fn finish_move_task(
        &self,
        lease: MoveTaskLease,
        status: MoveTaskStatus,
        failure_reason: Option<String>,
    ) -> Result<bool>;

    /// Gives up every running task `owner` holds (a node stopping): their leases end now,
    /// so another node, or this one started again, takes them over at once.
    async fn release_move_tasks(&self, owner: &str) -> Result<()>;

    /// Deletes every message of the queue and its FIFO deduplication window (a
    /// deduplication id seen before is new again, SQS API Reference, PurgeQueue, as AWS
    /// answers), unless a purge recorded a hold that has not
    /// ended at `now_ms` ([`PurgeOutcome::InProgress`], nothing deleted); when it purges it
    /// records, in the same transaction, that the next purge may come at `next_after_ms`.
    /// Two purges at once on two nodes: one purges, the other is refused.
    async fn purge_queue(
        &self,
        queue_id: i64,
        now_ms: i64,
        next_after_ms: i64,
    ) -> Result<PurgeOutcome>;

    /// Message counts of the queue at `now_ms`. Reads every message of the queue.
    async fn queue_counts(&self, queue_id: i64, now_ms: i64) -> Result<QueueCounts>;

    /// Messages of the queue in flight at `now_ms` (received, not deleted, not yet visible
    /// again, not expired): `QueueCounts::in_flight`, but read from the visibility index
    /// over the messages not visible at `now_ms` only, so on SQLite its cost does not grow
    /// with the visible backlog (the in-flight limit recounts with it). PostgreSQL's
    /// standard receives leave the index as it was (the HOT claim: the message is hidden
    /// by an unindexed column), so there it also reads the index's range visible by
    /// `visible_at`, which holds the visible backlog.
    async fn count_in_flight(&self, queue_id: i64, now_ms: i64) -> Result<i64>;

    /// When the oldest message of queue `queue_id` was sent (ms): the first in send
    /// (sequence) order whose retention has not ended at `now_ms`, whatever its state
    /// (visible, in flight or delayed); `None` for an empty queue. Reads the send-order
    /// index from its start, so its cost is one row plus the expired rows not yet swept,
    /// whatever the queue's depth (for `/metrics`' ApproximateAgeOfOldestMessage).
    async fn oldest_sent_at(&self, queue_id: i64, now_ms: i64) -> Result<Option<i64>>;

    /// Up to `limit` messages of queue `queue_id` whose sequence number is above `after_seq`,
    /// in sequence (send) order, whatever their state (visible, in flight or delayed), without
    /// claiming them: nothing about them changes (receive count, visibility, receipt token).
    /// Messages whose retention ended at or before `now_ms` are left out. For the operator's
    /// message browser and `loft export`; page with the last returned `seq`.
    async fn peek_messages(
        &self,
        queue_id: i64,
        after_seq: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<StoredMessage>>;

    /// Drops messages whose retention ended at or before `now_ms`, and what else ended by
    /// then: deduplication keys (queues and FIFO topics), receive attempts, deleted-queue
    /// holds, FIFO topics' archived messages. Returns how many queue messages.
    async fn delete_expired(&self, now_ms: i64) -> Result<u64>;

    // ----- topics and subscriptions

    /// Creates topic `name` unless it exists; returns it and whether this call created it.
    async fn create_topic(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(TopicRecord, bool)>;

    /// The topic named `name`, if any.
    async fn get_topic(&self, name: &str) -> Result<Option<TopicRecord>>;

    /// Every topic, ordered by name.
    async fn list_topics(&self) -> Result<Vec<TopicRecord>>;

    /// The topics of one account in one region, as [`Store::list_queues_of`] takes queues
    /// (the same `prefix` and `bare`), ordered as [`Store::list_topics`] orders them. The
    /// default filters [`Store::list_topics`]; engines override it with index reads.
    async fn list_topics_of(&self, prefix: &str, bare: bool) -> Result<Vec<TopicRecord>> {
        let mut topics = self.list_topics().await?;
        topics.retain(|t| key_in_listing(&t.name, prefix, bare));
        Ok(topics)
    }

    /// How many topics exist. The default counts [`Store::list_topics`]; engines override
    /// it with a cheaper count.
    async fn count_topics(&self) -> Result<u64> {
        Ok(self.list_topics().await?.len() as u64)
    }

    /// How many topics one account has, in every region: as [`Store::count_queues_of`]
    /// counts queues. The default counts [`Store::list_topics`]; engines override it with
    /// a cheaper count.
    async fn count_topics_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        let topics = self.list_topics().await?;
        Ok(topics
            .iter()
            .filter(|t| key_of_account(&t.name, prefix, bare))
            .count() as u64)
    }

    /// Deletes the topic with its subscriptions, their replays, deduplication keys and
    /// archive. Returns whether it existed.
    async fn delete_topic(&self, topic_id: i64) -> Result<bool>;

    /// Replaces the topic's attributes.
    async fn set_topic_attributes(
        &self,
        topic_id: i64,
        attributes: BTreeMap<String, String>,
    ) -> Result<()>;

    /// Replaces the topic's tags.
    async fn set_topic_tags(&self, topic_id: i64, tags: BTreeMap<String, String>) -> Result<()>;

    /// Adds a subscription to topic `topic_id`.
    async fn create_subscription(
        &self,
        topic_id: i64,
        subscription: NewSubscription,
    ) -> Result<SubscriptionRecord>;

    /// Publishes in one transaction: stores `messages` in their queues (as
    /// [`Store::send_messages`] does), records `deliveries` for the delivery workers and
    /// `records` for inspection. Either all of it happens or none.
    async fn publish(
        &self,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
    ) -> Result<Vec<SentMessage>>;

    /// Publishes to a FIFO topic in one transaction, one publish to the topic at a time
    /// (across nodes too): for each entry in order, a key recorded for the topic inside its
    /// window makes it a duplicate (nothing fanned out; the original's MessageId and
    /// sequence reported); otherwise the entry takes the topic's next sequence number
    /// (strictly increasing per topic, kept with the topic), its key is recorded with that
    /// number and its MessageId, and the queue messages `publish.fanout` builds for it are
    /// stored as [`Store::send_messages`] does. An entry with [`FifoPublishEntry::archive`]
    /// that is not a duplicate is also kept in the topic's archive, with its sequence
    /// number, MessageId and `now_ms` as its publish time, until its `expires_at_ms`.
    /// Either all of it happens or none. `None` when the topic does not exist.
    async fn publish_fifo(&self, publish: FifoPublish) -> Result<Option<Vec<FifoPublished>>>;

    /// Up to `limit` messages of topic `topic_id`'s archive with a sequence number above
    /// `after_sequence`, published at or after `from_ms` and (with `until_ms`) at or
    /// before `until_ms`, that have not left the archive at `now_ms`, in sequence order.
    /// Page with the last returned sequence.
    async fn archived_messages(
        &self,
        topic_id: i64,
        after_sequence: i64,
        from_ms: i64,
        until_ms: Option<i64>,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ArchivedMessage>>;

    /// Empties topic `topic_id`'s archive (its ArchivePolicy was removed). Returns how
    /// many messages it held.
    async fn delete_archive(&self, topic_id: i64) -> Result<u64>;

    // ----- message replays (SNS ReplayPolicy)

    /// Records `replay` as the subscription's replay, replacing the one it had (its old
    /// lease and progress no longer count).
    async fn put_replay(&self, replay: ReplayRecord) -> Result<()>;

    /// The subscription's replay, if it has one.
    async fn get_replay(&self, subscription: &str) -> Result<Option<ReplayRecord>>;

    /// Takes up to `limit` Pending or Replaying replays that `owner` holds already or
    /// whose lease ended at or before `now_ms` (their node stopped or died, or none ran
    /// them yet), leasing each to `owner` until `lease_until_ms`. Two nodes never hold the
    /// same replay at once.
    async fn claim_replays(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ReplayRecord>>;

    /// One batch of a replay, in one transaction, one publish to the topic at a time:
    /// only while the replay `step.replay_id` is still the subscription's, still Pending
    /// or Replaying and leased to `step.owner` (otherwise nothing happens and the answer is
    /// `None`); then its messages are stored, its cursor, status (as `step.finish` says)
    /// and lease are recorded. Returns the replay as it is now.
    async fn advance_replay(&self, step: ReplayStep) -> Result<Option<ReplayRecord>>;

    /// Gives up every replay `owner` holds (a node stopping): their leases end now.
    async fn release_replays(&self, owner: &str) -> Result<()>;

    /// Takes up to `limit` deliveries due at `now_ms`, leasing each until `lease_until_ms`
    /// (a crashed worker's lease runs out and another takes the delivery).
    async fn claim_deliveries(
        &self,
        now_ms: i64,
        limit: u32,
        lease_until_ms: i64,
    ) -> Result<Vec<DeliveryRecord>>;

    /// Removes a delivery (delivered, or given up).
    async fn finish_delivery(&self, id: i64) -> Result<()>;

    /// Schedules the next attempt of a delivery at `next_at_ms`, recording the attempt count
    /// and the last error.
    async fn retry_delivery(
        &self,
        id: i64,
        attempts: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()>;

    /// Schedules the next attempt of a Lambda delivery at `next_at_ms`, recording the
    /// attempt count, how many of them were function errors and the last error.
    async fn retry_invocation(
        &self,
        id: i64,
        attempts: i64,
        function_errors: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()>;

    /// When the next delivery is due (ms), if any is pending.
    async fn next_delivery_at(&self) -> Result<Option<i64>>;

    /// Relays work that crosses storage cells (a store over several databases, such as
    /// loft-store's `CellStore`): leases up to `limit` outbox rows whose lease ended by
    /// `now_ms` (ms) until `lease_until_ms`, stores each in its destination (at most once,
    /// however often a row is relayed: a relay that died mid-way is repeated by another
    /// once its lease ends) and removes the rows. Returns how many rows it finished; fewer
    /// than `limit` means the outbox held no more due rows. Nothing here decides: the
    /// rows hold what the service already decided. Stores of one database have no outbox
    /// (the default: 0).
    ///
    /// Errors: `InternalError` when a database fails; the rows it had leased are relayed
    /// again after `lease_until_ms`.
    async fn relay_outbox(&self, now_ms: i64, lease_until_ms: i64, limit: u32) -> Result<u64> {
        let _ = (now_ms, lease_until_ms, limit);
        Ok(0)
    }

    /// Finishes the moves of queues between storage cells (loft-store's `CellStore`,
    /// `loft cells move`) whose run stopped: each move whose lease ended by `now_ms` (ms
    /// since the epoch) is taken over by `owner` (this node's id) and finished, two nodes
    /// calling at once taking disjoint moves. Returns how many it finished. Stores of one
    /// database move nothing (the default: 0).
    ///
    /// Errors: `ServiceUnavailable` when a cell is down, `InternalError` when a database
    /// fails (each only when no move was finished); a failed move is taken up again later.
    async fn finish_cell_moves(&self, owner: &str, now_ms: i64) -> Result<u64> {
        let _ = (owner, now_ms);
        Ok(0)
    }

    /// Pending deliveries of one subscription (or all with `None`), oldest first, at most
    /// `limit`.
    async fn list_deliveries(
        &self,
        subscription: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>>;

    /// How many deliveries are pending (due or waiting for a retry). The default counts
    /// [`Store::list_deliveries`]; engines override it with a cheaper count.
    async fn count_deliveries(&self) -> Result<u64> {
        Ok(self.list_deliveries(None, u32::MAX).await?.len() as u64)
    }

    /// The most recent recorded messages, newest first, at most `limit`: of `account`
    /// only ([`RecordedMessage::account`]'s form), or of every account with `None`.
    async fn list_recorded(
        &self,
        limit: u32,
        account: Option<String>,
    ) -> Result<Vec<RecordedMessage>>;

    /// Deletes the recorded messages `filter` matches. Returns how many.
    async fn delete_recorded(&self, filter: RecordedFilter) -> Result<u64>;

    /// Subscriptions of one topic (or all with `None`), ordered by creation.
    async fn list_subscriptions(&self, topic_id: Option<i64>) -> Result<Vec<SubscriptionRecord>>;

    /// The subscriptions of the topics [`Store::list_topics_of`] gives for `prefix` and
    /// `bare`, and those whose `LoftSubscriberAccount` attribute
    /// (`attributes::SUBSCRIBER_ACCOUNT_ATTRIBUTE`: an account that subscribed to another's
    /// topic) is `subscriber` (an account id; `""` names none); ordered as [`Store::list_subscriptions`]`(None)` orders
    /// them, of which they are the subset. The default filters that list; engines override
    /// it with index reads that touch no other account's topics or subscriptions.
    async fn list_subscriptions_of(
        &self,
        prefix: &str,
        bare: bool,
        subscriber: &str,
    ) -> Result<Vec<SubscriptionRecord>> {
        let mut subs = self.list_subscriptions(None).await?;
        subs.retain(|s| {
            key_in_listing(&s.topic_name, prefix, bare)
                || s.attributes
                    .get(crate::attributes::SUBSCRIBER_ACCOUNT_ATTRIBUTE)
                    .is_some_and(|a| a == subscriber)
        });
        Ok(subs)
    }

    /// The subscription with ARN suffix `uuid`.
    async fn get_subscription(&self, uuid: &str) -> Result<Option<SubscriptionRecord>>;

    /// Replaces a subscription's attributes, confirmation state and token.
    async fn update_subscription(
        &self,
        uuid: &str,
        attributes: BTreeMap<String, String>,
        confirmed: bool,
        token: Option<String>,
    ) -> Result<()>;

    /// Deletes the subscription with its replay. Returns whether it existed.
    async fn delete_subscription(&self, uuid: &str) -> Result<bool>;

    // ----- mobile push platforms

    /// Records platform application `arn` with `attributes` unless it exists (an
    /// existing one is kept as it is).
    async fn create_platform_application(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()>;

    /// Records endpoint `arn` of application `application_arn` for device token `token`,
    /// unless the application has an endpoint for that token already: returns the ARN of
    /// the endpoint the token has now (the existing one, or `arn`), or `None` when the
    /// application does not exist.
    async fn create_platform_endpoint(
        &self,
        application_arn: &str,
        arn: &str,
        token: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<Option<String>>;

    /// The platform application or endpoint `arn`, if any.
    async fn get_platform(&self, arn: &str) -> Result<Option<PlatformRecord>>;

    /// Every platform application, ordered by ARN.
    async fn list_platform_applications(&self) -> Result<Vec<PlatformRecord>>;

    /// The endpoints of application `application_arn`, ordered by ARN.
    async fn list_platform_endpoints(&self, application_arn: &str) -> Result<Vec<PlatformRecord>>;

    /// Sets `attributes` (each name to its value, others kept) on the application or
    /// endpoint `arn`, in one transaction; `token` also changes an endpoint's device token.
    /// Returns whether `arn` exists.
    async fn update_platform_attributes(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
        token: Option<String>,
    ) -> Result<bool>;

    /// Deletes the application `arn` with its endpoints, or the endpoint `arn`; nothing
    /// when neither exists.
    async fn delete_platform(&self, arn: &str) -> Result<()>;

    // ----- SMS settings

    /// The SMS settings SetSMSAttributes stored for `scope` (the account and region,
    /// `"{account}:{region}"`), by AWS attribute name.
    async fn sms_attributes(&self, scope: &str) -> Result<BTreeMap<String, String>>;

    /// Sets each of `attributes` for `scope` (others kept), in one transaction.
    async fn set_sms_attributes(
        &self,
        scope: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()>;

    /// The destination numbers of `scope`'s SMS sandbox (`"{account}:{region}"`, as for
    /// [`Store::sms_attributes`]), ordered by number.
    async fn sms_sandbox_numbers(&self, scope: &str) -> Result<Vec<SmsSandboxNumber>>;

    /// Adds `number` to `scope`'s SMS sandbox, or replaces the row of the same
    /// `phone_number` (its status, password and time), in one transaction.
    async fn put_sms_sandbox_number(&self, scope: &str, number: SmsSandboxNumber) -> Result<()>;

    /// Removes `phone_number` from `scope`'s SMS sandbox; whether it was there.
    async fn delete_sms_sandbox_number(&self, scope: &str, phone_number: &str) -> Result<bool>;
    // ----- event source mappings

    /// Records `mapping` unless one exists for the same event source and function; returns
    /// `None` when it was recorded, else the existing mapping's UUID (nothing changes).
    async fn create_event_source_mapping(
        &self,
        mapping: EventSourceMappingRecord,
    ) -> Result<Option<String>>;

    /// The mapping with this UUID, if any.
    async fn get_event_source_mapping(
        &self,
        uuid: &str,
    ) -> Result<Option<EventSourceMappingRecord>>;

    /// Every mapping, in creation order.
    async fn list_event_source_mappings(&self) -> Result<Vec<EventSourceMappingRecord>>;

    /// Replaces what the service may change of mapping `mapping.uuid` (function, batch
    /// size, window, enabled, response types, filters, concurrency, last modified); its
    /// event source, owner and lease stay. Returns whether it exists.
    async fn update_event_source_mapping(&self, mapping: EventSourceMappingRecord) -> Result<bool>;

    /// Deletes the mapping. Returns whether it existed.
    async fn delete_event_source_mapping(&self, uuid: &str) -> Result<bool>;

    /// Takes up to `limit` enabled mappings whose lease ended at or before `now_ms` (their
    /// node stopped or died, or none polled them yet) for `owner`, leasing each until
    /// `lease_until_ms`. Two nodes never take the same mapping.
    async fn claim_event_source_mappings(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<EventSourceMappingRecord>>;

    /// Renews `owner`'s lease on mapping `uuid` to `lease_until_ms` and returns the
    /// mapping as it is now; `None` (nothing changes) when it no longer exists or another
    /// node holds it.
    async fn renew_event_source_mapping(
        &self,
        uuid: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<EventSourceMappingRecord>>;

    /// Gives up every mapping `owner` holds (a node stopping): their leases end now.
    async fn release_event_source_mappings(&self, owner: &str) -> Result<()>;

    // ----- reset

    /// Removes, in one transaction, every queue with its messages, deduplication keys,
    /// receive attempts and message-move tasks, every topic with its subscriptions, their
    /// pending deliveries, replays, deduplication keys and archive, every event source
    /// mapping, recorded message, platform application and endpoint and SMS setting, and
    /// every deleted-queue hold: of the account `scope` names ([`ResetScope::owns_key`]
    /// for queue and topic keys), or of every account with `None`. Records no
    /// deleted-queue hold, so each name can be used again at once. Other nodes sharing
    /// the store are told (their [`Store::wakeups`] receive `-1`: forget cached queue
    /// records and wake every poll). Returns what it removed.
    async fn reset(&self, scope: Option<ResetScope>) -> Result<ResetCounts>;

    // ----- receipt handles

    /// The key that signs this database's receipt handles
    /// ([`crate::service::sqs::receipt`]): 32 random bytes the first open of the database made
    /// and kept in it, so every node sharing the database and every restart sign and
    /// verify with the same key. Read when the store opens; the service takes it once.
    fn receipt_key(&self) -> ReceiptKey;

    // ----- other nodes

    /// Queue ids whose messages may have become visible through another process sharing
    /// this store (a send, a move, a visibility change on another node), so long polls
    /// here wake. `-1` means "any queue" (wake every poll, and forget cached queue
    /// records: another node may have reset the store, [`Store::reset`]). `None` (the default, and
    /// SQLite's answer) when no other process writes to the store.
    fn wakeups(&self) -> Option<tokio::sync::broadcast::Receiver<i64>> {
        None
    }
}

/// Whether store key `key` is in the listing of `prefix` and `bare`
/// ([`Store::list_queues_of`]): `prefix` ends in `/` and `key` is `prefix` followed by a
/// name without `/`, or `bare` and `key` holds no `/`.
pub fn key_in_listing(key: &str, prefix: &str, bare: bool) -> bool {
    let prefixed = prefix.ends_with('/')
        && key
            .strip_prefix(prefix)
            .is_some_and(|rest| !rest.contains('/'));
    prefixed || (bare && !key.contains('/'))
}

/// The end of the range of store keys starting with `prefix`, which ends in `/`: the
/// prefix with its last `/` made `0`, the next byte (keys compare bytewise: SQLite's
/// BINARY collation, PostgreSQL's `"C"`). `None` for a prefix not ending in `/`
/// ([`key_in_listing`] matches no key by such a prefix).
pub fn prefix_range_end(prefix: &str) -> Option<String> {
    prefix.strip_suffix('/').map(|stem| format!("{stem}0"))
}

/// Whether store key `key` belongs to the account whose keys start with `prefix`
/// (`ACCOUNT/`), or, when `bare`, hold no `/` ([`Store::count_queues_of`]).
pub fn key_of_account(key: &str, prefix: &str, bare: bool) -> bool {
    key.starts_with(prefix) || (bare && !key.contains('/'))
}
