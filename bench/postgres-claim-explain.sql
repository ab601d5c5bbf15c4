-- bench/postgres-claim-explain (FULL=1): the standard receive's claim statement of
-- crates/loft-store/src/postgres/ops.rs (claim_rows, plain order), as a prepared statement;
-- the RETURNING list is cut to a few columns. $12 is the claim's floor (ops::StepJob::floor).
PREPARE claim(bigint, bigint, bigint, bigint, bigint, bigint, text, text, bigint[], bool, bigint[], bigint) AS
WITH above AS MATERIALIZED (
  SELECT seq, visible_at AS old_visible, receive_count AS old_count,
         expires_at AS old_expires, fair_key AS old_key,
         first_received_at AS old_first, receipt_token AS old_token,
         received_at AS old_received
  FROM messages WHERE queue_id = $1 AND visible_at <= $2 AND visible_at >= $12
    AND NOT (seq = ANY($11::bigint[]))
  ORDER BY visible_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED),
below AS MATERIALIZED (
  SELECT seq, visible_at AS old_visible, receive_count AS old_count,
         expires_at AS old_expires, fair_key AS old_key,
         first_received_at AS old_first, receipt_token AS old_token,
         received_at AS old_received
  FROM messages WHERE queue_id = $1 AND visible_at <= $2 AND visible_at < $12
    AND NOT (seq = ANY($11::bigint[])) AND (SELECT count(*) FROM above) < $3
  ORDER BY visible_at, seq LIMIT $3 - (SELECT count(*) FROM above) FOR UPDATE SKIP LOCKED),
cand AS MATERIALIZED (SELECT * FROM above UNION ALL SELECT * FROM below),
gone AS (DELETE FROM messages m USING cand c
  WHERE m.seq = c.seq AND m.seq = ANY(ARRAY(SELECT seq FROM cand))
    AND c.old_expires <= $2 RETURNING m.seq),
dead AS (UPDATE messages m SET queue_id = $5::bigint,
    visible_at = $2, dead_letter_source = $7,
    first_received_at = COALESCE(m.first_received_at, $2),
    dedup_id = CASE WHEN $10 THEN m.message_id ELSE m.dedup_id END,
    fair_key = CASE WHEN (SELECT fair FROM queues WHERE id = $5::bigint) THEN 0 END
  FROM cand c WHERE m.seq = c.seq AND m.seq = ANY(ARRAY(SELECT seq FROM cand))
    AND c.old_expires > $2 AND $5::bigint IS NOT NULL AND c.old_count >= $6 RETURNING m.seq),
claim AS (SELECT seq, old_visible, old_count, old_first, old_token, old_received,
    row_number() OVER (ORDER BY old_visible, seq) AS n
  FROM cand WHERE old_expires > $2 AND NOT ($5::bigint IS NOT NULL AND old_count >= $6)),
got AS (UPDATE messages m SET visible_at = $2 + $4,
    receive_count = m.receive_count + 1,
    first_received_at = COALESCE(m.first_received_at, $2), received_at = $2,
    receipt_token = ($9::bigint[])[k.n]
  FROM claim k WHERE m.seq = k.seq AND m.seq = ANY(ARRAY(SELECT seq FROM claim))
  RETURNING k.n, m.seq, m.body, k.old_visible, k.old_count, k.old_first,
    k.old_token, k.old_received),
woke AS (SELECT pg_notify($8, $5::bigint::text) FROM (SELECT 1 FROM dead LIMIT 1) d)
SELECT (SELECT count(*) FROM cand),
       (SELECT count(*) FROM dead) + 0 * (SELECT count(*) FROM woke),
       CASE WHEN (SELECT count(*) FROM cand) < $3 THEN (SELECT MIN(visible_at)
         FROM messages WHERE queue_id = $1 AND visible_at > $2) END,
       g.*
FROM (SELECT 1) one LEFT JOIN got g ON true ORDER BY g.n;
