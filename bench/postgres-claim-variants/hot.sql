-- bench/postgres-claim-variants: the claim writes only non-indexed hidden_until (HOT-able).
\set now 2000000
SET plan_cache_mode = force_generic_plan;
WITH cand AS MATERIALIZED (SELECT seq FROM messages WHERE queue_id = 1 AND visible_at <= :now AND hidden_until <= :now ORDER BY visible_at, seq LIMIT 10 FOR UPDATE SKIP LOCKED),
got AS (UPDATE messages m SET hidden_until = :now + 30000, receive_count = m.receive_count + 1, first_received_at = COALESCE(m.first_received_at, :now), received_at = :now, receipt_token = m.seq * 7 FROM cand k WHERE m.seq = k.seq RETURNING m.seq, m.body)
SELECT coalesce(array_agg(seq), '{}') AS s FROM got \gset
DELETE FROM messages m USING unnest(:s::bigint[]) r(seq) WHERE m.seq = r.seq AND m.queue_id = 1 AND m.receipt_token = r.seq * 7 AND m.hidden_until > :now;
