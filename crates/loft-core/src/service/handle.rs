//! [`Service`], the one handle callers hold: the shared [`Core`] and the services over it,
//! each reached by an accessor (module doc of [`crate::service`]).

use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;

use super::core::{follow_wakeups, Core, ServiceConfig};
use super::functions::Functions;
use super::sns::envelope::MessageSigner;
use super::sns::{Sns, SnsDelivery};
use super::sqs::Sqs;
use crate::clock::Clock;
use crate::store::Store;

/// Makes the configuration's resources (queues, topics, subscriptions, mappings of the
/// config file) again after a reset; given to [`Service::set_provisioner`] by the binary
/// that read the file. Errors: a message saying which resource the service refused.
pub type Provisioner = Arc<
    dyn for<'a> Fn(
            &'a Service,
        )
            -> Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'a>>
        + Send
        + Sync,
>;

/// The service: the handle every caller holds. Share it behind an `Arc`; every method
/// takes `&self`. Its parts are the shared [`Core`] (which it dereferences to) and the
/// [`Sqs`], [`Sns`] and [`Functions`] services over it; none holds state that cannot be
/// rebuilt from the store (see [`Core`]).
pub struct Service {
    /// The shared core every service holds.
    core: Arc<Core>,
    /// SQS: queues and messages.
    sqs: Arc<Sqs>,
    /// SNS: topics, subscriptions, publish and deliveries.
    sns: Arc<Sns>,
    /// Functions: configured functions, lambda deliveries, event source mappings.
    functions: Arc<Functions>,
    /// Configuration: what makes the configuration file's resources again after a
    /// [`Service::reset`] (set once by the binary, [`Service::set_provisioner`]).
    pub(in crate::service) provisioner: std::sync::OnceLock<Provisioner>,
}

impl Service {
    /// A service over `store`, reading time from `clock`, signing SNS envelopes with
    /// `signer` when given.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
        signer: Option<Arc<dyn MessageSigner>>,
    ) -> Arc<Service> {
        let wakeups = store.wakeups();
        let core = Arc::new(Core::new(store, clock, config));
        let sqs = Arc::new(Sqs::new(core.clone()));
        let functions = Arc::new(Functions::new(core.clone(), sqs.clone()));
        let delivery = Arc::new(SnsDelivery::new(core.clone(), functions.clone(), signer));
        let sns = Arc::new(Sns::new(delivery));
        if let Some(rx) = wakeups {
            follow_wakeups(&core, rx);
        }
        Arc::new(Service {
            core,
            sqs,
            sns,
            functions,
            provisioner: std::sync::OnceLock::new(),
        })
    }

    /// The shared core: configuration, time, ARNs, accounts and permissions, limits,
    /// operator views (also reached through `Service`'s `Deref`).
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The SQS service: queue and message actions (SQS API Reference).
    pub fn sqs(&self) -> &Arc<Sqs> {
        &self.sqs
    }

    /// The SNS service: topic, subscription, platform and publish actions (SNS API
    /// Reference), and the delivery and replay workers' steps.
    pub fn sns(&self) -> &Arc<Sns> {
        &self.sns
    }

    /// The functions service: configured functions, lambda deliveries and event source
    /// mappings (Lambda API Reference).
    pub fn functions(&self) -> &Arc<Functions> {
        &self.functions
    }
}

impl Deref for Service {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
