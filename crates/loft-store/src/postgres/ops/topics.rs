//! Topics and their subscriptions.

use super::*;

// ----- topics

const TOPIC_COLUMNS: &str = "id, name, attributes, tags, created_at";

fn topic_row(r: &Row) -> TopicRecord {
    TopicRecord {
        id: r.get(0),
        name: r.get(1),
        attributes: from_json(r.get(2)),
        tags: from_json(r.get(3)),
        created_at_ms: r.get(4),
    }
}

pub async fn create_topic<C: GenericClient>(
    c: &C,
    name: &str,
    attributes: &Map,
    tags: &Map,
    now_ms: i64,
) -> Result<(TopicRecord, bool), Error> {
    let insert = format!(
        "INSERT INTO topics (name, attributes, tags, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (name) DO NOTHING RETURNING {TOPIC_COLUMNS}"
    );
    let params: Params = &[&name, &to_json(attributes), &to_json(tags), &now_ms];
    create_named(c, &insert, &select_topic(), params, topic_row).await
}

/// The statement of the topic named `$1`.
fn select_topic() -> String {
    format!("SELECT {TOPIC_COLUMNS} FROM topics WHERE name = $1")
}

pub async fn get_topic<C: GenericClient>(c: &C, name: &str) -> Result<Option<TopicRecord>, Error> {
    Ok(query_opt(c, &select_topic(), &[&name])
        .await?
        .as_ref()
        .map(topic_row))
}

pub async fn list_topics<C: GenericClient>(c: &C) -> Result<Vec<TopicRecord>, Error> {
    let sql = format!("SELECT {TOPIC_COLUMNS} FROM topics ORDER BY name");
    Ok(query(c, &sql, &[]).await?.iter().map(topic_row).collect())
}

/// The topics of one account and region (`Store::list_topics_of`), by name.
pub async fn list_topics_of<C: GenericClient>(
    c: &C,
    prefix: &str,
    bare: bool,
) -> Result<Vec<TopicRecord>, Error> {
    let sql = super::queues::listing_rows("topics", TOPIC_COLUMNS, bare);
    let end = super::queues::listing_end(prefix);
    Ok(query(c, &sql, &[&prefix, &end])
        .await?
        .iter()
        .map(topic_row)
        .collect())
}

pub async fn delete_topic<C: GenericClient>(c: &C, topic_id: i64) -> Result<bool, Error> {
    let n = execute(
        c,
        "WITH s AS (DELETE FROM subscriptions WHERE topic_id = $1), \
              r AS (DELETE FROM subscription_replays WHERE topic_id = $1), \
              k AS (DELETE FROM topic_dedup WHERE topic_id = $1), \
              a AS (DELETE FROM topic_archive WHERE topic_id = $1) \
         DELETE FROM topics WHERE id = $1",
        &[&topic_id],
    )
    .await?;
    Ok(n == 1)
}

pub async fn set_topic_json<C: GenericClient>(
    c: &C,
    topic_id: i64,
    column: &'static str,
    map: &Map,
) -> Result<(), Error> {
    let sql = format!("UPDATE topics SET {column} = $2 WHERE id = $1");
    execute(c, &sql, &[&topic_id, &to_json(map)])
        .await
        .map(drop)
}

// ----- subscriptions

const SUBSCRIPTION_COLUMNS: &str = "s.seq, s.topic_id, t.name, s.uuid, s.protocol, s.endpoint, \
    s.attributes, s.confirmed, s.token";

/// A subscription row; `Broken` if its protocol is none Subscribe stores.
fn subscription_row(r: &Row) -> Result<SubscriptionRecord, Error> {
    Ok(SubscriptionRecord {
        seq: r.get(0),
        topic_id: r.get(1),
        topic_name: r.get(2),
        uuid: r.get(3),
        protocol: SubscriptionProtocol::parse(r.get(4))
            .map_err(|_| Failure::Broken("a subscription with an unknown protocol"))?,
        endpoint: r.get(5),
        attributes: from_json(r.get(6)),
        confirmed: r.get(7),
        token: r.get(8),
    })
}

pub async fn create_subscription<C: GenericClient>(
    c: &C,
    topic_id: i64,
    s: &NewSubscription,
) -> Result<Option<SubscriptionRecord>, Error> {
    let sql = format!(
        "WITH s AS (INSERT INTO subscriptions (topic_id, uuid, protocol, endpoint, attributes, \
           confirmed, token) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *) \
         SELECT {SUBSCRIPTION_COLUMNS} FROM s JOIN topics t ON t.id = s.topic_id"
    );
    query_opt(
        c,
        &sql,
        &[
            &topic_id,
            &s.uuid,
            &s.protocol.as_str(),
            &s.endpoint,
            &to_json(&s.attributes),
            &s.confirmed,
            &s.token,
        ],
    )
    .await?
    .as_ref()
    .map(subscription_row)
    .transpose()
}

pub async fn list_subscriptions<C: GenericClient>(
    c: &C,
    topic_id: Option<i64>,
) -> Result<Vec<SubscriptionRecord>, Error> {
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE $1::bigint IS NULL OR s.topic_id = $1 ORDER BY s.seq"
    );
    query(c, &sql, &[&topic_id])
        .await?
        .iter()
        .map(subscription_row)
        .collect()
}

/// The subscriptions of one account's and region's topics
/// (`Store::list_subscriptions_of`) and those `subscriber` made on other accounts' topics,
/// by creation: the topics' ids from their indexes, each topic's subscriptions through
/// `subscriptions_topic`, the subscriber's through `subscriptions_subscriber`.
pub async fn list_subscriptions_of<C: GenericClient>(
    c: &C,
    prefix: &str,
    bare: bool,
    subscriber: &str,
) -> Result<Vec<SubscriptionRecord>, Error> {
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE s.seq IN (SELECT seq FROM subscriptions WHERE topic_id IN ({}) \
           UNION SELECT seq FROM subscriptions \
           WHERE (attributes::jsonb ->> 'LoftSubscriberAccount') = $3) \
         ORDER BY s.seq",
        super::queues::listing_ids("topics", bare)
    );
    let end = super::queues::listing_end(prefix);
    query(c, &sql, &[&prefix, &end, &subscriber])
        .await?
        .iter()
        .map(subscription_row)
        .collect()
}

pub async fn get_subscription<C: GenericClient>(
    c: &C,
    uuid: &str,
) -> Result<Option<SubscriptionRecord>, Error> {
    let sql = format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE s.uuid = $1"
    );
    query_opt(c, &sql, &[&uuid])
        .await?
        .as_ref()
        .map(subscription_row)
        .transpose()
}

pub async fn update_subscription<C: GenericClient>(
    c: &C,
    uuid: &str,
    attributes: &Map,
    confirmed: bool,
    token: &Option<String>,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE subscriptions SET attributes = $2, confirmed = $3, token = $4 WHERE uuid = $1",
        &[&uuid, &to_json(attributes), &confirmed, token],
    )
    .await
    .map(drop)
}

pub async fn delete_subscription<C: GenericClient>(c: &C, uuid: &str) -> Result<bool, Error> {
    Ok(execute(
        c,
        "WITH r AS (DELETE FROM subscription_replays WHERE subscription = $1) \
         DELETE FROM subscriptions WHERE uuid = $1",
        &[&uuid],
    )
    .await?
        == 1)
}
