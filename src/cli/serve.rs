//! `reddog serve` (also what `reddog` with no arguments runs): parses the configuration from
//! flags and `REDDOG_*` environment variables and runs [`reddog::service::run`] until SIGTERM
//! or SIGINT.
//!
//! At startup it prints to stdout, one line each, exactly:
//! `listening on <ip:port>` (the bound gRPC address) and `metrics on <ip:port>` (the bound
//! metrics address; Prometheus text at `/metrics`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use reddog::game::Table;
use reddog::service::tables::Tables;
use reddog::service::telemetry::{self, LogFormat};
use reddog::service::{EngineConfig, KeyRing, ServerConfig};
use tracing::{info, warn};

/// Log format choice for `--log-format`.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub enum LogFormatArg {
    #[default]
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// gRPC listen address, IP:PORT or HOST:PORT (e.g. localhost:50051; port 0 for any free port).
    #[arg(long, env = "REDDOG_LISTEN", default_value = "127.0.0.1:50051", value_parser = listen_addr)]
    pub listen: SocketAddr,
    /// Prometheus metrics listen address (text format at /metrics), IP:PORT or HOST:PORT.
    #[arg(long, env = "REDDOG_METRICS_LISTEN", default_value = "127.0.0.1:9464", value_parser = listen_addr)]
    pub metrics_listen: SocketAddr,
    /// Path to the key ring JSON: {"primary":"k1","keys":{"k1":"<64 hex>",...}}.
    #[arg(long, env = "REDDOG_KEY_RING_FILE")]
    pub key_ring_file: Option<PathBuf>,
    /// The key ring JSON inline (for tests and development).
    #[arg(long, env = "REDDOG_KEY_RING", hide_env_values = true)]
    pub key_ring: Option<String>,
    /// Path to the table JSON: one table (decks, min_bet, max_bet, paytable, currency,
    /// minor_unit_exponent; all optional) or {"tables": {"<id>": {...}, ...}}.
    #[arg(long, env = "REDDOG_TABLE_CONFIG")]
    pub table_config: Option<PathBuf>,
    /// How long a commitment from CommitSeed stays usable, in seconds.
    #[arg(long, env = "REDDOG_COMMITMENT_TTL_SECS", default_value_t = 600)]
    pub commitment_ttl_secs: u64,
    /// Longest wait for in-flight calls on shutdown, in seconds.
    #[arg(long, env = "REDDOG_DRAIN_TIMEOUT_SECS", default_value_t = 20)]
    pub drain_timeout_secs: u64,
    /// Log line format; the level comes from RUST_LOG (default info).
    #[arg(long, env = "REDDOG_LOG_FORMAT", value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
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

impl Default for ServeArgs {
    fn default() -> Self {
        use clap::FromArgMatches;
        let matches = <ServeArgs as clap::Args>::augment_args(clap::Command::new("serve")).get_matches_from(["serve"]);
        ServeArgs::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

fn load_ring(args: &ServeArgs) -> anyhow::Result<KeyRing> {
    if args.key_ring_file.is_some() && args.key_ring.is_some() {
        // Name both sources, the environment variables included: a variable set elsewhere
        // (a shell profile, a pod spec) is the usual surprise.
        anyhow::bail!(
            "two key rings given: --key-ring-file (or REDDOG_KEY_RING_FILE) and --key-ring (or the environment \
             variable REDDOG_KEY_RING) are both set; keep one (unset REDDOG_KEY_RING to use the file)"
        );
    }
    let text = match (&args.key_ring_file, &args.key_ring) {
        (Some(path), _) => {
            std::fs::read_to_string(path).with_context(|| format!("reading the key ring file {}", path.display()))?
        }
        (None, Some(inline)) => inline.clone(),
        (None, None) => return Ok(KeyRing::development()?),
    };
    Ok(KeyRing::from_json(&text)?)
}

fn load_tables(args: &ServeArgs) -> anyhow::Result<Tables> {
    let Some(path) = &args.table_config else { return Ok(Tables::single(Table::default())) };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the table config {}", path.display()))?;
    Tables::from_json(&text).with_context(|| format!("the table config {}", path.display()))
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
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve(args))
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let format = match args.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    let telemetry = telemetry::init(format).map_err(|e| anyhow::anyhow!("starting logs and traces: {e}"))?;
    let key_ring = load_ring(&args)?;
    if key_ring.is_development() {
        warn!(
            "NO KEY RING CONFIGURED: using a fresh random development key ring. Tokens from this process \
             will NOT be accepted after a restart or by any other replica, so rounds in flight will not \
             survive. Set --key-ring-file / REDDOG_KEY_RING_FILE (see `reddog keygen`) in production."
        );
    } else {
        info!(primary = key_ring.primary_id(), keys = ?key_ring.ids().collect::<Vec<_>>(), "key ring loaded");
    }
    let tables = load_tables(&args)?;
    let listener =
        tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let bound = listener.local_addr()?;
    let metrics = reddog::service::metrics::spawn(args.metrics_listen)
        .await
        .with_context(|| format!("binding the metrics listener {}", args.metrics_listen))?;
    let shutdown = shutdown_signal().context("installing the SIGTERM / SIGINT handlers")?;
    info!(
        tables = %tables.iter().map(|t| format!("{}({} decks, {}..={} {})", t.id, t.table.decks().get(),
            t.table.limits().min().0, t.table.limits().max().0, t.currency.code())).collect::<Vec<_>>().join(" "),
        otlp = telemetry.otlp_enabled(),
        "listening on {bound}"
    );
    println!("listening on {bound}");
    if let Some(m) = metrics {
        info!("metrics on {m}");
        println!("metrics on {m}");
    }
    let config = ServerConfig {
        engine: EngineConfig { tables, key_ring, commitment_ttl: Duration::from_secs(args.commitment_ttl_secs) },
        drain_timeout: Duration::from_secs(args.drain_timeout_secs),
    };
    let result = reddog::service::run(listener, config, shutdown).await;
    telemetry.shutdown();
    result.map_err(Into::into)
}
