//! The service side of functions as consumers: the configured functions (GetFunction,
//! ListFunctions), SNS `lambda` deliveries and their asynchronous-invocation retries, and
//! SQS event source mappings (their CRUD, their leases, receiving and settling batches).
//! The HTTP calls are the workers' (`loft-server`'s `delivery` and `mappings`); every rule
//! is here.
//!
//! Sources: Lambda API Reference (CreateEventSourceMapping, UpdateEventSourceMapping,
//! GetFunction); Lambda Developer Guide "Using Lambda with Amazon SQS" (batching window,
//! batch sizes, FIFO, partial batch responses, scaling), "Control which events Lambda sends
//! to your function" (filtering), "How Lambda handles errors and retries with asynchronous
//! invocation".

use std::collections::HashSet;
use std::ops::Deref;
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::filter_policy::{FilterPolicy, FilterPolicyScope};
use crate::functions::{
    self as fx, async_retry, batch_item_failures, AsyncNext, FunctionConfig, InvokeOutcome,
    SnsNotification, SqsRecord,
};
use crate::model::{DeliveryRecord, EventSourceMappingRecord, NewDelivery, SubscriptionProtocol};
use crate::names;
use crate::service::core::access::Writer;
use crate::service::core::activity::DeliveryOutcome;
use crate::service::core::Core;
use crate::service::sqs::messages::{ReceiveMessage, ReceivedMessage};
use crate::service::sqs::Sqs;

/// The functions service: the configured functions, SNS `lambda` deliveries and SQS event
/// source mappings (Lambda API Reference), over the shared [`Core`] it dereferences to.
/// Reached as [`Service::functions`](crate::service::Service::functions).
pub struct Functions {
    /// The shared core: store, clock, configuration, caches.
    core: Arc<Core>,
    /// The SQS service: event source mappings receive from and settle in its queues.
    sqs: Arc<Sqs>,
}

impl Functions {
    /// The functions service over `core`, reading mapped queues through `sqs`.
    pub(in crate::service) fn new(core: Arc<Core>, sqs: Arc<Sqs>) -> Functions {
        Functions { core, sqs }
    }
}

impl Deref for Functions {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// How long a node's lease on a mapping lasts (ms); its poller renews it every
/// [`MAPPING_RENEW_MS`], and another node takes the mapping over once it runs out.
pub const MAPPING_LEASE_MS: i64 = 30_000;
/// How often a poller renews its mapping's lease (ms).
pub const MAPPING_RENEW_MS: i64 = 10_000;
/// The only FunctionResponseTypes value.
pub const REPORT_BATCH_ITEM_FAILURES: &str = "ReportBatchItemFailures";
/// Default BatchSize of an SQS mapping.
pub const DEFAULT_BATCH_SIZE: i64 = 10;
/// Concurrent batches of one mapping without ScalingConfig.MaximumConcurrency (Loft's
/// choice; AWS scales a standard queue's pollers up to 1,250).
pub const DEFAULT_CONCURRENCY: i64 = 5;

/// What a CreateEventSourceMapping or UpdateEventSourceMapping sets; `None` keeps the
/// default (create) or the current value (update).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MappingInput {
    /// FunctionName: a name, a qualified name or an ARN (required by create).
    pub function_name: Option<String>,
    /// EventSourceArn: an SQS queue's ARN (create only).
    pub event_source_arn: Option<String>,
    /// Enabled (default true).
    pub enabled: Option<bool>,
    /// BatchSize, 1..=10000 (10 for FIFO queues), default 10.
    pub batch_size: Option<i64>,
    /// MaximumBatchingWindowInSeconds, 0..=300, default 0.
    pub maximum_batching_window_seconds: Option<i64>,
    /// FunctionResponseTypes: empty or `["ReportBatchItemFailures"]`.
    pub function_response_types: Option<Vec<String>>,
    /// FilterCriteria.Filters[].Pattern: event patterns as JSON text.
    pub filter_patterns: Option<Vec<String>>,
    /// ScalingConfig.MaximumConcurrency, 2..=1000; `Some(None)` removes it.
    pub maximum_concurrency: Option<Option<i64>>,
}

/// A mapping as the Lambda API answers it (EventSourceMappingConfiguration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingView {
    /// The stored mapping.
    pub record: EventSourceMappingRecord,
    /// EventSourceMappingArn: `arn:aws:lambda:{region}:{account}:event-source-mapping:{uuid}`.
    pub arn: String,
    /// State: `Creating`, `Enabled`, `Disabling` (disabled, while the node polling it has
    /// not stopped yet), `Disabled`, `Updating` or `Deleting`.
    pub state: &'static str,
}

fn lambda_invalid(reason: impl Into<String>) -> Error {
    Error::new(ErrorCode::LambdaInvalidParameterValue, reason.into())
}

fn mapping_not_found(uuid: &str) -> Error {
    Error::new(
        ErrorCode::LambdaResourceNotFound,
        format!("The resource you requested does not exist. (Service: Lambda, UUID: {uuid})"),
    )
}

impl Functions {
    // ----- functions

    /// The configured functions, in file order.
    pub fn functions(&self) -> &[FunctionConfig] {
        &self.config.functions
    }

    /// The function a FunctionName (name, `name:qualifier`, partial or full ARN) names for
    /// a caller of `account` ([`fx::FunctionRef`]: a name alone is `account`'s, an ARN is
    /// its own account's), when that account has a configured function of that name.
    ///
    /// Errors: `ResourceNotFoundException` "Function not found: ARN", the ARN built from
    /// `name_or_arn` and `account` alone ([`Functions::function_not_found`]).
    pub fn function(&self, account: &str, name_or_arn: &str) -> Result<&FunctionConfig> {
        let r = fx::FunctionRef::parse(name_or_arn, account, &self.config.region);
        self.config
            .functions
            .iter()
            .find(|f| f.name == r.name && self.function_account(f) == r.account)
            .ok_or_else(|| fx::function_not_found(&r.arn()))
    }

    /// The answer to a caller of `account` for a FunctionName that names no function it may
    /// use: `ResourceNotFoundException` naming the ARN the parameter names for that caller
    /// ([`fx::FunctionRef`]), never one of another account's functions, so another
    /// account's function is answered exactly as a missing one of that ARN.
    pub fn function_not_found(&self, account: &str, name_or_arn: &str) -> Error {
        fx::function_not_found(
            &fx::FunctionRef::parse(name_or_arn, account, &self.config.region).arn(),
        )
    }

    /// The account function `f` belongs to: its configured `account`, else the server's.
    pub fn function_account<'a>(&'a self, f: &'a FunctionConfig) -> &'a str {
        f.account.as_deref().unwrap_or(&self.config.account_id)
    }

    /// Whether `account`'s topics and event source mappings may invoke `f`: its own
    /// account's, and those of its `allow_accounts` (as a Lambda resource-based policy's
    /// `lambda:InvokeFunction` grant to those accounts; Lambda Developer Guide, "Granting
    /// function access to other accounts").
    pub fn may_invoke(&self, account: &str, f: &FunctionConfig) -> bool {
        self.function_account(f) == account || f.allow_accounts.iter().any(|a| a == account)
    }

    /// The function `name_or_arn` names for `account` ([`Functions::function`]) when
    /// `account` may invoke it ([`Functions::may_invoke`]): what a `lambda` subscription of
    /// `account`'s topic and an event source mapping of `account` call. Checked when they
    /// are made and again at each invocation, so a function whose configuration no longer
    /// allows the account stops being invoked for it. Another account's function is named
    /// by its ARN.
    ///
    /// Errors: `ResourceNotFoundException`, for another account's function as for a
    /// missing one ([`Functions::function_not_found`]).
    pub fn invocable_function(&self, account: &str, name_or_arn: &str) -> Result<&FunctionConfig> {
        let f = self.function(account, name_or_arn)?;
        if self.may_invoke(account, f) {
            Ok(f)
        } else {
            Err(self.function_not_found(account, name_or_arn))
        }
    }

    /// The function `name_or_arn` names when it is `account`'s own (GetFunction).
    ///
    /// Errors: `ResourceNotFoundException`, for another account's function as for a
    /// missing one ([`Functions::function_not_found`]).
    pub fn own_function(&self, account: &str, name_or_arn: &str) -> Result<&FunctionConfig> {
        let f = self.function(account, name_or_arn)?;
        if self.function_account(f) == account {
            Ok(f)
        } else {
            Err(self.function_not_found(account, name_or_arn))
        }
    }

    /// `account`'s own functions, in file order (ListFunctions).
    pub fn own_functions(&self, account: &str) -> Vec<&FunctionConfig> {
        self.config
            .functions
            .iter()
            .filter(|f| self.function_account(f) == account)
            .collect()
    }

    /// `arn:aws:lambda:{region}:{account}:function:{name}`, in the account of the
    /// configured function of that name (the server's account when there is none).
    pub fn function_arn(&self, name: &str) -> String {
        let account = self
            .config
            .functions
            .iter()
            .find(|f| f.name == name)
            .map_or(self.config.account_id.as_str(), |f| {
                self.function_account(f)
            });
        fx::function_arn(&self.config.region, account, name)
    }

    /// The function a `lambda` delivery `d` calls, when the account of its subscription's
    /// topic may still invoke it ([`Functions::invocable_function`]): checked again at each
    /// attempt, as the configuration can change between Subscribe and delivery.
    ///
    /// Errors: `ResourceNotFoundException` (no such function, not invocable by the topic's
    /// account, or the subscription is gone); `InternalError` when storage fails.
    pub async fn delivery_function(&self, d: &DeliveryRecord) -> Result<&FunctionConfig> {
        let sub = self.store.get_subscription(&d.subscription).await?;
        let Some(sub) = sub else {
            return Err(fx::function_not_found(&d.endpoint));
        };
        let (account, _) = self.split_key(&sub.topic_name);
        self.invocable_function(account, &d.endpoint)
    }

    /// The function mapping `m` invokes, when `m`'s account may still invoke it
    /// ([`Functions::invocable_function`]; checked before each batch).
    ///
    /// Errors: `ResourceNotFoundException`.
    pub fn mapping_function(&self, m: &EventSourceMappingRecord) -> Result<&FunctionConfig> {
        self.invocable_function(self.mapping_account(m), &m.function_arn)
    }

    // ----- SNS lambda subscriptions

    /// The durable delivery of one notification to a `lambda` subscription whose function
    /// is configured: the SNS event ([`fx::sns_event`]) as the body, due now. `None` when
    /// the subscription's function is not configured (the notification is then recorded,
    /// as before functions existed).
    pub(crate) fn lambda_delivery(
        &self,
        n: &SnsNotification<'_>,
        subscription: &str,
        function_arn: &str,
    ) -> Option<NewDelivery> {
        let account = names::arn_account(n.topic_arn).unwrap_or(&self.config.account_id);
        self.function(account, function_arn).ok()?;
        Some(NewDelivery {
            subscription: subscription.to_owned(),
            endpoint: function_arn.to_owned(),
            content_type: "application/json".into(),
            headers: vec![("x-amz-invocation-type".into(), "Event".into())],
            body: fx::sns_event(n).to_string(),
            due_at_ms: self.now_ms(),
            // The caller seals it as its topic says.
            seal: None,
        })
    }

    /// Records a failed invocation of a Lambda delivery. Retries follow asynchronous
    /// invocation ([`fx::async_retry`] with the function's MaximumRetryAttempts and
    /// MaximumEventAgeInSeconds); when they run out, the SNS envelope of the event goes to
    /// the subscription's RedrivePolicy dead-letter queue, if any, and the delivery ends.
    pub async fn invocation_failed(
        &self,
        d: &DeliveryRecord,
        outcome: &InvokeOutcome,
    ) -> Result<()> {
        let attempts = d.attempts + 1;
        let function_errors =
            d.function_errors + matches!(outcome, InvokeOutcome::FunctionError { .. }) as i64;
        let throttles = attempts - function_errors;
        let error = outcome.describe();
        let Some(sub) = self.store.get_subscription(&d.subscription).await? else {
            return self.store.finish_delivery(d.id).await;
        };
        let (account, _) = self.split_key(&sub.topic_name);
        let (retries, max_age) = match self.function(account, &d.endpoint) {
            Ok(f) => (f.maximum_retry_attempts, f.maximum_event_age_seconds),
            Err(_) => (0, fx::MIN_MAX_EVENT_AGE_SECONDS),
        };
        let age = self.now_ms() - d.created_at_ms;
        match async_retry(
            outcome,
            function_errors as u32,
            throttles as u32,
            age,
            retries,
            max_age,
        ) {
            AsyncNext::RetryInMs(ms) => {
                self.store
                    .retry_invocation(d.id, attempts, function_errors, self.now_ms() + ms, &error)
                    .await?;
                self.delivery_notify.notify_one();
                self.activity.delivery(
                    SubscriptionProtocol::Lambda.as_str(),
                    DeliveryOutcome::Retrying,
                    1,
                );
                Ok(())
            }
            AsyncNext::GiveUp => {
                tracing::warn!(subscription = %d.subscription, function = %d.endpoint, attempts, error, "invocation retries exhausted");
                let dlq = self.subscription_dlq(&sub);
                let body = fx::envelope_of_sns_event(&d.body).unwrap_or_else(|| d.body.clone());
                if let Some(queue) = dlq {
                    let topic_arn = self.topic_arn(&sub.topic_name);
                    if self.dead_letter_text(&queue, body, &topic_arn).await? {
                        return self.end_delivery(d, DeliveryOutcome::DeadLettered).await;
                    }
                }
                self.end_delivery(d, DeliveryOutcome::Dropped).await
            }
        }
    }

    // ----- event source mappings: the Lambda API

    /// The account mapping `m` belongs to ([`EventSourceMappingRecord::account`]).
    pub fn mapping_account<'a>(&'a self, m: &'a EventSourceMappingRecord) -> &'a str {
        m.account.as_deref().unwrap_or(&self.config.account_id)
    }

    /// EventSourceMappingArn of `m`: `arn:aws:lambda:{region}:{account}:event-source-mapping:{uuid}`,
    /// in the account it belongs to.
    pub fn mapping_arn(&self, m: &EventSourceMappingRecord) -> String {
        format!(
            "arn:aws:lambda:{}:{}:event-source-mapping:{}",
            self.config.region,
            self.mapping_account(m),
            m.uuid
        )
    }

    /// Mapping `uuid` as the store holds it, whichever account it belongs to: what the
    /// Lambda adapter's access check resolves a `UUID` to (the mapping's ARN and account,
    /// [`Functions::mapping_arn`], [`Functions::mapping_account`]). `None` when there is none.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn find_event_source_mapping(
        &self,
        uuid: &str,
    ) -> Result<Option<EventSourceMappingRecord>> {
        self.store.get_event_source_mapping(uuid).await
    }

    /// Mapping `uuid` of `account`; another account's is answered as a missing one.
    async fn owned_mapping(&self, account: &str, uuid: &str) -> Result<EventSourceMappingRecord> {
        self.store
            .get_event_source_mapping(uuid)
            .await?
            .filter(|m| self.mapping_account(m) == account)
            .ok_or_else(|| mapping_not_found(uuid))
    }

    fn mapping_view(
        &self,
        record: EventSourceMappingRecord,
        state: Option<&'static str>,
    ) -> MappingView {
        let arn = self.mapping_arn(&record);
        // Disabled in the store is not yet Disabled: the node holding the lease may still
        // be polling (a batch under way, a receive waiting); it gives the lease up once its
        // poller has stopped ([`Functions::release_mapping`]). Lambda API Reference,
        // EventSourceMappingConfiguration.State: `Disabling` until the mapping stops.
        let state = state.unwrap_or(if record.enabled {
            "Enabled"
        } else if record.owner.is_some() && record.lease_until_ms > self.now_ms() {
            "Disabling"
        } else {
            "Disabled"
        });
        MappingView { record, arn, state }
    }

    /// Checks the settings of `m` against its queue (`fifo`). Errors:
    /// `InvalidParameterValueException`.
    fn check_mapping(m: &EventSourceMappingRecord, fifo: bool) -> Result<()> {
        let max_batch = if fifo { 10 } else { 10_000 };
        if !(1..=max_batch).contains(&m.batch_size) {
            return Err(lambda_invalid(format!(
                "BatchSize must be between 1 and {max_batch} for this event source, not {}",
                m.batch_size
            )));
        }
        if !(0..=300).contains(&m.maximum_batching_window_seconds) {
            return Err(lambda_invalid(
                "MaximumBatchingWindowInSeconds must be between 0 and 300",
            ));
        }
        if m.batch_size > 10 && m.maximum_batching_window_seconds < 1 {
            return Err(lambda_invalid(
                "Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10",
            ));
        }
        if fifo && m.maximum_batching_window_seconds > 0 {
            return Err(lambda_invalid(
                "Batching window is not supported for FIFO queues",
            ));
        }
        for t in &m.function_response_types {
            if t != REPORT_BATCH_ITEM_FAILURES {
                return Err(lambda_invalid(format!(
                    "1 validation error detected: Value '[{t}]' at 'functionResponseTypes' failed to satisfy constraint: Member must satisfy enum value set: [ReportBatchItemFailures]"
                )));
            }
        }
        if m.function_response_types.len() > 1 {
            return Err(lambda_invalid(
                "FunctionResponseTypes takes at most one value",
            ));
        }
        if let Some(c) = m.maximum_concurrency {
            if !(2..=1000).contains(&c) {
                return Err(lambda_invalid(
                    "ScalingConfig.MaximumConcurrency must be between 2 and 1000",
                ));
            }
        }
        if m.filter_patterns.len() > 5 {
            return Err(lambda_invalid("FilterCriteria takes at most 5 filters"));
        }
        for p in &m.filter_patterns {
            if p.len() > 4096 {
                return Err(lambda_invalid(
                    "a filter pattern is longer than 4096 characters",
                ));
            }
            // AWS's answer names no detail (its recorded CreateEventSourceMapping errors).
            FilterPolicy::parse(p, FilterPolicyScope::MessageBody)
                .map_err(|_| lambda_invalid("Invalid filter pattern definition."))?;
        }
        Ok(())
    }

    /// The queue a mapping's EventSourceArn names, in the account and region the ARN
    /// names ([`Core::key_of_arn`]), through the service's queue lookup.
    ///
    /// Errors: `InvalidParameterValueException` when it is no SQS queue ARN or the queue
    /// does not exist.
    async fn mapping_queue(&self, arn: &str) -> Result<std::sync::Arc<crate::model::QueueRecord>> {
        // AWS's recorded answers: "Unrecognized event source." and the ReceiveMessage
        // error below (Loft maps SQS queues only).
        let key = self
            .key_of_arn(arn, "sqs")
            .ok_or_else(|| lambda_invalid("Unrecognized event source."))?;
        self.queue(&key).await.map_err(|_| {
            lambda_invalid(
                "Error occurred while ReceiveMessage. SQS Error Code: AWS.SimpleQueueService.NonExistentQueue. SQS Error Message: The specified queue does not exist.",
            )
        })
    }

    /// CreateEventSourceMapping for an SQS queue and a configured function, made in
    /// `account` (the caller's: the mapping is that account's). Answers the mapping in
    /// state `Creating` (AWS's 202 answer); it polls from the next claim. Whether the
    /// caller may read the queue is the access check's, before this.
    ///
    /// Errors: `InvalidParameterValueException` (missing or out-of-range settings, an
    /// unknown queue, a bad filter pattern), `ResourceNotFoundException` (no such
    /// function), `ResourceConflictException` (the queue and function are mapped already).
    pub async fn create_event_source_mapping(
        &self,
        account: &str,
        input: MappingInput,
    ) -> Result<MappingView> {
        let function_name = input
            .function_name
            .as_deref()
            .ok_or_else(|| lambda_invalid("FunctionName is required"))?;
        let function = self.invocable_function(account, function_name)?;
        let source = input
            .event_source_arn
            .clone()
            .ok_or_else(|| lambda_invalid("EventSourceArn is required for SQS event sources"))?;
        let queue = self.mapping_queue(&source).await?;
        let fifo = queue.name.ends_with(".fifo");
        let record = EventSourceMappingRecord {
            uuid: uuid::Uuid::new_v4().to_string(),
            function_arn: self.function_arn(&function.name),
            event_source_arn: self.queue_arn(&queue.name),
            batch_size: input.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
            maximum_batching_window_seconds: input.maximum_batching_window_seconds.unwrap_or(0),
            enabled: input.enabled.unwrap_or(true),
            function_response_types: input.function_response_types.unwrap_or_default(),
            filter_patterns: input.filter_patterns.unwrap_or_default(),
            maximum_concurrency: input.maximum_concurrency.flatten(),
            last_modified_ms: self.now_ms(),
            owner: None,
            lease_until_ms: 0,
            account: (account != self.config.account_id).then(|| account.to_owned()),
        };
        Self::check_mapping(&record, fifo)?;
        if let Some(existing) = self
            .store
            .create_event_source_mapping(record.clone())
            .await?
        {
            return Err(Error::new(
                ErrorCode::LambdaResourceConflict,
                format!(
                    "An event source mapping with SQS arn (\" {} \") and function (\" {} \") already exists. Please update or delete the existing mapping with UUID {existing}",
                    record.event_source_arn, function.name
                ),
            ));
        }
        Ok(self.mapping_view(record, Some("Creating")))
    }

    /// GetEventSourceMapping of `account`'s mapping `uuid`.
    ///
    /// Errors: `ResourceNotFoundException` (none, or another account's).
    pub async fn get_event_source_mapping(&self, account: &str, uuid: &str) -> Result<MappingView> {
        let record = self.owned_mapping(account, uuid).await?;
        Ok(self.mapping_view(record, None))
    }

    /// ListEventSourceMappings: `account`'s mappings, those of `event_source_arn` and of
    /// `function_name` when given, in creation order, from `marker` (an index this method gave as NextMarker),
    /// at most `max_items` (1..=10000, default 100); returns the page and the next marker.
    ///
    /// Errors: `InvalidParameterValueException` (MaxItems, Marker),
    /// `ResourceNotFoundException` (FunctionName names no function).
    pub async fn list_event_source_mappings(
        &self,
        account: &str,
        event_source_arn: Option<&str>,
        function_name: Option<&str>,
        marker: Option<&str>,
        max_items: Option<i64>,
    ) -> Result<(Vec<MappingView>, Option<String>)> {
        let max = max_items.unwrap_or(100);
        if !(1..=10_000).contains(&max) {
            return Err(lambda_invalid("MaxItems must be between 1 and 10000"));
        }
        let function_arn = match function_name {
            Some(f) => Some(self.function_arn(&self.invocable_function(account, f)?.name)),
            None => None,
        };
        let start: usize = match marker {
            Some(m) => m.parse().map_err(|_| lambda_invalid("Invalid Marker"))?,
            None => 0,
        };
        let all: Vec<EventSourceMappingRecord> = self
            .store
            .list_event_source_mappings()
            .await?
            .into_iter()
            .filter(|m| self.mapping_account(m) == account)
            .filter(|m| event_source_arn.is_none_or(|a| m.event_source_arn == a))
            .filter(|m| function_arn.as_deref().is_none_or(|a| m.function_arn == a))
            .collect();
        let end = (start + max as usize).min(all.len());
        let next = (end < all.len()).then(|| end.to_string());
        let page = all
            .into_iter()
            .skip(start)
            .take(end.saturating_sub(start))
            .map(|m| self.mapping_view(m, None))
            .collect();
        Ok((page, next))
    }

    /// UpdateEventSourceMapping of `account`'s mapping `uuid`: changes what `input` sets
    /// (not the event source). Answers the mapping in state `Updating`.
    ///
    /// Errors: `ResourceNotFoundException` (mapping, another account's, or function),
    /// `InvalidParameterValueException` (settings, as create; EventSourceArn given).
    pub async fn update_event_source_mapping(
        &self,
        account: &str,
        uuid: &str,
        input: MappingInput,
    ) -> Result<MappingView> {
        let mut m = self.owned_mapping(account, uuid).await?;
        if input.event_source_arn.is_some() {
            return Err(lambda_invalid("EventSourceArn cannot be updated"));
        }
        if let Some(f) = &input.function_name {
            m.function_arn = self.function_arn(&self.invocable_function(account, f)?.name);
        }
        if let Some(v) = input.enabled {
            m.enabled = v;
        }
        if let Some(v) = input.batch_size {
            m.batch_size = v;
        }
        if let Some(v) = input.maximum_batching_window_seconds {
            m.maximum_batching_window_seconds = v;
        }
        if let Some(v) = input.function_response_types {
            m.function_response_types = v;
        }
        if let Some(v) = input.filter_patterns {
            m.filter_patterns = v;
        }
        if let Some(v) = input.maximum_concurrency {
            m.maximum_concurrency = v;
        }
        let fifo =
            names::arn_resource(&m.event_source_arn, "sqs").is_some_and(|n| n.ends_with(".fifo"));
        Self::check_mapping(&m, fifo)?;
        m.last_modified_ms = self.now_ms();
        if !self.store.update_event_source_mapping(m.clone()).await? {
            return Err(mapping_not_found(uuid));
        }
        Ok(self.mapping_view(m, Some("Updating")))
    }

    /// DeleteEventSourceMapping of `account`'s mapping `uuid`: answers the mapping in
    /// state `Deleting`; its poller stops at its next lease renewal.
    ///
    /// Errors: `ResourceNotFoundException` (none, or another account's).
    pub async fn delete_event_source_mapping(
        &self,
        account: &str,
        uuid: &str,
    ) -> Result<MappingView> {
        let m = self.owned_mapping(account, uuid).await?;
        if !self.store.delete_event_source_mapping(uuid).await? {
            return Err(mapping_not_found(uuid));
        }
        Ok(self.mapping_view(m, Some("Deleting")))
    }

    /// Every mapping of `account` with who polls it, for the console: `this node`, `another node`,
    /// `no node yet` (enabled, waiting for a claim), `stopping` (disabled, its poller not
    /// stopped yet) or `paused` (disabled).
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn mapping_overview(
        &self,
        account: &str,
    ) -> Result<Vec<(MappingView, &'static str)>> {
        let now = self.now_ms();
        let all = self.store.list_event_source_mappings().await?;
        Ok(all
            .into_iter()
            .filter(|m| self.mapping_account(m) == account)
            .map(|m| {
                let poller = if !m.enabled && m.owner.is_some() && m.lease_until_ms > now {
                    "stopping"
                } else if !m.enabled {
                    "paused"
                } else if m.lease_until_ms <= now {
                    "no node yet"
                } else if m.owner.as_deref() == Some(self.node_id.as_str()) {
                    "this node"
                } else {
                    "another node"
                };
                (self.mapping_view(m, None), poller)
            })
            .collect())
    }

    // ----- event source mappings: the pollers

    /// Takes up to `limit` mappings no node holds for this node, leased for
    /// [`MAPPING_LEASE_MS`].
    pub async fn claim_mappings(&self, limit: u32) -> Result<Vec<EventSourceMappingRecord>> {
        let now = self.now_ms();
        self.store
            .claim_event_source_mappings(&self.node_id, now, now + MAPPING_LEASE_MS, limit)
            .await
    }

    /// Renews this node's lease on mapping `uuid` and returns it as it is now; `None` when
    /// it was deleted, disabled, or taken by another node: the poller then stops and, once
    /// no batch of it is under way, calls [`Functions::release_mapping`]. A disabled
    /// mapping keeps its lease until then, so it reads `Disabling`, not `Disabled`, while
    /// this node may still invoke its function.
    pub async fn renew_mapping(&self, uuid: &str) -> Result<Option<EventSourceMappingRecord>> {
        let until = self.now_ms() + MAPPING_LEASE_MS;
        let m = self
            .store
            .renew_event_source_mapping(uuid, &self.node_id, until)
            .await?;
        Ok(m.filter(|m| m.enabled))
    }

    /// Whether this node may go on with mapping `uuid`: it still exists, is enabled and is
    /// leased to this node. A poller asks before each invocation, so that a mapping
    /// disabled on any node stops being invoked within one receive.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn mapping_active(&self, uuid: &str) -> Result<bool> {
        let m = self.store.get_event_source_mapping(uuid).await?;
        Ok(m.is_some_and(|m| {
            m.enabled
                && m.owner.as_deref() == Some(self.node_id.as_str())
                && m.lease_until_ms > self.now_ms()
        }))
    }

    /// Gives up this node's lease on mapping `uuid` once its poller has stopped: a
    /// disabled mapping then reads `Disabled`, an enabled one (re-enabled meanwhile) is
    /// claimed again by the next node that looks.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn release_mapping(&self, uuid: &str) -> Result<()> {
        self.store
            .renew_event_source_mapping(uuid, &self.node_id, 0)
            .await
            .map(|_| ())
    }

    /// Makes the records of a batch of `m` that will not be invoked (the mapping stopped
    /// between the receive and the invocation) visible again at once, as a
    /// ChangeMessageVisibility to 0 would. A record whose handle no longer works is
    /// skipped: it is someone else's already.
    ///
    /// Errors: the queue's (`QueueDoesNotExist` once it is deleted).
    pub async fn mapping_return(
        &self,
        m: &EventSourceMappingRecord,
        records: &[SqsRecord],
    ) -> Result<()> {
        let Some(name) = names::arn_resource(&m.event_source_arn, "sqs") else {
            return Ok(());
        };
        if records.is_empty() {
            return Ok(());
        }
        let queue = self.queue(name).await?;
        for r in records {
            if let Err(e) = self
                .sqs
                .change_visibility_in(&queue, &r.receipt_handle, 0)
                .await
            {
                tracing::debug!(mapping = %m.uuid, error = %e, "a record of a stopped mapping could not be returned; it returns after the visibility timeout");
            }
        }
        Ok(())
    }

    /// Gives up every mapping this node polls (at shutdown), so another node takes them
    /// over at once.
    pub async fn release_mappings(&self) -> Result<()> {
        self.store
            .release_event_source_mappings(&self.node_id)
            .await
    }

    /// How many batches of `m` may be in flight at once.
    pub fn mapping_concurrency(m: &EventSourceMappingRecord) -> usize {
        m.maximum_concurrency.unwrap_or(DEFAULT_CONCURRENCY).max(1) as usize
    }

    /// Whether mapping `m` may still read the queue of `key`: Lambda polls with the
    /// function's execution role, so each receive and delete needs the queue's permission
    /// at that moment, not only at CreateEventSourceMapping (Lambda Developer Guide, "Using
    /// Lambda with Amazon SQS", execution role permissions). Loft has no execution role:
    /// it reads as the mapping's account (its root), so a queue of another account is read
    /// only while its `Policy` grants that account `sqs:ReceiveMessage` and
    /// `sqs:DeleteMessage` ([`Core::may_receive_from`]); the mapping's own account's
    /// queues are read unless their policy denies it.
    ///
    /// Errors: `AccessDenied` (403) in SQS's words; the mapping worker logs it and tries
    /// again later, as Lambda keeps polling.
    fn mapping_may_read(
        &self,
        m: &EventSourceMappingRecord,
        key: &str,
        queue: &crate::model::QueueRecord,
    ) -> Result<()> {
        let account = self.mapping_account(m);
        let arn = format!("arn:aws:iam::{account}:root");
        let reader = Writer::Principal { account, arn: &arn };
        let policy = queue.attributes.get("Policy").map(String::as_str);
        if self.may_receive_from(&reader, key, policy) {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::AccessDenied,
            format!(
                "User: {arn} is not authorized to perform: sqs:ReceiveMessage on resource: {} because no resource-based policy allows the sqs:ReceiveMessage action",
                self.queue_arn(key)
            ),
        ))
    }

    /// One receive for mapping `m`: up to `max` (1..=10) messages with every system and
    /// message attribute, waiting up to `wait_seconds` (0..=20) for the first. The queue's
    /// visibility timeout applies, and so does its redrive policy. Each receive checks that
    /// the mapping may still read the queue (`mapping_may_read`) before it starts and again
    /// before it answers messages (which go back to the queue at once when it may not).
    ///
    /// Errors: the queue's (`QueueDoesNotExist` once it is deleted); `AccessDenied` when
    /// the queue's policy no longer lets the mapping's account read it.
    pub async fn mapping_receive(
        &self,
        m: &EventSourceMappingRecord,
        max: i64,
        wait_seconds: i64,
    ) -> Result<Vec<SqsRecord>> {
        let key = self
            .key_of_arn(&m.event_source_arn, "sqs")
            .ok_or_else(|| Error::invalid("the mapping's event source is not a queue"))?;
        // Loft's own poller: not counted against the queue's FIFO throughput quota
        // (`quotas`), which meters clients' API calls.
        let queue = self.queue(&key).await?;
        self.mapping_may_read(m, &key, &queue)?;
        let r = ReceiveMessage {
            max_messages: Some(max.clamp(1, 10)),
            visibility_timeout: None,
            wait_seconds: Some(wait_seconds.clamp(0, 20)),
            system_attribute_names: vec!["All".into()],
            message_attribute_names: vec!["All".into()],
            attempt_id: None,
        };
        let got = self
            .sqs
            .receive_in(&queue, &r, false, std::future::pending())
            .await?;
        let records: Vec<SqsRecord> = got.into_iter().map(record_of).collect();
        if records.is_empty() {
            return Ok(records);
        }
        // A long poll allowed when it began may return messages sent after the grant was
        // removed: checked again before the function sees any, they go back at once.
        let queue = self.queue(&key).await?;
        if let Err(refused) = self.mapping_may_read(m, &key, &queue) {
            self.mapping_return(m, &records).await?;
            return Err(refused);
        }
        Ok(records)
    }

    /// Splits a received batch of `m` by its FilterCriteria: the records to invoke the
    /// function with, and those no pattern matches, which are deleted now (Lambda deletes
    /// filtered-out SQS messages). Without patterns every record is invoked.
    pub async fn mapping_filter(
        &self,
        m: &EventSourceMappingRecord,
        records: Vec<SqsRecord>,
    ) -> Result<Vec<SqsRecord>> {
        if m.filter_patterns.is_empty() {
            return Ok(records);
        }
        let patterns: Vec<FilterPolicy> = m
            .filter_patterns
            .iter()
            .filter_map(|p| FilterPolicy::parse(p, FilterPolicyScope::MessageBody).ok())
            .collect();
        let mut keep = Vec::with_capacity(records.len());
        let mut drop = Vec::new();
        for r in records {
            let view = r.filter_view(&m.event_source_arn, &self.config.region);
            if patterns.iter().any(|p| p.matches_body(&view)) {
                keep.push(r);
            } else {
                drop.push(r.receipt_handle);
            }
        }
        self.delete_handles(m, &drop).await?;
        Ok(keep)
    }

    /// The event of a batch of `m`.
    pub fn mapping_event(&self, m: &EventSourceMappingRecord, records: &[SqsRecord]) -> String {
        fx::sqs_event(records, &m.event_source_arn, &self.config.region).to_string()
    }

    /// Settles a batch of `m` after its invocation: on success every record is deleted,
    /// except, with `ReportBatchItemFailures`, those the answer's `batchItemFailures` names
    /// (an answer that cannot be read fails the whole batch). On a FIFO queue a failed
    /// record keeps every later record of its group too, so the group's order holds. On a
    /// function error or a failed call nothing is deleted: the records become visible again
    /// after the visibility timeout and the queue's redrive policy counts the receive.
    /// Returns how many records were deleted.
    pub async fn mapping_settle(
        &self,
        m: &EventSourceMappingRecord,
        records: &[SqsRecord],
        outcome: &InvokeOutcome,
    ) -> Result<usize> {
        let InvokeOutcome::Success(payload) = outcome else {
            tracing::debug!(mapping = %m.uuid, error = %outcome.describe(), "batch failed; its messages return after the visibility timeout");
            return Ok(0);
        };
        let failed: HashSet<String> = if m
            .function_response_types
            .iter()
            .any(|t| t == REPORT_BATCH_ITEM_FAILURES)
        {
            let ids: Vec<&str> = records.iter().map(|r| r.message_id.as_str()).collect();
            match batch_item_failures(payload, &ids) {
                Some(f) => f.into_iter().collect(),
                None => {
                    tracing::debug!(mapping = %m.uuid, "unreadable batchItemFailures; the whole batch failed");
                    return Ok(0);
                }
            }
        } else {
            HashSet::new()
        };
        let mut blocked_groups = HashSet::new();
        let mut done = Vec::with_capacity(records.len());
        for r in records {
            let group = r.attributes.get("MessageGroupId");
            let blocked = group.is_some_and(|g| blocked_groups.contains(g));
            if failed.contains(&r.message_id) || blocked {
                if let Some(g) = group {
                    blocked_groups.insert(g.clone());
                }
                continue;
            }
            done.push(r.receipt_handle.clone());
        }
        self.delete_handles(m, &done).await?;
        Ok(done.len())
    }

    async fn delete_handles(&self, m: &EventSourceMappingRecord, handles: &[String]) -> Result<()> {
        let Some(key) = self.key_of_arn(&m.event_source_arn, "sqs") else {
            return Ok(());
        };
        if handles.is_empty() {
            return Ok(());
        }
        // Not counted against the FIFO throughput quota, as the receive.
        let queue = self.queue(&key).await?;
        // A grant removed since the receive: the messages return after their visibility
        // timeout, as a refused DeleteMessage leaves them on AWS.
        self.mapping_may_read(m, &key, &queue)?;
        for h in handles {
            match self.sqs.delete_in(&queue, h).await {
                Ok(()) => {}
                // A handle whose visibility ran out meanwhile: the message is someone
                // else's now, as AWS's DeleteMessage would say.
                Err(e) if e.code == ErrorCode::ReceiptHandleIsInvalid => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn record_of(r: ReceivedMessage) -> SqsRecord {
    SqsRecord {
        message_id: r.message_id,
        receipt_handle: r.receipt_handle,
        body: r.body,
        md5_body: r.md5_body,
        attributes: r.attributes,
        message_attributes: r.message_attributes,
        md5_message_attributes: r.md5_message_attributes,
    }
}
