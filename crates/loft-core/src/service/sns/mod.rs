//! The SNS service: topics, subscriptions, publish and everything after it.
//!
//! Two types, one over the other: [`SnsDelivery`] (what becomes of a message: the
//! envelope every notification is built in, data protection, HTTP/S deliveries, archive
//! replays, and the topic and subscription lookups they need) and [`Sns`] (topics,
//! subscriptions, platform applications and endpoints, SMS settings, publish and fan-out),
//! which dereferences to [`SnsDelivery`], so `service.sns()` answers every SNS action.
//!
//! - `topics`: topics and subscriptions.
//! - `listing`: how subscriptions are listed, the SMS settings answers.
//! - [`platform`]: platform applications and endpoints.
//! - `envelope`: SNS message formats (the envelope, signed fields, SQS copies, structured
//!   text), shared by publish, replay and subscriptions.
//! - `endpoints`: Subscribe's Endpoint, the shape each protocol takes and its refusal.
//! - `sns_errors`: SNS's `InvalidParameter` answers, a leaf every SNS file may import.
//! - `publish`: publish and fan-out; `batch`: PublishBatch's own rules.
//! - `deliveries`: HTTP/S delivery outcomes and retries; [`delivery_status`]: their logs.
//! - `protection`: SNS message data protection (Put/GetDataProtectionPolicy, the
//!   Inbound and Outbound hooks of Publish).
//! - [`archive`] and [`replay`]: FIFO topics' message archive and its replays.
//!
//! It stands on the shared [`Core`] and the functions service, and uses the SQS
//! service's message rules (sequence numbers, the deduplication window: fan-out writes a
//! queue's copy in the publish's own store transaction); SQS never calls into it.

pub mod archive;
pub mod batch;
pub(crate) mod deliveries;
pub mod delivery_status;
mod endpoints;
pub(crate) mod envelope;
pub(crate) mod listing;
pub mod platform;
pub(crate) mod protection;
pub(crate) mod publish;
pub mod replay;
pub mod sandbox;
mod sns_errors;
pub(crate) mod topics;

use std::ops::Deref;
use std::sync::Arc;

use crate::service::core::Core;
use crate::service::functions::Functions;

/// What becomes of an SNS message once published (SNS Developer Guide: message delivery,
/// data protection, message archiving and replay): its envelope, its data protection
/// hooks, its HTTP/S deliveries and its replays, over the shared [`Core`] it dereferences
/// to. Reached through [`Sns`], which dereferences to it.
pub struct SnsDelivery {
    /// The shared core: store, clock, configuration, caches.
    core: Arc<Core>,
    /// The functions service: `lambda` subscriptions deliver to its functions.
    functions: Arc<Functions>,
    /// Configuration: signs SNS envelopes, when configured.
    signer: Option<Arc<dyn envelope::MessageSigner>>,
    /// Process bookkeeping: HTTP/S notifications this process started per subscription
    /// in the current second (`throttlePolicy.maxReceivesPerSecond`, see
    /// [`deliveries`]); per node by design, like the limits' counters.
    throttle: deliveries::Throttle,
    /// Messages each topic's data protection audit statement considered (SampleRate).
    audit_counts: protection::AuditCounts,
}

impl SnsDelivery {
    /// Deliveries over `core`, to `functions`' functions, signing with `signer`.
    pub(in crate::service) fn new(
        core: Arc<Core>,
        functions: Arc<Functions>,
        signer: Option<Arc<dyn envelope::MessageSigner>>,
    ) -> SnsDelivery {
        SnsDelivery {
            core,
            functions,
            signer,
            throttle: deliveries::Throttle::default(),
            audit_counts: protection::AuditCounts::default(),
        }
    }
}

impl Deref for SnsDelivery {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// The SNS service (SNS API Reference: topics, subscriptions, platform, SMS settings,
/// Publish and PublishBatch), over [`SnsDelivery`] it dereferences to. Reached as
/// [`Service::sns`](crate::service::Service::sns).
pub struct Sns {
    /// What becomes of a message (and, through it, the core and the functions service).
    delivery: Arc<SnsDelivery>,
}

impl Sns {
    /// The SNS service over `delivery`.
    pub(in crate::service) fn new(delivery: Arc<SnsDelivery>) -> Sns {
        Sns { delivery }
    }

    /// What becomes of a message: the delivery and replay workers' steps (also reached
    /// through `Sns`'s `Deref`).
    pub fn delivery(&self) -> &Arc<SnsDelivery> {
        &self.delivery
    }
}

impl Deref for Sns {
    type Target = SnsDelivery;

    fn deref(&self) -> &SnsDelivery {
        &self.delivery
    }
}
