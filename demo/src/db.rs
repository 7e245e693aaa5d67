//! The platform's SQLite database: opening it with the settings money needs, and the
//! schema migrations (`demo/migrations/NNNN_*.sql`, applied in order, tracked in
//! `PRAGMA user_version`, each in one transaction).

use rusqlite::Connection;
use std::path::Path;

/// The migrations, in order. Append only: a database at version `n` has run the first `n`.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("../migrations/0001_init.sql")),
    ("0002_pin_lockout", include_str!("../migrations/0002_pin_lockout.sql")),
    ("0003_transcripts", include_str!("../migrations/0003_transcripts.sql")),
    ("0004_seats", include_str!("../migrations/0004_seats.sql")),
    ("0005_rules_digest", include_str!("../migrations/0005_rules_digest.sql")),
    ("0006_sessions", include_str!("../migrations/0006_sessions.sql")),
];

/// Opens (creating if needed) the database file and brings its schema up to date.
///
/// WAL journal, `synchronous = FULL` (a committed wallet write survives a power cut),
/// foreign keys on, and a busy timeout so a second process (e.g. `reddog-demo ledger`) can
/// read while the server writes.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    configure(&conn)?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// An in-memory database with the full schema, for tests.
pub fn open_in_memory() -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_in_memory()?;
    configure(&conn)?;
    migrate(&mut conn)?;
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(())
}

/// Applies every migration the database has not run yet.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (index, (_name, sql)) in MIGRATIONS.iter().enumerate() {
        let version = i64::try_from(index + 1).unwrap_or(i64::MAX);
        if version <= current {
            continue;
        }
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
    }
    Ok(())
}

/// The schema version a fully migrated database has.
pub fn latest_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_database_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            tx.execute_batch(MIGRATIONS[0].1).unwrap();
            tx.pragma_update(None, "user_version", 1).unwrap();
            tx.commit().unwrap();
            conn.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('old', 'h', 0)", []).unwrap();
        }
        let conn = open(&path).unwrap();
        let failures: i64 =
            conn.query_row("SELECT pin_failures FROM players WHERE name = 'old'", [], |r| r.get(0)).unwrap();
        assert_eq!(failures, 0, "the new column exists, with its default, on the existing row");
    }

    #[test]
    fn migrations_apply_once_and_record_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        let conn = open(&path).unwrap();
        let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, latest_version());
        drop(conn);
        // Reopening runs nothing again (a second CREATE TABLE would fail).
        let conn = open(&path).unwrap();
        let n: i64 = conn.query_row("SELECT count(*) FROM accounts", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 2, "cashier and house exist exactly once");
    }
}
