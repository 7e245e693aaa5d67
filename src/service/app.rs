//! The server as one value: [`Settings`] (everything `reddog serve` configures, validated
//! before anything binds), and [`Application`], which owns the bound listeners and runs until
//! a shutdown future resolves. The binary and the in-process integration tests build the
//! server the same way: `Application::build(settings)?.run(shutdown)`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use zeroize::Zeroizing;

use crate::error::EngineError;
use crate::game::Table;
pub use crate::service::edge::limits::TransportLimits;
use crate::service::edge::tls::{TlsFiles, TlsReloader};
use crate::service::evidence::audit_sink::{
    AuditOptions, AuditSink, CheckpointSigner, DEFAULT_CHECKPOINT_RECORDS, Tail,
};
use crate::service::evidence::audit_writer::Plain;
use crate::service::ops::metrics::MetricsRegistry;
use crate::service::round::api::{Clock, EngineConfig};
use crate::service::round::token::KeyRing;
use crate::service::rules::tables::Tables;
use crate::service::server::{self, ServeError};

/// The smallest `max_pending_request_bytes`: one largest request and its gRPC prefix.
const MIN_PENDING_REQUEST_BYTES: usize = server::MAX_REQUEST_BYTES + 5;

/// Shortest wait for the audit trail's last batch at shutdown: the flush gets what is left
/// of the drain timeout after the drain, and at least this, so SIGTERM exits within the drain
/// timeout and half a second whatever the output does (docs/OPERATIONS.md).
const AUDIT_FLUSH_MIN: Duration = Duration::from_millis(500);

/// Where the key ring comes from. Never from a command-line argument (it would show in `ps`).
pub enum KeyRingSource {
    /// A JSON file (in Kubernetes: the mounted Secret).
    File(PathBuf),
    /// The JSON text itself (the `REDDOG_KEY_RING` environment variable; tests). Zeroed on drop.
    Json(Zeroizing<String>),
    /// A fresh random ring whose tokens die with the process (development only).
    Development,
}

impl std::fmt::Debug for KeyRingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyRingSource::File(p) => f.debug_tuple("File").field(p).finish(),
            KeyRingSource::Json(_) => f.write_str("Json(<redacted>)"),
            KeyRingSource::Development => f.write_str("Development"),
        }
    }
}

impl KeyRingSource {
    /// The ring as JSON text from a string (owned copy, zeroed on drop).
    pub fn json(text: &str) -> KeyRingSource {
        KeyRingSource::Json(Zeroizing::new(text.to_string()))
    }

    /// Reads and validates the ring. Errors name the problem and never contain key text.
    pub fn load(&self) -> Result<KeyRing, SettingsError> {
        let ring = match self {
            KeyRingSource::File(path) => {
                let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| SettingsError::Invalid {
                    setting: "key ring file",
                    reason: format!("cannot read {}: {e}", path.display()),
                })?);
                KeyRing::from_json(&text)
            }
            KeyRingSource::Json(text) => KeyRing::from_json(text),
            KeyRingSource::Development => KeyRing::development(),
        };
        ring.map_err(SettingsError::KeyRing)
    }
}

/// Where the audit trail goes (`reddog serve --audit-log`).
pub enum AuditOutput {
    /// Standard output (`-`, the default).
    Stdout,
    /// A file, appended to (created if missing): each run's chain follows the last.
    File(PathBuf),
    /// Any writer (embedding and tests).
    Writer(Box<dyn std::io::Write + Send>),
}

impl std::fmt::Debug for AuditOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditOutput::Stdout => f.write_str("Stdout"),
            AuditOutput::File(p) => f.debug_tuple("File").field(p).finish(),
            AuditOutput::Writer(_) => f.write_str("Writer"),
        }
    }
}

/// The audit trail's settings (docs/AUDIT.md, "The sink").
#[derive(Debug)]
pub struct AuditSettings {
    pub output: AuditOutput,
    /// The replica id every record carries ([`crate::ids::check_replica_id`]).
    pub replica_id: String,
    /// How often a checkpoint record is written while records are written (1 s .. 1 day
    /// from the command line; at least 10 ms here, for tests).
    pub checkpoint_interval: Duration,
    /// A checkpoint after this many round records (0: by time only; at most 10⁹).
    pub checkpoint_records: u64,
    /// `fsync` each batch before its calls are answered (`--audit-sync`; a file only).
    pub sync: bool,
}

impl AuditSettings {
    /// To a writer, replica `local`, checkpoints every 60 s (tests and embedding).
    pub fn to_writer(out: impl std::io::Write + Send + 'static) -> AuditSettings {
        AuditSettings {
            output: AuditOutput::Writer(Box::new(out)),
            replica_id: "local".to_string(),
            checkpoint_interval: Duration::from_secs(60),
            checkpoint_records: DEFAULT_CHECKPOINT_RECORDS,
            sync: false,
        }
    }

    /// Opens the output and starts the sink's writer (`audit_started` is written when the
    /// server starts serving), counting in `metrics`.
    /// Checkpoints are signed with `signer`, the key ring's signing key, when it has one.
    fn start(
        self,
        signer: Option<Arc<dyn CheckpointSigner>>,
        metrics: MetricsRegistry,
    ) -> Result<AuditSink, SettingsError> {
        let options = AuditOptions {
            replica: self.replica_id,
            checkpoint_interval: self.checkpoint_interval,
            checkpoint_records: self.checkpoint_records,
            signer,
            metrics,
        };
        Ok(match self.output {
            // Standard output unbuffered (a duplicate of fd 1 as a file): "written" means the
            // pipe or file took the bytes, not that Rust's line buffer did.
            AuditOutput::Stdout => match stdout_file() {
                Ok(file) => AuditSink::on_output(Box::new(Plain(file)), options, false, Tail::default()),
                Err(_) => AuditSink::new(std::io::stdout(), options),
            },
            AuditOutput::File(path) => {
                let (out, tail) = crate::service::evidence::audit_sink::open_file(&path, self.sync).map_err(|e| {
                    SettingsError::Invalid {
                        setting: "audit-log",
                        reason: format!("cannot open {}: {e}", path.display()),
                    }
                })?;
                AuditSink::on_output(out, options, self.sync, tail)
            }
            AuditOutput::Writer(w) => AuditSink::new(w, options),
        })
    }
}

/// Standard output as an unbuffered file (a duplicate of its descriptor).
fn stdout_file() -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?))
    }
    #[cfg(not(unix))]
    {
        Err(std::io::Error::other("not on this platform"))
    }
}

/// TLS: the server's certificate chain and key (PEM); with `client_ca`, clients must present a
/// certificate issued by one of those CAs (mutual TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
    /// How often the files are checked for changes (they are also reloaded on SIGHUP).
    pub reload_poll: Duration,
}

/// Everything `reddog serve` configures. [`Settings::validate`] (called by
/// [`Application::build`]) refuses nonsense with a message naming the setting.
#[derive(Debug)]
pub struct Settings {
    /// gRPC listen address (port 0: any free port).
    pub listen: SocketAddr,
    /// Prometheus metrics listen address; `None`: no metrics listener.
    pub metrics_listen: Option<SocketAddr>,
    /// A listener serving only `grpc.health.v1.Health` (the probes' port: no RedDog call and
    /// no RedDog client's connection counts against it); `None`: none. Health is served on
    /// `listen` too.
    pub health_listen: Option<SocketAddr>,
    pub key_ring: KeyRingSource,
    /// Path of the table JSON (one table, or `{"tables": {...}}`); `None`: the built-in table.
    pub table_config: Option<PathBuf>,
    /// The tables themselves (embedding, tests); when set, `table_config` must be `None`.
    pub tables: Option<Tables>,
    /// `certified-rules.json` ([`crate::service::rules::certified`]): every table's digest must be in it,
    /// and its binary digest must be this executable's.
    pub certified_rules: Option<PathBuf>,
    /// Start although `certified_rules` names another binary (`--allow-uncertified-binary`):
    /// the pod then reports itself uncertified (`reddog_binary_certified 0`, a warning).
    pub allow_uncertified_binary: bool,
    /// How long a commitment from CommitSeed stays usable (1 s .. 1 day).
    pub commitment_ttl: Duration,
    /// Upper bound on graceful shutdown (1 s .. 1 h).
    pub drain_timeout: Duration,
    pub limits: TransportLimits,
    pub tls: Option<TlsSettings>,
    /// Reload the TLS files on SIGHUP (the binary; tests reload through [`Application::tls`]).
    pub reload_on_sighup: bool,
    /// The audit trail.
    pub audit: AuditSettings,
    /// Serve tables marked `"sandbox": true` (`--allow-sandbox`); without it such a table
    /// stops the start-up (see [`crate::service::round::sandbox`]).
    pub allow_sandbox: bool,
    /// The wall clock commitments expire by: [`Clock::system`]; tests set their own.
    pub clock: Clock,
    /// The application's metrics registry (see [`crate::service::ops::metrics`]): everything the
    /// application records goes here and its `/metrics` listener shows it. The binary creates
    /// it first, to count its log writer's waits in it too; [`Settings::local`] makes a new
    /// one.
    pub metrics: MetricsRegistry,
}

/// Binds `what` on `addr`.
async fn bind(what: &'static str, addr: SocketAddr) -> Result<TcpListener, SettingsError> {
    TcpListener::bind(addr).await.map_err(|source| SettingsError::Bind { what, addr, source })
}

/// Serves `/metrics` of `metrics` on `addr`, if given; the bound address.
async fn spawn_metrics_listener(
    addr: Option<SocketAddr>,
    metrics: &MetricsRegistry,
) -> Result<Option<SocketAddr>, SettingsError> {
    let Some(addr) = addr else { return Ok(None) };
    let bound = crate::service::edge::metrics_http::spawn(addr, metrics.clone()).await;
    Ok(Some(bound.map_err(|source| SettingsError::Bind { what: "the metrics listener", addr, source })?))
}

/// Binds `what` on `addr`, if given.
async fn bind_if_given(what: &'static str, addr: Option<SocketAddr>) -> Result<Option<TcpListener>, SettingsError> {
    match addr {
        Some(addr) => Ok(Some(bind(what, addr).await?)),
        None => Ok(None),
    }
}

/// A setting refused, and why.
fn invalid(setting: &'static str, reason: String) -> Result<(), SettingsError> {
    Err(SettingsError::Invalid { setting, reason })
}

/// A duration in seconds, for a message.
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The transport's per-connection counts and call slots: streams, resets, slots.
fn check_limits(l: &TransportLimits) -> Result<(), SettingsError> {
    if !(1..=10_000).contains(&l.max_concurrent_streams_per_connection) {
        return invalid(
            "max-concurrent-streams",
            format!("{}: must be 1..=10000", l.max_concurrent_streams_per_connection),
        );
    }
    if !(1..=100_000).contains(&l.max_local_error_resets) {
        return invalid("max-local-error-resets", format!("{}: must be 1..=100000", l.max_local_error_resets));
    }
    if !(1..=100_000).contains(&l.max_in_flight) {
        return invalid("max-in-flight", format!("{}: must be 1..=100000", l.max_in_flight));
    }
    if !(1..=100_000).contains(&l.max_in_flight_per_connection) {
        return invalid(
            "max-in-flight-per-connection",
            format!("{}: must be 1..=100000", l.max_in_flight_per_connection),
        );
    }
    if l.max_in_flight_per_connection > l.max_in_flight {
        return invalid(
            "max-in-flight-per-connection",
            format!(
                "{}: larger than --max-in-flight {} (a connection's share of the slots is at most all of them)",
                l.max_in_flight_per_connection, l.max_in_flight
            ),
        );
    }
    Ok(())
}

/// What the transport holds at once: pending request bytes, connections and handshakes.
fn check_capacity(l: &TransportLimits) -> Result<(), SettingsError> {
    if !(MIN_PENDING_REQUEST_BYTES..=1 << 30).contains(&l.max_pending_request_bytes) {
        return invalid(
            "max-pending-request-bytes",
            format!(
                "{}: must be {MIN_PENDING_REQUEST_BYTES}..=1073741824 (at least one largest request)",
                l.max_pending_request_bytes
            ),
        );
    }
    if !(1..=1_000_000).contains(&l.max_connections) {
        return invalid("max-connections", format!("{}: must be 1..=1000000", l.max_connections));
    }
    if !(1..=1_000_000).contains(&l.max_pending_handshakes) {
        return invalid("max-pending-handshakes", format!("{}: must be 1..=1000000", l.max_pending_handshakes));
    }
    Ok(())
}

/// The transport's deadlines: positive, and at most 10 minutes (a call's) or a day.
fn check_timeouts(l: &TransportLimits) -> Result<(), SettingsError> {
    for (setting, value, max) in [
        ("request-timeout-ms", l.request_timeout, Duration::from_secs(600)),
        ("max-queue-wait-ms", l.max_queue_wait, Duration::from_secs(600)),
        ("handshake-timeout-ms", l.handshake_timeout, Duration::from_secs(600)),
        ("idle-timeout-secs", l.idle_timeout, Duration::from_secs(86_400)),
        ("keepalive-interval-secs", l.keepalive_interval, Duration::from_secs(86_400)),
    ] {
        if value < Duration::from_millis(1) || value > max {
            return invalid(setting, format!("{} s: must be positive and at most {} s", secs(value), secs(max)));
        }
    }
    Ok(())
}

/// The audit trail's checkpoints, sync and replica id.
fn check_audit(a: &AuditSettings) -> Result<(), SettingsError> {
    if a.checkpoint_interval < Duration::from_millis(10) || a.checkpoint_interval > Duration::from_secs(86_400) {
        return invalid("audit-checkpoint-secs", format!("{} s: must be 1..=86400", secs(a.checkpoint_interval)));
    }
    if a.checkpoint_records > 1_000_000_000 {
        return invalid("audit-checkpoint-records", format!("{}: must be 0..=1000000000", a.checkpoint_records));
    }
    if a.sync && !matches!(a.output, AuditOutput::File(_)) {
        return invalid(
            "audit-sync",
            "needs --audit-log FILE: standard output is a pipe or terminal, there is nothing to fsync".into(),
        );
    }
    if crate::ids::check_replica_id(&a.replica_id).is_err() {
        return invalid(
            "replica-id",
            format!(
                "{:?}: must be 1..={} printable ASCII characters without spaces",
                a.replica_id,
                crate::ids::MAX_REPLICA_ID_BYTES
            ),
        );
    }
    Ok(())
}

impl Settings {
    /// Settings for a server on `127.0.0.1:0` with the given ring, no metrics listener and
    /// default limits (tests and embedding).
    pub fn local(key_ring: KeyRingSource) -> Settings {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_listen: None,
            health_listen: None,
            key_ring,
            table_config: None,
            tables: None,
            certified_rules: None,
            allow_uncertified_binary: false,
            commitment_ttl: Duration::from_secs(600),
            drain_timeout: Duration::from_secs(20),
            limits: TransportLimits::default(),
            tls: None,
            reload_on_sighup: false,
            audit: AuditSettings::to_writer(std::io::sink()),
            allow_sandbox: false,
            clock: Clock::system(),
            metrics: MetricsRegistry::new(),
        }
    }

    /// Checks every setting that needs no file: ranges, and combinations.
    pub fn validate(&self) -> Result<(), SettingsError> {
        self.check_lifetimes()?;
        self.check_listeners()?;
        check_limits(&self.limits)?;
        check_capacity(&self.limits)?;
        check_timeouts(&self.limits)?;
        if let Some(tls) = &self.tls
            && tls.reload_poll < Duration::from_millis(10)
        {
            return invalid("tls reload poll", "must be at least 10 ms".to_string());
        }
        check_audit(&self.audit)
    }

    /// The commitment lifetime and the drain timeout.
    fn check_lifetimes(&self) -> Result<(), SettingsError> {
        if self.commitment_ttl < Duration::from_secs(1) || self.commitment_ttl > Duration::from_secs(86_400) {
            return invalid(
                "commitment-ttl-secs",
                format!(
                    "{} s: must be 1..=86400 (0 would make every commitment expire before StartRound)",
                    secs(self.commitment_ttl)
                ),
            );
        }
        if self.drain_timeout < Duration::from_secs(1) || self.drain_timeout > Duration::from_secs(3600) {
            return invalid("drain-timeout-secs", format!("{} s: must be 1..=3600", secs(self.drain_timeout)));
        }
        Ok(())
    }

    /// No two listeners on one address (port 0 picks a free port, so never clashes).
    fn check_listeners(&self) -> Result<(), SettingsError> {
        if let Some(m) = self.metrics_listen
            && m.port() != 0
            && m.port() == self.listen.port()
            && (m.ip() == self.listen.ip() || m.ip().is_unspecified() || self.listen.ip().is_unspecified())
        {
            return invalid("metrics-listen", format!("{m} is the gRPC listen address too"));
        }
        if let Some(h) = self.health_listen
            && h.port() != 0
            && [Some(self.listen), self.metrics_listen].into_iter().flatten().any(|o| {
                o.port() == h.port() && (o.ip() == h.ip() || o.ip().is_unspecified() || h.ip().is_unspecified())
            })
        {
            return invalid("health-listen", format!("{h} is another listener's address too"));
        }
        Ok(())
    }

    /// The certified rules checked against `tables` and this binary, with
    /// `--certified-rules`; `NotChecked` without.
    fn load_certified(&self, tables: &Tables) -> Result<crate::service::rules::certified::Certified, SettingsError> {
        match &self.certified_rules {
            Some(path) => crate::service::rules::certified::load(path, tables, self.allow_uncertified_binary)
                .map_err(|reason| SettingsError::Invalid { setting: "certified-rules", reason }),
            None => Ok(crate::service::rules::certified::Certified::NotChecked),
        }
    }

    /// Refuses sandbox tables unless `--allow-sandbox` is given.
    fn refuse_sandbox_without_flag(&self, tables: &Tables) -> Result<(), SettingsError> {
        crate::service::round::sandbox::refuse_without_flag(tables, self.allow_sandbox)
            .map_err(|reason| SettingsError::Invalid { setting: "table-config", reason })
    }

    /// The TLS files read, when TLS is on.
    fn load_tls(&self) -> Result<Option<TlsReloader>, SettingsError> {
        let Some(t) = &self.tls else { return Ok(None) };
        let files = TlsFiles { cert: t.cert.clone(), key: t.key.clone(), client_ca: t.client_ca.clone() };
        Ok(Some(TlsReloader::load(files).map_err(SettingsError::Tls)?.with_poll(t.reload_poll)))
    }

    fn load_tables(&self) -> Result<Tables, SettingsError> {
        let path = match (&self.tables, &self.table_config) {
            (Some(_), Some(_)) => {
                return Err(SettingsError::Invalid {
                    setting: "table-config",
                    reason: "both tables and a table file are given".into(),
                });
            }
            (Some(tables), None) => return Ok(tables.clone()),
            (None, None) => return Ok(Tables::single(Table::default())),
            (None, Some(path)) => path,
        };
        let bad = |reason: String| SettingsError::Invalid { setting: "table-config", reason };
        let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
        Tables::from_json(&text).map_err(|e| bad(format!("{}: {e}", path.display())))
    }
}

/// Why the server cannot start. The text names the setting or file at fault and never
/// contains key material.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("--{setting}: {reason}")]
    Invalid { setting: &'static str, reason: String },
    #[error("key ring: {0}")]
    KeyRing(EngineError),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot bind {what} {addr}: {source}")]
    Bind { what: &'static str, addr: SocketAddr, source: std::io::Error },
}

/// A built server: settings validated, key ring and table loaded, TLS files read and the
/// listeners bound (so [`Application::local_addr`] is known before [`Application::run`]).
pub struct Application {
    listener: TcpListener,
    health_listener: Option<TcpListener>,
    metrics_addr: Option<SocketAddr>,
    engine: EngineConfig,
    drain_timeout: Duration,
    limits: TransportLimits,
    tls: Option<TlsReloader>,
    reload_on_sighup: bool,
    audit: AuditSink,
    /// Every table checked against certified rules naming this binary.
    certified: bool,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("listen", &self.listener.local_addr().ok())
            .field("metrics", &self.metrics_addr)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Application {
    /// Validates `settings`, loads the key ring, table and TLS files, and binds the gRPC and
    /// metrics listeners. Must run inside a tokio runtime.
    pub async fn build(settings: Settings) -> Result<Application, SettingsError> {
        settings.validate()?;
        let key_ring = settings.key_ring.load()?;
        let tables = settings.load_tables()?;
        settings.refuse_sandbox_without_flag(&tables)?;
        let certified = settings.load_certified(&tables)? == crate::service::rules::certified::Certified::Yes;
        let tls = settings.load_tls()?;
        let listener = bind("the gRPC listener", settings.listen).await?;
        let health_listener = bind_if_given("the health listener", settings.health_listen).await?;
        // This application's registry: everything below records into it, its `/metrics` shows
        // it (no process-wide recorder: see `metrics`' docs).
        let metrics = settings.metrics;
        let metrics_addr = spawn_metrics_listener(settings.metrics_listen, &metrics).await?;
        metrics.rules_certified(&tables, certified);
        let signer = key_ring.signer().map(|s| Arc::clone(s) as Arc<dyn CheckpointSigner>);
        let audit = settings.audit.start(signer, metrics.clone())?;
        // Its histograms are drained every few seconds even if nothing scrapes them; the task
        // ends with the registry.
        metrics.spawn_upkeep();
        Ok(Application {
            listener,
            health_listener,
            metrics_addr,
            engine: EngineConfig {
                tables,
                key_ring,
                commitment_ttl: settings.commitment_ttl,
                audit: audit.clone(),
                clock: settings.clock.clone(),
                metrics,
            },
            audit,
            drain_timeout: settings.drain_timeout,
            limits: settings.limits,
            tls,
            reload_on_sighup: settings.reload_on_sighup,
            certified,
        })
    }

    /// `true` when every table was checked at start-up against `--certified-rules` naming
    /// this binary (as `reddog_binary_certified` says).
    pub fn certified(&self) -> bool {
        self.certified
    }

    /// The bound gRPC address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound TCP listener has a local address")
    }

    /// The bound health-only address (`None` without a health listener).
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The bound metrics address (`None` without a metrics listener).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The application's metrics registry: what its `/metrics` listener shows.
    pub fn metrics(&self) -> &MetricsRegistry {
        &self.engine.metrics
    }

    /// The engine configuration (table, ring, commitment lifetime).
    pub fn engine(&self) -> &EngineConfig {
        &self.engine
    }

    /// The TLS reloader, when TLS is on: [`TlsReloader::reload`] re-reads the files now.
    pub fn tls(&self) -> Option<&TlsReloader> {
        self.tls.as_ref()
    }

    /// The audit sink (its replica and run ids; tests flush it).
    pub fn audit(&self) -> &AuditSink {
        &self.audit
    }

    /// Writes the audit trail's `audit_started`, serves until `shutdown` resolves, then
    /// drains (see [`server`]), writes `audit_stopped`, flushes the trail and returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let audit = self.audit.clone();
        // Refused only by an output that already failed: every call is then refused too
        // (UNAVAILABLE, counted), which the metrics and the missing record 0 show.
        if let Err(why) = audit.begin(&self.engine.tables) {
            tracing::error!(cause = %why, "the audit trail cannot be written");
        }
        let upkeep = audit.spawn_upkeep();
        let drain_ends = Arc::new(std::sync::OnceLock::new());
        let signalled = drain_ends.clone();
        let drain_timeout = self.drain_timeout;
        let shutdown = async move {
            shutdown.await;
            let _ = signalled.set(std::time::Instant::now() + drain_timeout);
        };
        let result = server::serve(
            self.listener,
            server::ServerParts {
                health_listener: self.health_listener,
                engine: self.engine,
                drain_timeout: self.drain_timeout,
                limits: self.limits,
                tls: self.tls,
                reload_on_sighup: self.reload_on_sighup,
                audit_health: Some(audit.health()),
            },
            shutdown,
        )
        .await;
        upkeep.abort();
        // Calls still open after a timed-out drain are refused from here on (UNAVAILABLE).
        let flush = drain_ends
            .get()
            .map_or(drain_timeout, |end: &std::time::Instant| end.saturating_duration_since(std::time::Instant::now()))
            .max(AUDIT_FLUSH_MIN);
        tokio::task::spawn_blocking(move || audit.stop(flush)).await.ok();
        result
    }
}
