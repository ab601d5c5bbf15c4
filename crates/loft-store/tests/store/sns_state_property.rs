//! Property tests of the SNS subscription and platform-endpoint state machines: random
//! sequences of their operations through random nodes, with restarts, each answer checked
//! against a small model of AWS's documented behaviour.
//!
//! Subscriptions (SNS API Reference: Subscribe, SetSubscriptionAttributes,
//! GetSubscriptionAttributes, Unsubscribe, ListSubscriptionsByTopic, GetTopicAttributes,
//! DeleteTopic, Publish; SNS Developer Guide: "Amazon SNS raw message delivery", "Amazon
//! SNS message filtering"):
//!
//! - Subscribe of an endpoint the topic has already is idempotent: the same ARN when each
//!   attribute given equals the subscription's (or its default), else `InvalidParameter`
//!   "... Subscription already exists with different attributes"; a new endpoint gets a
//!   new ARN;
//! - GetSubscriptionAttributes reports RawMessageDelivery (`false` unless set), the
//!   FilterPolicy with FilterPolicyScope `MessageAttributes` while there is one, and
//!   neither once it is set to empty; a deleted subscription is `NotFound`, and so is
//!   setting its attributes; Unsubscribe of a deleted one succeeds;
//! - ListSubscriptionsByTopic lists exactly the live subscriptions, and the topic's
//!   SubscriptionsConfirmed counts them; deleting the topic deletes its subscriptions;
//! - Publish delivers to each live subscription whose filter policy matches the message's
//!   attributes, once, raw (the message itself) or in the JSON envelope.
//!
//! Platform endpoints (SNS API Reference: CreatePlatformEndpoint, SetEndpointAttributes,
//! GetEndpointAttributes, DeleteEndpoint, ListEndpointsByPlatformApplication, Publish):
//!
//! - CreatePlatformEndpoint with a token an endpoint holds answers that endpoint's ARN when
//!   the attributes are the same, else `InvalidParameter` "... already exists with the same
//!   Token, but different attributes."; otherwise a new endpoint, `Enabled` `true` unless
//!   given and `Token` the token;
//! - SetEndpointAttributes merges (a new Token moves the endpoint to it, freeing the old
//!   token); on a deleted endpoint it is `NotFound`, as GetEndpointAttributes is;
//!   DeleteEndpoint is idempotent;
//! - Publish to an endpoint with `Enabled` `false` is `EndpointDisabled`, to a deleted one
//!   `InvalidParameter`, to an enabled one accepted and recorded;
//! - ListEndpointsByPlatformApplication lists exactly the live endpoints and their
//!   attributes.
//!
//! Nodes are Services over one store, as in `fifo_topic_property.rs`: on SQLite several
//! Services share the store and a restart reopens its file; on PostgreSQL (when
//! `LOFT_TEST_DATABASE_URL` is set) each node has its own pool and a restart replaces one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::message::MessageAttributeValue;
use loft_core::service::{PlatformKind, PublishRequest, PublishTarget, ReceiveMessage};
use loft_core::store::Store;
use loft_core::{ErrorCode, Result, Service, ServiceConfig};
use loft_store::{Durability, PgOptions, PgStore, SqliteStore};
use proptest::prelude::*;

const START_MS: i64 = 1_700_000_000_000;
const NODES: usize = 3;
const QUEUES: usize = 3;
const TOPIC: &str = "prop-subs";
const ACCOUNT: &str = "000000000000";

type Map = BTreeMap<String, String>;

/// The filter policies a subscription may take (message attributes scope).
const POLICIES: [&str; 2] = [r#"{"color":["red"]}"#, r#"{"color":["blue","red"]}"#];
/// The `color` attribute a publish may carry.
const COLORS: [Option<&str>; 3] = [None, Some("red"), Some("blue")];

#[derive(Debug, Clone)]
enum SubOp {
    /// Subscribe queue `queue` with RawMessageDelivery and FilterPolicy, each given or not.
    Subscribe {
        node: usize,
        queue: usize,
        raw: Option<bool>,
        policy: Option<usize>,
    },
    /// SetSubscriptionAttributes on the `n`-th ARN handed out (modulo).
    SetRaw {
        node: usize,
        n: usize,
        raw: bool,
    },
    /// FilterPolicy set to one of [`POLICIES`], or to empty (`None`).
    SetPolicy {
        node: usize,
        n: usize,
        policy: Option<usize>,
    },
    Get {
        node: usize,
        n: usize,
    },
    Unsubscribe {
        node: usize,
        n: usize,
    },
    Publish {
        node: usize,
        color: usize,
    },
    /// DeleteTopic, then CreateTopic of the same name.
    RecreateTopic {
        node: usize,
    },
    Restart {
        node: usize,
    },
}

fn sub_op() -> impl Strategy<Value = SubOp> {
    let node = 0..NODES;
    prop_oneof![
        5 => (node.clone(), 0..QUEUES, prop::option::of(any::<bool>()), prop::option::of(0..POLICIES.len()))
            .prop_map(|(node, queue, raw, policy)| SubOp::Subscribe { node, queue, raw, policy }),
        2 => (node.clone(), any::<usize>(), any::<bool>())
            .prop_map(|(node, n, raw)| SubOp::SetRaw { node, n, raw }),
        2 => (node.clone(), any::<usize>(), prop::option::of(0..POLICIES.len()))
            .prop_map(|(node, n, policy)| SubOp::SetPolicy { node, n, policy }),
        2 => (node.clone(), any::<usize>()).prop_map(|(node, n)| SubOp::Get { node, n }),
        2 => (node.clone(), any::<usize>()).prop_map(|(node, n)| SubOp::Unsubscribe { node, n }),
        4 => (node.clone(), 0..COLORS.len()).prop_map(|(node, color)| SubOp::Publish { node, color }),
        1 => node.clone().prop_map(|node| SubOp::RecreateTopic { node }),
        1 => node.prop_map(|node| SubOp::Restart { node }),
    ]
}

#[derive(Debug, Clone)]
enum EndpointOp {
    /// CreatePlatformEndpoint with token `token` of a small pool, CustomUserData and
    /// Enabled each given or not.
    Create {
        node: usize,
        token: usize,
        custom: Option<u8>,
        enabled: Option<bool>,
    },
    /// SetEndpointAttributes on the `n`-th ARN handed out (modulo): each attribute given
    /// or not (at least one is), a new token or not.
    Set {
        node: usize,
        n: usize,
        custom: Option<u8>,
        enabled: Option<bool>,
        new_token: bool,
    },
    Get {
        node: usize,
        n: usize,
    },
    Delete {
        node: usize,
        n: usize,
    },
    Publish {
        node: usize,
        n: usize,
    },
    List {
        node: usize,
    },
    Restart {
        node: usize,
    },
}

fn endpoint_op() -> impl Strategy<Value = EndpointOp> {
    let node = 0..NODES;
    prop_oneof![
        5 => (node.clone(), 0usize..4, prop::option::of(0u8..2), prop::option::of(any::<bool>()))
            .prop_map(|(node, token, custom, enabled)| EndpointOp::Create { node, token, custom, enabled }),
        4 => (node.clone(), any::<usize>(), prop::option::of(0u8..2), prop::option::of(any::<bool>()), any::<bool>())
            .prop_map(|(node, n, custom, enabled, new_token)| EndpointOp::Set { node, n, custom, enabled, new_token }),
        2 => (node.clone(), any::<usize>()).prop_map(|(node, n)| EndpointOp::Get { node, n }),
        2 => (node.clone(), any::<usize>()).prop_map(|(node, n)| EndpointOp::Delete { node, n }),
        3 => (node.clone(), any::<usize>()).prop_map(|(node, n)| EndpointOp::Publish { node, n }),
        1 => node.clone().prop_map(|node| EndpointOp::List { node }),
        1 => node.prop_map(|node| EndpointOp::Restart { node }),
    ]
}

// ----- nodes over one store

/// Where the nodes' stores come from.
enum Engine {
    /// One file, shared by every node.
    Sqlite {
        path: std::path::PathBuf,
        store: Arc<SqliteStore>,
    },
    /// One database; each node its own pool.
    Postgres { url: String, schema: String },
}

struct Nodes {
    engine: Engine,
    clock: Arc<ManualClock>,
    services: Vec<Arc<Service>>,
}

impl Nodes {
    async fn node_store(&self) -> Arc<dyn Store> {
        match &self.engine {
            Engine::Sqlite { store, .. } => store.clone(),
            Engine::Postgres { url, schema } => Arc::new(
                PgStore::connect(
                    url,
                    PgOptions {
                        pool_size: 2,
                        schema: Some(schema.clone()),
                    },
                )
                .await
                .expect("connect to LOFT_TEST_DATABASE_URL")
                // Queues are encrypted by default (SSE-SQS); every node shares the
                // master key, as nodes on one database must.
                .with_key_source(loft_store::seal::KeySource::Key(
                    loft_store::seal::MasterKey::from_bytes([7; 32]),
                )),
            ),
        }
    }

    async fn start(engine: Engine) -> Nodes {
        let mut nodes = Nodes {
            engine,
            clock: Arc::new(ManualClock::new(START_MS)),
            services: Vec::new(),
        };
        for _ in 0..NODES {
            let s = nodes.service().await;
            nodes.services.push(s);
        }
        nodes
    }

    async fn service(&self) -> Arc<Service> {
        Service::new(
            self.node_store().await,
            self.clock.clone(),
            ServiceConfig::default(),
            None,
        )
    }

    async fn restart(&mut self, node: usize) {
        match &mut self.engine {
            Engine::Sqlite { path, store } => {
                // The process holds the file alone: every node goes down and comes back.
                self.services.clear();
                store.close().await;
                *store = Arc::new(SqliteStore::open(path, Durability::Process).expect("reopen"));
                for _ in 0..NODES {
                    let s = self.service().await;
                    self.services.push(s);
                }
            }
            Engine::Postgres { .. } => {
                self.services[node] = self.service().await;
            }
        }
    }
}

fn fail(trace: &[String], why: String) -> TestCaseError {
    TestCaseError::fail(format!("{why}\nops:\n  {}", trace.join("\n  ")))
}

fn attrs(pairs: &[(&str, &str)]) -> Map {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn nth<T: Clone>(list: &[T], n: usize) -> Option<T> {
    (!list.is_empty()).then(|| list[n % list.len()].clone())
}

// ----- subscriptions

/// A live subscription as the model knows it.
#[derive(Debug, Clone)]
struct Sub {
    queue: usize,
    raw: bool,
    policy: Option<usize>,
}

fn queue_name(q: usize) -> String {
    format!("prop-subs-q{q}")
}

fn matches(policy: Option<usize>, color: Option<&str>) -> bool {
    match policy {
        None => true,
        Some(0) => color == Some("red"),
        Some(_) => matches!(color, Some("red" | "blue")),
    }
}

async fn run_subscriptions(engine: Engine, ops: Vec<SubOp>) -> Result<(), TestCaseError> {
    let mut nodes = Nodes::start(engine).await;
    let svc = nodes.services[0].clone();
    svc.sns()
        .create_topic(TOPIC, Map::new(), Vec::new())
        .await
        .expect("create topic");
    for q in 0..QUEUES {
        svc.sqs()
            .create_queue(&queue_name(q), Map::new(), Map::new())
            .await
            .expect("create queue");
    }
    let topic_arn = svc.topic_arn(TOPIC);
    drop(svc);
    // Every ARN handed out, and the live ones with their state.
    let mut arns: Vec<String> = Vec::new();
    let mut live: BTreeMap<String, Sub> = BTreeMap::new();
    let mut trace: Vec<String> = Vec::new();
    let mut published = 0usize;
    for op in ops {
        trace.push(format!("{op:?}"));
        match op {
            SubOp::Subscribe {
                node,
                queue,
                raw,
                policy,
            } => {
                let svc = &nodes.services[node];
                let mut given = Map::new();
                if let Some(r) = raw {
                    given.insert("RawMessageDelivery".into(), r.to_string());
                }
                if let Some(p) = policy {
                    given.insert("FilterPolicy".into(), POLICIES[p].into());
                }
                let endpoint = svc.queue_arn(&queue_name(queue));
                let got = svc
                    .sns()
                    .subscribe(&topic_arn, "sqs", Some(&endpoint), given, true)
                    .await;
                let existing = live.iter().find(|(_, s)| s.queue == queue);
                match (existing, got) {
                    (Some((arn, s)), Ok(got)) => {
                        let same = raw.is_none_or(|r| r == s.raw)
                            && policy.is_none_or(|p| s.policy == Some(p));
                        if !same || &got.subscription_arn != arn {
                            return Err(fail(&trace, format!(
                                "Subscribe again answered {} (existing {arn}, {s:?}; same attributes: {same})",
                                got.subscription_arn
                            )));
                        }
                    }
                    (Some((arn, s)), Err(e)) => {
                        let same = raw.is_none_or(|r| r == s.raw)
                            && policy.is_none_or(|p| s.policy == Some(p));
                        if same
                            || e.code != ErrorCode::InvalidParameter
                            || !e
                                .message
                                .contains("Subscription already exists with different attributes")
                        {
                            return Err(fail(
                                &trace,
                                format!("Subscribe again ({arn}, {s:?}) refused: {e}"),
                            ));
                        }
                    }
                    (None, Ok(got)) => {
                        if arns.contains(&got.subscription_arn) {
                            return Err(fail(
                                &trace,
                                format!("a new subscription reused {}", got.subscription_arn),
                            ));
                        }
                        arns.push(got.subscription_arn.clone());
                        live.insert(
                            got.subscription_arn,
                            Sub {
                                queue,
                                raw: raw.unwrap_or(false),
                                policy,
                            },
                        );
                    }
                    (None, Err(e)) => {
                        return Err(fail(&trace, format!("Subscribe refused: {e}")));
                    }
                }
            }
            SubOp::SetRaw { node, n, raw } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let got = nodes.services[node]
                    .sns()
                    .set_subscription_attribute(&arn, "RawMessageDelivery", &raw.to_string())
                    .await;
                match (live.get_mut(&arn), got) {
                    (Some(s), Ok(())) => s.raw = raw,
                    (None, Err(e)) if e.code == ErrorCode::NotFound => {}
                    (s, got) => {
                        return Err(fail(
                            &trace,
                            format!("set RawMessageDelivery on {arn} ({s:?}): {got:?}"),
                        ));
                    }
                }
            }
            SubOp::SetPolicy { node, n, policy } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let value = policy.map_or("", |p| POLICIES[p]);
                let got = nodes.services[node]
                    .sns()
                    .set_subscription_attribute(&arn, "FilterPolicy", value)
                    .await;
                match (live.get_mut(&arn), got) {
                    (Some(s), Ok(())) => s.policy = policy,
                    (None, Err(e)) if e.code == ErrorCode::NotFound => {}
                    (s, got) => {
                        return Err(fail(
                            &trace,
                            format!("set FilterPolicy on {arn} ({s:?}): {got:?}"),
                        ));
                    }
                }
            }
            SubOp::Get { node, n } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let svc = &nodes.services[node];
                let got = svc.sns().get_subscription_attributes(&arn).await;
                match (live.get(&arn), got) {
                    (Some(s), Ok(a)) => {
                        let endpoint = svc.queue_arn(&queue_name(s.queue));
                        let want_policy = s.policy.map(|p| POLICIES[p]);
                        let ok = a.get("RawMessageDelivery").map(String::as_str)
                            == Some(if s.raw { "true" } else { "false" })
                            && a.get("FilterPolicy").map(String::as_str) == want_policy
                            && a.get("FilterPolicyScope").map(String::as_str)
                                == want_policy.map(|_| "MessageAttributes")
                            && a.get("SubscriptionArn") == Some(&arn)
                            && a.get("TopicArn") == Some(&topic_arn)
                            && a.get("Protocol").map(String::as_str) == Some("sqs")
                            && a.get("Endpoint") == Some(&endpoint)
                            && a.get("PendingConfirmation").map(String::as_str) == Some("false");
                        if !ok {
                            return Err(fail(
                                &trace,
                                format!("attributes of {arn} ({s:?}): {a:?}"),
                            ));
                        }
                    }
                    (None, Err(e)) if e.code == ErrorCode::NotFound => {}
                    (s, got) => {
                        return Err(fail(&trace, format!("get {arn} ({s:?}): {got:?}")));
                    }
                }
            }
            SubOp::Unsubscribe { node, n } => {
                let Some(arn) = nth(&arns, n) else { continue };
                nodes.services[node]
                    .sns()
                    .unsubscribe(&arn, false)
                    .await
                    .map_err(|e| fail(&trace, format!("Unsubscribe {arn}: {e}")))?;
                live.remove(&arn);
            }
            SubOp::Publish { node, color } => {
                let svc = nodes.services[node].clone();
                let color = COLORS[color];
                published += 1;
                let message = format!("message {published}");
                let mut req = PublishRequest {
                    message: message.clone(),
                    ..PublishRequest::default()
                };
                if let Some(c) = color {
                    req.message_attributes
                        .insert("color".into(), MessageAttributeValue::string(c));
                }
                svc.sns()
                    .publish(PublishTarget::Topic(&topic_arn), req)
                    .await
                    .map_err(|e| fail(&trace, format!("Publish: {e}")))?;
                for q in 0..QUEUES {
                    let sub = live.values().find(|s| s.queue == q);
                    let want = sub.filter(|s| matches(s.policy, color));
                    let got = svc
                        .sqs()
                        .receive_message(
                            &queue_name(q),
                            ReceiveMessage {
                                max_messages: Some(10),
                                visibility_timeout: Some(30),
                                wait_seconds: Some(0),
                                ..ReceiveMessage::default()
                            },
                        )
                        .await
                        .map_err(|e| fail(&trace, format!("receive: {e}")))?;
                    for m in &got {
                        svc.sqs()
                            .delete_message(&queue_name(q), &m.receipt_handle)
                            .await
                            .map_err(|e| fail(&trace, format!("delete: {e}")))?;
                    }
                    match (want, got.as_slice()) {
                        (None, []) => {}
                        (Some(s), [m]) => {
                            let body_ok = if s.raw {
                                m.body == message
                            } else {
                                serde_json::from_str::<serde_json::Value>(&m.body).is_ok_and(
                                    |env| {
                                        env["Type"] == "Notification"
                                            && env["Message"] == message.as_str()
                                            && env["TopicArn"] == topic_arn.as_str()
                                    },
                                )
                            };
                            if !body_ok {
                                return Err(fail(
                                    &trace,
                                    format!("queue {q} ({s:?}) got {:?}", m.body),
                                ));
                            }
                        }
                        (want, got) => {
                            let bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
                            return Err(fail(
                                &trace,
                                format!("queue {q}: {color:?} to {want:?} delivered {bodies:?}"),
                            ));
                        }
                    }
                }
            }
            SubOp::RecreateTopic { node } => {
                let svc = &nodes.services[node];
                svc.sns()
                    .delete_topic(&topic_arn)
                    .await
                    .map_err(|e| fail(&trace, format!("DeleteTopic: {e}")))?;
                svc.sns()
                    .create_topic(TOPIC, Map::new(), Vec::new())
                    .await
                    .map_err(|e| fail(&trace, format!("CreateTopic: {e}")))?;
                live.clear();
            }
            SubOp::Restart { node } => nodes.restart(node).await,
        }
        // After every step: the topic lists and counts exactly the live subscriptions.
        let svc = &nodes.services[trace.len() % NODES];
        let listed: BTreeSet<String> = svc
            .sns()
            .list_subscriptions(Some(&topic_arn), None)
            .await
            .map_err(|e| fail(&trace, format!("ListSubscriptionsByTopic: {e}")))?
            .items
            .iter()
            .map(|s| svc.sns().subscription_arn(s))
            .collect();
        let want: BTreeSet<String> = live.keys().cloned().collect();
        if listed != want {
            return Err(fail(&trace, format!("listed {listed:?}, live {want:?}")));
        }
        let topic = svc
            .sns()
            .get_topic_attributes(&topic_arn)
            .await
            .map_err(|e| fail(&trace, format!("GetTopicAttributes: {e}")))?;
        if topic.get("SubscriptionsConfirmed") != Some(&live.len().to_string()) {
            return Err(fail(
                &trace,
                format!(
                    "SubscriptionsConfirmed {:?} with {} live",
                    topic.get("SubscriptionsConfirmed"),
                    live.len()
                ),
            ));
        }
    }
    Ok(())
}

// ----- platform endpoints

fn custom_data(c: u8) -> String {
    format!("user data {c}")
}

async fn run_endpoints(engine: Engine, ops: Vec<EndpointOp>) -> Result<(), TestCaseError> {
    let mut nodes = Nodes::start(engine).await;
    let svc = nodes.services[0].clone();
    let app = svc
        .sns()
        .create_platform_application(
            svc.default_scope(),
            "prop-app",
            "GCM",
            attrs(&[("PlatformPrincipal", "p"), ("PlatformCredential", "c")]),
        )
        .await
        .expect("create platform application");
    drop(svc);
    let mut arns: Vec<String> = Vec::new();
    // Live endpoints: ARN to attributes (Token, Enabled, CustomUserData).
    let mut live: BTreeMap<String, Map> = BTreeMap::new();
    let mut trace: Vec<String> = Vec::new();
    let mut fresh_tokens = 0usize;
    let mut recorded = 0usize;
    for op in ops {
        trace.push(format!("{op:?}"));
        match op {
            EndpointOp::Create {
                node,
                token,
                custom,
                enabled,
            } => {
                let token = format!("token-{token}");
                let mut given = Map::new();
                if let Some(c) = custom {
                    given.insert("CustomUserData".into(), custom_data(c));
                }
                if let Some(e) = enabled {
                    given.insert("Enabled".into(), e.to_string());
                }
                let mut want = given.clone();
                want.insert("Token".into(), token.clone());
                want.entry("Enabled".into())
                    .or_insert_with(|| "true".into());
                let got = nodes.services[node]
                    .sns()
                    .create_platform_endpoint(ACCOUNT, &app, &token, given)
                    .await;
                let holder = live
                    .iter()
                    .find(|(_, a)| a.get("Token") == Some(&token))
                    .map(|(arn, a)| (arn.clone(), a.clone()));
                match (holder, got) {
                    (Some((arn, a)), Ok(got)) if a == want && got == arn => {}
                    (Some((arn, a)), Err(e))
                        if a != want
                            && e.code == ErrorCode::InvalidParameter
                            && e.message.contains(&format!(
                                "Endpoint {arn} already exists with the same Token, but different attributes."
                            )) => {}
                    (None, Ok(got)) if !arns.contains(&got) => {
                        arns.push(got.clone());
                        live.insert(got, want);
                    }
                    (holder, got) => {
                        return Err(fail(&trace, format!(
                            "CreatePlatformEndpoint {token} {want:?} (holder {holder:?}): {got:?}"
                        )));
                    }
                }
            }
            EndpointOp::Set {
                node,
                n,
                custom,
                enabled,
                new_token,
            } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let mut given = Map::new();
                if let Some(c) = custom {
                    given.insert("CustomUserData".into(), custom_data(c));
                }
                if let Some(e) = enabled {
                    given.insert("Enabled".into(), e.to_string());
                }
                if new_token || given.is_empty() {
                    fresh_tokens += 1;
                    given.insert("Token".into(), format!("fresh-{fresh_tokens}"));
                }
                let got = nodes.services[node]
                    .sns()
                    .set_platform_attributes(
                        ACCOUNT,
                        PlatformKind::Endpoint,
                        &arn,
                        Some(given.clone()),
                    )
                    .await;
                match (live.get_mut(&arn), got) {
                    (Some(a), Ok(())) => a.extend(given),
                    (None, Err(e)) if e.code == ErrorCode::NotFound => {}
                    (a, got) => {
                        return Err(fail(
                            &trace,
                            format!("SetEndpointAttributes {arn} ({a:?}): {got:?}"),
                        ));
                    }
                }
            }
            EndpointOp::Get { node, n } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let got = nodes.services[node]
                    .sns()
                    .platform_attributes(ACCOUNT, PlatformKind::Endpoint, &arn)
                    .await;
                match (live.get(&arn), got) {
                    (Some(a), Ok(got)) if *a == got => {}
                    (None, Err(e)) if e.code == ErrorCode::NotFound => {}
                    (a, got) => {
                        return Err(fail(
                            &trace,
                            format!("GetEndpointAttributes {arn} ({a:?}): {got:?}"),
                        ));
                    }
                }
            }
            EndpointOp::Delete { node, n } => {
                let Some(arn) = nth(&arns, n) else { continue };
                nodes.services[node]
                    .sns()
                    .delete_platform(ACCOUNT, PlatformKind::Endpoint, &arn)
                    .await
                    .map_err(|e| fail(&trace, format!("DeleteEndpoint {arn}: {e}")))?;
                live.remove(&arn);
            }
            EndpointOp::Publish { node, n } => {
                let Some(arn) = nth(&arns, n) else { continue };
                let svc = &nodes.services[node];
                let got = svc
                    .sns()
                    .publish(
                        PublishTarget::Target(&arn),
                        PublishRequest {
                            message: format!("push {}", trace.len()),
                            ..PublishRequest::default()
                        },
                    )
                    .await;
                let enabled = live
                    .get(&arn)
                    .map(|a| a.get("Enabled").map(String::as_str) == Some("true"));
                match (enabled, got) {
                    (Some(true), Ok(_)) => recorded += 1,
                    (Some(false), Err(e)) if e.code == ErrorCode::EndpointDisabled => {}
                    (None, Err(e)) if e.code == ErrorCode::InvalidParameter => {}
                    (enabled, got) => {
                        return Err(fail(
                            &trace,
                            format!("Publish to {arn} (enabled: {enabled:?}): {got:?}"),
                        ));
                    }
                }
                let store = nodes.node_store().await;
                let pushes = store
                    .list_recorded(1000, None)
                    .await
                    .map_err(|e| fail(&trace, format!("recorded: {e}")))?
                    .into_iter()
                    .filter(|m| m.protocol == "application")
                    .count();
                if pushes != recorded {
                    return Err(fail(
                        &trace,
                        format!("{pushes} pushes recorded, {recorded} accepted"),
                    ));
                }
            }
            EndpointOp::List { node } => {
                let svc = &nodes.services[node];
                let got: BTreeMap<String, Map> = svc
                    .sns()
                    .list_platform(svc.default_scope(), Some(&app), None)
                    .await
                    .map_err(|e| fail(&trace, format!("ListEndpointsByPlatformApplication: {e}")))?
                    .items
                    .into_iter()
                    .map(|r| (r.arn, r.attributes))
                    .collect();
                if got != live {
                    return Err(fail(&trace, format!("listed {got:?}, live {live:?}")));
                }
            }
            EndpointOp::Restart { node } => nodes.restart(node).await,
        }
    }
    Ok(())
}

// ----- runners

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn sqlite_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("loft.db");
    let store = Arc::new(SqliteStore::open(&path, Durability::Process).expect("open"));
    (Engine::Sqlite { path, store }, dir)
}

/// Runs `f` on a fresh PostgreSQL schema, or skips with a note when
/// `LOFT_TEST_DATABASE_URL` is unset.
fn on_postgres<F, Fut>(name: &str, f: F) -> Result<(), TestCaseError>
where
    F: FnOnce(Engine) -> Fut,
    Fut: std::future::Future<Output = Result<(), TestCaseError>>,
{
    let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("note: LOFT_TEST_DATABASE_URL is unset; skipping {name}");
        return Ok(());
    };
    let schema = format!("loft_prop_{:016x}", rand::random::<u64>());
    block_on(async {
        let outcome = f(Engine::Postgres {
            url: url.clone(),
            schema: schema.clone(),
        })
        .await;
        let _ = PgStore::drop_schema(&url, &schema).await;
        outcome
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(32),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The subscription rules above on SQLite.
    #[test]
    fn subscription_model_sqlite(ops in prop::collection::vec(sub_op(), 1..=40)) {
        let (engine, _dir) = sqlite_engine();
        block_on(run_subscriptions(engine, ops))?;
    }

    /// The platform-endpoint rules above on SQLite.
    #[test]
    fn platform_endpoint_model_sqlite(ops in prop::collection::vec(endpoint_op(), 1..=40)) {
        let (engine, _dir) = sqlite_engine();
        block_on(run_endpoints(engine, ops))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(8),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The subscription rules above on PostgreSQL, each node with its own pool (skipped,
    /// with a note, unless `LOFT_TEST_DATABASE_URL` names a database).
    #[test]
    fn subscription_model_postgres(ops in prop::collection::vec(sub_op(), 1..=40)) {
        on_postgres("subscription_model_postgres", |engine| run_subscriptions(engine, ops))?;
    }

    /// The platform-endpoint rules above on PostgreSQL (skipped likewise).
    #[test]
    fn platform_endpoint_model_postgres(ops in prop::collection::vec(endpoint_op(), 1..=40)) {
        on_postgres("platform_endpoint_model_postgres", |engine| run_endpoints(engine, ops))?;
    }
}
