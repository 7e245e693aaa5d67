-- The checks of `reddog audit-log`, as SQL over a table `audit` of reddog-audit-v1 records
-- (docs/AUDIT.md, "Analysis", defines the table and how to load it). One query per finding
-- kind (the chain edits are four rules), each returning the same columns:
--
--   kind, table_id, round_id, commitment, replica, run, seq, detail
--
-- Not here: torn_record (this table holds whole records only), chain_tail_missing (it needs
-- audit_started.previous) and checkpoint_signature (Ed25519): `reddog audit-log` only.
-- Round findings fill table_id, round_id and commitment (not for round_redealt, which spans
-- several commitments); chain findings fill replica, run and seq. `reddog audit-log --json`
-- reports the same findings with the same keys; CI (scripts/ci.d/65-audit-sql.sh) runs both on
-- generated logs in DuckDB and requires them to agree finding by finding.
--
-- Written in the SQL DuckDB, ClickHouse, BigQuery and Trino share. Dialect notes:
--   * BigQuery: write STRING for VARCHAR and INT64 for BIGINT in the CASTs.
--   * ClickHouse: set join_use_nulls = 1 (the NULL columns); String for VARCHAR and Int64
--     for BIGINT if the aliases are disabled.
--   * The `line_hash` column is computed at load time: DuckDB sha256(raw); ClickHouse
--     lower(hex(SHA256(raw))); BigQuery TO_HEX(SHA256(raw)); Trino
--     lower(to_hex(sha256(to_utf8(raw)))).
-- Ordering inside a round is by transcript links (parent_transcript -> transcript), never by
-- `at`: no query below compares times of different records except open_round's "first start".
-- Each statement ends with a semicolon at the end of a line (the CI splits on them).

-- commitment_reuse: one commitment started with two or more different t_0.
WITH rr AS (
  SELECT * FROM audit
  WHERE event IN ('round_started', 'seats_decided', 'round_settled')
    AND commitment IS NOT NULL AND table_id IS NOT NULL AND round_id IS NOT NULL AND transcript IS NOT NULL
    AND (event <> 'seats_decided' OR parent_transcript IS NOT NULL)
),
r AS (SELECT commitment, MIN(table_id) AS table_id, MIN(round_id) AS round_id FROM rr GROUP BY commitment),
s AS (
  SELECT commitment, COUNT(DISTINCT transcript) AS n FROM rr WHERE event = 'round_started'
  GROUP BY commitment HAVING COUNT(DISTINCT transcript) > 1
)
SELECT 'commitment_reuse' AS kind, r.table_id, r.round_id, r.commitment,
       CAST(NULL AS VARCHAR) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT(CAST(s.n AS VARCHAR), ' different t_0 under one commitment') AS detail
FROM s JOIN r ON r.commitment = s.commitment;

-- fork: a transcript with two or more different children, or two or more settled transcripts.
WITH rr AS (
  SELECT * FROM audit
  WHERE event IN ('round_started', 'seats_decided', 'round_settled')
    AND commitment IS NOT NULL AND table_id IS NOT NULL AND round_id IS NOT NULL AND transcript IS NOT NULL
    AND (event <> 'seats_decided' OR parent_transcript IS NOT NULL)
),
r AS (SELECT commitment, MIN(table_id) AS table_id, MIN(round_id) AS round_id FROM rr GROUP BY commitment),
k AS (
  SELECT commitment, parent_transcript, COUNT(DISTINCT transcript) AS n FROM rr WHERE event = 'seats_decided'
  GROUP BY commitment, parent_transcript HAVING COUNT(DISTINCT transcript) > 1
),
s AS (
  SELECT commitment, COUNT(DISTINCT transcript) AS n FROM rr WHERE event = 'round_settled'
  GROUP BY commitment HAVING COUNT(DISTINCT transcript) > 1
)
SELECT 'fork' AS kind, r.table_id, r.round_id, r.commitment,
       CAST(NULL AS VARCHAR) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT('transcript ', k.parent_transcript, ' has ', CAST(k.n AS VARCHAR), ' different Decides') AS detail
FROM k JOIN r ON r.commitment = k.commitment
UNION ALL
SELECT 'fork' AS kind, r.table_id, r.round_id, r.commitment,
       CAST(NULL AS VARCHAR) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT('settled with ', CAST(s.n AS VARCHAR), ' different transcripts') AS detail
FROM s JOIN r ON r.commitment = s.commitment;

-- peek_then_play: a settled transcript that is the parent of a logged Decide.
WITH rr AS (
  SELECT * FROM audit
  WHERE event IN ('round_started', 'seats_decided', 'round_settled')
    AND commitment IS NOT NULL AND table_id IS NOT NULL AND round_id IS NOT NULL AND transcript IS NOT NULL
    AND (event <> 'seats_decided' OR parent_transcript IS NOT NULL)
),
r AS (SELECT commitment, MIN(table_id) AS table_id, MIN(round_id) AS round_id FROM rr GROUP BY commitment),
p AS (
  SELECT DISTINCT s.commitment, s.transcript
  FROM rr s JOIN rr d ON d.commitment = s.commitment AND d.parent_transcript = s.transcript
  WHERE s.event = 'round_settled' AND d.event = 'seats_decided'
)
SELECT 'peek_then_play' AS kind, r.table_id, r.round_id, r.commitment,
       CAST(NULL AS VARCHAR) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT('settled transcript ', p.transcript, ' is the parent of a logged Decide') AS detail
FROM p JOIN r ON r.commitment = p.commitment;

-- round_redealt: one (table, round id) started under two or more commitments.
WITH rr AS (
  SELECT * FROM audit
  WHERE event = 'round_started'
    AND commitment IS NOT NULL AND table_id IS NOT NULL AND round_id IS NOT NULL AND transcript IS NOT NULL
)
SELECT 'round_redealt' AS kind, table_id, round_id, CAST(NULL AS VARCHAR) AS commitment,
       CAST(NULL AS VARCHAR) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT('started under ', CAST(COUNT(DISTINCT commitment) AS VARCHAR), ' commitments') AS detail
FROM rr GROUP BY table_id, round_id HAVING COUNT(DISTINCT commitment) > 1;

-- open_round (`reddog audit-log --open-rounds`): started, never settled. For
-- `--older-than D`, add `WHERE f.started_at < <newest at minus D>` (as text in the records'
-- fixed format, or as timestamps if `at` was loaded as one).
WITH rr AS (
  SELECT * FROM audit
  WHERE event IN ('round_started', 'seats_decided', 'round_settled')
    AND commitment IS NOT NULL AND table_id IS NOT NULL AND round_id IS NOT NULL AND transcript IS NOT NULL
    AND (event <> 'seats_decided' OR parent_transcript IS NOT NULL)
),
r AS (SELECT commitment, MIN(table_id) AS table_id, MIN(round_id) AS round_id FROM rr GROUP BY commitment),
o AS (
  SELECT commitment FROM rr GROUP BY commitment
  HAVING SUM(CASE WHEN event = 'round_started' THEN 1 ELSE 0 END) > 0
     AND SUM(CASE WHEN event = 'round_settled' THEN 1 ELSE 0 END) = 0
),
f AS (SELECT commitment, MIN(record_at) AS started_at FROM rr WHERE event = 'round_started' GROUP BY commitment)
SELECT 'open_round' AS kind, r.table_id, r.round_id, r.commitment,
       MIN(x.replica) AS replica, CAST(NULL AS VARCHAR) AS run, CAST(NULL AS BIGINT) AS seq,
       CONCAT('started at ', f.started_at, ' and never settled') AS detail
FROM o
JOIN f ON f.commitment = o.commitment
JOIN r ON r.commitment = o.commitment
JOIN rr x ON x.commitment = o.commitment AND x.event = 'round_started' AND x.record_at = f.started_at
GROUP BY r.table_id, r.round_id, r.commitment, f.started_at;

-- chain_gap: a chain's seq skips numbers (records removed).
WITH s AS (SELECT DISTINCT replica, run, seq FROM audit),
n AS (SELECT replica, run, seq, LEAD(seq) OVER (PARTITION BY replica, run ORDER BY seq) AS next_seq FROM s)
SELECT 'chain_gap' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq + 1 AS seq,
       CONCAT(CAST(next_seq - seq - 1 AS VARCHAR), ' record(s) missing before seq ', CAST(next_seq AS VARCHAR)) AS detail
FROM n WHERE next_seq > seq + 1;

-- chain_gap, at the start: a run whose first record present is not seq 0 (its start removed).
WITH m AS (SELECT replica, run, MIN(seq) AS first_seq FROM audit GROUP BY replica, run)
SELECT 'chain_gap' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, CAST(0 AS BIGINT) AS seq,
       CONCAT(CAST(first_seq AS VARCHAR), ' record(s) missing before seq ', CAST(first_seq AS VARCHAR),
              ': the start of the run') AS detail
FROM m WHERE first_seq > 0;

-- sink_outage: an audit_resumed record (the output failed for a while; calls were refused).
SELECT 'sink_outage' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       'the trail''s output failed for a while; calls were refused meanwhile' AS detail
FROM (SELECT DISTINCT replica, run, seq FROM audit WHERE event = 'audit_resumed') r;

-- chain_edit, rule 1: two or more different records with one seq.
WITH rec AS (SELECT DISTINCT replica, run, seq, prev, line_hash, event, head FROM audit)
SELECT 'chain_edit' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       CONCAT(CAST(COUNT(*) AS VARCHAR), ' different records with this seq') AS detail
FROM rec GROUP BY replica, run, seq HAVING COUNT(*) > 1;

-- chain_edit, rule 2: a prev that is not the hash of any record with the seq before it.
WITH rec AS (SELECT DISTINCT replica, run, seq, prev, line_hash, event, head FROM audit),
b AS (
  SELECT r.replica, r.run, r.seq, r.line_hash,
         SUM(CASE WHEN p.line_hash = r.prev THEN 1 ELSE 0 END) AS matches
  FROM rec r JOIN rec p ON p.replica = r.replica AND p.run = r.run AND p.seq = r.seq - 1
  GROUP BY r.replica, r.run, r.seq, r.line_hash
)
SELECT 'chain_edit' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       'prev is not the hash of the record before it' AS detail
FROM b WHERE matches = 0;

-- chain_edit, rule 3: a run's first record whose prev is not 64 zeros.
WITH rec AS (SELECT DISTINCT replica, run, seq, prev, line_hash, event, head FROM audit)
SELECT 'chain_edit' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       'the first record of the run has a prev that is not 64 zeros' AS detail
FROM rec WHERE seq = 0 AND prev <> '0000000000000000000000000000000000000000000000000000000000000000';

-- chain_edit, rule 4: a checkpoint whose head is not its prev.
WITH rec AS (SELECT DISTINCT replica, run, seq, prev, line_hash, event, head FROM audit)
SELECT 'chain_edit' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       'a checkpoint whose head is not its prev' AS detail
FROM rec WHERE event = 'checkpoint' AND (head IS NULL OR head <> prev);

-- chain_order: in one file, a record after one of the same chain with a higher seq.
WITH o AS (
  SELECT file, line_no, replica, run, seq,
         LAG(seq) OVER (PARTITION BY file, replica, run ORDER BY line_no) AS seq_before
  FROM audit
)
SELECT 'chain_order' AS kind, CAST(NULL AS VARCHAR) AS table_id, CAST(NULL AS VARCHAR) AS round_id,
       CAST(NULL AS VARCHAR) AS commitment, replica, run, seq,
       CONCAT(file, ':', CAST(line_no AS VARCHAR), ': seq ', CAST(seq AS VARCHAR), ' after seq ',
              CAST(seq_before AS VARCHAR)) AS detail
FROM o WHERE seq < seq_before;
