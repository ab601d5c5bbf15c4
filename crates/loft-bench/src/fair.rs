//! The `fair` scenario: one tenant floods a standard queue, nine trickle; how long does
//! each tenant's message wait (SQS Developer Guide, "Amazon SQS fair queues": dwell time)?
//!
//! Preload (unmeasured): `--messages` messages of the noisy tenant, in batches. Measured
//! phase: one connection sends, every [`QUIET_INTERVAL`], one message for each of the
//! [`QUIET_TENANTS`] quiet tenants, while the other connections receive (up to 10, long
//! polling [`crate::scenarios::CONSUMER_WAIT_SECONDS`]) and delete in batches, until the
//! noisy backlog and every quiet message are consumed. Every body starts with
//! `<tenant>:<send stamp µs>:`; a message's dwell time runs from the start of its send to
//! the answer of the receive that got it.
//!
//! Each tenant is a MessageGroupId (`noisy`, `quiet-1` ... `quiet-9`), which makes the
//! queue fair on a server that implements fair queues. With `--fair-baseline` no message
//! carries a MessageGroupId (the tenant is only in the body): the same load on a plain
//! standard queue, the no-fairness baseline.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::scenarios::{run_workers, Answer, Ctx, Seen, Tracker};
use crate::sqs::{MessageIn, SendMessageIn, SendMessageOut};
use crate::stats::{micros, LatencySummary, Recorder};

/// Quiet tenants that trickle during the measured phase.
pub const QUIET_TENANTS: u32 = 9;

/// How often each quiet tenant sends one message.
pub const QUIET_INTERVAL: Duration = Duration::from_millis(100);

/// The noisy tenant's name (its MessageGroupId unless `--fair-baseline`).
pub const NOISY: &str = "noisy";

/// One tenant's dwell times.
#[derive(Debug, Serialize)]
pub struct TenantDwell {
    /// `noisy` or `quiet-N`.
    pub tenant: String,
    /// Messages of the tenant received (first receipts).
    pub messages: u64,
    /// Dwell time, ms: from the start of the send to the answer of the receive.
    pub dwell: Option<LatencySummary>,
}

/// What the `fair` scenario adds to the report.
#[derive(Debug, Serialize)]
pub struct FairReport {
    /// Whether tenants were MessageGroupIds (`false` with `--fair-baseline`).
    pub grouped: bool,
    /// Quiet tenants and how often each sent, ms.
    pub quiet_tenants: u32,
    pub quiet_interval_ms: u64,
    /// The noisy tenant first, then the quiet ones; `quiet (all)` sums the quiet ones.
    pub tenants: Vec<TenantDwell>,
}

/// Dwell samples by tenant, and how far the noisy backlog is consumed.
#[derive(Default)]
struct Dwell {
    micros: Mutex<HashMap<String, Vec<u32>>>,
    noisy_received: AtomicU64,
    quiet_sent: AtomicU64,
    producing: AtomicBool,
}

fn body(ctx: &Ctx, tenant: &str) -> String {
    let stamp = u64::try_from(ctx.origin.elapsed().as_micros()).unwrap_or(u64::MAX);
    let mut b = format!("{tenant}:{stamp}:");
    while b.len() < ctx.size {
        let room = ctx.size - b.len();
        b.push_str(&ctx.pad[..room.min(ctx.pad.len())]);
    }
    b
}

/// The tenant and dwell time of a body made by [`body`], received at `now`.
fn tenant_of<'a>(ctx: &Ctx, body: &'a str, now: Instant) -> Option<(&'a str, Duration)> {
    let mut parts = body.splitn(3, ':');
    let tenant = parts.next()?;
    let stamp: u64 = parts.next()?.parse().ok()?;
    let sent = ctx.origin + Duration::from_micros(stamp);
    Some((tenant, now.saturating_duration_since(sent)))
}

/// A message of `tenant` with `body`: in the tenant's group when `grouped`.
fn message<'a>(body: &'a str, grouped: bool, tenant: &str) -> MessageIn<'a> {
    MessageIn {
        message_body: body,
        message_group_id: grouped.then(|| tenant.to_owned()),
        message_deduplication_id: None,
    }
}

/// Preloads `total` messages of the noisy tenant over `connections` connections, in
/// batches of `batch`. Returns the recorder and how many the server acknowledged.
pub async fn preload(
    ctx: Arc<Ctx>,
    connections: usize,
    total: u64,
    batch: usize,
    grouped: bool,
) -> Recorder {
    let claims = Arc::new(AtomicU64::new(0));
    run_workers(connections, &ctx.progress, || {
        let ctx = ctx.clone();
        let claims = claims.clone();
        async move {
            let mut client = ctx.client();
            let mut rec = Recorder::new(ctx.progress.clone());
            while let Some((_, n)) = ctx.claim(&claims, total, batch as u64) {
                let bodies: Vec<String> = (0..n).map(|_| body(&ctx, NOISY)).collect();
                let messages = bodies.iter().map(|b| message(b, grouped, NOISY));
                if let Answer::Stop = ctx.send_batch(&mut client, &mut rec, messages).await {
                    break;
                }
            }
            rec
        }
    })
    .await
}

/// The measured phase: one quiet producer and `consumers` consumers, until the `noisy`
/// preloaded messages and every quiet message are received (or the deadline).
pub async fn run(
    ctx: Arc<Ctx>,
    consumers: usize,
    noisy: u64,
    grouped: bool,
) -> (Recorder, Arc<Tracker>, FairReport) {
    let tracker = Arc::new(Tracker::new(u64::MAX, ctx.progress.clone()));
    let dwell = Arc::new(Dwell::default());
    dwell.producing.store(true, Ordering::Relaxed);
    let consuming = {
        let (ctx, tracker, dwell) = (ctx.clone(), tracker.clone(), dwell.clone());
        tokio::spawn(async move {
            let progress = ctx.progress.clone();
            run_workers(consumers, &progress, || {
                consume(ctx.clone(), tracker.clone(), dwell.clone())
            })
            .await
        })
    };
    let mut rec = produce_quiet(ctx.clone(), dwell.clone(), noisy, grouped).await;
    dwell.producing.store(false, Ordering::Relaxed);
    tracker.set_target(noisy + dwell.quiet_sent.load(Ordering::Relaxed));
    match consuming.await {
        Ok(r) => rec.merge(r),
        Err(e) => rec.error(format!("consumer task failed: {e}"), 1),
    }
    let samples = std::mem::take(&mut *dwell.micros.lock().unwrap_or_else(|e| e.into_inner()));
    let mut by: BTreeMap<String, Vec<u32>> = samples.into_iter().collect();
    let mut tenants = Vec::new();
    let summary = |tenant: &str, v: Vec<u32>| TenantDwell {
        tenant: tenant.to_owned(),
        messages: v.len() as u64,
        dwell: LatencySummary::from_micros(v),
    };
    tenants.push(summary(NOISY, by.remove(NOISY).unwrap_or_default()));
    let all_quiet: Vec<u32> = by.values().flatten().copied().collect();
    tenants.push(summary("quiet (all)", all_quiet));
    for (tenant, v) in by {
        tenants.push(summary(&tenant, v));
    }
    let report = FairReport {
        grouped,
        quiet_tenants: QUIET_TENANTS,
        quiet_interval_ms: QUIET_INTERVAL.as_millis() as u64,
        tenants,
    };
    (rec, tracker, report)
}

/// Every [`QUIET_INTERVAL`], one message per quiet tenant, while the noisy backlog lasts.
async fn produce_quiet(ctx: Arc<Ctx>, dwell: Arc<Dwell>, noisy: u64, grouped: bool) -> Recorder {
    let mut client = ctx.client();
    let mut rec = Recorder::new(ctx.progress.clone());
    let mut tick = tokio::time::interval(QUIET_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while dwell.noisy_received.load(Ordering::Relaxed) < noisy && !ctx.past_deadline() {
        tick.tick().await;
        for k in 1..=QUIET_TENANTS {
            let tenant = format!("quiet-{k}");
            let b = body(&ctx, &tenant);
            let op = "SendMessage";
            let input = SendMessageIn {
                queue_url: &ctx.queue_url,
                message: message(&b, grouped, &tenant),
            };
            match ctx
                .call::<_, SendMessageOut>(&mut client, &mut rec, None, op, &input)
                .await
            {
                Answer::Stop => return rec,
                Answer::Ok(_) => {
                    ctx.progress.sent.fetch_add(1, Ordering::Relaxed);
                    dwell.quiet_sent.fetch_add(1, Ordering::Relaxed);
                }
                Answer::Failed(_) => {}
            }
        }
    }
    rec
}

async fn consume(ctx: Arc<Ctx>, tracker: Arc<Tracker>, dwell: Arc<Dwell>) -> Recorder {
    let mut client = ctx.client();
    let mut rec = Recorder::new(ctx.progress.clone());
    let mut stop = tracker.subscribe();
    while let Some(messages) = ctx
        .receive_some(&mut client, &mut rec, &mut stop, false)
        .await
    {
        let now = Instant::now();
        {
            let mut samples = dwell.micros.lock().unwrap_or_else(|e| e.into_inner());
            for m in &messages {
                if tracker.on_received(&m.message_id) != Seen::New {
                    continue;
                }
                if let Some((tenant, age)) = tenant_of(&ctx, &m.body, now) {
                    if tenant == NOISY {
                        dwell.noisy_received.fetch_add(1, Ordering::Relaxed);
                    }
                    samples
                        .entry(tenant.to_owned())
                        .or_default()
                        .push(micros(age));
                }
            }
        }
        rec.worked();
        if !dwell.producing.load(Ordering::Relaxed) {
            tracker.check_done();
        }
        let deleted = ctx
            .delete_received(&mut client, &mut rec, &tracker, &messages)
            .await;
        if let Answer::Stop = deleted {
            break;
        }
    }
    rec
}
