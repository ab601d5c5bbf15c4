-- bench/postgres-claim-variants: claim 10 (moving visible_at), then delete them.
\set now 2000000
SET plan_cache_mode = force_generic_plan;
WITH cand AS MATERIALIZED (SELECT seq FROM messages WHERE queue_id = 1 AND visible_at <= :now ORDER BY visible_at, seq LIMIT 10 FOR UPDATE SKIP LOCKED),
got AS (UPDATE messages m SET visible_at = :now + 30000, receive_count = m.receive_count + 1, first_received_at = COALESCE(m.first_received_at, :now), received_at = :now, receipt_token = m.seq * 7 FROM cand k WHERE m.seq = k.seq RETURNING m.seq, m.body)
SELECT coalesce(array_agg(seq), '{}') AS s FROM got \gset
DELETE FROM messages m USING unnest(:s::bigint[]) r(seq) WHERE m.seq = r.seq AND m.queue_id = 1 AND m.receipt_token = r.seq * 7 AND m.visible_at > :now;
