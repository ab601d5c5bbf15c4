//! Topics, subscriptions and publish.
//!
//! Sources: `chapter-42-sns.md` ("Topics and subscriptions", "Publish"); SNS API Reference
//! (CreateTopic, Subscribe, Publish).

use std::collections::BTreeMap;

use super::Service;
use crate::error::{Error, Result};
use crate::model::{NewSubscription, SubscriptionRecord, TopicRecord};
use crate::names::{self, Naming};

/// The attribute marking a subscription made through the seeds' API: it receives the
/// seeds' `{"topic","message"}` JSON payload rather than an SNS envelope.
pub const SEED_PAYLOAD_ATTRIBUTE: &str = "LoftSeedPayload";

/// One HTTP delivery for the delivery workers: POST `body` to `endpoint`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The subscription's ARN suffix.
    pub subscription: String,
    /// The URL to POST to.
    pub endpoint: String,
    /// Content-Type of the body.
    pub content_type: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: String,
}

impl Service {
    /// The seeds' `POST /topics/{name}`: idempotent create. Errors: `InvalidParameterValue`
    /// for a name that is not a path segment.
    pub async fn create_topic_seed(&self, name: &str) -> Result<TopicRecord> {
        names::check_topic_name(name, Naming::Seed)?;
        Ok(self
            .store
            .create_topic(name, BTreeMap::new(), BTreeMap::new(), self.now_ms())
            .await?
            .0)
    }

    /// Every topic, by name.
    pub async fn all_topics(&self) -> Result<Vec<TopicRecord>> {
        self.store.list_topics().await
    }

    /// The seeds' `POST /topics/{name}/subscribe`: subscribes `endpoint` (an http or https
    /// URL), confirmed at once as the seed has no handshake; creates the topic if missing.
    ///
    /// Errors: `InvalidParameterValue` for an empty or non-HTTP endpoint or a bad name.
    pub async fn subscribe_seed(&self, topic: &str, endpoint: &str) -> Result<SubscriptionRecord> {
        let protocol = if endpoint.starts_with("http://") {
            "http"
        } else if endpoint.starts_with("https://") {
            "https"
        } else {
            return Err(Error::invalid(
                "endpoint must be an http:// or https:// URL",
            ));
        };
        let topic = self.create_topic_seed(topic).await?;
        let mut attributes = BTreeMap::new();
        attributes.insert(SEED_PAYLOAD_ATTRIBUTE.to_owned(), "true".to_owned());
        self.store
            .create_subscription(
                topic.id,
                NewSubscription {
                    uuid: uuid::Uuid::new_v4().to_string(),
                    protocol: protocol.into(),
                    endpoint: endpoint.into(),
                    attributes,
                    confirmed: true,
                    token: None,
                },
            )
            .await
    }

    /// The seeds' `POST /topics/{name}/publish`: hands `{"topic","message"}` to the
    /// delivery workers for every confirmed subscription and returns how many there are,
    /// without waiting for any delivery. A missing topic has no subscriptions.
    pub async fn publish_seed(&self, topic: &str, message: &str) -> Result<usize> {
        let Some(topic) = self.store.get_topic(topic).await? else {
            return Ok(0);
        };
        let subscriptions = self.store.list_subscriptions(Some(topic.id)).await?;
        let payload = serde_json::json!({"topic": topic.name, "message": message}).to_string();
        let mut delivered = 0;
        for s in subscriptions.iter().filter(|s| s.confirmed) {
            delivered += 1;
            let _ = self.deliveries.send(Delivery {
                subscription: s.uuid.clone(),
                endpoint: s.endpoint.clone(),
                content_type: "application/json".into(),
                headers: Vec::new(),
                body: payload.clone(),
            });
        }
        Ok(delivered)
    }
}
