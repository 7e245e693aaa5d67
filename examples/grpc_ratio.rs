//! The gRPC benchmark of docs/BENCHMARKS.md: each RedDog RPC of the real server binary
//! against a plain tonic server answering the same bytes, side by side in one run.
//!
//! ```text
//! scripts/bench-grpc.sh [--rounds 5] [--calls 100000] [--rate 2000] [--rpc Decide]... [--engine-env K=V]...
//! scripts/bench-grpc.sh --callgrind 2000,6000 [--out DIR]
//! scripts/bench-grpc.sh --rpc GetRules --rounds 1 --out DIR   # also keeps the request bodies
//! ```
//! (the script builds the release binary and the examples, installs `h2load` if missing and
//! runs this example pinned to the client core.)
//!
//! What it does:
//! - starts three servers, each pinned with `taskset` to the server core: `reddog serve` as
//!   shipped (the release binary, default flags, default `info` logging to a file, the
//!   audit trail on standard output: a pipe this program reads to the end); the **plain**
//!   baseline, `bench/plain-tonic` (its own crate, no engine code: `#[tokio::main]`,
//!   `Server::builder()`, the service tonic-prost-build generates with its default settings,
//!   hence tonic's own codec; `--plain PATH`, by default `plain-tonic` next to the
//!   `examples/` directory this program runs from); and the **engine-transport no-op** (this
//!   program re-executed with `--serve-noop`), which serves through
//!   [`reddog::testing::serve_service`] — the engine's transport, codec, limits, runtime and
//!   log subscriber — and does none of the engine's work. The plain server and the no-op
//!   answer each RPC with a stored copy of the engine's real answer to the same request, so
//!   all three move the same request and response bytes. The no-op against the plain server
//!   is the engine transport's own cost;
//! - plays, with a real gRPC client, a 1-seat round that deals a non-consecutive hand (the
//!   nonce is searched from 0 upwards, so the search is deterministic) and raises: the
//!   requests of that round are the bodies sent for each RPC;
//! - for each RPC and round, in rotating order (each server first in turn):
//!   `h2load -c C -m M -n CALLS` on the client core (saturation throughput, and the server's
//!   CPU time per call from `/proc/<pid>/task/*/schedstat`), then an open-loop load at a fixed
//!   rate well below saturation from a real tonic client (p50/p99 latency; every call's gRPC
//!   status is checked). h2load counts HTTP status only, so the engine's own
//!   `reddog_rpc_requests_total` counters (scraped from `/metrics`) must show every call of
//!   the run answered `OK` and none answered otherwise, else the run aborts;
//! - prints a Markdown table per RPC: throughput ratios engine/plain and no-op/plain (median
//!   of the rounds and the range), CPU µs per call of each server and its split (transport =
//!   no-op − plain, handler and audit record = engine − no-op), p50/p99 latency at the fixed
//!   load, log bytes per call, and the RSS of each server; then the headline: CPU µs per
//!   round (the four calls of a round) and rounds per core-second.
//! - with `--callgrind N1,N2`: instructions per call of each server under callgrind instead
//!   (repeatable on a shared machine), (Ir of N2 calls − Ir of N1 calls) / (N2 − N1).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reddog::service::proto::red_dog_client::RedDogClient;
use reddog::service::proto::{self, Action};
use tonic::Status;
use tonic::transport::Channel;

/// The fixed key ring the engine runs with (benchmark only).
const RING: &str =
    r#"{"primary":"bench","keys":{"bench":"4242424242424242424242424242424242424242424242424242424242424242"}}"#;
const RPCS: [&str; 5] = ["GetRules", "CommitSeed", "StartRound", "Decide", "Settle"];

struct Opts {
    engine: PathBuf,
    plain: PathBuf,
    rounds: usize,
    calls: u64,
    warmup: u64,
    connections: usize,
    streams: usize,
    rate: f64,
    latency_secs: f64,
    server_cpu: String,
    client_cpu: String,
    rpcs: Vec<String>,
    engine_env: Vec<(String, String)>,
    engine_args: Vec<String>,
    log: Option<PathBuf>,
    /// `--callgrind N1,N2`: instructions per call instead of the timed runs.
    callgrind: Option<(u64, u64)>,
    out: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: grpc_ratio [--engine PATH] [--plain PATH] [--rounds N] [--calls N] [--warmup N] [-c CONNS] [-m STREAMS] \
         [--rate CALLS_PER_S] [--latency-secs S] [--server-cpu N] [--client-cpu N] [--rpc NAME]... \
         [--engine-env K=V]... [--engine-arg ARG]... [--log FILE] [--callgrind N1,N2] [--out DIR]"
    );
    std::process::exit(2)
}

/// `plain-tonic` in the profile directory above this example's (`target/PROFILE/examples/`).
fn plain_default() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    exe.parent().and_then(Path::parent).map_or_else(|| PathBuf::from("plain-tonic"), |d| d.join("plain-tonic"))
}

fn opts() -> Opts {
    let mut o = Opts {
        engine: PathBuf::from("target/release/reddog"),
        plain: plain_default(),
        rounds: 5,
        calls: 100_000,
        warmup: 4_000,
        connections: 4,
        streams: 32,
        rate: 2000.0,
        latency_secs: 2.0,
        server_cpu: "0".into(),
        client_cpu: "1".into(),
        rpcs: Vec::new(),
        engine_env: Vec::new(),
        engine_args: Vec::new(),
        log: None,
        callgrind: None,
        out: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--engine" => o.engine = v().into(),
            "--plain" => o.plain = v().into(),
            "--rounds" => o.rounds = v().parse().unwrap_or_else(|_| usage()),
            "--calls" => o.calls = v().parse().unwrap_or_else(|_| usage()),
            "--warmup" => o.warmup = v().parse().unwrap_or_else(|_| usage()),
            "-c" => o.connections = v().parse().unwrap_or_else(|_| usage()),
            "-m" => o.streams = v().parse().unwrap_or_else(|_| usage()),
            "--rate" => o.rate = v().parse().unwrap_or_else(|_| usage()),
            "--latency-secs" => o.latency_secs = v().parse().unwrap_or_else(|_| usage()),
            "--server-cpu" => o.server_cpu = v(),
            "--client-cpu" => o.client_cpu = v(),
            "--rpc" => {
                let r = v();
                if !RPCS.contains(&r.as_str()) {
                    usage()
                }
                o.rpcs.push(r)
            }
            "--engine-env" => {
                let kv = v();
                let (k, val) = kv.split_once('=').unwrap_or_else(|| usage());
                o.engine_env.push((k.into(), val.into()))
            }
            "--engine-arg" => o.engine_args.push(v()),
            "--log" => o.log = Some(v().into()),
            "--callgrind" => {
                let v = v();
                let (a, b) = v.split_once(',').unwrap_or_else(|| usage());
                o.callgrind = Some((a.parse().unwrap_or_else(|_| usage()), b.parse().unwrap_or_else(|_| usage())));
            }
            "--out" => o.out = Some(v().into()),
            _ => usage(),
        }
    }
    if o.rpcs.is_empty() {
        o.rpcs = RPCS.iter().map(|s| s.to_string()).collect();
    }
    o
}

// ---------------------------------------------------------------------------------------
// The no-op server (this program with `--serve-noop RESPONSES`).

#[path = "support/canned.rs"]
mod canned;
use canned::{Canned, read_responses, write_responses};

fn serve_noop(responses: &Path) {
    let canned = read_responses(responses);
    let rt = reddog::service::runtime(0).expect("runtime");
    rt.block_on(async {
        // The same log subscriber as `reddog serve` (it logs nothing per call here).
        let metrics = reddog::service::MetricsRegistry::new();
        let telemetry = reddog::service::init_telemetry(reddog::service::LogFormat::Text, &metrics).expect("telemetry");
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        println!("listening on {}", l.local_addr().expect("addr"));
        let _ = std::io::stdout().flush();
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let limits = reddog::service::TransportLimits::default();
        reddog::testing::serve_service(l, canned, limits, Duration::from_secs(1), stop).await.expect("serve");
        telemetry.shutdown();
    });
}

// ---------------------------------------------------------------------------------------
// Server processes and what /proc says about them.

struct Server {
    name: &'static str,
    child: Child,
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the child's stdout until it has printed `listening on` (and `metrics on` when
/// `want_metrics`), with a deadline.
fn wait_ready(child: &mut Child, want_metrics: bool) -> (SocketAddr, Option<SocketAddr>) {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Read to the end: the engine's audit trail follows on stdout, and a pipe nobody
        // reads would hold it back (and the engine would refuse calls).
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut addr, mut metrics) = (None, None);
    while addr.is_none() || (want_metrics && metrics.is_none()) {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).expect("server did not print its addresses within 120 s");
        if let Some(a) = line.strip_prefix("listening on ") {
            addr = Some(a.trim().parse().expect("address"));
        } else if let Some(a) = line.strip_prefix("metrics on ") {
            metrics = Some(a.trim().parse().expect("metrics address"));
        }
    }
    (addr.unwrap(), metrics)
}

/// `taskset -c CPU`, or `valgrind --tool=callgrind` writing to `callgrind_out`.
fn launcher(o: &Opts, callgrind_out: Option<&Path>) -> Command {
    match callgrind_out {
        None => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(&o.server_cpu);
            c
        }
        Some(out) => {
            let mut c = Command::new("valgrind");
            // Instrumentation starts after the warm-up calls (`callgrind_run`): start-up work
            // whose length depends on the wall clock (quanta's TSC calibration for the
            // metrics recorder spins for a fixed time) would otherwise differ between the
            // N1 and N2 runs and leak into the difference.
            c.args(["--tool=callgrind", "--quiet", "--instr-atstart=no"])
                .arg(format!("--callgrind-out-file={}", out.display()));
            c
        }
    }
}

fn start_engine(o: &Opts, log: &Path) -> Server {
    start_engine_with(o, log, None)
}

fn start_engine_with(o: &Opts, log: &Path, callgrind_out: Option<&Path>) -> Server {
    let err = std::fs::File::create(log).expect("engine log file");
    let mut cmd = launcher(o, callgrind_out);
    cmd.arg(&o.engine)
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .env("REDDOG_KEY_RING", RING)
        .args(&o.engine_args)
        .env_remove("RUST_LOG")
        .env_remove("REDDOG_LOG_FORMAT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .envs(o.engine_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err);
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("starting {}: {e}", o.engine.display()));
    let (addr, metrics) = wait_ready(&mut child, true);
    Server { name: "engine", child, addr, metrics, log: log.into() }
}

fn start_noop(o: &Opts, responses: &Path, log: &Path) -> Server {
    start_noop_with(o, responses, log, None)
}

fn start_noop_with(o: &Opts, responses: &Path, log: &Path, callgrind_out: Option<&Path>) -> Server {
    let err = std::fs::File::create(log).expect("no-op log file");
    let mut child = launcher(o, callgrind_out)
        .arg(std::env::current_exe().expect("current exe"))
        .arg("--serve-noop")
        .arg(responses)
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .expect("starting the no-op server");
    let (addr, _) = wait_ready(&mut child, false);
    Server { name: "no-op", child, addr, metrics: None, log: log.into() }
}

fn start_plain_with(o: &Opts, responses: &Path, log: &Path, callgrind_out: Option<&Path>) -> Server {
    let err = std::fs::File::create(log).expect("plain log file");
    let exe = &o.plain;
    let mut child = launcher(o, callgrind_out)
        .arg(exe)
        .arg(responses)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {} (cargo build --release -p plain-tonic): {e}", exe.display()));
    let (addr, _) = wait_ready(&mut child, false);
    Server { name: "plain", child, addr, metrics: None, log: log.into() }
}

/// CPU seconds (user + system, all threads) of a process: the sum of its threads' on-CPU
/// nanoseconds from `/proc/<pid>/task/*/schedstat` (the servers start no threads while
/// measured); `/proc/<pid>/stat`'s clock ticks where schedstat is missing.
fn cpu_secs(pid: u32, tck: f64) -> f64 {
    cpu_and_log_thread_secs(pid, tck).0
}

/// [`cpu_secs`], and the CPU seconds of the log writer thread alone, from one read of
/// `/proc/<pid>/task`.
fn cpu_and_log_thread_secs(pid: u32, tck: f64) -> (f64, f64) {
    let (ns, log_ns) = schedstat_ns(pid);
    if ns == 0 { (cpu_ticks_secs(pid, tck), 0.0) } else { (ns as f64 / 1e9, log_ns as f64 / 1e9) }
}

/// On-CPU nanoseconds of all of a process's threads, and of its log writer thread alone
/// (`reddog-log`, `src/service/ops/log_writer.rs`: the `write(2)` of the batched log lines).
fn schedstat_ns(pid: u32) -> (u64, u64) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    let (mut all, mut log) = (0, 0);
    for t in dir.filter_map(Result::ok) {
        let Some(ns) = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        else {
            continue;
        };
        all += ns;
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == "reddog-log" {
            log += ns;
        }
    }
    (all, log)
}

fn cpu_ticks_secs(pid: u32, tck: f64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/<pid>/stat");
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: state is field 0, utime field 11, stime field 12.
    let t = |i: usize| f[i].parse::<f64>().expect("stat field");
    (t(11) + t(12)) / tck
}

/// VmRSS and VmHWM (peak) in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let get = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("VmRSS:"), get("VmHWM:"))
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// `reddog_rpc_requests_total` of one method from the engine's `/metrics`: (OK, other codes).
fn rpc_counts(metrics: SocketAddr, method: &str) -> (u64, u64) {
    let mut s = std::net::TcpStream::connect(metrics).expect("connect to /metrics");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n").expect("send");
    let mut body = String::new();
    s.read_to_string(&mut body).expect("read /metrics");
    let (mut ok, mut other) = (0, 0);
    let want = format!("method=\"{method}\"");
    for line in body.lines().filter(|l| l.starts_with("reddog_rpc_requests_total{") && l.contains(&want)) {
        let n: u64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or(0);
        if line.contains("code=\"OK\"") { ok += n } else { other += n }
    }
    (ok, other)
}

// ---------------------------------------------------------------------------------------
// Requests: one round played by a real client.

#[derive(Clone)]
enum Call {
    GetRules,
    CommitSeed(proto::CommitSeedRequest),
    StartRound(proto::StartRoundRequest),
    Decide(proto::DecideRequest),
    Settle(proto::SettleRequest),
}

impl Call {
    fn encoded(&self) -> Vec<u8> {
        use prost::Message;
        match self {
            Call::GetRules => proto::GetRulesRequest::default().encode_to_vec(),
            Call::CommitSeed(r) => r.encode_to_vec(),
            Call::StartRound(r) => r.encode_to_vec(),
            Call::Decide(r) => r.encode_to_vec(),
            Call::Settle(r) => r.encode_to_vec(),
        }
    }
}

async fn one(c: &mut RedDogClient<Channel>, call: &Call) -> Result<(), Status> {
    match call {
        Call::GetRules => c.get_rules(proto::GetRulesRequest::default()).await.map(drop),
        Call::CommitSeed(r) => c.commit_seed(r.clone()).await.map(drop),
        Call::StartRound(r) => c.start_round(r.clone()).await.map(drop),
        Call::Decide(r) => c.decide(r.clone()).await.map(drop),
        Call::Settle(r) => c.settle(r.clone()).await.map(drop),
    }
}

async fn connect(addr: SocketAddr) -> RedDogClient<Channel> {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    RedDogClient::new(ch)
}

/// Plays one 1-seat round that deals a non-consecutive hand and raises; returns each RPC's
/// request and the engine's answers.
async fn fixtures(c: &mut RedDogClient<Channel>) -> (BTreeMap<&'static str, Call>, Canned) {
    let rules = c.get_rules(proto::GetRulesRequest::default()).await.expect("GetRules").into_inner();
    for nonce in 0..1000u64 {
        let commit_req = proto::CommitSeedRequest { round_id: "bench-round-0001".into(), nonce, ..Default::default() };
        let committed = c.commit_seed(commit_req.clone()).await.expect("CommitSeed").into_inner();
        let start = proto::StartRoundRequest {
            sandbox_cards: vec![],
            commitment_token: committed.commitment_token.clone(),
            client_seed: "bench client seed".into(),
            nonce,
            round_id: "bench-round-0001".into(),
            seats: vec![proto::SeatBet { bet: 1000 }],
            player_limits: Some(proto::Limits { min_bet: 100, max_bet: 100_000 }),
            ..Default::default()
        };
        let started = c.start_round(start.clone()).await.expect("StartRound").into_inner();
        if !started.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            continue;
        }
        let decide = proto::DecideRequest {
            round_token: started.round_token.clone(),
            decisions: vec![proto::SeatDecision { seat: 0, action: Action::Raise as i32 }],
            round_id: "bench-round-0001".into(),
        };
        let decided = c.decide(decide.clone()).await.expect("Decide").into_inner();
        let settle =
            proto::SettleRequest { round_token: decided.round_token.clone(), round_id: "bench-round-0001".into() };
        let settled = c.settle(settle.clone()).await.expect("Settle").into_inner();
        assert!(settled.results.first().is_some_and(|r| r.raised), "the benchmark round raises");
        let calls = BTreeMap::from([
            ("GetRules", Call::GetRules),
            ("CommitSeed", Call::CommitSeed(commit_req)),
            ("StartRound", Call::StartRound(start)),
            ("Decide", Call::Decide(decide)),
            ("Settle", Call::Settle(settle)),
        ]);
        let canned = Canned { rules, commit: committed, start: started, decide: decided, settle: settled };
        return (calls, canned);
    }
    panic!("no non-consecutive deal in 1000 nonces")
}

// ---------------------------------------------------------------------------------------
// Measurements.

/// One saturation run: h2load on the client core.
struct Sat {
    calls_per_s: f64,
    cpu_us_per_call: f64,
    /// Of which the log writer thread (0 for a server that logs nothing per call).
    log_thread_us_per_call: f64,
    log_bytes_per_call: f64,
}

fn h2load(o: &Opts, addr: SocketAddr, rpc: &str, body: &Path, n: u64) -> f64 {
    let out = Command::new("taskset")
        .arg("-c")
        .arg(&o.client_cpu)
        .arg("h2load")
        .args(["-n", &n.to_string(), "-c", &o.connections.to_string(), "-m", &o.streams.to_string()])
        .arg("-d")
        .arg(body)
        .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
        .arg(format!("http://{addr}/reddog.v1.RedDog/{rpc}"))
        .stdin(Stdio::null())
        .output()
        .expect("running h2load (apt-get install nghttp2-client)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "h2load failed:\n{text}");
    let reqs = text.lines().find(|l| l.starts_with("requests:")).unwrap_or_else(|| panic!("h2load output:\n{text}"));
    let succeeded = reqs
        .split(',')
        .find_map(|p| p.trim().strip_suffix(" succeeded"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert_eq!(succeeded, n, "h2load: not every request succeeded:\n{text}");
    let status = text.lines().find(|l| l.starts_with("status codes:")).unwrap_or("");
    assert!(status.contains(&format!("{n} 2xx")), "h2load: HTTP status other than 2xx:\n{text}");
    let finished = text.lines().find(|l| l.starts_with("finished in")).unwrap_or("");
    finished
        .split(',')
        .find_map(|p| p.trim().strip_suffix(" req/s"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("h2load output:\n{text}"))
}

fn saturate(o: &Opts, s: &Server, rpc: &str, body: &Path, tck: f64) -> Sat {
    h2load(o, s.addr, rpc, body, o.warmup);
    let before = s.metrics.map(|m| rpc_counts(m, rpc));
    let ((cpu0, log_thread0), log0) = (cpu_and_log_thread_secs(s.child.id(), tck), file_len(&s.log));
    let calls_per_s = h2load(o, s.addr, rpc, body, o.calls);
    let ((cpu1, log_thread1), log1) = (cpu_and_log_thread_secs(s.child.id(), tck), file_len(&s.log));
    if let (Some(m), Some((ok0, bad0))) = (s.metrics, before) {
        let (ok1, bad1) = rpc_counts(m, rpc);
        assert_eq!(bad1, bad0, "{rpc}: the engine answered some calls with a non-OK gRPC status");
        assert_eq!(ok1 - ok0, o.calls, "{rpc}: the engine's OK count does not match the calls sent");
    }
    Sat {
        calls_per_s,
        cpu_us_per_call: (cpu1 - cpu0) * 1e6 / o.calls as f64,
        log_thread_us_per_call: (log_thread1 - log_thread0) * 1e6 / o.calls as f64,
        log_bytes_per_call: (log1 - log0) as f64 / o.calls as f64,
    }
}

/// Open-loop calls at `o.rate` for `o.latency_secs` from a real client over `o.connections`
/// connections; every call's gRPC status is checked. Returns the latencies (µs, from the
/// moment each call is sent) and the server's CPU µs per call during the run.
async fn latency(o: &Opts, s: &Server, call: &Call, tck: f64) -> (Vec<f64>, f64) {
    let mut clients = Vec::new();
    for _ in 0..o.connections {
        clients.push(connect(s.addr).await);
    }
    for _ in 0..200 {
        one(&mut clients[0], call).await.expect("warm-up call");
    }
    let n = (o.rate * o.latency_secs).round() as usize;
    let every = Duration::from_secs_f64(1.0 / o.rate);
    let cpu0 = cpu_secs(s.child.id(), tck);
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        tokio::time::sleep_until(start + every * i as u32).await;
        let mut c = clients[i % clients.len()].clone();
        let call = call.clone();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            one(&mut c, &call).await.map(|()| sent.elapsed().as_secs_f64() * 1e6)
        }));
    }
    let mut lat = Vec::with_capacity(n);
    for t in tasks {
        lat.push(t.await.expect("task").unwrap_or_else(|e| panic!("{} answered {e}", s.name)));
    }
    let cpu = (cpu_secs(s.child.id(), tck) - cpu0) * 1e6 / n as f64;
    (lat, cpu)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    pct(&s, 0.5)
}

fn range(v: &[f64]) -> (f64, f64) {
    (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

#[derive(Default)]
struct Acc {
    sat: Vec<Sat>,
    lat: Vec<f64>,
    p99s: Vec<f64>,
    low_cpu: Vec<f64>,
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_default();
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .map_or(0, |c| c.lines().filter(|l| l.starts_with("processor")).count());
    format!("{n} cores ({cpu})")
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Instructions (callgrind `Ir`, user space, all threads) a server process executes for
/// `n` calls of `rpc` after start-up and 200 warm-up calls: SIGINT ends it cleanly so
/// callgrind writes its totals.
fn callgrind_run(o: &Opts, which: &str, rpc: &str, body: &Path, n: u64, dir: &Path, responses: &Path) -> u64 {
    let out = dir.join(format!("callgrind.{which}.{rpc}.{n}"));
    let log = dir.join(format!("{which}.{rpc}.{n}.log"));
    let mut s = match which {
        "engine" => start_engine_with(o, &log, Some(&out)),
        "plain" => start_plain_with(o, responses, &log, Some(&out)),
        _ => start_noop_with(o, responses, &log, Some(&out)),
    };
    h2load(o, s.addr, rpc, body, 200);
    let pid = s.child.id().to_string();
    let on = Command::new("callgrind_control")
        .args(["-i", "on", &pid])
        .stdout(Stdio::null())
        .status()
        .expect("running callgrind_control (valgrind)");
    assert!(on.success(), "callgrind_control -i on {pid} failed");
    if n > 0 {
        h2load(o, s.addr, rpc, body, n);
    }
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let deadline = Instant::now() + Duration::from_secs(120);
    while s.child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "{which} did not exit after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&out).expect("callgrind output");
    text.lines()
        .find_map(|l| l.strip_prefix("summary: ").or_else(|| l.strip_prefix("totals: ")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no totals in {}", out.display()))
}

fn callgrind_table(o: &Opts, (n1, n2): (u64, u64), bodies: &BTreeMap<&str, PathBuf>, responses: &Path, dir: &Path) {
    println!(
        "Instructions per call (callgrind, whole server process, collected from the end of 200 warm-up calls: (Ir of {n2} calls + exit − Ir of {n1} calls + exit) / {}):",
        n2 - n1
    );
    println!();
    println!(
        "| RPC | engine Ir/call | engine-transport no-op Ir/call | plain tonic Ir/call | transport (no-op − plain) | handler + audit record (engine − no-op) | transport share of a no-op call |"
    );
    println!("|---|---|---|---|---|---|---|");
    for rpc in &o.rpcs {
        let per = |which: &str| {
            let a = callgrind_run(o, which, rpc, &bodies[rpc.as_str()], n1, dir, responses);
            let b = callgrind_run(o, which, rpc, &bodies[rpc.as_str()], n2, dir, responses);
            (b as f64 - a as f64) / (n2 - n1) as f64
        };
        let (e, n, p) = (per("engine"), per("no-op"), per("plain"));
        println!("| {rpc} | {e:.0} | {n:.0} | {p:.0} | {:.0} | {:.0} | {:.1} % |", n - p, e - n, 100.0 * (n - p) / n);
    }
    println!();
    println!("callgrind files: {} (callgrind_annotate --inclusive=yes FILE)", dir.display());
}

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--serve-noop") {
        serve_noop(Path::new(&args.next().unwrap_or_else(|| usage())));
        return;
    }
    let o = opts();
    let tck: f64 = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100.0);
    let dir = tempfile::tempdir().expect("temp dir");
    let engine_log = o.log.clone().unwrap_or_else(|| dir.path().join("engine.log"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");

    let engine = start_engine(&o, &engine_log);
    let (calls, canned) = rt.block_on(async { fixtures(&mut connect(engine.addr).await).await });
    let responses = dir.path().join("responses.bin");
    write_responses(&responses, &canned);
    let noop = start_noop(&o, &responses, &dir.path().join("noop.log"));
    let plain = start_plain_with(&o, &responses, &dir.path().join("plain.log"), None);

    // Each request as a gRPC message (uncompressed flag, length, protobuf) for h2load, and a
    // check that both servers answer it OK through a real client.
    let mut bodies = BTreeMap::new();
    rt.block_on(async {
        let (mut e, mut n, mut p) = (connect(engine.addr).await, connect(noop.addr).await, connect(plain.addr).await);
        for (rpc, call) in &calls {
            one(&mut e, call).await.unwrap_or_else(|s| panic!("engine {rpc}: {s}"));
            one(&mut n, call).await.unwrap_or_else(|s| panic!("no-op {rpc}: {s}"));
            one(&mut p, call).await.unwrap_or_else(|s| panic!("plain {rpc}: {s}"));
            let msg = call.encoded();
            let mut body = vec![0u8];
            body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            body.extend_from_slice(&msg);
            let path = dir.path().join(format!("{rpc}.bin"));
            std::fs::write(&path, body).expect("write body");
            bodies.insert(*rpc, path);
        }
    });
    // With --out, the fixtures stay for profiling by hand: `RPC.bin` is h2load's `-d` body,
    // `responses.bin` the plain server's and the no-op's argument.
    if let Some(out) = &o.out {
        std::fs::create_dir_all(out).expect("--out DIR");
        std::fs::copy(&responses, out.join("responses.bin")).expect("copy responses.bin");
        for (rpc, body) in &bodies {
            std::fs::copy(body, out.join(format!("{rpc}.bin"))).expect("copy a request body");
        }
    }

    if let Some(ns) = o.callgrind {
        let keep = o.out.clone().unwrap_or_else(|| dir.path().to_path_buf());
        drop(noop);
        drop(plain);
        drop(engine);
        callgrind_table(&o, ns, &bodies, &responses, &keep);
        if o.out.is_none() {
            eprintln!("(pass --out DIR to keep the callgrind files)");
        }
        return;
    }
    let autogroup = std::fs::read_to_string("/proc/self/autogroup").unwrap_or_default();
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!(
        "# gRPC benchmark: engine (`{}`) vs plain tonic (`{}`: tonic's defaults and codec), and the engine-transport no-op",
        o.engine.display(),
        o.plain.display()
    );
    println!(
        "machine: {}; commit {commit}; server core {}, h2load core {}; scheduling {}; load average at start {}",
        machine(),
        o.server_cpu,
        o.client_cpu,
        autogroup.trim(),
        loadavg()
    );
    println!(
        "h2load -c {} -m {} -n {} (after {} warm-up calls) per measurement; latency: {} calls/s open loop for {} s over {} connections; {} alternating rounds; engine env {:?} args {:?}",
        o.connections,
        o.streams,
        o.calls,
        o.warmup,
        o.rate,
        o.latency_secs,
        o.connections,
        o.rounds,
        o.engine_env,
        o.engine_args
    );
    println!();

    let mut acc: BTreeMap<(&str, &str), Acc> = BTreeMap::new();
    for round in 0..o.rounds {
        for (k, rpc) in o.rpcs.iter().enumerate() {
            let rpc: &str = RPCS.iter().find(|r| **r == rpc.as_str()).unwrap();
            let servers = [&engine, &plain, &noop];
            let first = (round + k) % servers.len();
            let order: Vec<&Server> = (0..servers.len()).map(|i| servers[(first + i) % servers.len()]).collect();
            for s in order {
                let sat = saturate(&o, s, rpc, &bodies[rpc], tck);
                let (mut lat, low_cpu) = rt.block_on(latency(&o, s, &calls[rpc], tck));
                lat.sort_by(f64::total_cmp);
                eprintln!(
                    "round {round} {rpc:<10} {:<6} {:>8.0} calls/s {:>6.1} CPU µs/call ({:.2} log thread) | p50 {:>6.0} µs p99 {:>6.0} µs at {} calls/s ({:.1} CPU µs/call) | load {}",
                    s.name,
                    sat.calls_per_s,
                    sat.cpu_us_per_call,
                    sat.log_thread_us_per_call,
                    pct(&lat, 0.5),
                    pct(&lat, 0.99),
                    o.rate,
                    low_cpu,
                    loadavg()
                );
                let a = acc.entry((rpc, s.name)).or_default();
                a.p99s.push(pct(&lat, 0.99));
                a.lat.extend(lat);
                a.sat.push(sat);
                a.low_cpu.push(low_cpu);
            }
        }
    }
    for a in acc.values_mut() {
        a.lat.sort_by(f64::total_cmp);
    }

    println!("load average at end {}", loadavg());
    println!();
    println!(
        "| RPC | throughput engine/plain, median [range] | no-op/plain, median [range] | engine / plain / no-op calls/s | CPU µs/call engine / plain / no-op | of which transport (no-op − plain) | handler + audit record (engine − no-op) | p50 / p99 µs engine | p50 / p99 µs plain | engine diagnostic log bytes/call | engine log writer thread µs/call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut round_cpu = 0.0;
    let mut round_complete = true;
    for rpc in RPCS {
        let (Some(e), Some(p), Some(n)) =
            (acc.get(&(rpc, "engine")), acc.get(&(rpc, "plain")), acc.get(&(rpc, "no-op")))
        else {
            if rpc != "GetRules" {
                round_complete = false;
            }
            continue;
        };
        let ratio = |a: &Acc| -> (f64, f64, f64) {
            let r: Vec<f64> = a.sat.iter().zip(&p.sat).map(|(x, y)| x.calls_per_s / y.calls_per_s).collect();
            let (lo, hi) = range(&r);
            (median(&r), lo, hi)
        };
        let (em, elo, ehi) = ratio(e);
        let (nm, nlo, nhi) = ratio(n);
        let f = |v: &Acc, g: fn(&Sat) -> f64| median(&v.sat.iter().map(g).collect::<Vec<_>>());
        let (ecpu, pcpu, ncpu) =
            (f(e, |s| s.cpu_us_per_call), f(p, |s| s.cpu_us_per_call), f(n, |s| s.cpu_us_per_call));
        if rpc != "GetRules" {
            round_cpu += ecpu;
        }
        println!(
            "| {rpc} | **{em:.2}** [{elo:.2}–{ehi:.2}] | {nm:.2} [{nlo:.2}–{nhi:.2}] | {:.0} / {:.0} / {:.0} | {ecpu:.1} / {pcpu:.1} / {ncpu:.1} | {:.1} | {:.1} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} | {:.2} |",
            f(e, |s| s.calls_per_s),
            f(p, |s| s.calls_per_s),
            f(n, |s| s.calls_per_s),
            ncpu - pcpu,
            ecpu - ncpu,
            pct(&e.lat, 0.5),
            pct(&e.lat, 0.99),
            pct(&p.lat, 0.5),
            pct(&p.lat, 0.99),
            f(e, |s| s.log_bytes_per_call),
            f(e, |s| s.log_thread_us_per_call),
        );
    }
    println!();
    println!("At the fixed load ({} calls/s), CPU µs per call and the range of the rounds' p99 (µs):", o.rate);
    println!();
    println!(
        "| RPC | engine CPU µs/call | plain CPU µs/call | no-op CPU µs/call | engine p99 range | plain p99 range |"
    );
    println!("|---|---|---|---|---|---|");
    for rpc in RPCS {
        let (Some(e), Some(p), Some(n)) =
            (acc.get(&(rpc, "engine")), acc.get(&(rpc, "plain")), acc.get(&(rpc, "no-op")))
        else {
            continue;
        };
        let (elo, ehi) = range(&e.p99s);
        let (plo, phi) = range(&p.p99s);
        println!(
            "| {rpc} | {:.1} | {:.1} | {:.1} | {elo:.0}–{ehi:.0} | {plo:.0}–{phi:.0} |",
            median(&e.low_cpu),
            median(&p.low_cpu),
            median(&n.low_cpu)
        );
    }
    println!();
    let ((ersss, ehwm), (prss, phwm), (nrss, nhwm)) =
        (rss_kib(engine.child.id()), rss_kib(plain.child.id()), rss_kib(noop.child.id()));
    println!(
        "RSS at the end: engine {ersss} KiB (peak {ehwm} KiB), plain {prss} KiB (peak {phwm} KiB), no-op {nrss} KiB (peak {nhwm} KiB)"
    );
    if round_complete {
        println!(
            "**Headline: {round_cpu:.1} CPU µs per round (CommitSeed + StartRound + Decide + Settle, at saturation) = {:.0} rounds per core-second.**",
            1e6 / round_cpu
        );
    }
}
