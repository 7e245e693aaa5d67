#!/usr/bin/env python3
"""Runs docs/audit/checks.sql over audit record files in DuckDB (the `duckdb` wheel).

    python3 docs/audit/duckdb_checks.py [--open-rounds] [--json] FILE...

Loads every line of every FILE into a table with its file, line number and exact text, keeps
the reddog-audit-v1 records with a complete envelope (what `reddog audit-log` reads), extracts
the columns docs/AUDIT.md defines into the table `audit`, then runs each query of checks.sql.
Prints the findings (JSON with --json: {"findings": [...]}, the keys of `reddog audit-log
--json`); exits 1 when there are any, 2 when the input holds no audit record.
"""

import json
import os
import sys
import tempfile

import duckdb

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["kind", "table_id", "round_id", "commitment", "replica", "run", "seq", "detail"]


def load(con, files):
    """Loads the files' lines into `audit`; returns the number of records."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as tmp:
        for i, path in enumerate(files):
            with open(path, "rb") as f:
                for n, raw in enumerate(f.read().split(b"\n"), start=1):
                    if not raw.strip():
                        continue
                    text = raw.decode("utf-8", errors="replace")
                    tmp.write(json.dumps({"file": f"{i}:{path}", "line_no": n, "raw": text}) + "\n")
        lines = tmp.name
    try:
        con.execute(
            "CREATE TABLE lines AS SELECT * FROM read_json(?, format = 'newline_delimited', "
            "columns = {'file': 'VARCHAR', 'line_no': 'BIGINT', 'raw': 'VARCHAR'})",
            [lines],
        )
    finally:
        os.unlink(lines)
    # The columns docs/AUDIT.md defines; lines that are not valid JSON objects are skipped.
    con.execute(
        """
        CREATE TABLE audit AS
        WITH j AS (SELECT file, line_no, raw FROM lines WHERE json_valid(raw)),
        x AS (
          SELECT file, line_no, raw, sha256(raw) AS line_hash,
                 json_extract_string(raw, '$.schema') AS schema,
                 json_extract_string(raw, '$.replica') AS replica,
                 json_extract_string(raw, '$.run') AS run,
                 TRY_CAST(json_extract_string(raw, '$.seq') AS BIGINT) AS seq,
                 json_extract_string(raw, '$.prev') AS prev,
                 json_extract_string(raw, '$.at') AS record_at,
                 json_extract_string(raw, '$.event') AS event,
                 json_extract_string(raw, '$.round_id') AS round_id,
                 json_extract_string(raw, '$.table_id') AS table_id,
                 json_extract_string(raw, '$.commitment') AS commitment,
                 json_extract_string(raw, '$.transcript') AS transcript,
                 json_extract_string(raw, '$.parent_transcript') AS parent_transcript,
                 json_extract_string(raw, '$.head') AS head
          FROM j
        )
        SELECT * FROM x
        WHERE schema = 'reddog-audit-v1' AND replica IS NOT NULL AND run IS NOT NULL
          AND seq IS NOT NULL AND prev IS NOT NULL AND record_at IS NOT NULL AND event IS NOT NULL
        """
    )
    return con.execute("SELECT COUNT(*) FROM audit").fetchone()[0]


def queries(sql_text):
    """The statements of checks.sql: split at semicolons that end a line."""
    out, cur = [], []
    for line in sql_text.splitlines():
        cur.append(line)
        if line.rstrip().endswith(";"):
            stmt = "\n".join(cur).strip().rstrip(";")
            body = "\n".join(l for l in stmt.splitlines() if not l.lstrip().startswith("--")).strip()
            if body:
                out.append(body)
            cur = []
    return out


def run(files, open_rounds):
    con = duckdb.connect()
    records = load(con, files)
    with open(os.path.join(HERE, "checks.sql"), encoding="utf-8") as f:
        stmts = queries(f.read())
    findings = []
    for stmt in stmts:
        for row in con.execute(stmt).fetchall():
            finding = dict(zip(COLUMNS, row))
            if finding["kind"] == "open_round" and not open_rounds:
                continue
            findings.append(finding)
    findings.sort(key=lambda f: json.dumps([f[c] for c in COLUMNS[:-1]]))
    return records, findings


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    records, findings = run(args, "--open-rounds" in argv)
    if records == 0:
        print("duckdb_checks: no reddog-audit-v1 record in the input", file=sys.stderr)
        return 2
    if "--json" in argv:
        print(json.dumps({"records": records, "findings": findings}))
    else:
        for f in findings:
            print(f"{f['kind']:<17} {f['table_id'] or ''} {f['round_id'] or ''} {f['commitment'] or ''} "
                  f"{f['replica'] or ''} {f['run'] or ''} {'' if f['seq'] is None else f['seq']}: {f['detail']}")
        print(f"findings: {len(findings)}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
