//! The workers behind each scenario. Every loop stops at its message count or at the
//! run's deadline, whichever comes first; a call still in flight at the deadline is
//! abandoned (and not counted).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::client::{Client, Endpoint};
use crate::sqs::{
    BatchIn, BatchOk, BatchOut, DeleteMessageIn, Ignored, Message, MessageIn, ReceiptIn,
    ReceiveMessageIn, ReceiveMessageOut, SendMessageIn, SendMessageOut, BATCH_IDS,
};
use crate::stats::{micros, Progress, Recorder};

/// How long the long-poll producer waits after the receive went out before sending, so
/// that the receive is already waiting on the server.
pub const LONG_POLL_SETTLE: Duration = Duration::from_millis(50);

/// `WaitTimeSeconds` of the long-poll scenario's receives.
pub const LONG_POLL_WAIT_SECONDS: u32 = 20;

/// `WaitTimeSeconds` of the consumers of receive-delete and produce-consume: they wait
/// a little on an empty queue instead of spinning on it.
pub const CONSUMER_WAIT_SECONDS: u32 = 1;

/// Pause after a transport error, so that a dead endpoint is not hammered in a tight
/// reconnect loop.
const TRANSPORT_BACKOFF: Duration = Duration::from_millis(10);

/// What the workers of one phase share.
pub struct Ctx {
    pub endpoint: Arc<Endpoint>,
    pub auth: bool,
    pub queue_url: String,
    /// Message body size in bytes.
    pub size: usize,
    /// The run's hard stop.
    pub deadline: Instant,
    /// `VisibilityTimeout` of every receive, in seconds: longer than the run, so that
    /// any message seen twice before its deletion is a duplicate.
    pub visibility_timeout: u64,
    /// Origin of the send stamps carried in message bodies.
    pub origin: Instant,
    /// Filler for message bodies.
    pub pad: Arc<str>,
    /// Live counters of this phase.
    pub progress: Arc<Progress>,
    /// Set when a worker stopped because of the deadline.
    pub cut: AtomicBool,
    /// FIFO queues (`--fifo-groups`): how sends pick their group and deduplication id.
    pub fifo: Option<FifoIds>,
}

/// The MessageGroupId and MessageDeduplicationId of each send to a FIFO queue: message
/// `seq` goes to group `g{seq % groups}` (round robin, so every group gets its share)
/// with the unique id `{tag}-{seq}` (`tag` is new each run, so runs on one queue inside
/// the 5-minute window do not deduplicate each other).
#[derive(Debug, Clone)]
pub struct FifoIds {
    pub groups: u32,
    pub tag: String,
}

impl FifoIds {
    fn of(&self, seq: u64) -> (Option<String>, Option<String>) {
        (
            Some(format!("g{}", seq % u64::from(self.groups))),
            Some(format!("{}-{seq}", self.tag)),
        )
    }
}

impl Ctx {
    /// The same settings with fresh counters, for the next phase.
    pub fn next_phase(&self) -> Ctx {
        Ctx {
            endpoint: self.endpoint.clone(),
            auth: self.auth,
            queue_url: self.queue_url.clone(),
            size: self.size,
            deadline: self.deadline,
            visibility_timeout: self.visibility_timeout,
            origin: self.origin,
            pad: self.pad.clone(),
            progress: Arc::new(Progress::default()),
            cut: AtomicBool::new(false),
            fifo: self.fifo.clone(),
        }
    }

    /// The group and deduplication ids of message `seq` (`None`s on a standard queue).
    fn fifo_ids(&self, seq: u64) -> (Option<String>, Option<String>) {
        self.fifo.as_ref().map_or((None, None), |f| f.of(seq))
    }

    /// Message `seq` with `body`, and its FIFO ids ([`Ctx::fifo_ids`]).
    fn message<'a>(&self, body: &'a str, seq: u64) -> MessageIn<'a> {
        let (message_group_id, message_deduplication_id) = self.fifo_ids(seq);
        MessageIn {
            message_body: body,
            message_group_id,
            message_deduplication_id,
        }
    }

    pub(crate) fn client(&self) -> Client {
        Client::new(self.endpoint.clone(), self.auth)
    }

    /// A body of exactly `size` bytes: `<seq>:<stamp µs>:` then filler (cut short when
    /// `size` is smaller than that prefix).
    pub fn body(&self, seq: u64, stamp_us: u64) -> String {
        let mut b = format!("{seq}:{stamp_us}:");
        while b.len() < self.size {
            let room = self.size - b.len();
            b.push_str(&self.pad[..room.min(self.pad.len())]);
        }
        b.truncate(self.size);
        b
    }

    fn stamp_now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The delivery latency of a body made by [`Ctx::body`], measured now.
    pub(crate) fn age_of(&self, body: &str, now: Instant) -> Option<Duration> {
        let mut parts = body.splitn(3, ':');
        parts.next()?.parse::<u64>().ok()?;
        let stamp: u64 = parts.next()?.parse().ok()?;
        parts.next()?;
        let sent = self.origin + Duration::from_micros(stamp);
        Some(now.saturating_duration_since(sent))
    }

    /// Runs `fut` unless the deadline passes (or `stop` turns true) first.
    pub(crate) async fn bounded<F: Future>(
        &self,
        stop: Option<&mut watch::Receiver<bool>>,
        fut: F,
    ) -> Option<F::Output> {
        let deadline = tokio::time::sleep_until(tokio::time::Instant::from_std(self.deadline));
        let stopped = async {
            match stop {
                Some(rx) => {
                    let _ = rx.wait_for(|done| *done).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            out = fut => Some(out),
            _ = deadline => {
                self.cut.store(true, Ordering::Relaxed);
                None
            }
            _ = stopped => None,
        }
    }

    /// One call of `op` with `input`, unless the deadline passes (or `stop` turns true)
    /// first: the answer recorded in `rec` as ok, or the failure as failed (no back-off:
    /// the caller decides).
    pub(crate) async fn call<I: Serialize, O: DeserializeOwned>(
        &self,
        client: &mut Client,
        rec: &mut Recorder,
        stop: Option<&mut watch::Receiver<bool>>,
        op: &'static str,
        input: &I,
    ) -> Answer<O> {
        let t0 = Instant::now();
        match self.bounded(stop, client.call::<I, O>(op, input)).await {
            None => Answer::Stop,
            Some(Ok(out)) => {
                rec.ok(op, t0.elapsed());
                Answer::Ok(out)
            }
            Some(Err(e)) => {
                rec.failed(op, &e);
                Answer::Failed(e)
            }
        }
    }

    /// One consumer's next messages: `ReceiveMessage` of up to 10 (long polling
    /// [`CONSUMER_WAIT_SECONDS`], the phase's visibility timeout), each call as
    /// [`Ctx::call`], until one answers some. `None`, without a call, once `stop` is true
    /// or the deadline has passed. A failed receive is tried again, after the transport
    /// back-off ([`backoff_after`]) when `backoff`.
    pub(crate) async fn receive_some(
        &self,
        client: &mut Client,
        rec: &mut Recorder,
        stop: &mut watch::Receiver<bool>,
        backoff: bool,
    ) -> Option<Vec<Message>> {
        let input = ReceiveMessageIn {
            queue_url: &self.queue_url,
            max_number_of_messages: 10,
            visibility_timeout: self.visibility_timeout,
            wait_time_seconds: CONSUMER_WAIT_SECONDS,
        };
        loop {
            if *stop.borrow() || self.past_deadline() {
                return None;
            }
            let op = "ReceiveMessage";
            match self
                .call::<_, ReceiveMessageOut>(client, rec, Some(&mut *stop), op, &input)
                .await
            {
                Answer::Stop => return None,
                Answer::Failed(e) if backoff => backoff_after(&e).await,
                Answer::Failed(_) => {}
                Answer::Ok(out) if out.messages.is_empty() => {}
                Answer::Ok(out) => return Some(out.messages),
            }
        }
    }

    /// The next at most `per_call` of the `total` messages the workers sharing `claims`
    /// send: the first one's sequence number and how many. `None` once all are claimed or
    /// the deadline has passed.
    pub(crate) fn claim(
        &self,
        claims: &AtomicU64,
        total: u64,
        per_call: u64,
    ) -> Option<(u64, u64)> {
        if self.past_deadline() {
            return None;
        }
        let first = claims.fetch_add(per_call, Ordering::Relaxed);
        (first < total).then(|| (first, (total - first).min(per_call)))
    }

    /// One call of the batch operation `op` with `entries` (at most 10), as
    /// [`Ctx::call`]: once answered, its failed entries recorded as errors and its
    /// successful ones (`T`, as far as they are read) returned.
    async fn call_batch<E: Serialize, T: DeserializeOwned>(
        &self,
        client: &mut Client,
        rec: &mut Recorder,
        op: &'static str,
        entries: impl IntoIterator<Item = E>,
    ) -> Answer<Vec<T>> {
        let input = BatchIn::new(&self.queue_url, entries);
        let answer = self
            .call::<_, BatchOut<T>>(client, rec, None, op, &input)
            .await;
        answer.map(|out| {
            rec.entries_failed(out.failed);
            out.successful
        })
    }

    /// Sends `messages` (at most 10) with one `SendMessageBatch` ([`Ctx::call_batch`]):
    /// once answered, its sent entries counted in the progress and the worker marked as
    /// working.
    pub(crate) async fn send_batch<'a>(
        &self,
        client: &mut Client,
        rec: &mut Recorder,
        messages: impl IntoIterator<Item = MessageIn<'a>>,
    ) -> Answer<()> {
        let answer = self
            .call_batch::<_, Ignored>(client, rec, "SendMessageBatch", messages)
            .await;
        answer.map(|sent| {
            self.progress
                .sent
                .fetch_add(sent.len() as u64, Ordering::Relaxed);
            rec.worked();
        })
    }

    /// Deletes received `messages` (at most 10) with one `DeleteMessageBatch`
    /// ([`Ctx::call_batch`]): each deleted one marked in `tracker`.
    pub(crate) async fn delete_received(
        &self,
        client: &mut Client,
        rec: &mut Recorder,
        tracker: &Tracker,
        messages: &[Message],
    ) -> Answer<()> {
        let receipts = messages.iter().map(|m| ReceiptIn {
            receipt_handle: &m.receipt_handle,
        });
        let answer = self
            .call_batch::<_, BatchOk>(client, rec, "DeleteMessageBatch", receipts)
            .await;
        answer.map(|deleted| {
            for ok in deleted {
                if let Some(m) = ok.id.parse::<usize>().ok().and_then(|i| messages.get(i)) {
                    tracker.on_deleted(&m.message_id);
                }
            }
        })
    }

    pub(crate) fn past_deadline(&self) -> bool {
        let past = Instant::now() >= self.deadline;
        if past {
            self.cut.store(true, Ordering::Relaxed);
        }
        past
    }
}

/// What a worker's [`Ctx::call`] came to.
pub(crate) enum Answer<T> {
    /// `stop` turned true or the deadline passed: the worker ends.
    Stop,
    /// The call failed (recorded as failed).
    Failed(crate::client::CallError),
    /// The answer (the call recorded as ok).
    Ok(T),
}

impl<T> Answer<T> {
    /// What `f` makes of an [`Answer::Ok`]'s answer; a stop or a failure as it is.
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Answer<U> {
        match self {
            Answer::Stop => Answer::Stop,
            Answer::Failed(e) => Answer::Failed(e),
            Answer::Ok(out) => Answer::Ok(f(out)),
        }
    }
}

async fn backoff_after(err: &crate::client::CallError) {
    if matches!(err, crate::client::CallError::Transport(_)) {
        tokio::time::sleep(TRANSPORT_BACKOFF).await;
    }
}

/// Sends messages until `total` have been claimed by the workers sharing `claims`:
/// `SendMessage` when `batch` is `None`, else `SendMessageBatch` of that many entries.
/// With `stamp`, bodies carry the send time so that consumers can measure delivery.
pub async fn send_worker(
    ctx: Arc<Ctx>,
    claims: Arc<AtomicU64>,
    total: u64,
    batch: Option<usize>,
    stamp: bool,
) -> Recorder {
    let mut client = ctx.client();
    let mut rec = Recorder::new(ctx.progress.clone());
    let per_call = batch.unwrap_or(1) as u64;
    let mut bodies: Vec<String> = Vec::with_capacity(per_call as usize);
    while let Some((first, n)) = ctx.claim(&claims, total, per_call) {
        let stamp_us = if stamp { ctx.stamp_now() } else { 0 };
        bodies.clear();
        bodies.extend((first..first + n).map(|seq| ctx.body(seq, stamp_us)));
        if batch.is_none() {
            let op = "SendMessage";
            let input = SendMessageIn {
                queue_url: &ctx.queue_url,
                message: ctx.message(&bodies[0], first),
            };
            match ctx
                .call::<_, SendMessageOut>(&mut client, &mut rec, None, op, &input)
                .await
            {
                Answer::Stop => break,
                Answer::Ok(_) => {
                    ctx.progress.sent.fetch_add(1, Ordering::Relaxed);
                    rec.worked();
                }
                Answer::Failed(e) => backoff_after(&e).await,
            }
        } else {
            let messages = bodies
                .iter()
                .zip(first..)
                .map(|(b, seq)| ctx.message(b, seq));
            match ctx.send_batch(&mut client, &mut rec, messages).await {
                Answer::Stop => break,
                Answer::Ok(()) => {}
                Answer::Failed(e) => backoff_after(&e).await,
            }
        }
    }
    rec
}

/// What happened to a received message id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// First time.
    New,
    /// Received again while a previous receipt was not yet deleted: a duplicate.
    Duplicate,
    /// Received again after it was deleted.
    AfterDelete,
}

/// Message ids seen by the consumers, and when they are done.
pub struct Tracker {
    /// MessageId → deleted yet.
    seen: Mutex<HashMap<String, bool>>,
    /// Distinct messages received.
    pub received: AtomicU64,
    /// Distinct messages deleted.
    pub deleted: AtomicU64,
    /// Messages received again before their deletion.
    pub duplicates: AtomicU64,
    /// Messages received again after their deletion.
    pub after_delete: AtomicU64,
    target: AtomicU64,
    done: watch::Sender<bool>,
    progress: Arc<Progress>,
}

impl Tracker {
    /// Done once `target` distinct messages were received.
    pub fn new(target: u64, progress: Arc<Progress>) -> Tracker {
        Tracker {
            seen: Mutex::new(HashMap::new()),
            received: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            after_delete: AtomicU64::new(0),
            target: AtomicU64::new(target),
            done: watch::channel(false).0,
            progress,
        }
    }

    /// Records the receipt of `id`.
    pub fn on_received(&self, id: &str) -> Seen {
        let seen = {
            let mut map = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(id) {
                None => {
                    map.insert(id.to_string(), false);
                    Seen::New
                }
                Some(false) => Seen::Duplicate,
                Some(true) => Seen::AfterDelete,
            }
        };
        match seen {
            Seen::New => {
                self.received.fetch_add(1, Ordering::Relaxed);
                self.progress.received.fetch_add(1, Ordering::Relaxed);
            }
            Seen::Duplicate => {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
            }
            Seen::AfterDelete => {
                self.after_delete.fetch_add(1, Ordering::Relaxed);
            }
        }
        seen
    }

    /// Records the deletion of `id`.
    pub fn on_deleted(&self, id: &str) {
        let mut map = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(deleted) = map.get_mut(id) {
            if !*deleted {
                *deleted = true;
                self.deleted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sets how many distinct messages end the phase.
    pub fn set_target(&self, target: u64) {
        self.target.store(target, Ordering::Relaxed);
        self.check_done();
    }

    /// Tells every consumer to stop once the target is reached.
    pub fn check_done(&self) {
        if self.received.load(Ordering::Relaxed) >= self.target.load(Ordering::Relaxed) {
            self.done.send_replace(true);
        }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.done.subscribe()
    }
}

/// Receives up to 10 messages at a time and deletes them with one
/// `DeleteMessageBatch`, until the tracker is done or the deadline passes. With
/// `delivery`, the send stamps in bodies give delivery latencies.
pub async fn consume_worker(ctx: Arc<Ctx>, tracker: Arc<Tracker>, delivery: bool) -> Recorder {
    let mut client = ctx.client();
    let mut rec = Recorder::new(ctx.progress.clone());
    let mut stop = tracker.subscribe();
    while let Some(messages) = ctx
        .receive_some(&mut client, &mut rec, &mut stop, true)
        .await
    {
        let now = Instant::now();
        for m in &messages {
            // Only a first receipt is a delivery; duplicates are counted by the tracker.
            if tracker.on_received(&m.message_id) == Seen::New && delivery {
                if let Some(age) = ctx.age_of(&m.body, now) {
                    rec.delivery_micros.push(micros(age));
                }
            }
        }
        rec.worked();
        tracker.check_done();
        // A compliant server returns at most 10; chunk anyway.
        for chunk in messages.chunks(BATCH_IDS.len()) {
            match ctx
                .delete_received(&mut client, &mut rec, &tracker, chunk)
                .await
            {
                Answer::Stop => return rec,
                Answer::Ok(()) => rec.worked(),
                Answer::Failed(e) => backoff_after(&e).await,
            }
        }
    }
    rec
}

/// Runs `n` copies of a worker and merges what they recorded.
pub async fn run_workers<F, Fut>(n: usize, progress: &Arc<Progress>, make: F) -> Recorder
where
    F: Fn() -> Fut,
    Fut: Future<Output = Recorder> + Send + 'static,
{
    let mut set = JoinSet::new();
    for _ in 0..n {
        set.spawn(make());
    }
    let mut all = Recorder::new(progress.clone());
    while let Some(done) = set.join_next().await {
        if let Ok(rec) = done {
            all.merge(rec);
        }
    }
    all
}

/// Producers (`SendMessage` with stamped bodies) and consumers at once; consumers stop
/// when they have received as many distinct messages as the producers sent.
pub async fn produce_consume(
    ctx: Arc<Ctx>,
    total: u64,
    producers: usize,
    consumers: usize,
) -> (Recorder, Arc<Tracker>) {
    let tracker = Arc::new(Tracker::new(u64::MAX, ctx.progress.clone()));
    let consuming = {
        let ctx = ctx.clone();
        let tracker = tracker.clone();
        tokio::spawn(async move {
            let progress = ctx.progress.clone();
            run_workers(consumers, &progress, || {
                consume_worker(ctx.clone(), tracker.clone(), true)
            })
            .await
        })
    };
    let claims = Arc::new(AtomicU64::new(0));
    let mut rec = run_workers(producers, &ctx.progress, || {
        send_worker(ctx.clone(), claims.clone(), total, None, true)
    })
    .await;
    tracker.set_target(ctx.progress.sent.load(Ordering::Relaxed));
    match consuming.await {
        Ok(r) => rec.merge(r),
        Err(e) => rec.error(format!("consumer task failed: {e}"), 1),
    }
    (rec, tracker)
}

/// `rounds` times: a receive waits with `WaitTimeSeconds=20`, then one message is
/// sent; the delivery latency is from the send's answer to the receive's answer.
pub async fn long_poll(ctx: Arc<Ctx>, rounds: u64) -> Recorder {
    let mut consumer = ctx.client();
    let mut producer = ctx.client();
    let mut rec = Recorder::new(ctx.progress.clone());
    let mut resync = false;
    for round in 0..rounds {
        if ctx.past_deadline() {
            break;
        }
        if resync {
            drain(&ctx, &mut consumer).await;
            resync = false;
        }
        let body = ctx.body(round, 0);
        let recv_input = ReceiveMessageIn {
            queue_url: &ctx.queue_url,
            max_number_of_messages: 1,
            visibility_timeout: ctx.visibility_timeout,
            wait_time_seconds: LONG_POLL_WAIT_SECONDS,
        };
        let send_input = SendMessageIn {
            queue_url: &ctx.queue_url,
            message: MessageIn {
                message_body: &body,
                message_group_id: None,
                message_deduplication_id: None,
            },
        };
        let recv = async {
            let t0 = Instant::now();
            let r = consumer
                .call::<_, ReceiveMessageOut>("ReceiveMessage", &recv_input)
                .await;
            (r, t0, Instant::now())
        };
        let send = async {
            tokio::time::sleep(LONG_POLL_SETTLE).await;
            let t0 = Instant::now();
            let r = producer
                .call::<_, SendMessageOut>("SendMessage", &send_input)
                .await;
            (r, t0, Instant::now())
        };
        let Some(((received, r0, r1), (sent, s0, s1))) =
            ctx.bounded(None, async { tokio::join!(recv, send) }).await
        else {
            break;
        };
        let sent_id = match sent {
            Ok(out) => {
                rec.ok("SendMessage", s1 - s0);
                ctx.progress.sent.fetch_add(1, Ordering::Relaxed);
                Some(out.message_id)
            }
            Err(e) => {
                rec.failed("SendMessage", &e);
                resync = true;
                None
            }
        };
        let messages = match received {
            Ok(out) => {
                rec.ok("ReceiveMessage", r1 - r0);
                out.messages
            }
            Err(e) => {
                rec.failed("ReceiveMessage", &e);
                resync = true;
                continue;
            }
        };
        match messages.first() {
            None if sent_id.is_some() => {
                rec.error("no-delivery-within-wait".into(), 1);
                resync = true;
            }
            None => {}
            Some(m) if sent_id.as_ref() == Some(&m.message_id) && m.body == body => {
                // The receive may legitimately answer before the send does: that is a
                // delivery latency of zero.
                rec.delivery_micros
                    .push(micros(r1.saturating_duration_since(s1)));
                ctx.progress.received.fetch_add(1, Ordering::Relaxed);
                rec.worked();
            }
            Some(_) => {
                rec.error("unexpected-message".into(), 1);
                resync = true;
            }
        }
        for m in &messages {
            let input = DeleteMessageIn {
                queue_url: &ctx.queue_url,
                receipt_handle: &m.receipt_handle,
            };
            let t0 = Instant::now();
            match ctx
                .bounded(None, consumer.call::<_, Ignored>("DeleteMessage", &input))
                .await
            {
                None => return rec,
                Some(Ok(_)) => rec.ok("DeleteMessage", t0.elapsed()),
                Some(Err(e)) => rec.failed("DeleteMessage", &e),
            }
        }
    }
    rec
}

/// Empties the queue after a round went wrong, so that the next round's receive does
/// not pick up this round's message. Unmeasured; bounded by the deadline and by 10
/// receives.
async fn drain(ctx: &Ctx, client: &mut Client) {
    for _ in 0..10 {
        let input = ReceiveMessageIn {
            queue_url: &ctx.queue_url,
            max_number_of_messages: 10,
            visibility_timeout: ctx.visibility_timeout,
            wait_time_seconds: 1,
        };
        let Some(Ok(out)) = ctx
            .bounded(
                None,
                client.call::<_, ReceiveMessageOut>("ReceiveMessage", &input),
            )
            .await
        else {
            return;
        };
        if out.messages.is_empty() {
            return;
        }
        for m in &out.messages {
            let input = DeleteMessageIn {
                queue_url: &ctx.queue_url,
                receipt_handle: &m.receipt_handle,
            };
            if ctx
                .bounded(None, client.call::<_, Ignored>("DeleteMessage", &input))
                .await
                .is_none()
            {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(size: usize) -> Ctx {
        Ctx {
            endpoint: Arc::new(Endpoint::parse("http://127.0.0.1:9").unwrap()),
            auth: false,
            queue_url: String::new(),
            size,
            deadline: Instant::now(),
            visibility_timeout: 30,
            origin: Instant::now(),
            pad: Arc::from("abcdefgh"),
            progress: Arc::new(Progress::default()),
            cut: AtomicBool::new(false),
            fifo: None,
        }
    }

    #[test]
    fn fifo_sends_go_round_robin_with_unique_ids() {
        let mut c = ctx(30);
        assert_eq!(c.fifo_ids(7), (None, None));
        c.fifo = Some(FifoIds {
            groups: 3,
            tag: "run".into(),
        });
        assert_eq!(c.fifo_ids(7), (Some("g1".into()), Some("run-7".into())));
        assert_eq!(c.fifo_ids(9).0.as_deref(), Some("g0"));
    }

    #[test]
    fn bodies_have_the_exact_size_and_carry_their_stamp() {
        let c = ctx(30);
        let b = c.body(12, 3456);
        assert_eq!(b.len(), 30);
        assert!(b.starts_with("12:3456:abcdefgh"));
        let age = c
            .age_of(&b, c.origin + Duration::from_micros(4456))
            .unwrap();
        assert_eq!(age, Duration::from_micros(1000));
        let c = ctx(3);
        let b = c.body(12, 3456);
        assert_eq!(b, "12:");
        assert_eq!(c.age_of(&b, Instant::now()), None);
    }

    #[test]
    fn tracker_counts_duplicates() {
        let t = Tracker::new(2, Arc::new(Progress::default()));
        let mut rx = t.subscribe();
        assert_eq!(t.on_received("a"), Seen::New);
        assert_eq!(t.on_received("a"), Seen::Duplicate);
        t.on_deleted("a");
        assert_eq!(t.on_received("a"), Seen::AfterDelete);
        t.check_done();
        assert!(!*rx.borrow_and_update());
        assert_eq!(t.on_received("b"), Seen::New);
        t.check_done();
        assert!(*rx.borrow_and_update());
        assert_eq!(t.received.load(Ordering::Relaxed), 2);
        assert_eq!(t.duplicates.load(Ordering::Relaxed), 1);
        assert_eq!(t.after_delete.load(Ordering::Relaxed), 1);
        assert_eq!(t.deleted.load(Ordering::Relaxed), 1);
    }
}
