//! Schema migrations of the PostgreSQL store. Each entry upgrades the schema from version
//! `index` to `index + 1`; the version reached is kept in `loft_schema`. All of it runs in
//! one transaction under a transaction-scoped advisory lock, so several nodes starting at
//! once migrate exactly once (the others wait, then find the schema current) and a failed
//! migration leaves nothing half done (PostgreSQL's DDL is transactional).
//!
//! The schema mirrors the SQLite one (`crate::sqlite::migrations`): times are BIGINT
//! milliseconds, JSON is TEXT (opaque to the store), ids come from BIGSERIAL sequences.

use tokio_postgres::Client;

/// Advisory-lock class of the migration lock (the second key is 0). Chosen at random;
/// [`super::ops::FIFO_LOCK_CLASS`] is the other class Loft uses.
pub const MIGRATION_LOCK_CLASS: i32 = 0x4c6f_6674; // "Loft"

/// The migrations in order. Append only: never edit a released entry.
const MIGRATIONS: &[&str] = &[
    // 1: the whole schema of SQLite's versions 1 to 3.
    r#"
    CREATE TABLE queues (
        id          BIGSERIAL PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        attributes  TEXT NOT NULL,
        tags        TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        modified_at BIGINT NOT NULL
    );
    CREATE TABLE messages (
        seq                BIGSERIAL PRIMARY KEY,
        queue_id           BIGINT NOT NULL,
        message_id         TEXT,
        body               TEXT NOT NULL,
        md5_body           TEXT NOT NULL,
        message_attributes TEXT,
        system_attributes  TEXT,
        sender_id          TEXT NOT NULL,
        sent_at            BIGINT NOT NULL,
        visible_at         BIGINT NOT NULL,
        expires_at         BIGINT NOT NULL,
        receive_count      BIGINT NOT NULL DEFAULT 0,
        first_received_at  BIGINT,
        receipt_token      BIGINT NOT NULL DEFAULT 0,
        group_id           TEXT,
        dedup_id           TEXT,
        dead_letter_source TEXT
    );
    -- Standard receives: longest visible first.
    CREATE INDEX messages_visibility ON messages (queue_id, visible_at, seq);
    -- FIFO receives and the seeds' receives: send order.
    CREATE INDEX messages_queue_order ON messages (queue_id, seq);
    CREATE INDEX messages_message_id ON messages (message_id) WHERE message_id IS NOT NULL;
    CREATE INDEX messages_expiry ON messages (expires_at);
    CREATE TABLE fifo_dedup (
        queue_id   BIGINT NOT NULL,
        scope      TEXT NOT NULL,
        dedup_id   TEXT NOT NULL,
        seq        BIGINT NOT NULL,
        message_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (queue_id, scope, dedup_id)
    );
    CREATE INDEX fifo_dedup_expiry ON fifo_dedup (expires_at);
    CREATE TABLE topics (
        id         BIGSERIAL PRIMARY KEY,
        name       TEXT NOT NULL UNIQUE,
        attributes TEXT NOT NULL,
        tags       TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE subscriptions (
        seq        BIGSERIAL PRIMARY KEY,
        topic_id   BIGINT NOT NULL,
        uuid       TEXT NOT NULL UNIQUE,
        protocol   TEXT NOT NULL,
        endpoint   TEXT NOT NULL,
        attributes TEXT NOT NULL,
        confirmed  BOOLEAN NOT NULL,
        token      TEXT
    );
    CREATE INDEX subscriptions_topic ON subscriptions (topic_id, seq);
    CREATE TABLE deliveries (
        id           BIGSERIAL PRIMARY KEY,
        subscription TEXT NOT NULL,
        endpoint     TEXT NOT NULL,
        content_type TEXT NOT NULL,
        headers      TEXT NOT NULL,
        body         TEXT NOT NULL,
        attempts     BIGINT NOT NULL DEFAULT 0,
        next_at      BIGINT NOT NULL,
        created_at   BIGINT NOT NULL,
        last_error   TEXT
    );
    CREATE INDEX deliveries_due ON deliveries (next_at, id);
    CREATE INDEX deliveries_subscription ON deliveries (subscription, id);
    CREATE TABLE recorded_messages (
        id         BIGSERIAL PRIMARY KEY,
        protocol   TEXT NOT NULL,
        endpoint   TEXT NOT NULL,
        topic_arn  TEXT,
        subject    TEXT,
        message    TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );
    "#,
    // 2: when the current receive happened (the 12-hour visibility limit), as SQLite's 4.
    r#"
    ALTER TABLE messages ADD COLUMN IF NOT EXISTS received_at BIGINT;
    "#,
    // 3: the state the service kept in memory until now, as SQLite's 6 (durable state).
    r#"
    CREATE TABLE receive_attempts (
        queue_id   BIGINT NOT NULL,
        attempt_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        seqs       BIGINT[] NOT NULL,
        tokens     BIGINT[] NOT NULL,
        PRIMARY KEY (queue_id, attempt_id)
    );
    CREATE INDEX receive_attempts_expiry ON receive_attempts (expires_at);
    ALTER TABLE queues ADD COLUMN purge_hold_until BIGINT;
    CREATE TABLE deleted_queues (
        name       TEXT PRIMARY KEY,
        hold_until BIGINT NOT NULL
    );
    ALTER TABLE topics ADD COLUMN sequence BIGINT NOT NULL DEFAULT 0;
    -- Sequence numbers handed out before this migration came from each node's clock
    -- (ms * 1000): start existing topics above them.
    UPDATE topics SET sequence = (extract(epoch FROM clock_timestamp()) * 1000)::bigint * 1000;
    CREATE TABLE topic_dedup (
        topic_id   BIGINT NOT NULL,
        scope      TEXT NOT NULL,
        dedup_id   TEXT NOT NULL,
        message_id TEXT NOT NULL,
        sequence   BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (topic_id, scope, dedup_id)
    );
    CREATE INDEX topic_dedup_expiry ON topic_dedup (expires_at);
    CREATE TABLE move_tasks (
        id              BIGSERIAL PRIMARY KEY,
        handle          TEXT NOT NULL UNIQUE,
        source_arn      TEXT NOT NULL,
        source_queue    TEXT NOT NULL,
        destination_arn TEXT,
        max_per_second  BIGINT,
        status          TEXT NOT NULL,
        moved           BIGINT NOT NULL DEFAULT 0,
        to_move         BIGINT NOT NULL,
        failure_reason  TEXT,
        started_at      BIGINT NOT NULL,
        owner           TEXT,
        lease_until     BIGINT NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX move_tasks_running ON move_tasks (source_arn) WHERE status = 'RUNNING';
    CREATE INDEX move_tasks_source ON move_tasks (source_arn, id);
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
    CREATE UNIQUE INDEX platform_endpoints_token ON platform_endpoints (application_arn, token);
    -- A FIFO receive reads each open group's messages through this index (messages with
    -- no group are not in it).
    CREATE INDEX messages_group ON messages (queue_id, group_id, seq) WHERE group_id IS NOT NULL;
    "#,
    // 4: the account's SMS settings (SetSMSAttributes), as SQLite's 7.
    r#"
    CREATE TABLE sms_attributes (
        scope TEXT NOT NULL,
        name  TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (scope, name)
    );
    "#,
    // 5 (SQLite's 8): SQS event source mappings with their node's lease; function errors
    // of Lambda deliveries.
    r#"
    CREATE TABLE event_source_mappings (
        id                      BIGSERIAL PRIMARY KEY,
        uuid                    TEXT NOT NULL UNIQUE,
        function_arn            TEXT NOT NULL,
        event_source_arn        TEXT NOT NULL,
        batch_size              BIGINT NOT NULL,
        batching_window         BIGINT NOT NULL,
        enabled                 BOOLEAN NOT NULL,
        function_response_types TEXT NOT NULL,
        filter_patterns         TEXT NOT NULL,
        maximum_concurrency     BIGINT,
        last_modified           BIGINT NOT NULL,
        owner                   TEXT,
        lease_until             BIGINT NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX event_source_mappings_pair
        ON event_source_mappings (event_source_arn, function_arn);
    ALTER TABLE deliveries ADD COLUMN function_errors BIGINT NOT NULL DEFAULT 0;
    "#,
    // 6 (SQLite's 9): fair queues: a standard queue that has received a message with a
    // MessageGroupId is fair from then on; its messages carry a fair key and its receives
    // read them in key order through `messages_fair`.
    r#"
    ALTER TABLE queues ADD COLUMN fair BOOLEAN NOT NULL DEFAULT false;
    ALTER TABLE messages ADD COLUMN fair_key BIGINT;
    CREATE INDEX messages_fair ON messages (queue_id, fair_key, seq) INCLUDE (visible_at)
        WHERE fair_key IS NOT NULL;
    "#,
    // 7 (SQLite's 10): FIFO topics' message archives (SNS ArchivePolicy).
    r#"
    CREATE TABLE topic_archive (
        topic_id     BIGINT NOT NULL,
        sequence     BIGINT NOT NULL,
        message_id   TEXT NOT NULL,
        published_at BIGINT NOT NULL,
        expires_at   BIGINT NOT NULL,
        published    TEXT NOT NULL,
        PRIMARY KEY (topic_id, sequence)
    );
    CREATE INDEX topic_archive_expiry ON topic_archive (expires_at);
    "#,
    // 8 (SQLite's 11): SNS message replay (ReplayPolicy): one replay per subscription,
    // its window, cursor, status and node lease.
    r#"
    CREATE TABLE subscription_replays (
        subscription TEXT PRIMARY KEY,
        topic_id     BIGINT NOT NULL,
        replay_id    TEXT NOT NULL,
        starting_at  BIGINT NOT NULL,
        ending_at    BIGINT,
        cursor       BIGINT NOT NULL,
        status       TEXT NOT NULL,
        hold_live    BOOLEAN NOT NULL,
        failure      TEXT,
        owner        TEXT,
        lease_until  BIGINT NOT NULL
    );
    CREATE INDEX subscription_replays_topic ON subscription_replays (topic_id);
    "#,
    // 9 (SQLite's 12): SQS encryption at rest: 1 when the row's body and
    // message attributes are sealed (`crate::seal`, format version 1); 0 (every older
    // row) when they are stored as they are.
    r#"
    ALTER TABLE messages ADD COLUMN sealed SMALLINT NOT NULL DEFAULT 0;
    "#,
    // 10 (SQLite's 13): who a recorded email or SMS would have come from (the topic's
    // DisplayName); NULL for older records.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN sender TEXT;
    "#,
    // 11: the SQS encryption master key of nodes started without --sse-key-file:
    // one row, made by the first node that needs it, read by every other, so the
    // nodes of one database open each other's sealed messages.
    r#"
    CREATE TABLE sse_master_key (
        id  SMALLINT PRIMARY KEY CHECK (id = 1),
        key TEXT NOT NULL
    );
    "#,
    // 12 (SQLite's 15): the check value of the SQS encryption master key that seals this
    // database's messages (`crate::seal::MasterKey::check_value`), so a node
    // started with another key is refused.
    r#"
    CREATE TABLE sse_key_check (
        id          SMALLINT PRIMARY KEY CHECK (id = 1),
        check_value TEXT NOT NULL
    );
    "#,
    // 13 (SQLite's 16): SNS topic encryption at rest (a topic's KmsMasterKeyId):
    // 1 when the row's text is sealed (`crate::seal`, format version 2: recorded
    // messages' message and subject, deliveries' body, archive entries' publish); 0 (every
    // older row) when it is stored as it is.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN sealed SMALLINT NOT NULL DEFAULT 0;
    ALTER TABLE deliveries ADD COLUMN sealed SMALLINT NOT NULL DEFAULT 0;
    ALTER TABLE topic_archive ADD COLUMN sealed SMALLINT NOT NULL DEFAULT 0;
    "#,
    // 14 (SQLite's 17): the key that signs receipt handles (`loft_core::service::receipt`):
    // one row of 32 random bytes in base64, made by the first node that opens the database
    // (`PgStore::connect`), read by every other, so a handle one node issued verifies on all.
    r#"
    CREATE TABLE receipt_key (
        id  SMALLINT PRIMARY KEY CHECK (id = 1),
        key TEXT NOT NULL
    );
    "#,
    // 15 (SQLite's 18): the account an event source mapping belongs to (the Lambda API
    // answers each account its own mappings); NULL, every older row, is the default
    // account's.
    r#"
    ALTER TABLE event_source_mappings ADD COLUMN account TEXT;
    "#,
    // 16 (SQLite's 19): the account a recorded message belongs to (every resource
    // belongs to an account), in the store keys' form: '' for the default
    // account, which every older record belongs to.
    r#"
    ALTER TABLE recorded_messages ADD COLUMN account TEXT NOT NULL DEFAULT '';
    CREATE INDEX recorded_messages_account ON recorded_messages(account, id);
    "#,
    // 17 (SQLite's 20): who started a message move task (its caller's IAM ARN), whose
    // permission to send into another account's destination queue each step checks; NULL,
    // every older row, is a task of its source queue's account.
    r#"
    ALTER TABLE move_tasks ADD COLUMN started_by TEXT;
    "#,
    // 18 (PostgreSQL only: cells, `crate::cells`): the outbox of work that crosses cells
    // and the destination's record of what it relayed. `cell_outbox` holds, in the cell of
    // a publish, one row per copy bound for a queue of another cell (`queue_id` carries
    // its cell): the copy as the destination stores it (sealed, as JSON), leased to the
    // node relaying it until `lease_until` (ms; 0: free); `ordered` for a FIFO queue's
    // copy, relayed after every earlier row of its queue. `cell_relayed` holds, in the
    // destination cell, the outbox ids (which carry their source cell) it inserted, so a
    // repeat inserts nothing. Both stay empty outside cells.
    r#"
    CREATE TABLE cell_outbox (
        id          BIGSERIAL PRIMARY KEY,
        queue_id    BIGINT NOT NULL,
        copy        TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        lease_until BIGINT NOT NULL DEFAULT 0,
        ordered     BOOLEAN NOT NULL DEFAULT false
    );
    CREATE INDEX cell_outbox_queue ON cell_outbox (queue_id, id);
    CREATE INDEX cell_outbox_due ON cell_outbox (lease_until, id);
    CREATE TABLE cell_relayed (
        id         BIGINT PRIMARY KEY,
        relayed_at BIGINT NOT NULL
    );
    "#,
    // 19 (SQLite's 21): each queue counts its own FIFO messages (a SequenceNumber made of
    // the store-wide `seq` let one account count every other's messages):
    // `queues.message_sequence` is the last number the queue gave, `messages.sequence` and
    // `fifo_dedup.sequence` the message's (NULL, every older row: its SequenceNumber stays
    // made of `seq`). The queues there now go on above every `seq` given so far, so a
    // group's numbers keep increasing across the upgrade; a queue made later starts at 0.
    r#"
    ALTER TABLE queues ADD COLUMN message_sequence BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN sequence BIGINT;
    ALTER TABLE fifo_dedup ADD COLUMN sequence BIGINT;
    UPDATE queues SET message_sequence = GREATEST(
        (SELECT COALESCE(MAX(seq), 0) FROM messages),
        (SELECT COALESCE(MAX(seq), 0) FROM fifo_dedup));
    "#,
    // 20: each queue takes its numbers from a PostgreSQL SEQUENCE of its own,
    // `queue_sequence_<id>` (`nextval` holds no lock to the commit; the UPDATE of
    // `queues.message_sequence` held the queue's row to the send's commit, so FIFO sends to
    // one queue committed one at a time). Every queue there now gets its sequence, starting
    // above the last number its counter gave, so its numbers keep increasing across the
    // upgrade. `queues.message_sequence` stays, no longer advanced.
    r#"
    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT id, message_sequence FROM queues LOOP
            EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I START WITH %s',
                           'queue_sequence_' || r.id, r.message_sequence + 1);
        END LOOP;
    END
    $$;
    "#,
    // 21 (SQLite's 22): the destination numbers of each account's SMS sandbox
    // (CreateSMSSandboxPhoneNumber), per account and region as the SMS settings are.
    r#"
    CREATE TABLE IF NOT EXISTS sms_sandbox_numbers (
        scope             TEXT NOT NULL,
        phone_number      TEXT NOT NULL,
        verified          BOOLEAN NOT NULL,
        one_time_password TEXT NOT NULL,
        created_at        BIGINT NOT NULL,
        PRIMARY KEY (scope, phone_number)
    );
    "#,
    // 22 (SQLite's 23): an account's listings read its own rows alone. The keys of other
    // accounts and regions (`ACCOUNT/...`) are ranges of an index on `name` in the "C"
    // collation (bytewise, whatever the database's collation: the range's end is the
    // prefix with its `/` made `0`); the default account's bare keys are scattered among
    // them, so each table gets a partial index of the keys without `/`. An account's
    // ListSubscriptions also holds the subscriptions it made on other accounts' topics
    // (`LoftSubscriberAccount`), found through an index of that attribute.
    r#"
    CREATE INDEX IF NOT EXISTS queues_name_bytes ON queues ((name COLLATE "C"));
    CREATE INDEX IF NOT EXISTS queues_bare ON queues (name) WHERE strpos(name, '/') = 0;
    CREATE INDEX IF NOT EXISTS topics_name_bytes ON topics ((name COLLATE "C"));
    CREATE INDEX IF NOT EXISTS topics_bare ON topics (name) WHERE strpos(name, '/') = 0;
    CREATE INDEX IF NOT EXISTS subscriptions_subscriber
        ON subscriptions (((attributes::jsonb) ->> 'LoftSubscriberAccount'));
    "#,
    // 23: the HOT claim (issue 34). A standard receive hides a message by writing
    // `hidden_until` (ms; 0: never hidden so), a column no index covers, in place of the
    // indexed `visible_at`, so the claim's UPDATE is heap-only (no new entry in any of
    // the table's indexes); fillfactor 50 leaves room on each page for the new tuple
    // (pages written from now on; existing pages fill as they are rewritten). At 70 only
    // half of `loft bench`'s claims (616-byte rows) were HOT, at 50 all of them
    // (docs/benchmarks/history.md, "the HOT claim built"). A message
    // is visible again at `GREATEST(visible_at, hidden_until)`. Rows in flight at the
    // upgrade keep their future `visible_at` and get `hidden_until` 0: still hidden until
    // the same time, their receipt tokens unchanged. Adding a column with a constant
    // default rewrites no row.
    r#"
    ALTER TABLE messages ADD COLUMN IF NOT EXISTS hidden_until BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE messages SET (fillfactor = 50);
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Creates `schema` when missing, holding the migration lock (two concurrent
/// `CREATE SCHEMA IF NOT EXISTS` can both try to create it, and one fails).
///
/// Errors: a statement fails.
pub async fn create_schema(client: &mut Client, schema: &str) -> Result<(), String> {
    let tx = client.transaction().await.map_err(|e| e.to_string())?;
    lock(&tx).await?;
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
        .await
        .map_err(|e| format!("cannot create schema {schema}: {e}"))?;
    tx.commit().await.map_err(|e| e.to_string())
}

async fn lock(tx: &tokio_postgres::Transaction<'_>) -> Result<(), String> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, 0)",
        &[&MIGRATION_LOCK_CLASS],
    )
    .await
    .map(drop)
    .map_err(|e| format!("migration lock: {e}"))
}

/// Brings the schema on `client`'s search path up to [`SCHEMA_VERSION`], holding the
/// migration advisory lock for the whole transaction; creates `schema` first when given
/// (it is then the search path).
///
/// Errors: the database's version is newer than this build knows, or a statement fails.
pub async fn migrate(client: &mut Client, schema: Option<&str>) -> Result<(), String> {
    let tx = client.transaction().await.map_err(|e| e.to_string())?;
    lock(&tx).await?;
    if let Some(schema) = schema {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await
            .map_err(|e| format!("cannot create schema {schema}: {e}"))?;
    }
    tx.batch_execute("CREATE TABLE IF NOT EXISTS loft_schema (version BIGINT NOT NULL)")
        .await
        .map_err(|e| e.to_string())?;
    let current: i64 = match tx
        .query_opt("SELECT version FROM loft_schema", &[])
        .await
        .map_err(|e| e.to_string())?
    {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO loft_schema (version) VALUES (0)", &[])
                .await
                .map_err(|e| e.to_string())?;
            0
        }
    };
    if current > SCHEMA_VERSION {
        return Err(format!(
            "database schema version {current} is newer than this Loft understands ({SCHEMA_VERSION})"
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql)
            .await
            .map_err(|e| format!("migration {}: {e}", index + 1))?;
    }
    if current < SCHEMA_VERSION {
        tx.execute("UPDATE loft_schema SET version = $1", &[&SCHEMA_VERSION])
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(
            from = current,
            to = SCHEMA_VERSION,
            "migrated the PostgreSQL schema"
        );
    }
    tx.commit().await.map_err(|e| e.to_string())
}
