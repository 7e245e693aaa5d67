//! The two ways a test runs a server: [`TestServer`], in this process on 127.0.0.1:0 (built
//! exactly as the binary builds it), and [`ServerProcess`], the real binary as a child.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use reddog::game::Table;
use reddog::service::{Application, KeyRingSource, MetricsRegistry, Settings};
use tokio::sync::oneshot;

use super::TestClient;

/// The engine binary the tests run as a process: `REDDOG_TEST_BIN` when set (e.g.
/// `target/release/reddog`: `scripts/ci.d/70-soak-faults.sh` runs the soak, fault and
/// evidence tests against the release binary), else the one Cargo built with this test.
pub fn reddog_binary() -> std::path::PathBuf {
    std::env::var_os("REDDOG_TEST_BIN")
        .map_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_reddog")), std::path::PathBuf::from)
}

/// A running in-process server, built with [`Application::build`] exactly as the binary
/// builds it (on 127.0.0.1:0, no metrics listener).
pub struct TestServer {
    pub addr: SocketAddr,
    /// Its application's metrics registry (what its `/metrics` would show).
    pub metrics: MetricsRegistry,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), reddog::service::ServeError>>,
}

/// Settings for a test server: 127.0.0.1:0, the ring given as JSON, default limits but a
/// 10 s queue bound (`--max-queue-wait-ms`): the tests in this process share its CPU, and a
/// call shed because another test hogged it is not what they test.
pub fn settings(ring: &str) -> Settings {
    let mut s = Settings::local(KeyRingSource::json(ring));
    s.limits.max_queue_wait = Duration::from_secs(10);
    s
}

impl TestServer {
    /// Builds and starts a server with `settings`; panics if they are refused.
    pub async fn spawn(settings: Settings) -> TestServer {
        let app = Application::build(settings).await.expect("Application::build");
        Self::run(app)
    }

    /// Starts an already built application.
    pub fn run(app: Application) -> TestServer {
        let addr = app.local_addr();
        let metrics = app.metrics().clone();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run(async {
            let _ = rx.await;
        }));
        TestServer { addr, metrics, stop: Some(tx), task }
    }

    pub async fn start(ring: &str, ttl: Duration) -> TestServer {
        let mut s = settings(ring);
        s.commitment_ttl = ttl;
        Self::spawn(s).await
    }

    pub async fn start_with(ring: &str, ttl: Duration, table: Table) -> TestServer {
        Self::start_tables(ring, ttl, reddog::service::Tables::single(table)).await
    }

    /// A server with several named tables.
    pub async fn start_tables(ring: &str, ttl: Duration, tables: reddog::service::Tables) -> TestServer {
        let mut s = settings(ring);
        s.commitment_ttl = ttl;
        s.tables = Some(tables);
        Self::spawn(s).await
    }

    pub async fn client(&self) -> TestClient {
        TestClient::connect(self.addr).await
    }

    /// One series of its metrics (`reddog_load_shed_total`, or with labels as rendered:
    /// `reddog_connections_closed_total{reason="tls"}`); `None` when it has no such series.
    pub fn metric(&self, series: &str) -> Option<f64> {
        self.metrics.value(series)
    }

    /// Starts the drain and waits (bounded) for the server to return.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), &mut self.task)
            .await
            .expect("the server stopped within 30 s")
            .unwrap()
            .expect("the server returned Ok");
    }
}

/// What happens to a [`ServerProcess`]'s log (its stderr).
pub enum Log {
    /// Thrown away (the server still does all its logging work).
    Discard,
    /// Kept in memory, line by line: [`ServerProcess::log_contains`], [`ServerProcess::wait_for_log`].
    Keep,
    /// Written where the test says (e.g. a file).
    To(Stdio),
}

/// Whether the test reads a [`ServerProcess`]'s stdout (where the audit trail goes): closed,
/// the reader stops after its current line and the pipe fills, as with a stalled consumer.
/// Every line read is kept ([`StdoutGate::lines`]).
#[derive(Clone, Default)]
pub struct StdoutGate(Arc<(Mutex<bool>, Condvar)>, Arc<Mutex<Vec<String>>>);

impl StdoutGate {
    /// Every line read from stdout so far.
    pub fn lines(&self) -> Vec<String> {
        self.1.lock().unwrap().clone()
    }
    pub fn set_reading(&self, reading: bool) {
        *self.0.0.lock().unwrap() = !reading;
        self.0.1.notify_all();
    }
    fn wait_open(&self) {
        let (closed, cv) = &*self.0;
        drop(cv.wait_while(closed.lock().unwrap(), |closed| *closed).unwrap());
    }
}

/// How a [`ServerProcess`] starts: `reddog serve` on `127.0.0.1:0` (gRPC and `/metrics`)
/// with an empty environment plus what the test adds.
pub struct ProcessBuilder {
    listen: String,
    wrapper: Vec<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    log: Log,
    stdout: StdoutGate,
}

impl ProcessBuilder {
    /// Runs the binary through a wrapper command, e.g. `["prlimit", "--nofile=64:64"]`.
    pub fn wrapper(mut self, command: &[&str]) -> Self {
        self.wrapper = command.iter().map(|s| s.to_string()).collect();
        self
    }
    /// Both listen addresses (default `127.0.0.1:0`).
    pub fn listen(mut self, addr: &str) -> Self {
        self.listen = addr.to_string();
        self
    }
    pub fn args<S: AsRef<OsStr>>(mut self, args: &[S]) -> Self {
        self.args.extend(args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()));
        self
    }
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }
    pub fn envs(self, env: &[(&str, &str)]) -> Self {
        env.iter().fold(self, |b, (k, v)| b.env(k, v))
    }
    pub fn log(mut self, log: Log) -> Self {
        self.log = log;
        self
    }
    /// Its stdout is read only while `gate` is open (default: always read).
    pub fn stdout_gate(mut self, gate: &StdoutGate) -> Self {
        self.stdout = gate.clone();
        self
    }

    /// `reddog serve` as configured, stdout piped.
    fn command(&self) -> Command {
        let mut cmd = match self.wrapper.split_first() {
            Some((program, rest)) => {
                let mut cmd = Command::new(program);
                cmd.args(rest).arg(reddog_binary());
                cmd
            }
            None => Command::new(reddog_binary()),
        };
        cmd.args(["serve", "--listen", &self.listen, "--metrics-listen", &self.listen])
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        cmd
    }

    /// Runs the process expecting it to refuse to start: waits (bounded: 60 s) for it to
    /// exit and returns its exit status and all it printed (stdout, then stderr). A process
    /// still running at the bound is killed and the test fails: it started instead.
    pub fn refused(self) -> (ExitStatus, String) {
        let mut child = self.command().stderr(Stdio::piped()).spawn().expect("spawn reddog serve");
        // Each pipe is read to its end, which comes when the process exits; the two texts
        // arrive on one channel, so the wait is bounded without polling.
        let (tx, rx) = std::sync::mpsc::channel();
        let pipes: [(usize, Box<dyn std::io::Read + Send>); 2] =
            [(0, Box::new(child.stdout.take().unwrap())), (1, Box::new(child.stderr.take().unwrap()))];
        for (which, mut pipe) in pipes {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                let _ = tx.send((which, text));
            });
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut texts = [String::new(), String::new()];
        for _ in 0..2 {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((which, text)) => texts[which] = text,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("reddog serve was expected to refuse to start, and was still running after 60 s");
                }
            }
        }
        let status = child.wait().expect("wait for reddog serve");
        (status, texts.concat())
    }

    /// Starts the process and waits (bounded: 60 s) for its `listening on` and `metrics on`
    /// lines.
    pub fn spawn(self) -> ServerProcess {
        let mut cmd = self.command();
        let keep = matches!(self.log, Log::Keep);
        cmd.stderr(match self.log {
            Log::Discard => Stdio::null(),
            Log::Keep => Stdio::piped(),
            Log::To(out) => out,
        });
        let mut child = cmd.spawn().expect("spawn reddog serve");
        let log = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        if keep {
            let (stderr, sink) = (child.stderr.take().unwrap(), log.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    sink.0.lock().unwrap().push(line);
                    sink.1.notify_all();
                }
            });
        }
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = self.stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                gate.wait_open();
                gate.1.lock().unwrap().push(line.clone());
                for (prefix, which) in [("listening on ", 0), ("metrics on ", 1)] {
                    if let Some(a) = line.strip_prefix(prefix) {
                        let _ = tx.send((which, a.trim().parse::<SocketAddr>().unwrap()));
                    }
                }
            }
        });
        let mut addrs = [None, None];
        let deadline = Instant::now() + Duration::from_secs(60);
        while addrs.iter().any(Option::is_none) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((which, a)) => addrs[which] = Some(a),
                Err(_) => panic!("reddog serve printed no listen lines within 60 s; log: {:?}", log.0.lock().unwrap()),
            }
        }
        ServerProcess { child, addr: addrs[0].unwrap(), metrics: addrs[1].unwrap(), log }
    }
}

/// A `reddog serve` child process (killed on drop).
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    /// Its Prometheus `/metrics` listener.
    pub metrics: SocketAddr,
    log: Arc<(Mutex<Vec<String>>, Condvar)>,
}

impl ServerProcess {
    pub fn builder() -> ProcessBuilder {
        ProcessBuilder {
            listen: "127.0.0.1:0".into(),
            wrapper: vec![],
            args: vec![],
            env: vec![],
            log: Log::Discard,
            stdout: StdoutGate::default(),
        }
    }

    /// Starts the binary with `env`, its log going to `stderr`.
    pub fn spawn(env: &[(&str, &str)], stderr: Stdio) -> ServerProcess {
        Self::builder().envs(env).log(Log::To(stderr)).spawn()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `kill -SIG` (e.g. `"TERM"`, `"HUP"`).
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill").args([&format!("-{sig}"), &self.pid().to_string()]).status().unwrap().success();
        assert!(ok, "kill -{sig} {}", self.pid());
    }

    /// SIGKILL, and reap.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process has exited (without waiting).
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits (bounded, without blocking the runtime) for the process to exit.
    pub async fn wait_exit(&mut self, bound: Duration) -> ExitStatus {
        let child = &mut self.child;
        let mut status = None;
        super::eventually(bound, "the server process exited", || {
            status = child.try_wait().unwrap();
            status.is_some()
        })
        .await;
        status.unwrap()
    }

    /// SIGTERM, then wait (bounded: 10 s) for the exit. Async so the test's own runtime keeps
    /// running (and closes its client connections) meanwhile.
    pub async fn terminate(mut self) -> ExitStatus {
        self.signal("TERM");
        self.wait_exit(Duration::from_secs(10)).await
    }

    /// One series of its `/metrics` (e.g. `reddog_rpc_in_flight`), `None` while unreachable.
    pub async fn scrape(&self, series: &str) -> Option<f64> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut conn = tokio::net::TcpStream::connect(self.metrics).await.ok()?;
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await.ok()?;
        let mut body = String::new();
        conn.read_to_string(&mut body).await.ok()?;
        body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// Waits (bounded) until `/metrics` shows `series` at `at_least` or more.
    pub async fn wait_for_metric(&self, series: &str, at_least: f64, bound: Duration) {
        let this = self;
        super::eventually_async(bound, &format!("{series} >= {at_least}"), || async move {
            this.scrape(series).await.is_some_and(|v| v >= at_least)
        })
        .await;
    }

    /// The log lines so far ([`Log::Keep`]).
    pub fn log_lines(&self) -> Vec<String> {
        self.log.0.lock().unwrap().clone()
    }

    pub fn log_contains(&self, text: &str) -> bool {
        self.log.0.lock().unwrap().iter().any(|l| l.contains(text))
    }

    /// Blocks (bounded) until a log line contains `text` ([`Log::Keep`]); woken by each line.
    pub fn wait_for_log(&self, text: &str, bound: Duration) {
        let (lines, wake) = &*self.log;
        let (lines, timeout) =
            wake.wait_timeout_while(lines.lock().unwrap(), bound, |l| !l.iter().any(|l| l.contains(text))).unwrap();
        assert!(!timeout.timed_out(), "no log line with {text:?} within {bound:?}: {:?}", *lines);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
