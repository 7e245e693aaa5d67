//! The two ways a test runs a server: [`TestServer`], in this process on 127.0.0.1:0 (built
//! exactly as the binary builds it), and [`ServerProcess`], the real binary as a child.

use std::net::SocketAddr;
use std::time::Duration;

use reddog::game::Table;
use reddog::service::{Application, KeyRingSource, Settings};
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
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), reddog::service::ServeError>>,
}

/// Settings for a test server: 127.0.0.1:0, the ring given as JSON, default limits.
pub fn settings(ring: &str) -> Settings {
    Settings::local(KeyRingSource::json(ring))
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
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run(async {
            let _ = rx.await;
        }));
        TestServer { addr, stop: Some(tx), task }
    }

    pub async fn start(ring: &str, ttl: Duration) -> TestServer {
        let mut s = settings(ring);
        s.commitment_ttl = ttl;
        Self::spawn(s).await
    }

    pub async fn start_with(ring: &str, ttl: Duration, table: Table) -> TestServer {
        Self::start_tables(ring, ttl, reddog::service::tables::Tables::single(table)).await
    }

    /// A server with several named tables.
    pub async fn start_tables(ring: &str, ttl: Duration, tables: reddog::service::tables::Tables) -> TestServer {
        let mut s = settings(ring);
        s.commitment_ttl = ttl;
        s.tables = Some(tables);
        Self::spawn(s).await
    }

    pub async fn client(&self) -> TestClient {
        TestClient::connect(self.addr).await
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

/// A `reddog serve` child process on 127.0.0.1:0.
pub struct ServerProcess {
    pub child: std::process::Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts the real binary with `env` added, waits (bounded) for its `listening on` line.
    pub fn spawn(env: &[(&str, &str)], stderr: std::process::Stdio) -> ServerProcess {
        use std::io::BufRead;
        let mut cmd = std::process::Command::new(reddog_binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("REDDOG_KEY_RING_FILE")
            .stdout(std::process::Stdio::piped())
            .stderr(stderr);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn reddog");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    let _ = tx.send(addr.parse::<SocketAddr>().unwrap());
                }
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(60)).expect("the server printed `listening on ADDR`");
        ServerProcess { child, addr }
    }

    pub fn kill(mut self) {
        let _ = self.child.kill(); // SIGKILL
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait (bounded) for a clean exit. Async so the test's own runtime keeps
    /// running (and closes its client connections) meanwhile.
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = self.child.kill();
        panic!("the server did not exit within 10 s of SIGTERM");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
