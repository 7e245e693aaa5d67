//! `reddog serve` (also what `reddog` with no arguments runs): flags and `REDDOG_*`
//! environment variables → [`Settings`] → [`Application::build`] → [`Application::run`] until
//! SIGTERM or SIGINT. SIGHUP reloads the TLS certificates.
//!
//! At startup it prints to stdout, one line each, exactly:
//! `listening on <ip:port>` (the bound gRPC address) and `metrics on <ip:port>` (the bound
//! metrics address; Prometheus text at `/metrics`), then `health on <ip:port>` when a
//! health-only listener is configured. The audit trail goes to stdout too unless
//! `--audit-log PATH` names a file (one JSON record a line; docs/AUDIT.md); diagnostics go
//! to stderr.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use reddog::service::{Application, AuditOutput, AuditSettings, KeyRingSource, Settings, TlsSettings, TransportLimits};
use reddog::service::{LogFormat, MetricsRegistry, init_telemetry};
use tracing::{info, warn};

/// Log format choice for `--log-format`.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub enum LogFormatArg {
    #[default]
    Text,
    Json,
}

/// The environment variable that may hold the key ring JSON itself (there is no flag: a
/// command line shows in `ps`).
pub const KEY_RING_ENV: &str = "REDDOG_KEY_RING";

#[derive(Debug, clap::Args)]
#[command(after_help = "Key ring: --key-ring-file / REDDOG_KEY_RING_FILE (a path), or the JSON itself in the \
environment variable REDDOG_KEY_RING (development and tests; never a command-line flag). Neither: a throw-away \
development ring. See docs/OPERATIONS.md.")]
pub struct ServeArgs {
    /// gRPC listen address, IP:PORT or HOST:PORT (e.g. localhost:50051; port 0 for any free port).
    #[arg(long, env = "REDDOG_LISTEN", default_value = "127.0.0.1:50051", value_parser = listen_addr)]
    pub listen: SocketAddr,
    /// Prometheus metrics listen address (text format at /metrics), IP:PORT or HOST:PORT.
    #[arg(long, env = "REDDOG_METRICS_LISTEN", default_value = "127.0.0.1:9464", value_parser = listen_addr)]
    pub metrics_listen: SocketAddr,
    /// A listener serving only gRPC health, for the probes (IP:PORT or HOST:PORT; unset: none).
    /// RedDog clients' connections and calls never count against it.
    #[arg(long, env = "REDDOG_HEALTH_LISTEN", value_parser = listen_addr)]
    pub health_listen: Option<SocketAddr>,
    /// Path to the key ring JSON: {"primary":"k1","keys":{"k1":"<64 hex>",...}}.
    #[arg(long, env = "REDDOG_KEY_RING_FILE")]
    pub key_ring_file: Option<PathBuf>,
    /// Path to the table JSON: one table (decks, min_bet, max_bet, paytable, currency,
    /// minor_unit_exponent; all optional) or {"tables": {"<id>": {...}, ...}}.
    #[arg(long, env = "REDDOG_TABLE_CONFIG")]
    pub table_config: Option<PathBuf>,
    /// `certified-rules.json` from `reddog certify --out`: refuse to start when a table's
    /// rules digest is not certified for it, or when the file certifies another binary.
    #[arg(long, env = "REDDOG_CERTIFIED_RULES", value_name = "FILE")]
    pub certified_rules: Option<PathBuf>,
    /// Serve a --certified-rules file that names another binary's SHA-256 (its tables must
    /// still match): the pod reports itself uncertified (reddog_binary_certified 0, a warning).
    #[arg(long, env = "REDDOG_ALLOW_UNCERTIFIED_BINARY", requires = "certified_rules",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_uncertified_binary: bool,
    /// How long a commitment from CommitSeed stays usable, in seconds (1..=86400).
    #[arg(long, env = "REDDOG_COMMITMENT_TTL_SECS", default_value_t = 600)]
    pub commitment_ttl_secs: u64,
    /// Longest wait for in-flight calls on shutdown, in seconds (1..=3600).
    #[arg(long, env = "REDDOG_DRAIN_TIMEOUT_SECS", default_value_t = 20)]
    pub drain_timeout_secs: u64,
    /// Where the audit trail is written: a file (appended to) or `-` for standard output. No
    /// log level changes what is written there (docs/AUDIT.md).
    #[arg(long, env = "REDDOG_AUDIT_LOG", default_value = "-")]
    pub audit_log: PathBuf,
    /// This replica's id in every audit record (default: $POD_NAME, else the host name).
    #[arg(long, env = "REDDOG_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// Seconds between the audit trail's checkpoint records (1..=86400), while records are written.
    #[arg(long, env = "REDDOG_AUDIT_CHECKPOINT_SECS", default_value_t = 60)]
    pub audit_checkpoint_secs: u64,
    /// A checkpoint record also after this many round records (0..=1000000000; 0: by time only).
    #[arg(long, env = "REDDOG_AUDIT_CHECKPOINT_RECORDS", default_value_t = reddog::service::DEFAULT_CHECKPOINT_RECORDS)]
    pub audit_checkpoint_records: u64,
    /// fsync the audit trail file after each batch, before its calls are answered (needs
    /// --audit-log FILE). Without it a call is answered once write(2) has taken its record.
    #[arg(long, env = "REDDOG_AUDIT_SYNC", value_parser = clap::builder::BoolishValueParser::new())]
    pub audit_sync: bool,
    /// Threads that serve calls (0..=1024); 0 = one per CPU the process may use (its
    /// affinity mask and cgroup CPU quota). With one, tokio's current-thread scheduler.
    #[arg(long, env = "REDDOG_WORKER_THREADS", default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub worker_threads: u16,
    /// Diagnostic log format (stderr); the level comes from RUST_LOG (default info).
    #[arg(long, env = "REDDOG_LOG_FORMAT", value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
    /// HTTP/2 concurrent streams allowed per connection.
    #[arg(long, env = "REDDOG_MAX_CONCURRENT_STREAMS", default_value_t = TransportLimits::default().max_concurrent_streams_per_connection)]
    pub max_concurrent_streams: u32,
    /// Streams a connection may make the server reset before it is closed (h2's local-reset guard).
    #[arg(long, env = "REDDOG_MAX_LOCAL_ERROR_RESETS", default_value_t = TransportLimits::default().max_local_error_resets)]
    pub max_local_error_resets: usize,
    /// RedDog calls holding a slot (request message arrived, answer not yet sent) across all
    /// connections; more are answered RESOURCE_EXHAUSTED.
    #[arg(long, env = "REDDOG_MAX_IN_FLIGHT", default_value_t = TransportLimits::default().max_in_flight)]
    pub max_in_flight: usize,
    /// Slots of --max-in-flight one connection may hold; its calls beyond are answered RESOURCE_EXHAUSTED.
    #[arg(long, env = "REDDOG_MAX_IN_FLIGHT_PER_CONNECTION", default_value_t = TransportLimits::default().max_in_flight_per_connection)]
    pub max_in_flight_per_connection: usize,
    /// Longest wait of a RedDog call in the server for a worker thread, in milliseconds; a
    /// call that would wait (or waited) longer is answered RESOURCE_EXHAUSTED at once.
    #[arg(long, env = "REDDOG_MAX_QUEUE_WAIT_MS", default_value_t = millis(TransportLimits::default().max_queue_wait))]
    pub max_queue_wait_ms: u64,
    /// Request bytes held for calls whose message is still arriving, across all connections;
    /// a call that would pass it is answered RESOURCE_EXHAUSTED.
    #[arg(long, env = "REDDOG_MAX_PENDING_REQUEST_BYTES", default_value_t = TransportLimits::default().max_pending_request_bytes)]
    pub max_pending_request_bytes: usize,
    /// Longest RedDog call, request body included, in milliseconds (DEADLINE_EXCEEDED after).
    #[arg(long, env = "REDDOG_REQUEST_TIMEOUT_MS", default_value_t = millis(TransportLimits::default().request_timeout))]
    pub request_timeout_ms: u64,
    /// Time from accept to the HTTP/2 preface (TLS handshake included), in milliseconds.
    #[arg(long, env = "REDDOG_HANDSHAKE_TIMEOUT_MS", default_value_t = millis(TransportLimits::default().handshake_timeout))]
    pub handshake_timeout_ms: u64,
    /// Connections in their handshake at once; more are closed at accept.
    #[arg(long, env = "REDDOG_MAX_PENDING_HANDSHAKES", default_value_t = TransportLimits::default().max_pending_handshakes)]
    pub max_pending_handshakes: usize,
    /// Connections past the handshake, at most; a new one at the cap closes one of the peer
    /// holding the most, or the longest-idle one of its own peer (idle for a second at
    /// least), or retires (GOAWAY) its peer's busiest one, or is closed itself.
    #[arg(long, env = "REDDOG_MAX_CONNECTIONS", default_value_t = TransportLimits::default().max_connections)]
    pub max_connections: usize,
    /// A connection without a call in progress for this long is closed, in seconds.
    #[arg(long, env = "REDDOG_IDLE_TIMEOUT_SECS", default_value_t = TransportLimits::default().idle_timeout.as_secs())]
    pub idle_timeout_secs: u64,
    /// Interval of HTTP/2 keep-alive PINGs, in seconds.
    #[arg(long, env = "REDDOG_KEEPALIVE_INTERVAL_SECS", default_value_t = TransportLimits::default().keepalive_interval.as_secs())]
    pub keepalive_interval_secs: u64,
    /// Server certificate chain (PEM); with --tls-key turns TLS on.
    #[arg(long, env = "REDDOG_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Server private key (PEM).
    #[arg(long, env = "REDDOG_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// CA bundle (PEM) client certificates must chain to: requires client certificates (mTLS).
    #[arg(long, env = "REDDOG_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// How often the TLS files are checked for changes, in seconds (SIGHUP reloads at once).
    #[arg(long, env = "REDDOG_TLS_RELOAD_POLL_SECS", default_value_t = 10)]
    pub tls_reload_poll_secs: u64,
    /// Serve tables marked "sandbox": true (requested deals for integration tests, never fair
    /// rounds). A flag only, no environment variable: never set it in production.
    #[arg(long)]
    pub allow_sandbox: bool,
    /// Start even when the key ring file or the TLS private key is readable or writable by
    /// others (mode o+r or o+w): development only, logged as an error at every start.
    #[arg(long, env = "REDDOG_ALLOW_INSECURE_KEY_FILES", value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_insecure_key_files: bool,
}

const fn millis(d: Duration) -> u64 {
    d.as_secs() * 1000 + d.subsec_millis() as u64
}

/// A listen address: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT` (the host name resolved once,
/// at start-up; the first IPv4 address wins, so `localhost` means 127.0.0.1).
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if text.rsplit_once(':').is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err()) {
        return Err(format!(
            "{text:?} is not an address: give IP:PORT or HOST:PORT, e.g. 127.0.0.1:50051 or localhost:50051"
        ));
    }
    let addrs: Vec<SocketAddr> =
        text.to_socket_addrs().map_err(|e| format!("cannot resolve the host name in {text:?}: {e}"))?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("the host name in {text:?} resolves to no address"))
}

/// Refuses a key ring file or TLS private key that others may read or write (mode o+r or
/// o+w): anyone on the host could unseal every round token or impersonate the server. Group
/// bits are accepted: the shipped Deployment mounts the ring 0440 with the pod's `fsGroup`.
/// With `allow` (development) each such file is logged as an error instead.
fn check_key_files(args: &ServeArgs) -> anyhow::Result<()> {
    let files = [("key ring file", &args.key_ring_file), ("TLS private key", &args.tls_key)];
    for (what, path) in files.into_iter().filter_map(|(what, p)| Some((what, p.as_ref()?))) {
        let Some(mode) = others_mode(path) else { continue };
        if allow_insecure(args.allow_insecure_key_files, what, path, mode) {
            continue;
        }
        anyhow::bail!(
            "refusing to start: the {what} {} has mode {mode:04o}, readable or writable by every user of this \
             host; make it 0600 (chmod 600 {0}), or 0640/0440 for a group-shared mount (Kubernetes: defaultMode \
             0440 with the pod's fsGroup). --allow-insecure-key-files (REDDOG_ALLOW_INSECURE_KEY_FILES=1) \
             starts anyway, for development only",
            path.display()
        );
    }
    Ok(())
}

/// The file's permission bits when others may read or write it (`None` otherwise, or when it
/// cannot be read: the loader reports that).
fn others_mode(path: &std::path::Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
        (mode & 0o006 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// With `allow`, logs the insecure file as an error and returns true.
fn allow_insecure(allow: bool, what: &str, path: &std::path::Path, mode: u32) -> bool {
    if allow {
        tracing::error!(
            path = %path.display(),
            mode = format!("{mode:04o}"),
            "INSECURE: the {what} is readable or writable by every user of this host, allowed by \
             --allow-insecure-key-files; never run so in production"
        );
    }
    allow
}

/// Flags and environment → settings (validated later by `Application::build`), recording
/// into `metrics`.
fn settings(args: &ServeArgs, metrics: MetricsRegistry) -> anyhow::Result<Settings> {
    let inline = std::env::var(KEY_RING_ENV).ok().filter(|s| !s.trim().is_empty());
    let key_ring = match (&args.key_ring_file, inline) {
        // Name both sources: a variable set elsewhere (a shell profile, a pod spec) is the usual
        // surprise.
        (Some(_), Some(_)) => anyhow::bail!(
            "two key rings given: --key-ring-file (or REDDOG_KEY_RING_FILE) and the environment variable \
             {KEY_RING_ENV} are both set; keep one (unset {KEY_RING_ENV} to use the file)"
        ),
        (Some(path), None) => KeyRingSource::File(path.clone()),
        (None, Some(json)) => KeyRingSource::Json(json.into()),
        (None, None) => KeyRingSource::Development,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsSettings {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls_client_ca.clone(),
            reload_poll: Duration::from_secs(args.tls_reload_poll_secs),
        }),
        _ => None,
    };
    Ok(Settings {
        listen: args.listen,
        metrics_listen: Some(args.metrics_listen),
        health_listen: args.health_listen,
        key_ring,
        table_config: args.table_config.clone(),
        tables: None,
        certified_rules: args.certified_rules.clone(),
        allow_uncertified_binary: args.allow_uncertified_binary,
        commitment_ttl: Duration::from_secs(args.commitment_ttl_secs),
        drain_timeout: Duration::from_secs(args.drain_timeout_secs),
        limits: TransportLimits {
            max_concurrent_streams_per_connection: args.max_concurrent_streams,
            max_local_error_resets: args.max_local_error_resets,
            request_timeout: Duration::from_millis(args.request_timeout_ms),
            max_in_flight: args.max_in_flight,
            max_in_flight_per_connection: args.max_in_flight_per_connection,
            max_queue_wait: Duration::from_millis(args.max_queue_wait_ms),
            max_pending_request_bytes: args.max_pending_request_bytes,
            handshake_timeout: Duration::from_millis(args.handshake_timeout_ms),
            max_pending_handshakes: args.max_pending_handshakes,
            max_connections: args.max_connections,
            idle_timeout: Duration::from_secs(args.idle_timeout_secs),
            keepalive_interval: Duration::from_secs(args.keepalive_interval_secs),
        },
        tls,
        reload_on_sighup: true,
        audit: AuditSettings {
            output: if args.audit_log.as_os_str() == "-" {
                AuditOutput::Stdout
            } else {
                AuditOutput::File(args.audit_log.clone())
            },
            replica_id: args.replica_id.clone().unwrap_or_else(reddog::service::default_replica_id),
            checkpoint_interval: Duration::from_secs(args.audit_checkpoint_secs),
            checkpoint_records: args.audit_checkpoint_records,
            sync: args.audit_sync,
        },
        allow_sandbox: args.allow_sandbox,
        clock: reddog::service::Clock::system(),
        metrics,
    })
}

/// The shutdown signal: SIGTERM or SIGINT. The handlers are registered when this is called,
/// not when the future is first polled, so a signal that arrives right after the `listening
/// on` line is a graceful shutdown rather than the default action (termination).
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = term.recv() => info!("SIGTERM received"),
                _ = int.recv() => info!("SIGINT received"),
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let runtime = reddog::service::runtime(usize::from(args.worker_threads))?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let format = match args.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    // The process's one registry: the log writer counts its waits in it, the application
    // everything else, and `/metrics` shows it.
    let metrics = MetricsRegistry::new();
    let telemetry = init_telemetry(format, &metrics).map_err(|e| anyhow::anyhow!("starting logs and traces: {e}"))?;
    check_key_files(&args)?;
    let app = Application::build(settings(&args, metrics)?).await?;
    let ring = &app.engine().key_ring;
    if ring.is_development() {
        warn!(
            "NO KEY RING CONFIGURED: using a fresh random development key ring. Tokens from this process \
             will NOT be accepted after a restart or by any other replica, so rounds in flight will not \
             survive. Set --key-ring-file / REDDOG_KEY_RING_FILE (see `reddog keygen`) in production."
        );
    } else {
        info!(primary = ring.primary_id(), keys = ?ring.ids().collect::<Vec<_>>(), "key ring loaded");
    }
    let shutdown = shutdown_signal().context("installing the SIGTERM / SIGINT handlers")?;
    let tables = &app.engine().tables;
    for t in tables.iter() {
        let (rtp_exact, rtp_decimal, _) = reddog::service::rtp(&t.table);
        info!(
            table = %t.id,
            rules_digest = %t.digest(),
            rtp_exact,
            rtp_decimal,
            certified = app.certified(),
            "table rules"
        );
    }
    let bound = app.local_addr();
    info!(
        tables = %tables.iter().map(|t| format!("{}({} decks, {}..={} {})", t.id, t.table.decks().get(),
            t.table.limits().min().0, t.table.limits().max().0, t.currency.code())).collect::<Vec<_>>().join(" "),
        otlp = telemetry.otlp_enabled(),
        tls = app.tls().is_some(),
        worker_threads = reddog::service::worker_threads(usize::from(args.worker_threads)),
        "listening on {bound}"
    );
    println!("listening on {bound}");
    if let Some(m) = app.metrics_addr() {
        info!("metrics on {m}");
        println!("metrics on {m}");
    }
    if let Some(h) = app.health_addr() {
        info!("health on {h}");
        println!("health on {h}");
    }
    let result = app.run(shutdown).await;
    telemetry.shutdown();
    result.map_err(Into::into)
}
