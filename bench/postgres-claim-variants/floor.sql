-- bench/postgres-claim-variants: cur, walking from the last claim's lowest visible_at (:floor).
\set now 2000000
SET plan_cache_mode = force_generic_plan;
WITH cand1 AS MATERIALIZED (SELECT seq, visible_at AS old_visible FROM messages WHERE queue_id = 1 AND visible_at <= :now AND visible_at >= :floor ORDER BY visible_at, seq LIMIT 10 FOR UPDATE SKIP LOCKED),
cand2 AS MATERIALIZED (SELECT seq, visible_at AS old_visible FROM messages WHERE queue_id = 1 AND visible_at <= :now AND visible_at < :floor AND (SELECT count(*) FROM cand1) < 10 ORDER BY visible_at, seq LIMIT 10 - (SELECT count(*) FROM cand1) FOR UPDATE SKIP LOCKED),
cand AS (SELECT * FROM cand1 UNION ALL SELECT * FROM cand2),
got AS (UPDATE messages m SET visible_at = :now + 30000, receive_count = m.receive_count + 1, first_received_at = COALESCE(m.first_received_at, :now), received_at = :now, receipt_token = m.seq * 7 FROM cand k WHERE m.seq = k.seq AND m.seq = ANY(ARRAY(SELECT seq FROM cand)) RETURNING m.seq, k.old_visible)
SELECT coalesce(array_agg(seq), '{}') AS s, coalesce(min(old_visible), :floor) AS floor FROM got \gset
DELETE FROM messages m USING unnest(:s::bigint[]) r(seq) WHERE m.seq = r.seq AND m.queue_id = 1 AND m.receipt_token = r.seq * 7 AND m.visible_at > :now;
