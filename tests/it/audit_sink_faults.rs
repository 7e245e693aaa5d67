//! The audit trail's sink under every fault, against the real binary (`REDDOG_TEST_BIN`, or
//! the one Cargo built), with players calling throughout (docs/AUDIT.md, "The sink";
//! ../shared/PROPERTIES.md, "Record"):
//!
//! | sink | fault | test |
//! |---|---|---|
//! | file on an 8 MiB tmpfs | full (ENOSPC) under load, freed; full again, SIGKILL, restart on the torn tail | `a_full_tmpfs_…` |
//! | file | `/dev/full` (ENOSPC on every write, from the first) | `a_trail_on_dev_full_…` |
//! | file on ext4 on a loop device | frozen (`fsfreeze`) under load, thawed; SIGTERM while frozen | `a_frozen_disk_…` |
//! | stdout | the reader stops under load, resumes; stops again, SIGTERM | `a_stalled_stdout_reader_…` |
//! | stderr (diagnostics) | a pipe already full, never read, at each of `error` … `trace` | `an_unread_stderr_…` |
//!
//! EIO cannot be made from outside here (no device-mapper): the injected writers of
//! `src/service/evidence/audit_sink.rs`' unit tests cover it (`a_failing_output_refuses_calls_…`).
//!
//! Each sink × fault checks: every call whose answer a player received (CommitSeed,
//! StartRound, Settle) has its record in the trail; readiness (`""`) turns NOT_SERVING
//! within 2 s of the first refused call while `liveness` stays SERVING; calls succeed again
//! within 10 s of the fault's end without a restart; `reddog audit-log` over the trail reports
//! the outage (`sink_outage`, exit 1) and nothing else; SIGTERM exits within the drain bound.
//!
//! Mounting (tmpfs, a loop device, `fsfreeze`) needs root, as CI has. Without it these tests
//! fail, saying so; `REDDOG_SKIP_MOUNT_TESTS=1` makes them print a SKIPPED line instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tonic_types::StatusExt;

use crate::common::{Log, ServerProcess, StdoutGate, connect, req, ring_a};

const DRAIN_SECS: u64 = 3;

/// What the players received: one key per OK answer, and the refusals.
#[derive(Default)]
struct Answers {
    /// (event, round id, commitment or transcript)
    keys: Mutex<Vec<(String, String, String)>>,
    ok: AtomicU64,
    refused: AtomicU64,
    first_refusal: Mutex<Option<Instant>>,
    last_ok: Mutex<Option<Instant>>,
    /// Refusals other than AUDIT_UNAVAILABLE (or transport failures): none expected.
    other: Mutex<Vec<String>>,
}

impl Answers {
    fn ok(&self, event: &str, round: &str, key: &str) {
        self.keys.lock().unwrap().push((event.into(), round.into(), key.into()));
        self.ok.fetch_add(1, Ordering::Relaxed);
        *self.last_ok.lock().unwrap() = Some(Instant::now());
    }
    fn refused(&self, status: &tonic::Status) {
        let reason = status.get_details_error_info().map(|i| i.reason);
        if status.code() == tonic::Code::Unavailable && reason.as_deref() == Some("AUDIT_UNAVAILABLE") {
            self.refused.fetch_add(1, Ordering::Relaxed);
            self.first_refusal.lock().unwrap().get_or_insert_with(Instant::now);
        } else {
            self.other.lock().unwrap().push(format!("{:?} {}", status.code(), status.message()));
        }
    }
    fn refused_since(&self) -> Option<Instant> {
        *self.first_refusal.lock().unwrap()
    }
    fn reset_refusals(&self) {
        *self.first_refusal.lock().unwrap() = None;
    }
}

/// Calls until the call answers OK (`Some`) or `stop` is set (`None`); refusals are counted
/// (and waited 20 ms). The call expression is evaluated afresh each time.
macro_rules! until_ok {
    ($answers:expr, $stop:expr, $call:expr) => {{
        loop {
            if $stop.load(Ordering::Relaxed) {
                break None;
            }
            match $call.await {
                Ok(t) => break Some(t),
                Err(status) => {
                    $answers.refused(&status);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }};
}

/// Players playing rounds (CommitSeed, StartRound, Settle) until stopped, each OK answer kept.
struct Players {
    stop: Arc<AtomicBool>,
    answers: Arc<Answers>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Players {
    fn start(addr: std::net::SocketAddr, n: usize, tag: &str) -> Players {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Answers::default());
        let tasks = (0..n)
            .map(|p| {
                let (stop, answers, tag) = (stop.clone(), answers.clone(), tag.to_string());
                tokio::spawn(async move {
                    let mut client = connect(addr).await;
                    for nonce in 0u64.. {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let round = format!("{tag}-{p}-{nonce}");
                        let commit = || req::commit_seed().round(round.clone()).nonce(nonce);
                        let Some(c) = until_ok!(answers, stop, client.commit_seed(commit())) else { return };
                        answers.ok("seed_committed", &round, &c.commitment);
                        let start = req::start_round(c.commitment_token).round(round.clone()).nonce(nonce);
                        let Some(s) = until_ok!(answers, stop, client.start_round(start.clone())) else { return };
                        answers.ok("round_started", &round, &s.transcript);
                        let settle = req::settle(s.round_token).round(round.clone());
                        let Some(t) = until_ok!(answers, stop, client.settle(settle.clone())) else { return };
                        answers.ok("round_settled", &round, &t.transcript);
                    }
                })
            })
            .collect();
        Players { stop, answers, tasks }
    }

    async fn stop(self) -> Arc<Answers> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
        }
        self.answers
    }
}

/// Readiness (`""`) and liveness as a prober sees them, every 25 ms.
struct Prober {
    samples: Arc<Mutex<Vec<(Instant, bool, bool)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Prober {
    async fn start(addr: std::net::SocketAddr) -> Prober {
        let ch = crate::common::channel(addr).await;
        let samples = Arc::new(Mutex::new(Vec::new()));
        let out = samples.clone();
        let task = tokio::spawn(async move {
            let mut health = HealthClient::new(ch);
            loop {
                let ask = |service: &str| HealthCheckRequest { service: service.into() };
                let ready = health.check(ask("")).await.map(|r| r.into_inner().status == 1).unwrap_or(false);
                let live = health.check(ask("liveness")).await.map(|r| r.into_inner().status == 1).unwrap_or(false);
                out.lock().unwrap().push((Instant::now(), ready, live));
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        });
        Prober { samples, task }
    }
    /// The first sample at or after `t` with readiness `ready`.
    fn first(&self, after: Instant, ready: bool) -> Option<Instant> {
        self.samples.lock().unwrap().iter().find(|s| s.0 >= after && s.1 == ready).map(|s| s.0)
    }
    fn liveness_always_serving(&self) -> bool {
        self.samples.lock().unwrap().iter().all(|s| s.2)
    }
    async fn wait(&self, after: Instant, ready: bool, bound: Duration) -> Duration {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(t) = self.first(after, ready) {
                return t.saturating_duration_since(after);
            }
            assert!(
                Instant::now() < deadline,
                "readiness not {} within {bound:?}",
                if ready { "SERVING" } else { "NOT_SERVING" }
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The (event, round id, key) of every round record in the trail's lines.
fn trail_keys(lines: &[String]) -> BTreeSet<(String, String, String)> {
    let mut keys = BTreeSet::new();
    for line in lines {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let (Some(event), Some(round)) = (v["event"].as_str(), v["round_id"].as_str()) else { continue };
        let key = match event {
            "seed_committed" => v["commitment"].as_str(),
            "round_started" | "round_settled" => v["transcript"].as_str(),
            _ => None,
        };
        if let Some(key) = key {
            keys.insert((event.to_string(), round.to_string(), key.to_string()));
        }
    }
    keys
}

/// Every answer received has its record in the trail; returns how many were checked.
fn assert_every_answer_recorded(answers: &Answers, lines: &[String], what: &str) -> usize {
    let trail = trail_keys(lines);
    let keys = answers.keys.lock().unwrap();
    let missing: Vec<_> = keys.iter().filter(|k| !trail.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "{what}: {} of {} answers have no record: {:?}",
        missing.len(),
        keys.len(),
        &missing[..missing.len().min(5)]
    );
    let settled = keys.iter().filter(|k| k.0 == "round_settled").count();
    eprintln!("{what}: all {} answers received ({settled} Settle) are in the trail", keys.len());
    keys.len()
}

fn lines_of(path: &Path) -> Vec<String> {
    String::from_utf8_lossy(&std::fs::read(path).unwrap()).lines().map(str::to_string).collect()
}

/// `reddog audit-log --json FILE`: exit code and the findings' kinds.
fn audit_log(path: &Path) -> (Option<i32>, Vec<String>, serde_json::Value) {
    let out = Command::new(crate::common::reddog_binary())
        .args(["audit-log", "--json"])
        .arg(path)
        .output()
        .expect("run reddog audit-log");
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let kinds =
        report["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_string()).collect();
    (out.status.code(), kinds, report)
}

/// A mount point that is unmounted (and its loop device detached) on drop.
struct Mount {
    dir: tempfile::TempDir,
    loop_dev: Option<String>,
    frozen: AtomicBool,
}

impl Mount {
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn freeze(&self, on: bool) {
        let flag = if on { "-f" } else { "-u" };
        let ok = Command::new("fsfreeze").arg(flag).arg(self.path()).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "fsfreeze {flag} {}", self.path().display());
        self.frozen.store(on, Ordering::Relaxed);
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.frozen.load(Ordering::Relaxed) {
            let _ = Command::new("fsfreeze").arg("-u").arg(self.path()).status();
        }
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
        if let Some(dev) = &self.loop_dev {
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
    }
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A fresh tmpfs of `size`, or an ext4 filesystem on a loop device over a file in `/tmp`
/// (`fsfreeze` needs a real filesystem). `None` (after a loud SKIPPED line) only when
/// `REDDOG_SKIP_MOUNT_TESTS=1` and mounting is impossible; otherwise a failure panics.
fn mount(kind: &str) -> Option<Mount> {
    let dir = tempfile::tempdir().unwrap();
    let mounted = match kind {
        "tmpfs" => run(Command::new("mount").args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"]).arg(dir.path()))
            .map(|_| Mount { dir, loop_dev: None, frozen: AtomicBool::new(false) }),
        _ => (|| {
            let image = dir.path().with_extension("img");
            run(Command::new("truncate").args(["-s", "64M"]).arg(&image))?;
            run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image))?;
            let dev = run(Command::new("losetup").args(["-f", "--show"]).arg(&image))?;
            let _ = std::fs::remove_file(&image);
            if let Err(e) = run(Command::new("mount").arg(&dev).arg(dir.path())) {
                let _ = run(Command::new("losetup").args(["-d", &dev]));
                return Err(e);
            }
            Ok(Mount { dir, loop_dev: Some(dev), frozen: AtomicBool::new(false) })
        })(),
    };
    match mounted {
        Ok(m) => Some(m),
        Err(why) if std::env::var("REDDOG_SKIP_MOUNT_TESTS").as_deref() == Ok("1") => {
            eprintln!("SKIPPED (REDDOG_SKIP_MOUNT_TESTS=1): cannot mount a {kind}: {why}");
            None
        }
        Err(why) => panic!(
            "cannot mount a {kind} for the audit sink fault test ({why}): run as root (CI does), or set \
             REDDOG_SKIP_MOUNT_TESTS=1 to skip it with a SKIPPED line"
        ),
    }
}

/// Writes a file of `bytes` (the space the trail does not get).
fn fill(path: &Path, bytes: usize) {
    std::fs::write(path, vec![b'x'; bytes]).unwrap();
}

/// Fills the filesystem of `path` up with a file at `path`, then frees `leave` bytes of it.
fn fill_up(path: &Path, leave: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    while f.write_all(&[b'x'; 4096]).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(leave)).unwrap();
}

fn engine(trail: &Path, gate: Option<&StdoutGate>) -> ServerProcess {
    let mut b = ServerProcess::builder()
        .args(&["--drain-timeout-secs", &DRAIN_SECS.to_string(), "--audit-checkpoint-records", "200"])
        .env("REDDOG_KEY_RING", &ring_a())
        .env("RUST_LOG", "info")
        .log(Log::Keep);
    if let Some(gate) = gate {
        b = b.stdout_gate(gate);
    } else {
        b = b.args(&["--audit-log", trail.to_str().unwrap()]);
    }
    b.spawn()
}

/// SIGTERM, and the exit within the drain bound (plus a second for the trail's last flush).
async fn terminate_in_bound(mut server: ServerProcess, what: &str) {
    let began = Instant::now();
    server.signal("TERM");
    let status = server.wait_exit(Duration::from_secs(DRAIN_SECS + 10)).await;
    let took = began.elapsed();
    eprintln!("{what}: SIGTERM → exit {status:?} in {took:?}");
    assert!(took < Duration::from_secs(DRAIN_SECS) + Duration::from_millis(1500), "{what}: exit took {took:?}");
}

/// A fault under load: waits for the first refusal, then checks readiness turns NOT_SERVING
/// within 2 s of it (and says how long the refusal took after `began`).
async fn fault_seen(players: &Players, prober: &Prober, began: Instant, what: &str) -> Instant {
    let deadline = began + Duration::from_secs(60);
    let refused = loop {
        if let Some(t) = players.answers.refused_since() {
            break t;
        }
        assert!(Instant::now() < deadline, "{what}: no call refused within 60 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let not_ready = began + prober.wait(began, false, Duration::from_secs(10)).await;
    let after_refusal = not_ready.saturating_duration_since(refused);
    eprintln!(
        "{what}: first call refused {:?} after the trigger; readiness NOT_SERVING {after_refusal:?} after that call",
        refused.saturating_duration_since(began)
    );
    assert!(
        after_refusal <= Duration::from_secs(2),
        "{what}: readiness NOT_SERVING {after_refusal:?} after the first refusal"
    );
    refused
}

/// The fault ended at `cleared`: a call succeeds and readiness is SERVING within 10 s.
async fn recovery_seen(players: &Players, prober: &Prober, cleared: Instant, what: &str) {
    let deadline = cleared + Duration::from_secs(10);
    loop {
        if players.answers.last_ok.lock().unwrap().is_some_and(|t| t > cleared) {
            break;
        }
        assert!(Instant::now() < deadline, "{what}: no call answered within 10 s of the fault's end");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ok_after = players.answers.last_ok.lock().unwrap().unwrap().saturating_duration_since(cleared);
    let ready = prober.wait(cleared, true, Duration::from_secs(10)).await;
    eprintln!("{what}: calls answered again {ok_after:?} and readiness SERVING {ready:?} after the fault's end");
    // Refusals counted from here on belong to the next fault.
    players.answers.reset_refusals();
}

/// The trail on an 8 MiB tmpfs, filled up under load: refused, NOT_SERVING, freed, answered
/// again without a restart (freeing leaves room for seconds of this load, so the run ends
/// before the trail could fill the disk a second time); then filled again and the engine SIGKILLed while full, restarted
/// on the same file: the torn tail is closed off and flagged, the new run names the old end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_tmpfs_refuses_calls_leaves_readiness_recovers_and_a_torn_restart_is_flagged() {
    let Some(fs) = mount("tmpfs") else { return };
    let trail = fs.path().join("trail.jsonl");
    let filler = fs.path().join("filler");
    // Leave the trail about 200 KiB (a few hundred rounds).
    fill(&filler, 8 * 1024 * 1024 - 200 * 1024);
    let server = engine(&trail, None);
    let prober = Prober::start(server.addr).await;
    let players = Players::start(server.addr, 8, "tmpfs");
    let began = Instant::now();
    fault_seen(&players, &prober, began, "tmpfs full").await;
    let refused_before = players.answers.refused.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(players.answers.refused.load(Ordering::Relaxed) > refused_before, "still refused while full");
    std::fs::remove_file(&filler).unwrap();
    let freed = Instant::now();
    recovery_seen(&players, &prober, freed, "tmpfs freed").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answers = players.stop().await;
    assert!(answers.other.lock().unwrap().is_empty(), "other errors: {:?}", answers.other.lock().unwrap());
    assert!(prober.liveness_always_serving(), "liveness left SERVING");
    terminate_in_bound(server, "tmpfs").await;
    let lines = lines_of(&trail);
    assert_every_answer_recorded(&answers, &lines, "tmpfs full and freed");
    let (code, kinds, report) = audit_log(&trail);
    assert_eq!(code, Some(1), "the outage is a finding: {report}");
    assert!(!kinds.is_empty() && kinds.iter().all(|k| k == "sink_outage"), "only the outage: {report}");
    let resumed: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "audit_resumed")
        .collect();
    assert!(resumed.iter().all(|r| r["cause"] == "no_space"), "{resumed:?}");
    let refused_in_trail: u64 = resumed.iter().map(|r| r["refused_calls"].as_u64().unwrap()).sum();
    eprintln!(
        "tmpfs: {} answered, {} refused by the players; audit_resumed records {} refusals in {} outage(s)",
        answers.ok.load(Ordering::Relaxed),
        answers.refused.load(Ordering::Relaxed),
        refused_in_trail,
        resumed.len()
    );
    assert!(refused_in_trail >= 1);

    // Full again, and killed while full: the file may end mid-record.
    fill_up(&filler, 48 * 1024);
    let server = engine(&trail, None);
    let players = Players::start(server.addr, 4, "killed");
    let deadline = Instant::now() + Duration::from_secs(60);
    while players.answers.refused_since().is_none() {
        assert!(Instant::now() < deadline, "no refusal on the full tmpfs");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    let answers = players.stop().await;
    let bytes = std::fs::read(&trail).unwrap();
    let torn_by_disk = !bytes.ends_with(b"\n");
    if !torn_by_disk {
        // The full disk cut exactly at a line's end: cut the last record as a crash would.
        eprintln!("tmpfs: the kill left whole lines; cutting the last record in half by hand");
        let last_start = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let half = last_start + (bytes.len() - last_start) / 2;
        std::fs::write(&trail, &bytes[..half]).unwrap();
    } else {
        eprintln!("tmpfs: SIGKILL while full left a torn last line");
    }
    std::fs::remove_file(&filler).unwrap();
    let server = engine(&trail, None);
    let mut client = connect(server.addr).await;
    client.commit_seed(req::commit_seed().round("after-restart")).await.expect("served after the restart");
    terminate_in_bound(server, "tmpfs restart").await;
    let lines = lines_of(&trail);
    assert_every_answer_recorded(&answers, &lines, "tmpfs SIGKILL while full");
    let started: Vec<serde_json::Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "audit_started")
        .collect();
    let last = started.last().unwrap();
    assert!(last["torn_tail_bytes"].as_u64().is_some_and(|n| n > 0), "the restart reports the torn tail: {last}");
    assert!(last["previous"]["seq"].is_u64(), "and names the last whole record: {last}");
    let (code, kinds, report) = audit_log(&trail);
    assert_eq!(code, Some(1));
    assert_eq!(kinds.iter().filter(|k| *k == "torn_record").count(), 1, "the torn line is flagged: {report}");
    assert!(kinds.iter().all(|k| k == "torn_record" || k == "sink_outage"), "no gap, edit or cut beside it: {report}");
}

/// `--audit-log /dev/full`: ENOSPC from the first write. Every call is refused
/// (`output_failed`), readiness NOT_SERVING within 1 s of the start and liveness SERVING,
/// one ERROR line naming `no_space` however many calls, the fault counted, and SIGTERM exits
/// within the drain bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trail_on_dev_full_refuses_every_call_loudly_and_once() {
    let server = engine(Path::new("/dev/full"), None);
    let prober = Prober::start(server.addr).await;
    let first = loop {
        if let Some(s) = prober.samples.lock().unwrap().first() {
            break s.0;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The first write (audit_started) fails as the server starts: NOT_SERVING from the first
    // probe, or within 1 s of it.
    let not_ready = prober.wait(first, false, Duration::from_secs(10)).await;
    assert!(not_ready <= Duration::from_secs(1), "NOT_SERVING {not_ready:?} after the first probe");
    let mut client = connect(server.addr).await;
    for n in 0..50 {
        let status = client.commit_seed(req::commit_seed().nonce(n)).await.expect_err("refused");
        let info = status.get_details_error_info().unwrap();
        assert_eq!((status.code(), info.reason.as_str()), (tonic::Code::Unavailable, "AUDIT_UNAVAILABLE"));
        assert_eq!(info.metadata["cause"], "output_failed");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(prober.liveness_always_serving());
    assert_eq!(server.scrape("reddog_audit_sink_up").await, Some(0.0));
    assert_eq!(server.scrape("reddog_serving").await, Some(0.0));
    assert_eq!(server.scrape(r#"reddog_audit_sink_faults_total{cause="no_space"}"#).await, Some(1.0));
    assert!(server.scrape(r#"reddog_audit_refused_total{reason="output_failed"}"#).await.unwrap() >= 50.0);
    let errors: Vec<String> =
        server.log_lines().into_iter().filter(|l| l.contains("ERROR") && l.contains("cannot be written")).collect();
    assert_eq!(errors.len(), 1, "one ERROR line: {errors:?}");
    assert!(errors[0].contains("no_space"), "{errors:?}");
    terminate_in_bound(server, "/dev/full").await;
}

/// The trail on stdout (the default) with the reader stopped under load: refused
/// (`stalled`), NOT_SERVING, answered again when the reader resumes; stopped again and
/// SIGTERM exits within the drain bound; every answer received is in what the reader finally
/// read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stdout_reader_refuses_calls_leaves_readiness_and_loses_no_answered_record() {
    let gate = StdoutGate::default();
    let server = engine(Path::new("-"), Some(&gate));
    let prober = Prober::start(server.addr).await;
    let players = Players::start(server.addr, 8, "stdout");
    tokio::time::sleep(Duration::from_millis(300)).await;
    gate.set_reading(false);
    let stopped = Instant::now();
    fault_seen(&players, &prober, stopped, "stdout reader stopped").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    gate.set_reading(true);
    let resumed = Instant::now();
    recovery_seen(&players, &prober, resumed, "stdout reader resumed").await;
    gate.set_reading(false);
    let again = Instant::now();
    fault_seen(&players, &prober, again, "stdout reader stopped again").await;
    let answers = players.stop().await;
    assert!(answers.other.lock().unwrap().is_empty(), "other errors: {:?}", answers.other.lock().unwrap());
    assert!(prober.liveness_always_serving(), "liveness left SERVING");
    drop(prober);
    terminate_in_bound(server, "stdout stalled").await;
    gate.set_reading(true);
    // The reader drains the pipe to its end (the process is gone).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    while n != gate.lines().len() || n == 0 {
        n = gate.lines().len();
        assert!(Instant::now() < deadline, "the reader never finished");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let lines = gate.lines();
    assert_every_answer_recorded(&answers, &lines, "stdout stalled twice");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stdout.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, kinds, report) = audit_log(&path);
    assert_eq!(code, Some(1), "{report}");
    assert!(kinds.contains(&"sink_outage".to_string()), "the first stall is recorded: {report}");
    // The write the engine was stuck in when it exited may have put part of a record in the
    // pipe: a record of a refused call, cut off, and flagged — as the last line only.
    let torn: Vec<&serde_json::Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == "torn_record").collect();
    assert!(torn.len() <= 1, "{report}");
    if let Some(t) = torn.first() {
        let last = format!("stdout.jsonl:{}:", lines.len());
        assert!(t["detail"].as_str().unwrap().contains(&last), "a torn line only at the end: {report}");
    }
    assert!(kinds.iter().all(|k| k == "sink_outage" || k == "torn_record"), "nothing else: {report}");
}

/// The trail on ext4 on a loop device, frozen under load (`fsfreeze -f`: every write
/// blocks): refused (`stalled`), NOT_SERVING, answered again after the thaw. Frozen again,
/// SIGTERM: the engine drains and gives up on the trail within the drain bound (its log says
/// so), but the kernel keeps a process whose thread sleeps in a write to a frozen
/// filesystem until the thaw (uninterruptible: SIGKILL waits too), so the exit itself comes
/// at the thaw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_disk_refuses_calls_leaves_readiness_and_recovers_at_the_thaw() {
    let Some(fs) = mount("ext4") else { return };
    let trail = fs.path().join("trail.jsonl");
    let server = engine(&trail, None);
    let prober = Prober::start(server.addr).await;
    let players = Players::start(server.addr, 8, "frozen");
    tokio::time::sleep(Duration::from_millis(500)).await;
    fs.freeze(true);
    let frozen = Instant::now();
    fault_seen(&players, &prober, frozen, "disk frozen").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    fs.freeze(false);
    let thawed = Instant::now();
    recovery_seen(&players, &prober, thawed, "disk thawed").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answers = players.stop().await;
    assert!(answers.other.lock().unwrap().is_empty(), "other errors: {:?}", answers.other.lock().unwrap());
    assert!(prober.liveness_always_serving(), "liveness left SERVING");
    drop(prober);
    // Frozen again, under a few calls, then SIGTERM.
    let players = Players::start(server.addr, 2, "frozen-term");
    tokio::time::sleep(Duration::from_millis(200)).await;
    fs.freeze(true);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let late = players.stop().await;
    let mut server = server;
    let term = Instant::now();
    server.signal("TERM");
    let bound = Duration::from_secs(DRAIN_SECS) + Duration::from_millis(1500);
    let gave_up = {
        let deadline = term + bound;
        loop {
            if server.log_contains("exiting without the last records") {
                break Some(term.elapsed());
            }
            if Instant::now() > deadline {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let exited_while_frozen = server.has_exited();
    tokio::time::sleep(Duration::from_secs(1)).await;
    fs.freeze(false);
    let thaw = Instant::now();
    let status = server.wait_exit(Duration::from_secs(10)).await;
    eprintln!(
        "frozen disk: SIGTERM → gave up on the trail after {gave_up:?}; exited while frozen: {exited_while_frozen}; \
         exit {status:?} {:?} after the thaw",
        thaw.elapsed()
    );
    assert!(gave_up.is_some(), "the engine did not give up on the frozen trail within {bound:?}");
    let lines = lines_of(&trail);
    assert_every_answer_recorded(&answers, &lines, "frozen and thawed");
    assert_every_answer_recorded(&late, &lines, "frozen at SIGTERM");
    let (code, kinds, report) = audit_log(&trail);
    assert_eq!(code, Some(1), "{report}");
    assert!(kinds.contains(&"sink_outage".to_string()), "{report}");
    // The run ends without audit_stopped; a write the thaw let through as the process died can
    // end in a torn line (a record of no answered call), which is flagged.
    assert!(kinds.iter().all(|k| k == "sink_outage" || k == "torn_record"), "{report}");
}

/// Diagnostics on a stderr pipe that is already full and never read, at each log level:
/// a fresh GetRules (a new connection), health and `/metrics` answer, rounds are played, and
/// SIGTERM exits within the drain bound; lines that could not be written are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unread_stderr_blocks_no_call_health_or_shutdown_at_any_log_level() {
    for level in ["error", "warn", "info", "debug", "trace"] {
        let (reader, writer) = std::io::pipe().unwrap();
        // Fill the pipe: a thread writes until the pipe takes no more (it then blocks in a
        // write, until `reader` is dropped at the end of this level).
        let mut filler = writer.try_clone().unwrap();
        let filled = Arc::new(AtomicU64::new(0));
        let count = filled.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            while filler.write_all(&[b'.'; 4096]).is_ok() {
                count.fetch_add(4096, Ordering::Relaxed);
            }
        });
        let mut last = u64::MAX;
        while filled.load(Ordering::Relaxed) != last {
            last = filled.load(Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(200));
        }
        let server = ServerProcess::builder()
            .args(&["--drain-timeout-secs", &DRAIN_SECS.to_string()])
            .env("REDDOG_KEY_RING", &ring_a())
            .env("RUST_LOG", level)
            .log(Log::To(Stdio::from(writer)))
            .spawn();
        let players = Players::start(server.addr, 4, level);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        if level == "trace" || level == "debug" {
            // Play until the 4 MiB backlog is full and lines are being dropped (where the
            // writer used to make every logging thread wait).
            server.wait_for_metric("reddog_log_lines_dropped_total", 1.0, Duration::from_secs(120)).await;
        }
        let began = Instant::now();
        let mut fresh = connect(server.addr).await;
        tokio::time::timeout(Duration::from_secs(2), fresh.get_rules(req::get_rules()))
            .await
            .unwrap_or_else(|_| panic!("RUST_LOG={level}: a fresh GetRules hung"))
            .expect("GetRules");
        let mut health = HealthClient::new(crate::common::channel(server.addr).await);
        let ready = tokio::time::timeout(Duration::from_secs(2), health.check(HealthCheckRequest::default()))
            .await
            .unwrap_or_else(|_| panic!("RUST_LOG={level}: health hung"))
            .unwrap();
        assert_eq!(ready.into_inner().status, 1);
        let fresh_took = began.elapsed();
        let dropped = tokio::time::timeout(Duration::from_secs(2), server.scrape("reddog_log_lines_dropped_total"))
            .await
            .unwrap_or_else(|_| panic!("RUST_LOG={level}: /metrics hung"));
        let answers = players.stop().await;
        let ok = answers.ok.load(Ordering::Relaxed);
        assert!(ok > 0, "RUST_LOG={level}: no round call answered");
        assert!(answers.other.lock().unwrap().is_empty(), "{:?}", answers.other.lock().unwrap());
        eprintln!(
            "stderr full and unread, RUST_LOG={level}: {ok} calls answered, a fresh GetRules and health in \
             {fresh_took:?}, {} log lines dropped (pipe pre-filled with {last} bytes)",
            dropped.unwrap_or(-1.0)
        );
        terminate_in_bound(server, &format!("stderr unread at {level}")).await;
        drop(reader);
    }
}

/// A restart on the same file: the new run names the previous run's last record; cutting the
/// previous run's end afterwards (its checkpoint and `audit_stopped`) is then found
/// (`chain_tail_missing`), and the whole file is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_end_is_cut_after_a_restart_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let trail: PathBuf = dir.path().join("trail.jsonl");
    for run in 0..2 {
        let server = engine(&trail, None);
        let mut client = connect(server.addr).await;
        for n in 0..5 {
            client.commit_seed(req::commit_seed().round(format!("r{run}-{n}")).nonce(n)).await.unwrap();
        }
        terminate_in_bound(server, "restart").await;
    }
    let (code, kinds, report) = audit_log(&trail);
    assert_eq!((code, kinds.len()), (Some(0), 0), "two clean runs: {report}");
    let lines = lines_of(&trail);
    let second =
        lines.iter().position(|l| l.contains("\"event\":\"audit_started\"") && l.contains("\"previous\"")).unwrap();
    let prev: serde_json::Value = serde_json::from_str(&lines[second]).unwrap();
    assert_eq!(prev["previous"]["event"], "audit_stopped", "{prev}");
    assert!(lines[second - 1].contains("\"event\":\"audit_stopped\"") && lines[second - 1].contains("\"head\""));
    // The first run's last two records removed.
    let cut: Vec<String> = lines[..second - 2].iter().chain(&lines[second..]).cloned().collect();
    std::fs::write(&trail, cut.join("\n") + "\n").unwrap();
    let (code, kinds, report) = audit_log(&trail);
    assert_eq!((code, kinds), (Some(1), vec!["chain_tail_missing".to_string()]), "{report}");
}
