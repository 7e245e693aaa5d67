//! The platform's SQLite database: opening it with the settings money needs, and the
//! schema migrations (`demo/migrations/NNNN_*.sql`, applied in order, tracked in
//! `PRAGMA user_version`, each in one transaction).

use rusqlite::{Connection, Params, Row};
use std::path::Path;

/// How many prepared statements each connection keeps for reuse (more than the platform's
/// distinct hot statements, so none is parsed twice).
const STATEMENT_CACHE: usize = 64;

/// Runs a statement through the connection's cache of prepared statements
/// (`prepare_cached`): a round runs the same few statements every time, and parsing and
/// planning each one anew was about a tenth of the platform's CPU under load (measured with
/// `perf`, demo/README.md "Under load").
pub trait Cached {
    /// `query_row` on the cached statement for `sql`.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>;
    /// `execute` on the cached statement for `sql`.
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
}

impl Cached for Connection {
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }

    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }
}

/// The migrations, in order. Append only: a database at version `n` has run the first `n`.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_init", include_str!("../migrations/0001_init.sql")),
    ("0002_pin_lockout", include_str!("../migrations/0002_pin_lockout.sql")),
    ("0003_transcripts", include_str!("../migrations/0003_transcripts.sql")),
    ("0004_seats", include_str!("../migrations/0004_seats.sql")),
    ("0005_rules_digest", include_str!("../migrations/0005_rules_digest.sql")),
    ("0006_sessions", include_str!("../migrations/0006_sessions.sql")),
    ("0007_receipts", include_str!("../migrations/0007_receipts.sql")),
    ("0008_session_hashes", include_str!("../migrations/0008_session_hashes.sql")),
    ("0009_drop_single_seat_columns", include_str!("../migrations/0009_drop_single_seat_columns.sql")),
    ("0010_devices_recovery", include_str!("../migrations/0010_devices_recovery.sql")),
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
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
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

/// What a job hands back after it ran: called once the batch's fate is known, with the
/// commit's error if the batch did not commit.
type Deliver = Box<dyn FnOnce(Option<&rusqlite::Error>) + Send>;
type Job = Box<dyn FnOnce(&mut Connection) -> Deliver + Send>;

/// The most jobs committed together.
const MAX_BATCH: usize = 256;

/// The platform's one database connection, on a thread of its own: async code sends it jobs
/// ([`Writer::run`]) and awaits their answers, so no SQLite call (and no `fsync`) ever runs
/// on an async worker.
///
/// **Group commit.** The thread takes every job waiting (up to 256), runs them one after
/// another inside one transaction — each in a savepoint of its own, rolled back alone if the
/// job panics — and commits once: one `fsync` for the whole batch instead of one per job.
/// A job's answer is released only **after** that commit, so no caller ever acts on (or
/// shows a player) a write that a crash could still undo; if the commit fails, every job of
/// the batch is answered with that error. Jobs use savepoints (`Connection::savepoint`),
/// never `BEGIN`, because they always run inside the batch's transaction; a statement a job
/// ran outside a savepoint of its own is kept even if the job then fails, exactly as in
/// autocommit mode.
pub struct Writer {
    jobs: std::sync::mpsc::Sender<Job>,
}

fn no_answer(what: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
        Some(format!("no answer from the database thread ({what})")),
    )
}

impl Writer {
    /// Starts the thread that owns `conn`.
    pub fn start(conn: Connection) -> std::io::Result<Writer> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new().name("reddog-demo-db".into()).spawn(move || serve(conn, rx))?;
        Ok(Writer { jobs: tx })
    }

    /// Runs `f` on the database thread, inside the current batch's transaction, and returns
    /// its result once the batch has committed (a failed commit is returned as `f`'s error
    /// type, through `From<rusqlite::Error>`).
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<rusqlite::Error> + Send + 'static,
    {
        let (answer, wait) = tokio::sync::oneshot::channel::<Result<T, E>>();
        let job: Job = Box::new(move |conn: &mut Connection| -> Deliver {
            let out = f(conn);
            Box::new(move |commit_error: Option<&rusqlite::Error>| {
                let out = match commit_error {
                    None => out,
                    Some(e) => Err(E::from(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(sqlite_code(e)),
                        Some(format!("the batch did not commit: {e}")),
                    ))),
                };
                let _ = answer.send(out);
            })
        });
        self.jobs.send(job).map_err(|_| E::from(no_answer("the thread has stopped")))?;
        wait.await.map_err(|_| E::from(no_answer("the job failed to run; see the log")))?
    }
}

fn sqlite_code(e: &rusqlite::Error) -> std::ffi::c_int {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => f.extended_code,
        _ => rusqlite::ffi::SQLITE_ERROR,
    }
}

fn serve(mut conn: Connection, rx: std::sync::mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            // Nothing runs: dropping the jobs answers each caller with an error.
            tracing::error!(error = %e, jobs = batch.len(), "database: cannot begin a batch");
            continue;
        }
        let mut answers: Vec<Deliver> = Vec::with_capacity(batch.len());
        for job in batch {
            if let Err(e) = conn.execute_batch("SAVEPOINT job") {
                tracing::error!(error = %e, "database: cannot open a job's savepoint");
                continue;
            }
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut conn))) {
                Ok(deliver) => {
                    if let Err(e) = conn.execute_batch("RELEASE job") {
                        tracing::error!(error = %e, "database: cannot release a job's savepoint");
                    }
                    answers.push(deliver);
                }
                Err(_) => {
                    // Undo whatever the job wrote; its caller sees no answer.
                    tracing::error!("database: a job panicked; its writes are rolled back");
                    let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
                }
            }
        }
        let commit = conn.execute_batch("COMMIT");
        if let Err(e) = &commit {
            tracing::error!(error = %e, jobs = answers.len(), "database: the batch did not commit");
            let _ = conn.execute_batch("ROLLBACK");
        }
        for deliver in answers {
            deliver(commit.as_ref().err());
        }
    }
}

/// Read-only connections to the database file, for reads that need not wait for the
/// database thread's next commit (a session check, a balance, the history): each call runs
/// on tokio's blocking pool (`spawn_blocking`) with a connection of its own. In WAL mode a
/// reader sees every transaction committed before its statement began — every write the
/// platform has answered for.
pub struct Readers {
    conns: std::sync::Arc<std::sync::Mutex<Vec<Connection>>>,
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Readers {
    /// `n` read-only connections to `path` (already migrated by the writer's [`open`]).
    pub fn open(path: &Path, n: usize) -> rusqlite::Result<Readers> {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            let conn = Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            conns.push(conn);
        }
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(conns.len()));
        Ok(Readers { conns: std::sync::Arc::new(std::sync::Mutex::new(conns)), permits })
    }

    /// Runs `f` with a read-only connection, on the blocking pool.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<rusqlite::Error> + Send + 'static,
    {
        let permit = self.permits.clone().acquire_owned().await.map_err(|_| E::from(no_answer("readers closed")))?;
        let conns = self.conns.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let conn = match conns.lock() {
                Ok(mut g) => g.pop(),
                Err(poisoned) => poisoned.into_inner().pop(),
            };
            let Some(conn) = conn else { return Err(E::from(no_answer("no read connection free"))) };
            // Put the connection back even if `f` panics.
            struct Back(Option<Connection>, std::sync::Arc<std::sync::Mutex<Vec<Connection>>>);
            impl Drop for Back {
                fn drop(&mut self) {
                    if let Some(c) = self.0.take() {
                        match self.1.lock() {
                            Ok(mut g) => g.push(c),
                            Err(poisoned) => poisoned.into_inner().push(c),
                        }
                    }
                }
            }
            let back = Back(Some(conn), conns);
            let conn = back.0.as_ref().ok_or_else(|| E::from(no_answer("no read connection")))?;
            f(conn)
        })
        .await;
        joined.map_err(|_| E::from(no_answer("a read failed to run; see the log")))?
    }
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

    /// A database built by the first `n` migrations, as an older platform left it.
    fn database_at_version(path: &Path, n: usize) -> Connection {
        let mut conn = Connection::open(path).unwrap();
        for (k, (_name, sql)) in MIGRATIONS[..n].iter().enumerate() {
            let tx = conn.transaction().unwrap();
            tx.execute_batch(sql).unwrap();
            tx.pragma_update(None, "user_version", i64::try_from(k + 1).unwrap()).unwrap();
            tx.commit().unwrap();
        }
        conn
    }

    #[test]
    fn a_version_8_database_keeps_every_seat_when_the_single_seat_columns_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.sqlite");
        {
            let conn = database_at_version(&path, 8);
            conn.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('old', 'h', 0)", []).unwrap();
            let insert = "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment,
                              commitment_token, commit_expires_ms, bet, decision, stake, outcome, rule, odds,
                              returned, seats, created_ms, updated_ms)
                          VALUES (?1, 1, ?2, ?3, 't', 1, 'c', x'00', 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, 0)";
            let none: Option<&str> = None;
            let no: Option<i64> = None;
            // Settled before version 4: its one seat only in the columns.
            conn.execute(
                insert,
                rusqlite::params!["pre4", "settled", 0, 500, "raise", 1000, "win", "third_card_between", 2, 3000, "[]"],
            )
            .unwrap();
            // Still `deciding` from before version 4: its decision was not sent yet.
            conn.execute(
                insert,
                rusqlite::params!["pre4-open", "deciding", 1, 700, "stand", 700, none, none, no, no, "[]"],
            )
            .unwrap();
            // Two seats (version 4 on): the columns held the first seat's result only.
            let two = r#"[{"bet":500,"decision":"stand","sent":true,"stake":500,"outcome":"lose","rule":"third_card_outside","odds":null,"returned":0},
                          {"bet":600,"decision":"raise","sent":true,"stake":1200,"outcome":"win","rule":"third_card_between","odds":1,"returned":2400}]"#;
            conn.execute(
                insert,
                rusqlite::params!["two", "settled", 2, 1100, none, 1700, "lose", "third_card_outside", no, 2400, two],
            )
            .unwrap();
            // An unused commitment has no seat.
            conn.execute(insert, rusqlite::params!["unused", "expired", 3, no, none, no, none, none, no, no, "[]"])
                .unwrap();
        }
        let conn = open(&path).unwrap();
        let seats = |id: &str| -> Vec<crate::rounds::Seat> {
            let json: String =
                conn.query_row("SELECT seats FROM rounds WHERE round_id = ?1", [id], |r| r.get(0)).unwrap();
            serde_json::from_str(&json).unwrap()
        };
        use crate::round_state::Decision;
        let pre4 = seats("pre4");
        assert_eq!(pre4.len(), 1);
        let s = &pre4[0];
        assert_eq!((s.bet, s.decision, s.sent, s.stake), (500, Some(Decision::Raise), true, 1000));
        assert_eq!(
            (s.outcome.as_deref(), s.rule.as_deref(), s.odds, s.returned),
            (Some("win"), Some("third_card_between"), Some(2), Some(3000))
        );
        let open_round = seats("pre4-open");
        assert_eq!(open_round.len(), 1);
        let s = &open_round[0];
        assert_eq!(
            (s.bet, s.decision, s.sent, s.stake, s.outcome.as_deref()),
            (700, Some(Decision::Stand), false, 700, None)
        );
        let two = seats("two");
        assert_eq!((two.len(), two[1].returned, two[1].decision), (2, Some(2400), Some(Decision::Raise)), "untouched");
        assert!(seats("unused").is_empty());
        // The columns are gone.
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('rounds')")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for gone in ["decision", "outcome", "rule", "odds"] {
            assert!(!columns.iter().any(|c| c == gone), "{gone} still in {columns:?}");
        }
        for kept in ["bet", "stake", "returned", "seats", "state"] {
            assert!(columns.iter().any(|c| c == kept), "{kept} missing from {columns:?}");
        }
        let v: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, latest_version());
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

    fn writer() -> (Writer, tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sqlite");
        (Writer::start(open(&path).unwrap()).unwrap(), dir, path)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_jobs_are_committed_together_and_answered_after_the_commit() {
        let (w, _dir, path) = writer();
        let w = std::sync::Arc::new(w);
        let mut tasks = vec![];
        for k in 0..200i64 {
            let w = w.clone();
            tasks.push(tokio::spawn(async move {
                w.run(move |c| {
                    c.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES (?1, 'h', 0)", [format!("p{k}")])
                })
                .await
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), 1);
        }
        // Every answered write is on disk: another connection sees all of them.
        let other = Connection::open(&path).unwrap();
        let n: i64 = other.query_row("SELECT count(*) FROM players", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 200);
    }

    #[tokio::test]
    async fn a_failing_job_rolls_back_its_savepoint_and_not_its_neighbours() {
        let (w, _dir, _path) = writer();
        let ok = w.run(|c| c.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('a', 'h', 0)", []));
        let failing = w.run(|c| -> rusqlite::Result<()> {
            let sp = c.savepoint()?;
            sp.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('b', 'h', 0)", [])?;
            // The same name again: a UNIQUE violation; the savepoint is dropped, rolled back.
            sp.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('b', 'h', 0)", [])?;
            sp.commit()
        });
        let (ok, failing) = tokio::join!(ok, failing);
        assert_eq!(ok.unwrap(), 1);
        assert!(failing.is_err());
        let names: Vec<String> = w
            .run(|c| {
                let mut st = c.prepare("SELECT name FROM players ORDER BY name")?;
                let rows = st.query_map([], |r| r.get("name"))?;
                rows.collect::<rusqlite::Result<Vec<String>>>()
            })
            .await
            .unwrap();
        assert_eq!(names, ["a"]);
    }

    #[tokio::test]
    async fn a_panicking_job_is_undone_and_the_writer_goes_on() {
        let (w, _dir, _path) = writer();
        let panicked = w
            .run(|c| -> rusqlite::Result<()> {
                c.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('p', 'h', 0)", [])?;
                panic!("a bug in a job");
            })
            .await;
        let message = panicked.unwrap_err().to_string();
        assert!(message.contains("no answer from the database thread"), "{message}");
        let n: i64 = w.run(|c| c.query_row("SELECT count(*) FROM players", [], |r| r.get(0))).await.unwrap();
        assert_eq!(n, 0, "the panicking job's insert was rolled back");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_sees_every_write_the_writer_has_answered() {
        let (w, _dir, path) = writer();
        let readers = Readers::open(&path, 2).unwrap();
        for k in 0..20i64 {
            w.run(move |c| {
                c.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES (?1, 'h', 0)", [format!("r{k}")])
            })
            .await
            .unwrap();
            let n: i64 = readers.run(|c| c.query_row("SELECT count(*) FROM players", [], |r| r.get(0))).await.unwrap();
            assert_eq!(n, k + 1);
        }
        let write = readers.run(|c| c.execute("DELETE FROM players", [])).await;
        assert!(write.is_err(), "a reader cannot write");
    }
}
