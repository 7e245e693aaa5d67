//! Crash recovery, end to end with the real binaries: the engine (`reddog`, from the same
//! workspace's target directory, or `REDDOG_ENGINE_BIN`) and this platform. The platform
//! process is killed mid-round — by a failpoint that aborts it at an exact step
//! (`REDDOG_DEMO_CRASH_AT`), and by SIGKILL from outside while a round waits for the
//! player's decision — then restarted on the same database file. The test shows the ledger
//! balances before and after recovery and checks that every round was finished exactly
//! once: debited once, credited once, the ledger consistent.
//!
//! Needs the engine binary: `cargo build --bin reddog` (`cargo test --workspace` builds it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn engine_bin() -> PathBuf {
    if let Ok(p) = std::env::var("REDDOG_ENGINE_BIN") {
        return PathBuf::from(p);
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/reddog");
    assert!(p.exists(), "the engine binary {} is missing: run `cargo build --bin reddog` first", p.display());
    p
}

/// A child process killed when dropped.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` and returns it with the first stdout line's capture after `prefix`.
fn start(mut cmd: Command, prefix: &str) -> (Proc, String) {
    if cmd.get_args().all(|a| a != "--log-format") {
        let logs = if std::env::var_os("RECOVERY_TEST_LOGS").is_some() { Stdio::inherit() } else { Stdio::null() };
        cmd.stderr(logs);
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("spawn");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let prefix = prefix.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(&prefix) {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    let found = rx.recv_timeout(Duration::from_secs(30)).expect("process did not print its address in 30 s");
    (Proc(child), found)
}

fn start_engine() -> (Proc, String) {
    start_engine_at("127.0.0.1:0", None)
}

/// The engine on `listen`, with a given key ring (JSON) or a fresh development ring.
fn start_engine_at(listen: &str, key_ring: Option<&str>) -> (Proc, String) {
    let mut cmd = Command::new(engine_bin());
    cmd.args(["serve", "--listen", listen, "--metrics-listen", "127.0.0.1:0"]);
    if let Some(ring) = key_ring {
        cmd.env("REDDOG_KEY_RING", ring);
    }
    start(cmd, "listening on ")
}

fn start_platform(engine: &str, db: &Path, crash_at: Option<&str>) -> (Proc, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reddog-demo"));
    cmd.args(["--engine", &format!("http://{engine}"), "--listen", "127.0.0.1:0", "--db"])
        .arg(db)
        .args(["--new-player-balance", "100000"]);
    match crash_at {
        Some(point) => cmd.env("REDDOG_DEMO_CRASH_AT", point),
        None => cmd.env_remove("REDDOG_DEMO_CRASH_AT"),
    };
    let (p, url) = start(cmd, "listening on http://");
    (p, url)
}

/// A minimal HTTP/1.1 client (one request per connection). Returns (status, body), or
/// `None` when the connection died without an answer (the platform crashed).
fn http(
    addr: &str,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    body: Option<&str>,
) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let body = body.unwrap_or("");
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    if let Some(c) = cookie {
        req.push_str(&format!("Cookie: {c}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: ").or_else(|| l.strip_prefix("Set-Cookie: ")))
        .map(|c| c.split(';').next().unwrap_or("").to_string())
        .unwrap_or_default();
    Some((status, body.to_string(), cookie))
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

struct Db(rusqlite::Connection);
impl Db {
    fn open(path: &Path) -> Self {
        let c = rusqlite::Connection::open(path).unwrap();
        c.busy_timeout(Duration::from_secs(5)).unwrap();
        Db(c)
    }
    fn round(&self, id: &str) -> (String, Option<i64>, Option<i64>, bool) {
        self.0
            .query_row("SELECT state, stake, returned, recovered FROM rounds WHERE round_id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap()
    }
    fn balance(&self, player: &str) -> i64 {
        self.0
            .query_row(
                "SELECT sum(e.amount) FROM entries e JOIN accounts a ON a.id = e.account_id JOIN players p ON p.id = a.player_id
                 WHERE p.name = ?1",
                [player],
                |r| r.get(0),
            )
            .unwrap()
    }
    fn postings(&self, round: &str) -> Vec<String> {
        let mut st = self.0.prepare("SELECT kind FROM transactions WHERE round_id = ?1 ORDER BY id").unwrap();
        st.query_map([round], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    }
    fn token_b64(&self, round: &str) -> Vec<String> {
        use base64::Engine as _;
        let (c, r): (Vec<u8>, Option<Vec<u8>>) = self
            .0
            .query_row("SELECT commitment_token, round_token FROM rounds WHERE round_id = ?1", [round], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let mut out = vec![base64::engine::general_purpose::STANDARD.encode(c)];
        out.extend(r.map(|t| base64::engine::general_purpose::STANDARD.encode(t)));
        out
    }
}

fn ledger_report(db: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_reddog-demo")).args(["ledger", "--db"]).arg(db).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "ledger check failed:\n{text}");
    text
}

/// Signs up (no session: the answer is the same for a taken name) and signs in.
fn register(addr: &str, name: &str) -> String {
    let creds = format!(r#"{{"name":"{name}","pin":"2468"}}"#);
    let (status, body, _) = http(addr, "POST", "/api/register", None, Some(&creds)).unwrap();
    assert_eq!(status, 202, "{body}");
    let (status, body, cookie) = http(addr, "POST", "/api/login", None, Some(&creds)).unwrap();
    assert_eq!(status, 200, "{body}");
    cookie
}

fn commitment(addr: &str, cookie: &str) -> serde_json::Value {
    let (status, body, _) = http(addr, "POST", "/api/round", Some(cookie), Some("{}")).unwrap();
    assert_eq!(status, 200, "{body}");
    json(&body)
}

fn deal_body(round: &serde_json::Value, bet: i64) -> String {
    format!(r#"{{"round_id":"{}","client_seed":"recovery test","bet":{bet}}}"#, round["round_id"].as_str().unwrap())
}

/// Deals rounds of 10.00 until one waits for a decision (a non-consecutive hand, about 80%
/// of deals; at most 40 tries) and returns its id. Checks on the way that no answer carries a
/// token.
fn deal_until_decision(addr: &str, cookie: &str, db: &Db) -> String {
    for _ in 0..40 {
        let round = commitment(addr, cookie);
        let (status, body, _) =
            http(addr, "POST", "/api/round/deal", Some(cookie), Some(&deal_body(&round, 1_000))).unwrap();
        assert_eq!(status, 200, "{body}");
        let v = json(&body);
        let id = v["round"]["round_id"].as_str().unwrap().to_string();
        for t in db.token_b64(&id) {
            assert!(!body.contains(&t), "a token reached the browser");
        }
        if v["round"]["state"] == "dealt" {
            return id;
        }
    }
    panic!("no hand awaited a decision in 40 deals");
}

fn wait_exit(p: &mut Proc) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if p.0.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the platform did not exit at its failpoint");
}

#[test]
fn rounds_interrupted_by_a_platform_crash_are_finished_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("demo.sqlite");
    // The engine's audit trail, for `reddog audit-log` at the end; its diagnostics apart.
    let engine_log = dir.path().join("engine.log");
    let audit_log = dir.path().join("audit.jsonl");
    let mut cmd = Command::new(engine_bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--audit-log")
        .arg(&audit_log)
        .stderr(std::fs::File::create(&engine_log).unwrap());
    let (mut engine, engine_addr) = start(cmd, "listening on ");
    const START: i64 = 100_000;

    // --- 1. Crash right after the bet was debited, before StartRound.
    let (mut platform, addr) = start_platform(&engine_addr, &db_path, Some("after_bet_debit"));
    let cookie = register(&addr, "carol");
    let round = commitment(&addr, &cookie);
    let id1 = round["round_id"].as_str().unwrap().to_string();
    assert!(http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&round, 1_000))).is_none());
    wait_exit(&mut platform);
    let db = Db::open(&db_path);
    assert_eq!(db.round(&id1).0, "betting");
    assert_eq!(db.balance("carol"), START - 1_000, "the bet was debited before the crash");
    println!("after crash 1 (bet debited, StartRound not called):\n{}", ledger_report(&db_path));

    // Restart: recovery calls StartRound with the stored request and finishes the round.
    // A dealt non-consecutive hand is settled as a stand (recovery at start).
    let (platform, addr) = start_platform(&engine_addr, &db_path, None);
    let (state, stake, returned, recovered) = db.round(&id1);
    assert_eq!(state, "settled");
    assert!(recovered);
    assert_eq!(stake, Some(1_000));
    let returned = returned.unwrap();
    assert_eq!(db.balance("carol"), START - 1_000 + returned);
    let kinds = db.postings(&id1);
    assert_eq!(kinds[0], "bet");
    assert_eq!(kinds.iter().filter(|k| *k == "bet").count(), 1, "{kinds:?}");
    assert!(kinds.iter().filter(|k| *k == "payout").count() == usize::from(returned > 0), "{kinds:?}");
    println!("after recovery 1 (round {id1} returned {returned}):\n{}", ledger_report(&db_path));
    drop(platform);

    // --- 2. Crash right after the raise was debited, before Decide. Deal until a hand
    // awaits a decision (non-consecutive: ~80% of deals; bounded).
    let (mut platform, addr2) = start_platform(&engine_addr, &db_path, Some("after_raise_debit"));
    let _ = addr;
    let id2 = deal_until_decision(&addr2, &cookie, &db);
    let before = db.balance("carol");
    let raise = format!(r#"{{"round_id":"{id2}","action":"raise"}}"#);
    assert!(http(&addr2, "POST", "/api/round/decide", Some(&cookie), Some(&raise)).is_none());
    wait_exit(&mut platform);
    assert_eq!(db.round(&id2).0, "deciding");
    assert_eq!(db.balance("carol"), before - 1_000, "the raise was debited before the crash");
    println!("after crash 2 (raise debited, Decide not called):\n{}", ledger_report(&db_path));

    let (platform, _addr) = start_platform(&engine_addr, &db_path, None);
    let (state, stake, returned, recovered) = db.round(&id2);
    assert_eq!((state.as_str(), stake, recovered), ("settled", Some(2_000), true), "settled with the raise");
    let returned = returned.unwrap();
    assert_eq!(db.balance("carol"), before - 1_000 + returned);
    assert_eq!(db.postings(&id2).iter().filter(|k| *k == "raise").count(), 1);
    println!("after recovery 2 (round {id2} stake 2000 returned {returned}):\n{}", ledger_report(&db_path));
    drop(platform);

    // --- 3. SIGKILL from outside while a round waits for the player's decision.
    let (mut platform, addr3) = start_platform(&engine_addr, &db_path, None);
    let id3 = deal_until_decision(&addr3, &cookie, &db);
    let before = db.balance("carol");
    platform.0.kill().unwrap(); // SIGKILL
    platform.0.wait().unwrap();
    assert_eq!(db.round(&id3).0, "dealt");
    let (_platform, _) = start_platform(&engine_addr, &db_path, None);
    let (state, stake, returned, recovered) = db.round(&id3);
    assert_eq!((state.as_str(), stake, recovered), ("settled", Some(1_000), true), "settled as a stand");
    assert_eq!(db.balance("carol"), before + returned.unwrap());
    println!("after SIGKILL while deciding and recovery (round {id3}):\n{}", ledger_report(&db_path));

    // --- 4. Crash after the engine answered StartRound, before the platform stored the
    // answer: recovery sends the identical request again (same token bytes back).
    let (mut platform, addr4) = start_platform(&engine_addr, &db_path, Some("after_start_answer"));
    let round = commitment(&addr4, &cookie);
    let id4 = round["round_id"].as_str().unwrap().to_string();
    let before = db.balance("carol");
    assert!(http(&addr4, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&round, 1_000))).is_none());
    wait_exit(&mut platform);
    assert_eq!(db.round(&id4).0, "betting", "the answer was lost with the process");
    let (_platform, _) = start_platform(&engine_addr, &db_path, None);
    let (state, _, returned, recovered) = db.round(&id4);
    assert_eq!((state.as_str(), recovered), ("settled", true));
    assert_eq!(db.balance("carol"), before - 1_000 + returned.unwrap());
    println!("after a crash between StartRound's answer and its storage (round {id4}):\n{}", ledger_report(&db_path));

    // Nothing is left open, and the ledger is consistent (the command exits 0).
    let open: i64 = db
        .0
        .query_row("SELECT count(*) FROM rounds WHERE state IN ('betting', 'dealt', 'deciding', 'settling')", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(open, 0);

    // Recovery repeated requests exactly: the engine's log shows no misuse.
    engine.0.kill().unwrap();
    engine.0.wait().unwrap();
    let audit = Command::new(engine_bin()).arg("audit-log").arg(&audit_log).output().unwrap();
    let text = String::from_utf8_lossy(&audit.stdout);
    println!("reddog audit-log over the engine's log:\n{text}");
    assert!(audit.status.success(), "audit-log found misuse:\n{text}{}", String::from_utf8_lossy(&audit.stderr));
}

#[test]
fn a_retried_deal_or_decision_is_idempotent_on_the_round_id() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("demo.sqlite");
    let (_engine, engine_addr) = start_engine();
    let (_platform, addr) = start_platform(&engine_addr, &db_path, None);
    let cookie = register(&addr, "dave");
    let db = Db::open(&db_path);
    for _ in 0..40 {
        let round = commitment(&addr, &cookie);
        let id = round["round_id"].as_str().unwrap().to_string();
        let body = deal_body(&round, 700);
        let (s1, b1, _) = http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&body)).unwrap();
        let (s2, b2, _) = http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&body)).unwrap();
        assert_eq!((s1, s2), (200, 200), "{b1} {b2}");
        assert_eq!(json(&b1)["round"]["round_id"], json(&b2)["round"]["round_id"]);
        // A different bet on the same round is a conflict, not a second debit.
        let (s3, _, _) = http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&round, 800))).unwrap();
        assert_eq!(s3, 409);
        if json(&b1)["round"]["state"] == "dealt" {
            let raise = format!(r#"{{"round_id":"{id}","action":"raise"}}"#);
            let (d1, _, _) = http(&addr, "POST", "/api/round/decide", Some(&cookie), Some(&raise)).unwrap();
            let (d2, _, _) = http(&addr, "POST", "/api/round/decide", Some(&cookie), Some(&raise)).unwrap();
            assert_eq!((d1, d2), (200, 200));
            let kinds = db.postings(&id);
            assert_eq!(kinds.iter().filter(|k| *k == "bet").count(), 1, "{kinds:?}");
            assert_eq!(kinds.iter().filter(|k| *k == "raise").count(), 1, "{kinds:?}");
            assert!(kinds.iter().filter(|k| *k == "payout").count() <= 1, "{kinds:?}");
            ledger_report(&db_path);
            return;
        }
    }
    panic!("no hand awaited a decision in 40 deals");
}

#[test]
fn an_engine_outage_keeps_the_debited_round_and_finishes_it_when_the_engine_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("demo.sqlite");
    // A key ring the restarted engine shares, so it opens the tokens the first one sealed.
    let ring = format!(r#"{{"primary":"k1","keys":{{"k1":"{}"}}}}"#, "ab".repeat(32));
    let (mut engine, engine_addr) = start_engine_at("127.0.0.1:0", Some(&ring));
    let (_platform, addr) = start_platform(&engine_addr, &db_path, None);
    let cookie = register(&addr, "frank");
    let round = commitment(&addr, &cookie);
    let id = round["round_id"].as_str().unwrap().to_string();
    let db = Db::open(&db_path);

    engine.0.kill().unwrap();
    engine.0.wait().unwrap();
    let (status, body, _) =
        http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&round, 1_000))).unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(db.round(&id).0, "betting", "the round is kept, its bet debited");
    assert_eq!(db.balance("frank"), 100_000 - 1_000);
    // The page still loads, with the balance and a word about the engine.
    let (status, body, _) = http(&addr, "GET", "/api/state", Some(&cookie), None).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(json(&body)["engine_error"].as_str().is_some_and(|m| m.contains("unavailable")), "{body}");

    // The engine comes back on the same address: the next page load finishes the step the
    // platform owed (StartRound with the stored request).
    let (_engine, again) = start_engine_at(&engine_addr, Some(&ring));
    assert_eq!(again, engine_addr);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body, _) = http(&addr, "GET", "/api/state", Some(&cookie), None).unwrap();
        assert_eq!(status, 200, "{body}");
        let state = db.round(&id).0;
        if state != "betting" {
            assert!(state == "dealt" || state == "settled", "{state}");
            break;
        }
        assert!(Instant::now() < deadline, "the round was not finished after the engine came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = ledger_report(&db_path);
    println!("after the engine outage:\n{report}");
}

#[test]
fn a_refused_deal_voids_the_round_and_refunds_the_bet() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("demo.sqlite");
    let ring_a = format!(r#"{{"primary":"a","keys":{{"a":"{}"}}}}"#, "11".repeat(32));
    let ring_b = format!(r#"{{"primary":"b","keys":{{"b":"{}"}}}}"#, "22".repeat(32));
    let (mut engine, engine_addr) = start_engine_at("127.0.0.1:0", Some(&ring_a));
    let (_platform, addr) = start_platform(&engine_addr, &db_path, None);
    let cookie = register(&addr, "grace");
    let round = commitment(&addr, &cookie);
    let id = round["round_id"].as_str().unwrap().to_string();
    // The engine is replaced by one whose key ring cannot open the commitment token: the
    // bet is debited, StartRound is refused, and the platform voids the round and refunds.
    engine.0.kill().unwrap();
    engine.0.wait().unwrap();
    let (_engine, again) = start_engine_at(&engine_addr, Some(&ring_b));
    assert_eq!(again, engine_addr);
    let (status, body, _) =
        http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&round, 1_000))).unwrap();
    assert_eq!(status, 502, "{body}");
    assert_eq!(json(&body)["error"], "engine_refused");
    let db = Db::open(&db_path);
    let (state, _, returned, _) = db.round(&id);
    assert_eq!((state.as_str(), returned), ("voided", Some(1_000)));
    assert_eq!(db.postings(&id), vec!["bet".to_string(), "refund".to_string()]);
    assert_eq!(db.balance("grace"), 100_000, "refunded in full");
    // The player gets a new commitment and plays on.
    let next = commitment(&addr, &cookie);
    assert_ne!(next["round_id"], round["round_id"]);
    let (status, body, _) =
        http(&addr, "POST", "/api/round/deal", Some(&cookie), Some(&deal_body(&next, 1_000))).unwrap();
    assert_eq!(status, 200, "{body}");
    ledger_report(&db_path);
}
