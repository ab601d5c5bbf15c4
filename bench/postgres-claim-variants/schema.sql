-- bench/postgres-claim-variants: the messages table and indexes of the PostgreSQL store
-- (migrations 1-13) plus hidden_until, with fillfactor :ff, and :n visible messages in queue 1.
DROP TABLE IF EXISTS messages;
CREATE TABLE messages (
    seq BIGSERIAL PRIMARY KEY, queue_id BIGINT NOT NULL, message_id TEXT, body TEXT NOT NULL,
    md5_body TEXT NOT NULL, message_attributes TEXT, system_attributes TEXT, sender_id TEXT NOT NULL,
    sent_at BIGINT NOT NULL, visible_at BIGINT NOT NULL, expires_at BIGINT NOT NULL,
    receive_count BIGINT NOT NULL DEFAULT 0, first_received_at BIGINT, receipt_token BIGINT NOT NULL DEFAULT 0,
    group_id TEXT, dedup_id TEXT, dead_letter_source TEXT, received_at BIGINT, fair_key BIGINT,
    sealed SMALLINT NOT NULL DEFAULT 0, hidden_until BIGINT NOT NULL DEFAULT 0
) WITH (fillfactor = :ff);
CREATE INDEX messages_visibility ON messages (queue_id, visible_at, seq);
CREATE INDEX messages_queue_order ON messages (queue_id, seq);
CREATE INDEX messages_message_id ON messages (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX messages_expiry ON messages (expires_at);
CREATE INDEX messages_group ON messages (queue_id, group_id, seq) WHERE group_id IS NOT NULL;
CREATE INDEX messages_fair ON messages (queue_id, fair_key, seq) INCLUDE (visible_at) WHERE fair_key IS NOT NULL;
INSERT INTO messages (queue_id, message_id, body, md5_body, sender_id, sent_at, visible_at, expires_at)
SELECT 1, md5(g::text), repeat('x', 100), md5(g::text), 'AIDA', 1000, 1000 + g/100, 9999999999999
FROM generate_series(1, :n) g;
VACUUM ANALYZE messages;
SELECT pg_stat_reset();
