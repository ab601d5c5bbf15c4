//! Resetting state between tests (`POST /_loft/reset`, LocalStack's
//! `POST /_localstack/state/reset`): every queue, message, topic, subscription, mapping,
//! move task and recorded message of the caller's account goes, in one store
//! transaction; then the configuration file's resources are made again.
//!
//! The rules: an open Loft (no credentials, [`Principal::enforced`] false) resets every
//! account; with credentials, the caller's account only (the route's IAM action,
//! `loft:Reset`, is checked on it before). No deleted-queue hold is recorded (SQS's 60 s
//! wait after DeleteQueue, `QueueDeletedRecently`), and the account's earlier holds go
//! too, so every name can be created again at once. What this node keeps about the
//! removed queues (cached records, limit counts, FIFO quota buckets) is forgotten, and
//! other nodes are told through the store ([`crate::store::Store::reset`]).

pub use super::handle::Provisioner;
use super::handle::Service;
use crate::error::{Error, Result};
use crate::model::{ResetCounts, ResetScope};
use crate::service::core::access::Principal;

impl Service {
    /// Sets what [`Service::reset`] runs after removing the default account's resources
    /// (the configuration file's provisioning). Only the first call counts.
    pub fn set_provisioner(&self, provisioner: Provisioner) {
        let _ = self.provisioner.set(provisioner);
    }

    /// Removes every resource of `caller`'s account (of every account when Loft is open,
    /// see the module doc), then makes the configuration's resources again when the
    /// default account was reset. Returns what was removed.
    ///
    /// Errors: `InternalError` when storage fails or the configuration's resources cannot
    /// be made again.
    pub async fn reset(&self, caller: &Principal) -> Result<ResetCounts> {
        let scope = caller.enforced.then(|| ResetScope {
            account: caller.account_id.to_string(),
            default_account: *caller.account_id == *self.config.account_id,
        });
        let reprovision = scope.as_ref().is_none_or(|s| s.default_account);
        let counts = self.store.reset(scope).await?;
        self.forget_queues();
        self.forget_counts(&counts.queue_ids);
        self.wake_all();
        tracing::info!(
            queues = counts.queues,
            topics = counts.topics,
            messages = counts.messages,
            account = if caller.enforced {
                &*caller.account_id
            } else {
                "*"
            },
            "state reset"
        );
        if reprovision {
            if let Some(provision) = self.provisioner.get() {
                provision(self)
                    .await
                    .map_err(|e| Error::internal(format!("reset: configuration resources: {e}")))?;
            }
        }
        Ok(counts)
    }
}
