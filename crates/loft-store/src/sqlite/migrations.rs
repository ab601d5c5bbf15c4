//! Schema migrations. Each entry upgrades the schema from version `index` to `index + 1`;
//! the version reached is kept in `PRAGMA user_version`, so an old file is brought up to
//! date at open and a newer file is refused.

use rusqlite::Connection;

/// The migrations in order. Append only: never edit a released entry.
const MIGRATIONS: &[&str] = &[
    // 1: queues, messages, topics, subscriptions.
    r#"
    CREATE TABLE queues (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        name        TEXT NOT NULL UNIQUE,
        attributes  TEXT NOT NULL,
        tags        TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        modified_at INTEGER NOT NULL
    );
    CREATE TABLE messages (
        seq                INTEGER PRIMARY KEY AUTOINCREMENT,
        queue_id           INTEGER NOT NULL,
        message_id         TEXT,
        body               TEXT NOT NULL,
        md5_body           TEXT NOT NULL,
        message_attributes TEXT,
        system_attributes  TEXT,
        sender_id          TEXT NOT NULL,
        sent_at            INTEGER NOT NULL,
        visible_at         INTEGER NOT NULL,
        expires_at         INTEGER NOT NULL,
        receive_count      INTEGER NOT NULL DEFAULT 0,
        first_received_at  INTEGER,
        receipt_token      INTEGER NOT NULL DEFAULT 0,
        group_id           TEXT,
        dedup_id           TEXT,
        dead_letter_source TEXT
    );
    CREATE INDEX messages_visibility ON messages(queue_id, visible_at, seq);
    CREATE INDEX messages_message_id ON messages(message_id) WHERE message_id IS NOT NULL;
    CREATE INDEX messages_expiry ON messages(expires_at);
    CREATE TABLE topics (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        name       TEXT NOT NULL UNIQUE,
        attributes TEXT NOT NULL,
        tags       TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE subscriptions (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        topic_id   INTEGER NOT NULL,
        uuid       TEXT NOT NULL UNIQUE,
        protocol   TEXT NOT NULL,
        endpoint   TEXT NOT NULL,
        attributes TEXT NOT NULL,
        confirmed  INTEGER NOT NULL,
        token      TEXT
    );
    CREATE INDEX subscriptions_topic ON subscriptions(topic_id, seq);
    "#,
    // 2: FIFO queues: send order per queue, deduplication windows.
    r#"
    CREATE INDEX messages_queue_order ON messages(queue_id, seq);
    CREATE TABLE fifo_dedup (
        queue_id   INTEGER NOT NULL,
        scope      TEXT NOT NULL,
        dedup_id   TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (queue_id, scope, dedup_id)
    );
    CREATE INDEX fifo_dedup_expiry ON fifo_dedup(expires_at);
    "#,
    // 3: durable SNS deliveries to HTTP/S endpoints; messages recorded for inspection.
    r#"
    CREATE TABLE deliveries (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        subscription TEXT NOT NULL,
        endpoint     TEXT NOT NULL,
        content_type TEXT NOT NULL,
        headers      TEXT NOT NULL,
        body         TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        next_at      INTEGER NOT NULL,
        created_at   INTEGER NOT NULL,
        last_error   TEXT
    );
    CREATE INDEX deliveries_due ON deliveries(next_at);
    CREATE INDEX deliveries_subscription ON deliveries(subscription, id);
    CREATE TABLE recorded_messages (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        protocol   TEXT NOT NULL,
        endpoint   TEXT NOT NULL,
        topic_arn  TEXT,
        subject    TEXT,
        message    TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    "#,
    // 4: when the current receive happened, for the 12-hour visibility limit.
    r#"
    ALTER TABLE messages ADD COLUMN received_at INTEGER;
    "#,
    // 5: the MessageId index cost a random-position insert per message and served only the
    // seeds' delete by a UUID MessageId, which now scans its queue instead.
    r#"
    DROP INDEX IF EXISTS messages_message_id;
    "#,
    // 6: the state the service kept in memory until now (durable state), so that it survives a
    // restart: FIFO receive attempts, purge and delete-queue holds, FIFO topic sequence
    // numbers and deduplication windows, message-move tasks, mobile push platforms.
    r#"
    CREATE TABLE receive_attempts (
        queue_id   INTEGER NOT NULL,
        attempt_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        receipts   TEXT NOT NULL,
        PRIMARY KEY (queue_id, attempt_id)
    );
    CREATE INDEX receive_attempts_expiry ON receive_attempts(expires_at);
    ALTER TABLE queues ADD COLUMN purge_hold_until INTEGER;
    CREATE TABLE deleted_queues (
        name       TEXT PRIMARY KEY,
        hold_until INTEGER NOT NULL
    );
    ALTER TABLE topics ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
    -- Sequence numbers handed out before this migration came from the clock (ms * 1000):
    -- start existing topics above them.
    UPDATE topics SET sequence = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000;
    CREATE TABLE topic_dedup (
        topic_id   INTEGER NOT NULL,
        scope      TEXT NOT NULL,
        dedup_id   TEXT NOT NULL,
        message_id TEXT NOT NULL,
        sequence   INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (topic_id, scope, dedup_id)
    );
    CREATE INDEX topic_dedup_expiry ON topic_dedup(expires_at);
    CREATE TABLE move_tasks (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        handle          TEXT NOT NULL UNIQUE,
        source_arn      TEXT NOT NULL,
        source_queue    TEXT NOT NULL,
        destination_arn TEXT,
        max_per_second  INTEGER,
        status          TEXT NOT NULL,
        moved           INTEGER NOT NULL DEFAULT 0,
        to_move         INTEGER NOT NULL,
        failure_reason  TEXT,
        started_at      INTEGER NOT NULL,
        owner           TEXT,
        lease_until     INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX move_tasks_running ON move_tasks(source_arn) WHERE status = 'RUNNING';
    CREATE INDEX move_tasks_source ON move_tasks(source_arn, id);
    CREATE TABLE platform_applications (
        arn        TEXT PRIMARY KEY,
        attributes TEXT NOT NULL
    );
    CREATE TABLE platform_endpoints (
        arn             TEXT PRIMARY KEY,
        application_arn TEXT NOT NULL,
        token           TEXT NOT NULL,
        attributes      TEXT NOT NULL
    );
    CREATE UNIQUE INDEX platform_endpoints_token ON platform_endpoints(application_arn, token);
    -- A FIFO receive reads each open group's messages through this index, instead of
    -- walking the queue past the other groups' (standard messages, with no group, are
    -- not in it).
    CREATE INDEX messages_group ON messages(queue_id, group_id, seq) WHERE group_id IS NOT NULL;
    "#,
    // 7: the account's SMS settings (SetSMSAttributes), one row per attribute.
    r#"
    CREATE TABLE sms_attributes (
        scope TEXT NOT NULL,
        name  TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (scope, name)
    );
    "#,
    // 8: functions as consumers: SQS event source mappings with the lease of
    // the node polling each; function errors of Lambda deliveries, counted apart from
    // throttles (asynchronous invocation retries them differently).
    r#"
    CREATE TABLE event_source_mappings (
        id                      INTEGER PRIMARY KEY AUTOINCREMENT,
        uuid                    TEXT NOT NULL UNIQUE,
        function_arn            TEXT NOT NULL,
        event_source_arn        TEXT NOT NULL,
        batch_size              INTEGER NOT NULL,
        batching_window         INTEGER NOT NULL,
        enabled                 INTEGER NOT NULL,
        function_response_types TEXT NOT NULL,
        filter_patterns         TEXT NOT NULL,
        maximum_concurrency     INTEGER,
        last_modified           INTEGER NOT NULL,
        owner                   TEXT,
        lease_until             INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX event_source_mappings_pair
        ON event_source_mappings(event_source_arn, function_arn);
    ALTER TABLE deliveries ADD COLUMN function_errors INTEGER NOT NULL DEFAULT 0;
    "#,
    // 9: fair queues. A standard queue that has received a message with a
    // MessageGroupId is fair from then on (`queues.fair`); its messages carry a fair key
    // (start-time fair queueing over groups, see `ops::fair_key`) and its receives read
    // them in key order through `messages_fair`.
    r#"
    ALTER TABLE queues ADD COLUMN fair INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN fair_key INTEGER;
    CREATE INDEX messages_fair ON messages(queue_id, fair_key, seq, visible_at)
        WHERE fair_key IS NOT NULL;
    "#,
    // 10: FIFO topics' message archives (SNS ArchivePolicy).
    r#"
    CREATE TABLE topic_archive (
        topic_id     INTEGER NOT NULL,
        sequence     INTEGER NOT NULL,
        message_id   TEXT NOT NULL,
        published_at INTEGER NOT NULL,
        expires_at   INTEGER NOT NULL,
        published    TEXT NOT NULL,
        PRIMARY KEY (topic_id, sequence)
    );
    CREATE INDEX topic_archive_expiry ON topic_archive(expires_at);
    "#,
    // 11: SNS message replay (ReplayPolicy): one replay per subscription, its
    // window, cursor (the last archived sequence delivered), status and node lease.
    r#"
    CREATE TABLE subscription_replays (
        subscription TEXT PRIMARY KEY,
        topic_id     INTEGER NOT NULL,
        replay_id    TEXT NOT NULL,
        starting_at  INTEGER NOT NULL,
        ending_at    INTEGER,
        cursor       INTEGER NOT NULL,
        status       TEXT NOT NULL,
        hold_live    INTEGER NOT NULL,
        failure      TEXT,
        owner        TEXT,
        lease_until  INTEGER NOT NULL
    );
    CREATE INDEX subscription_replays_topic ON subscription_replays(topic_id);
    "#,
    // 12: SQS encryption at rest: 1 when the row's body and message attributes
    // are sealed (`crate::seal`, format version 1); 0 (every older row) when they are
    // stored as they are.
    r#"
    ALTER TABLE messages ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
    "#,
    // 13: who a recorded email or SMS would have come from (the topic's DisplayName);
    // NULL for older records.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN sender TEXT;
    "#,
    // 14: messages without AUTOINCREMENT. AUTOINCREMENT kept `seq` from
    // reusing a deleted maximum (the seeds' `msg-N` MessageIds and receipts name it) at the
    // price of rewriting `sqlite_sequence`'s page in every commit: one WAL frame per commit.
    // Now `seq` is a plain rowid given explicitly by `ops::MessageSeqs`, which hands out
    // numbers above `message_seq.high` only after raising it by a block: the row is written
    // once per block, and a restart starts above it. The table is rebuilt (SQLite cannot
    // drop AUTOINCREMENT in place), its columns and indexes unchanged.
    r#"
    CREATE TABLE message_seq (high INTEGER NOT NULL);
    INSERT INTO message_seq (high) SELECT MAX(
        COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),
        COALESCE((SELECT MAX(seq) FROM messages), 0));
    CREATE TABLE messages_new (
        seq                INTEGER PRIMARY KEY,
        queue_id           INTEGER NOT NULL,
        message_id         TEXT,
        body               TEXT NOT NULL,
        md5_body           TEXT NOT NULL,
        message_attributes TEXT,
        system_attributes  TEXT,
        sender_id          TEXT NOT NULL,
        sent_at            INTEGER NOT NULL,
        visible_at         INTEGER NOT NULL,
        expires_at         INTEGER NOT NULL,
        receive_count      INTEGER NOT NULL DEFAULT 0,
        first_received_at  INTEGER,
        receipt_token      INTEGER NOT NULL DEFAULT 0,
        group_id           TEXT,
        dedup_id           TEXT,
        dead_letter_source TEXT,
        received_at        INTEGER,
        fair_key           INTEGER,
        sealed             INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO messages_new (seq, queue_id, message_id, body, md5_body, message_attributes,
        system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count,
        first_received_at, receipt_token, group_id, dedup_id, dead_letter_source, received_at,
        fair_key, sealed)
    SELECT seq, queue_id, message_id, body, md5_body, message_attributes,
        system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count,
        first_received_at, receipt_token, group_id, dedup_id, dead_letter_source, received_at,
        fair_key, sealed FROM messages;
    DROP TABLE messages;
    ALTER TABLE messages_new RENAME TO messages;
    CREATE INDEX messages_visibility ON messages(queue_id, visible_at, seq);
    CREATE INDEX messages_expiry ON messages(expires_at);
    CREATE INDEX messages_queue_order ON messages(queue_id, seq);
    CREATE INDEX messages_group ON messages(queue_id, group_id, seq) WHERE group_id IS NOT NULL;
    CREATE INDEX messages_fair ON messages(queue_id, fair_key, seq, visible_at)
        WHERE fair_key IS NOT NULL;
    "#,
    // 15 (PostgreSQL's 12): the check value of the SQS encryption master key that seals
    // this database's messages (`crate::seal::MasterKey::check_value`), so a
    // start with another key, or without the key file, is refused.
    r#"
    CREATE TABLE sse_key_check (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        check_value TEXT NOT NULL
    );
    "#,
    // 16 (PostgreSQL's 13): SNS topic encryption at rest (a topic's KmsMasterKeyId):
    // 1 when the row's text is sealed (`crate::seal`, format version 2: recorded
    // messages' message and subject, deliveries' body, archive entries' publish); 0 (every
    // older row) when it is stored as it is.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE deliveries ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE topic_archive ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
    "#,
    // 17 (PostgreSQL's 14): the key that signs receipt handles
    // (`loft_core::service::receipt`): one row of 32 random bytes in base64, made by the
    // first open of the file (`SqliteStore::open`), so handles survive a restart.
    r#"
    CREATE TABLE receipt_key (
        id  INTEGER PRIMARY KEY CHECK (id = 1),
        key TEXT NOT NULL
    );
    "#,
    // 18 (PostgreSQL's 15): the account an event source mapping belongs to (the Lambda
    // API answers each account its own mappings); NULL, every older row, is the default
    // account's.
    r#"
    ALTER TABLE event_source_mappings ADD COLUMN account TEXT;
    "#,
    // 19 (PostgreSQL's 16): the account a recorded message belongs to (every resource
    // belongs to an account), in the store keys' form: '' for the default
    // account, which every older record belongs to.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN account TEXT NOT NULL DEFAULT '';
    CREATE INDEX recorded_messages_account ON recorded_messages(account, id);
    "#,
    // 20 (PostgreSQL's 17): who started a message move task (its caller's IAM ARN), whose
    // permission to send into another account's destination queue each step checks; NULL,
    // every older row, is a task of its source queue's account.
    r#"
    ALTER TABLE move_tasks ADD COLUMN started_by TEXT;
    "#,
    // 21 (PostgreSQL's 19): each queue counts its own FIFO messages (a SequenceNumber
    // made of the store-wide `seq` let one account count every other's messages):
    // `queues.message_sequence` is the last number the queue gave, `messages.sequence` and
    // `fifo_dedup.sequence` the message's (NULL, every older row: its SequenceNumber stays
    // made of `seq`). The queues there now go on above every `seq` given so far, so a
    // group's numbers keep increasing across the upgrade; a queue made later starts at 0.
    r#"
    ALTER TABLE queues ADD COLUMN message_sequence INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN sequence INTEGER;
    ALTER TABLE fifo_dedup ADD COLUMN sequence INTEGER;
    UPDATE queues SET message_sequence = MAX(
        (SELECT COALESCE(MAX(high), 0) FROM message_seq),
        (SELECT COALESCE(MAX(seq), 0) FROM messages),
        (SELECT COALESCE(MAX(seq), 0) FROM fifo_dedup));
    "#,
    // 22 (PostgreSQL's 21): the destination numbers of each account's SMS sandbox
    // (CreateSMSSandboxPhoneNumber), per account and region as the SMS settings are.
    r#"
    CREATE TABLE IF NOT EXISTS sms_sandbox_numbers (
        scope             TEXT NOT NULL,
        phone_number      TEXT NOT NULL,
        verified          INTEGER NOT NULL,
        one_time_password TEXT NOT NULL,
        created_at        INTEGER NOT NULL,
        PRIMARY KEY (scope, phone_number)
    );
    "#,
    // 23 (PostgreSQL's 22): an account's listings read its own rows alone. The keys of
    // other accounts and regions (`ACCOUNT/...`) are ranges of the unique index on
    // `name`; the default account's bare keys are scattered among them, so each table
    // gets a partial index of the keys without `/`, which the listings read. An
    // account's ListSubscriptions also holds the subscriptions it made on other accounts'
    // topics (`LoftSubscriberAccount`), found through an index of that attribute.
    r#"
    CREATE INDEX IF NOT EXISTS queues_bare ON queues(name) WHERE instr(name, '/') = 0;
    CREATE INDEX IF NOT EXISTS topics_bare ON topics(name) WHERE instr(name, '/') = 0;
    CREATE INDEX IF NOT EXISTS subscriptions_subscriber
        ON subscriptions(json_extract(attributes, '$.LoftSubscriberAccount'));
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to [`SCHEMA_VERSION`], each step in its own transaction.
///
/// Errors: the file's version is newer than this build knows, or a migration fails.
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Brings the database up to `version` (at most [`SCHEMA_VERSION`]): [`migrate`], stopped
/// early; tests use it to build a file of an older version. Errors: as [`migrate`]'s.
pub fn migrate_to(conn: &mut Connection, version: i64) -> Result<(), String> {
    let current: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if current > SCHEMA_VERSION {
        return Err(format!(
            "database schema version {current} is newer than this Loft understands ({SCHEMA_VERSION})"
        ));
    }
    let until = version.clamp(0, SCHEMA_VERSION) as usize;
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(until)
        .skip(current as usize)
    {
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        tx.execute_batch(sql).map_err(|e| e.to_string())?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
    Ok(())
}
