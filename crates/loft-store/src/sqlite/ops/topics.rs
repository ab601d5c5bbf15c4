//! Topics and their subscriptions.

use super::*;

// ----- topics

fn topic_row(r: &Row<'_>) -> rusqlite::Result<TopicRecord> {
    Ok(TopicRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        attributes: from_json(&r.get::<_, String>(2)?),
        tags: from_json(&r.get::<_, String>(3)?),
        created_at_ms: r.get(4)?,
    })
}

pub fn create_topic(
    c: &Connection,
    name: &str,
    attributes: &Map,
    tags: &Map,
    now_ms: i64,
) -> rusqlite::Result<(TopicRecord, bool)> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO topics (name, attributes, tags, created_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(name) DO NOTHING",
        )?
        .execute(params![name, to_json(attributes), to_json(tags), now_ms])?;
    let topic = get_topic(c, name)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok((topic, inserted == 1))
}

pub fn get_topic(c: &Connection, name: &str) -> rusqlite::Result<Option<TopicRecord>> {
    c.prepare_cached("SELECT id, name, attributes, tags, created_at FROM topics WHERE name = ?1")?
        .query_row([name], topic_row)
        .optional()
}

pub fn list_topics(c: &Connection) -> rusqlite::Result<Vec<TopicRecord>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, name, attributes, tags, created_at FROM topics ORDER BY name",
    )?;
    let rows = stmt.query_map([], topic_row)?;
    rows.collect()
}

/// The statement of [`list_topics_of`].
pub(super) fn list_topics_of_sql(bare: bool) -> String {
    super::queues::listing_rows("topics", "id, name, attributes, tags, created_at", bare)
}

/// The topics of one account and region (`Store::list_topics_of`), by name.
pub fn list_topics_of(
    c: &Connection,
    prefix: &str,
    bare: bool,
) -> rusqlite::Result<Vec<TopicRecord>> {
    let mut stmt = c.prepare_cached(&list_topics_of_sql(bare))?;
    let rows = stmt.query_map(
        params![prefix, super::queues::listing_end(prefix)],
        topic_row,
    )?;
    rows.collect()
}

pub fn delete_topic(c: &Connection, topic_id: i64) -> rusqlite::Result<bool> {
    c.prepare_cached("DELETE FROM subscriptions WHERE topic_id = ?1")?
        .execute([topic_id])?;
    c.prepare_cached("DELETE FROM subscription_replays WHERE topic_id = ?1")?
        .execute([topic_id])?;
    c.prepare_cached("DELETE FROM topic_dedup WHERE topic_id = ?1")?
        .execute([topic_id])?;
    delete_archive(c, topic_id)?;
    Ok(c.prepare_cached("DELETE FROM topics WHERE id = ?1")?
        .execute([topic_id])?
        == 1)
}

pub fn set_topic_json(
    c: &Connection,
    topic_id: i64,
    column: &'static str,
    map: &Map,
) -> rusqlite::Result<()> {
    c.prepare_cached(&format!("UPDATE topics SET {column} = ?2 WHERE id = ?1"))?
        .execute(params![topic_id, to_json(map)])?;
    Ok(())
}

// ----- subscriptions

const SUBSCRIPTION_COLUMNS: &str = "s.seq, s.topic_id, t.name, s.uuid, s.protocol, s.endpoint, \
    s.attributes, s.confirmed, s.token";

fn subscription_row(r: &Row<'_>) -> rusqlite::Result<SubscriptionRecord> {
    Ok(SubscriptionRecord {
        seq: r.get(0)?,
        topic_id: r.get(1)?,
        topic_name: r.get(2)?,
        uuid: r.get(3)?,
        protocol: SubscriptionProtocol::parse(&r.get::<_, String>(4)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, Box::new(e))
        })?,
        endpoint: r.get(5)?,
        attributes: from_json(&r.get::<_, String>(6)?),
        confirmed: r.get(7)?,
        token: r.get(8)?,
    })
}

pub fn create_subscription(
    c: &Connection,
    topic_id: i64,
    s: &NewSubscription,
) -> rusqlite::Result<SubscriptionRecord> {
    c.prepare_cached(
        "INSERT INTO subscriptions (topic_id, uuid, protocol, endpoint, attributes, confirmed, \
         token) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        topic_id,
        s.uuid,
        s.protocol.as_str(),
        s.endpoint,
        to_json(&s.attributes),
        s.confirmed,
        s.token
    ])?;
    get_subscription(c, &s.uuid)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
}

pub fn list_subscriptions(
    c: &Connection,
    topic_id: Option<i64>,
) -> rusqlite::Result<Vec<SubscriptionRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE ?1 IS NULL OR s.topic_id = ?1 ORDER BY s.seq"
    ))?;
    let rows = stmt.query_map([topic_id], subscription_row)?;
    rows.collect()
}

/// The statement of [`list_subscriptions_of`].
pub(super) fn list_subscriptions_of_sql(bare: bool) -> String {
    format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE s.seq IN (SELECT seq FROM subscriptions WHERE topic_id IN ({}) \
           UNION SELECT seq FROM subscriptions \
           WHERE json_extract(attributes, '$.LoftSubscriberAccount') = ?3) \
         ORDER BY s.seq",
        super::queues::listing_ids("topics", bare)
    )
}

/// The subscriptions of one account's and region's topics
/// (`Store::list_subscriptions_of`) and those `subscriber` made on other accounts' topics,
/// by creation: the topics' ids from their indexes, each topic's subscriptions through
/// `subscriptions_topic`, the subscriber's through `subscriptions_subscriber`.
pub fn list_subscriptions_of(
    c: &Connection,
    prefix: &str,
    bare: bool,
    subscriber: &str,
) -> rusqlite::Result<Vec<SubscriptionRecord>> {
    let mut stmt = c.prepare_cached(&list_subscriptions_of_sql(bare))?;
    let rows = stmt.query_map(
        params![prefix, super::queues::listing_end(prefix), subscriber],
        subscription_row,
    )?;
    rows.collect()
}

pub fn get_subscription(
    c: &Connection,
    uuid: &str,
) -> rusqlite::Result<Option<SubscriptionRecord>> {
    c.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE s.uuid = ?1"
    ))?
    .query_row([uuid], subscription_row)
    .optional()
}

pub fn update_subscription(
    c: &Connection,
    uuid: &str,
    attributes: &Map,
    confirmed: bool,
    token: Option<String>,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE subscriptions SET attributes = ?2, confirmed = ?3, token = ?4 WHERE uuid = ?1",
    )?
    .execute(params![uuid, to_json(attributes), confirmed, token])?;
    Ok(())
}

pub fn delete_subscription(c: &Connection, uuid: &str) -> rusqlite::Result<bool> {
    c.prepare_cached("DELETE FROM subscription_replays WHERE subscription = ?1")?
        .execute([uuid])?;
    Ok(
        c.prepare_cached("DELETE FROM subscriptions WHERE uuid = ?1")?
            .execute([uuid])?
            == 1,
    )
}
