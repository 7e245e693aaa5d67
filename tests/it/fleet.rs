//! A platform driving a fleet of real `reddog serve` processes, for the soak and fault tests:
//!
//! - [`Replica`]: the real binary as a child process on `127.0.0.1:0` with a key ring file,
//!   its RSS, its Prometheus counters, SIGTERM / SIGKILL;
//! - [`Pool`]: the replicas a platform calls, changeable while the load runs (a rollout adds
//!   and removes replicas); each call goes to the next replica in turn, so every round hops
//!   between replicas;
//! - [`call`]: one RPC with failover — a transport failure (UNAVAILABLE, UNKNOWN, CANCELLED,
//!   DEADLINE_EXCEEDED, tonic's INTERNAL `h2 protocol error`) is retried on the next replica
//!   within a deadline, which is safe because
//!   every RPC is retry-safe (docs/API.md); any other status fails the run;
//! - [`Ledger`]: what the platform books — every round debited once at StartRound (the bets)
//!   and at Decide (the raises), credited once at Settle — and checks as it books: the
//!   stakes Settle reports equal what was debited, the returns follow the rules, the reveal
//!   verifies against the commitment shown before the round;
//! - [`run_load`]: many concurrent players, each playing complete rounds until a shared
//!   budget of rounds is used up.
//!
//! Requests are built with [`crate::common::req`]; the reveal is checked in one place,
//! [`check_reveal`].
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use reddog::fairness::{AnyReveal, parse_reveal};
use reddog::service::proto::{self, Outcome};
use tonic::transport::Endpoint;
use tonic::{Code, Status};

use crate::common::{Log, ServerProcess, TestClient, req};

// ---- replicas ----------------------------------------------------------------------------

/// The binary under test ([`crate::common::reddog_binary`]).
pub fn binary() -> PathBuf {
    crate::common::reddog_binary()
}

/// A key ring JSON written to a file the replicas read (`--key-ring-file`).
pub struct RingFile {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl RingFile {
    pub fn new(json: &str) -> RingFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key-ring.json");
        std::fs::write(&path, json).unwrap();
        // Private (0600): the engine refuses a ring file others may read.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        RingFile { _dir: dir, path }
    }
}

/// What happens to a replica's log (stderr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logs {
    /// Kept in memory ([`Replica::log_contains`]), at `info`.
    Keep,
    /// Written at `info`, to /dev/null: the server does all its logging
    /// work and the test keeps nothing (a soak writes millions of lines).
    Discard,
}

/// A `reddog serve` child process ([`ServerProcess`]) with a name.
pub struct Replica {
    pub name: String,
    pub addr: SocketAddr,
    pub metrics: SocketAddr,
    process: ServerProcess,
}

impl Replica {
    /// Starts the binary with the ring file and `args`; waits (bounded) for both listen lines.
    pub fn spawn(name: &str, ring: &Path, args: &[&str], logs: Logs) -> Replica {
        let process = ServerProcess::builder()
            .args(&[OsStr::new("--key-ring-file"), ring.as_os_str()])
            .args(args)
            .env("RUST_LOG", "info")
            .log(if logs == Logs::Keep { Log::Keep } else { Log::Discard })
            .spawn();
        Replica { name: name.to_string(), addr: process.addr, metrics: process.metrics, process }
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Resident set size (`VmRSS`) in KiB, `None` once the process is gone.
    pub fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.pid())
    }

    /// Peak resident set size (`VmHWM`) in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status_kib(&status, "VmHWM:")
    }

    /// Whether the process has exited (without waiting).
    pub fn has_exited(&mut self) -> bool {
        self.process.has_exited()
    }

    pub fn sigterm(&self) {
        self.process.signal("TERM");
    }

    /// SIGKILL, and reap.
    pub fn sigkill(&mut self) {
        self.process.signal("KILL");
        let _ = self.process.child.wait();
    }

    /// Waits (bounded, without blocking the runtime) for the process to exit.
    pub async fn wait_exit(&mut self, bound: Duration) -> ExitStatus {
        self.process.wait_exit(bound).await
    }

    /// The replica's counters now (a scrape of `/metrics`).
    pub async fn scrape(&self) -> Counters {
        let addr = self.metrics;
        tokio::task::spawn_blocking(move || Counters::scrape(addr)).await.unwrap()
    }

    pub fn log_contains(&self, text: &str) -> bool {
        self.process.log_contains(text)
    }

    /// Its log so far ([`Logs::Keep`]).
    pub fn log_lines(&self) -> Vec<String> {
        self.process.log_lines()
    }
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?, "VmRSS:")
}

/// Samples a process's RSS every `every` on a thread until dropped.
pub struct RssSampler {
    samples: Arc<Mutex<Vec<(Duration, u64)>>>,
    /// Dropping it stops the thread at once.
    _stop: std::sync::mpsc::Sender<()>,
}

impl RssSampler {
    pub fn start(pid: u32, every: Duration) -> RssSampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let s = samples.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            // Until the process is gone; the wait between samples ends early when the
            // sampler is dropped.
            while let Some(kib) = rss_kib(pid) {
                s.lock().unwrap().push((t0.elapsed(), kib));
                if stopped.recv_timeout(every) != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                    break;
                }
            }
        });
        RssSampler { samples, _stop: stop }
    }

    pub fn samples(&self) -> Vec<(Duration, u64)> {
        self.samples.lock().unwrap().clone()
    }
}

/// The engine's own Prometheus counters (sums over all label values).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub rounds_started: u64,
    pub seats_settled: u64,
    pub staked: u64,
    pub returned: u64,
    pub token_rejections: u64,
    /// `reddog_rpc_requests_total` with a code other than OK.
    pub rpc_errors: u64,
    pub rpc_ok: u64,
    /// `reddog_rpc_in_flight`: RedDog calls admitted whose answer is not yet sent.
    pub in_flight: u64,
}

impl Counters {
    fn scrape(addr: SocketAddr) -> Counters {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect to /metrics");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let mut c = Counters::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let v = value.parse::<u64>().unwrap_or_else(|_| value.parse::<f64>().map_or(0, |f| f as u64));
            let metric = name.split('{').next().unwrap();
            match metric {
                "reddog_rounds_started_total" => c.rounds_started += v,
                "reddog_seats_settled_total" => c.seats_settled += v,
                "reddog_staked_minor_units_total" => c.staked += v,
                "reddog_returned_minor_units_total" => c.returned += v,
                "reddog_token_rejections_total" => c.token_rejections += v,
                "reddog_rpc_requests_total" if name.contains("code=\"OK\"") => c.rpc_ok += v,
                "reddog_rpc_requests_total" => c.rpc_errors += v,
                "reddog_rpc_in_flight" => c.in_flight += v,
                _ => {}
            }
        }
        c
    }
}

// ---- the pool and failover -------------------------------------------------------------------

/// The replicas a platform calls; replaced while the load runs.
pub struct Pool {
    targets: RwLock<Vec<(String, Vec<TestClient>)>>,
    next: AtomicUsize,
    /// Retried transport failures, by replica name and status code.
    pub retries: Mutex<Vec<(String, Code, String)>>,
}

/// Connections (HTTP/2 channels) a platform keeps to each replica.
pub const CONNECTIONS_PER_REPLICA: usize = 4;

impl Pool {
    pub fn new() -> Arc<Pool> {
        Arc::new(Pool { targets: RwLock::new(Vec::new()), next: AtomicUsize::new(0), retries: Mutex::new(Vec::new()) })
    }

    pub fn add(&self, replica: &Replica) {
        let clients = (0..CONNECTIONS_PER_REPLICA)
            .map(|_| {
                let ch = Endpoint::from_shared(format!("http://{}", replica.addr))
                    .unwrap()
                    .connect_timeout(Duration::from_secs(2))
                    .timeout(Duration::from_secs(20))
                    .connect_lazy();
                TestClient::new(ch)
            })
            .collect();
        self.targets.write().unwrap().push((replica.name.clone(), clients));
    }

    pub fn remove(&self, name: &str) {
        self.targets.write().unwrap().retain(|(n, _)| n != name);
    }

    pub fn names(&self) -> Vec<String> {
        self.targets.read().unwrap().iter().map(|(n, _)| n.clone()).collect()
    }

    fn pick(&self) -> (String, TestClient) {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let targets = self.targets.read().unwrap();
        assert!(!targets.is_empty(), "no replica in the pool");
        let (name, clients) = &targets[i % targets.len()];
        (name.clone(), clients[(i / targets.len()) % clients.len()].clone())
    }

    /// Opens every connection of the pool with one GetRules each, as a platform's long-lived
    /// connections are open before its traffic: the server's SETTINGS (its cap of concurrent
    /// streams) are known before the load starts. Without it, the first burst on a fresh
    /// connection may open more streams than the cap before the client has read SETTINGS;
    /// the server refuses those with REFUSED_STREAM, which tonic reports as UNAVAILABLE
    /// `h2 protocol error: http2 error` (never processed, so safe to retry — and retried by
    /// [`call`] — but not what a soak of a steady platform should count).
    pub async fn connect_all(&self) {
        let clients: Vec<_> = self
            .targets
            .read()
            .unwrap()
            .iter()
            .flat_map(|(name, cs)| cs.iter().map(move |c| (name.clone(), c.clone())))
            .collect();
        for (name, mut client) in clients {
            client
                .get_rules(req::get_rules())
                .await
                .unwrap_or_else(|s| panic!("GetRules on {name} while connecting: {s:?}"));
        }
    }

    pub fn retry_count(&self) -> usize {
        self.retries.lock().unwrap().len()
    }
}

/// The transport failures a platform retries on another replica. Besides the usual codes,
/// tonic's client reports an HTTP/2 stream ended by a draining server's GOAWAY as INTERNAL
/// with the message `h2 protocol error: …` (seen in `sigterm_under_load_drains`); the engine's
/// own INTERNAL always says `internal error`, and is never retried here.
pub fn is_transport_failure(s: &Status) -> bool {
    matches!(s.code(), Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded)
        || (s.code() == Code::Internal && s.message().starts_with("h2 protocol error"))
}

/// How long one call may keep failing over before the run fails.
pub const FAILOVER_DEADLINE: Duration = Duration::from_secs(30);

/// One RPC with failover: returns the answer and the replica that gave it.
pub async fn call<T, F, Fut>(pool: &Pool, what: &str, mut rpc: F) -> (T, String)
where
    F: FnMut(TestClient) -> Fut,
    Fut: std::future::Future<Output = Result<T, Status>>,
{
    let deadline = Instant::now() + FAILOVER_DEADLINE;
    loop {
        let (name, client) = pool.pick();
        match rpc(client).await {
            Ok(r) => return (r, name),
            Err(s) if is_transport_failure(&s) && Instant::now() < deadline => {
                pool.retries.lock().unwrap().push((name, s.code(), s.message().chars().take(120).collect()));
                // A back-off before the next replica, not a wait for a condition: with every
                // replica down, failover would otherwise spin.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            // Shed for overload (the engine's worker is behind; on a loaded machine it can
            // be): a platform retries after the delay the answer names (`RetryInfo`).
            Err(s) if s.code() == Code::ResourceExhausted && Instant::now() < deadline => {
                use tonic_types::StatusExt;
                let Some(delay) = s.get_error_details().retry_info().and_then(|r| r.retry_delay) else {
                    panic!("{what} on {name}: RESOURCE_EXHAUSTED without a retry delay: {:?}", s.message())
                };
                // (Not a transport failure: not in `retries`.)
                tokio::time::sleep(delay).await;
            }
            Err(s) => panic!(
                "{what} on {name}: {:?} {:?} (not a transport failure, or failover took > 30 s)",
                s.code(),
                s.message()
            ),
        }
    }
}

// ---- the reveal ---------------------------------------------------------------------------

/// The reveal (v2) verifies, is this round's, matches the commitment shown before it, and
/// carries the settlement's seats and the settled token's transcript.
pub fn check_reveal(settled: &proto::SettleResponse, commitment: &str, client_seed: &str, nonce: u64) {
    let Ok(AnyReveal::V2(reveal)) = parse_reveal(&settled.reveal_json) else {
        panic!("not a well-formed v2 reveal: {}", settled.reveal_json)
    };
    assert_eq!(reveal.commitment, commitment, "the reveal is of the commitment shown");
    assert_eq!(
        (reveal.client_seed.as_str(), reveal.nonce, reveal.round_id.as_str()),
        (client_seed, nonce, settled.round_id.as_str())
    );
    assert_eq!(reveal.transcript, settled.transcript);
    let seats: Vec<_> = settled.results.iter().map(|r| (r.bet, r.raised, r.stake, r.returned)).collect();
    let shown: Vec<_> = reveal.seats.iter().map(|r| (r.bet, r.raised, r.stake, r.returned)).collect();
    assert_eq!(shown, seats, "the reveal's seats are the settlement's");
    let verdict = AnyReveal::V2(reveal).verify().expect("well-formed reveal");
    assert!(verdict.ok(), "the reveal verifies: {verdict:?}");
}

// ---- the ledger ----------------------------------------------------------------------------

/// What a platform books. Rounds are numbered by the order they start.
#[derive(Default)]
pub struct Ledger {
    next_round: AtomicU64,
    /// Rounds started and not yet settled.
    in_flight: Mutex<BTreeSet<u64>>,
    /// Per round: 0 never started, 1 started (debited), 2 settled (credited).
    state: Mutex<Vec<u8>>,
    pub started: AtomicU64,
    pub settled: AtomicU64,
    pub seats: AtomicU64,
    /// Debits: bets at StartRound plus raises at Decide.
    pub debited: AtomicU64,
    /// Stakes as Settle reports them.
    pub staked: AtomicU64,
    /// Credits: returns as Settle reports them.
    pub credited: AtomicU64,
    /// Rounds whose StartRound and Settle were answered by different replicas.
    pub hopped: AtomicU64,
    /// Final tokens kept for re-settling at the end (only when asked).
    pub finals: Mutex<Vec<Final>>,
}

/// A settled round kept for re-settling: its final token, round id, and the stake and return
/// its one booked settlement reported.
pub type Final = (Vec<u8>, String, u64, u64);

impl Ledger {
    pub fn new() -> Arc<Ledger> {
        Arc::new(Ledger::default())
    }

    fn open(&self) -> u64 {
        let n = self.next_round.fetch_add(1, Ordering::Relaxed);
        self.in_flight.lock().unwrap().insert(n);
        n
    }

    fn debit_start(&self, n: u64, bets: &[u64]) {
        let mut state = self.state.lock().unwrap();
        let i = n as usize;
        if state.len() <= i {
            state.resize(i + 1, 0);
        }
        assert_eq!(state[i], 0, "round {n} started twice");
        state[i] = 1;
        drop(state);
        self.started.fetch_add(1, Ordering::Relaxed);
        self.seats.fetch_add(bets.len() as u64, Ordering::Relaxed);
        self.debited.fetch_add(bets.iter().sum::<u64>(), Ordering::Relaxed);
    }

    fn credit_settle(&self, n: u64, staked: u64, returned: u64) {
        let mut state = self.state.lock().unwrap();
        assert_eq!(state[n as usize], 1, "round {n} settled twice, or settled without a start");
        state[n as usize] = 2;
        drop(state);
        self.in_flight.lock().unwrap().remove(&n);
        self.settled.fetch_add(1, Ordering::Relaxed);
        self.staked.fetch_add(staked, Ordering::Relaxed);
        self.credited.fetch_add(returned, Ordering::Relaxed);
    }

    /// The oldest round still in flight.
    pub fn oldest_in_flight(&self) -> Option<u64> {
        self.in_flight.lock().unwrap().first().copied()
    }

    pub fn rounds_opened(&self) -> u64 {
        self.next_round.load(Ordering::Relaxed)
    }

    /// Every round started was settled exactly once, and the money reconciles.
    pub fn assert_balanced(&self) {
        let state = self.state.lock().unwrap();
        let unsettled: Vec<usize> =
            state.iter().enumerate().filter(|&(_, &s)| s != 2).map(|(i, _)| i).take(10).collect();
        assert!(unsettled.is_empty(), "rounds never settled: {unsettled:?}");
        assert_eq!(self.started.load(Ordering::Relaxed), self.settled.load(Ordering::Relaxed));
        assert_eq!(state.len() as u64, self.settled.load(Ordering::Relaxed));
        assert!(self.in_flight.lock().unwrap().is_empty());
        assert_eq!(
            self.debited.load(Ordering::Relaxed),
            self.staked.load(Ordering::Relaxed),
            "debits (bets + raises) equal the stakes settled"
        );
    }
}

// ---- the players --------------------------------------------------------------------------

/// How the load runs.
#[derive(Clone, Debug)]
pub struct Load {
    pub players: usize,
    pub rounds: u64,
    /// Keep each round's final token to re-settle it at the end.
    pub keep_finals: bool,
}

/// A small deterministic generator for the players' choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Plays one complete round; books it in the ledger as it goes.
async fn play_round(pool: &Pool, ledger: &Ledger, player: usize, rng: &mut Rng, keep_final: bool) {
    let n = ledger.open();
    let round_id = format!("p{player}-r{n}");
    let nonce = n;
    let client_seed = format!("player {player} seed {}", rng.next());
    let bets: Vec<u64> = (0..1 + rng.below(7)).map(|_| 500 + rng.below(29_501)).collect();

    let (committed, _) = call(pool, "CommitSeed", |mut c| {
        let r = req::commit_seed().round(&round_id).nonce(nonce);
        async move { c.commit_seed(r).await }
    })
    .await;
    let start = req::start_round(committed.commitment_token.clone())
        .round(&round_id)
        .client_seed(&client_seed)
        .nonce(nonce)
        .bets(&bets)
        .limits(500, 30_000);
    let (started, started_on) = call(pool, "StartRound", |mut c| {
        let r = start.clone();
        async move { c.start_round(r).await }
    })
    .await;
    ledger.debit_start(n, &bets);
    let view = started.round.expect("round view");
    let mut token = started.round_token;
    let mut raised = vec![false; bets.len()];
    if view.awaiting_decisions {
        // Decide in one or two calls; raise on wide spreads, with some noise.
        let seats: Vec<u32> = (0..bets.len() as u32).collect();
        let split = if bets.len() > 1 && rng.below(2) == 0 {
            1 + rng.below(bets.len() as u64 - 1) as usize
        } else {
            bets.len()
        };
        for chunk in [&seats[..split], &seats[split..]] {
            if chunk.is_empty() {
                continue;
            }
            let mut decide = req::decide(token.clone()).round(&round_id);
            for &s in chunk {
                let raise = view.spread >= 7 || rng.below(4) == 0;
                raised[s as usize] = raise;
                decide = if raise { decide.raise(s) } else { decide.stand(s) };
            }
            let (decided, _) = call(pool, "Decide", |mut c| {
                let r = decide.clone();
                async move { c.decide(r).await }
            })
            .await;
            let want: u64 = chunk.iter().filter(|&&s| raised[s as usize]).map(|&s| bets[s as usize]).sum();
            assert_eq!(decided.raised_amount, want, "raised_amount");
            ledger.debited.fetch_add(decided.raised_amount, Ordering::Relaxed);
            token = decided.round_token;
        }
    }
    let settle = req::settle(token.clone()).round(&round_id);
    let (settled, settled_on) = call(pool, "Settle", |mut c| {
        let r = settle.clone();
        async move { c.settle(r).await }
    })
    .await;
    // The settlement follows the rules and what was booked.
    assert_eq!(settled.results.len(), bets.len());
    let (mut staked, mut returned) = (0u64, 0u64);
    for (i, r) in settled.results.iter().enumerate() {
        assert_eq!((r.bet, r.raised), (bets[i], raised[i]), "{round_id} seat {i}");
        assert_eq!(r.stake, if raised[i] { 2 * bets[i] } else { bets[i] });
        let want = match Outcome::try_from(r.outcome).unwrap() {
            Outcome::Win => r.stake * (u64::from(r.odds) + 1),
            Outcome::Push => r.stake,
            Outcome::Lose => 0,
            Outcome::Unspecified => panic!("{round_id}: outcome unspecified"),
        };
        assert_eq!(r.returned, want, "{round_id} seat {i} returned");
        staked += r.stake;
        returned += r.returned;
    }
    assert_eq!((settled.total_staked, settled.total_returned), (staked, returned), "{round_id} totals");
    check_reveal(&settled, &committed.commitment, &client_seed, nonce);
    if started_on != settled_on {
        ledger.hopped.fetch_add(1, Ordering::Relaxed);
    }
    if keep_final {
        ledger.finals.lock().unwrap().push((token, round_id, staked, returned));
    }
    ledger.credit_settle(n, staked, returned);
}

/// Runs `load.players` concurrent players until `load.rounds` rounds are complete. Returns
/// the wall time.
pub async fn run_load(pool: Arc<Pool>, ledger: Arc<Ledger>, load: Load) -> Duration {
    let t0 = Instant::now();
    let budget = Arc::new(AtomicU64::new(load.rounds));
    let tasks: Vec<_> = (0..load.players)
        .map(|p| {
            let (pool, ledger, budget) = (pool.clone(), ledger.clone(), budget.clone());
            let keep = load.keep_finals;
            tokio::spawn(async move {
                let mut rng = Rng(0x5eed_0000_0000_0001 ^ ((p as u64 + 1) << 20));
                while budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1)).is_ok() {
                    play_round(&pool, &ledger, p, &mut rng, keep).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a player failed");
    }
    t0.elapsed()
}

/// Waits (bounded) until `cond` holds ([`crate::common::eventually`]).
pub async fn wait_until(what: &str, bound: Duration, cond: impl FnMut() -> bool) {
    crate::common::eventually(bound, what, cond).await
}

/// [`wait_until`] with an async condition (e.g. a scrape of `/metrics`).
pub async fn wait_until_async<F, Fut>(what: &str, bound: Duration, cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    crate::common::eventually_async(bound, what, cond).await
}

/// Re-settles every kept final token on the pool: each gives the same stake and return as
/// the one settlement booked (a retried or repeated Settle can never pay differently).
pub async fn resettle_all(pool: &Pool, ledger: &Ledger) -> usize {
    let finals = std::mem::take(&mut *ledger.finals.lock().unwrap());
    for (token, round_id, staked, returned) in &finals {
        let settle = req::settle(token.clone()).round(round_id);
        let (again, _) = call(pool, "Settle again", |mut c| {
            let r = settle.clone();
            async move { c.settle(r).await }
        })
        .await;
        assert_eq!(
            (again.total_staked, again.total_returned),
            (*staked, *returned),
            "{round_id} re-settled differently"
        );
    }
    finals.len()
}
