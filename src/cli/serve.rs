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
use reddog::game::{Table, TableSpec};
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
    /// gRPC listen address (use port 0 for any free port).
    #[arg(long, env = "REDDOG_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Prometheus metrics listen address (text format at /metrics).
    #[arg(long, env = "REDDOG_METRICS_LISTEN", default_value = "127.0.0.1:9464")]
    pub metrics_listen: SocketAddr,
    /// Path to the key ring JSON: {"primary":"k1","keys":{"k1":"<64 hex>",...}}.
    #[arg(long, env = "REDDOG_KEY_RING_FILE", conflicts_with = "key_ring")]
    pub key_ring_file: Option<PathBuf>,
    /// The key ring JSON inline (for tests and development).
    #[arg(long, env = "REDDOG_KEY_RING", hide_env_values = true)]
    pub key_ring: Option<String>,
    /// Path to the table JSON (decks, min_bet, max_bet, paytable; all optional).
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

impl Default for ServeArgs {
    fn default() -> Self {
        use clap::FromArgMatches;
        let matches = <ServeArgs as clap::Args>::augment_args(clap::Command::new("serve")).get_matches_from(["serve"]);
        ServeArgs::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

fn load_ring(args: &ServeArgs) -> anyhow::Result<KeyRing> {
    let text = match (&args.key_ring_file, &args.key_ring) {
        (Some(path), _) => {
            std::fs::read_to_string(path).with_context(|| format!("reading the key ring file {}", path.display()))?
        }
        (None, Some(inline)) => inline.clone(),
        (None, None) => return Ok(KeyRing::development()?),
    };
    Ok(KeyRing::from_json(&text)?)
}

fn load_table(args: &ServeArgs) -> anyhow::Result<Table> {
    let Some(path) = &args.table_config else { return Ok(Table::default()) };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the table config {}", path.display()))?;
    let spec: TableSpec =
        serde_json::from_str(&text).with_context(|| format!("parsing the table config {}", path.display()))?;
    Ok(Table::try_from(spec)?)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => info!("SIGTERM received"),
                    _ = tokio::signal::ctrl_c() => info!("SIGINT received"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let runtime = reddog::service::server::runtime()?;
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
    let table = load_table(&args)?;
    let listener =
        tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let bound = listener.local_addr()?;
    let metrics = reddog::service::metrics::spawn(args.metrics_listen)
        .await
        .with_context(|| format!("binding the metrics listener {}", args.metrics_listen))?;
    info!(
        decks = table.decks().get(),
        min_bet = table.limits().min().0,
        max_bet = table.limits().max().0,
        otlp = telemetry.otlp_enabled(),
        "listening on {bound}"
    );
    println!("listening on {bound}");
    if let Some(m) = metrics {
        info!("metrics on {m}");
        println!("metrics on {m}");
    }
    let config = ServerConfig {
        engine: EngineConfig { table, key_ring, commitment_ttl: Duration::from_secs(args.commitment_ttl_secs) },
        drain_timeout: Duration::from_secs(args.drain_timeout_secs),
    };
    let result = reddog::service::run(listener, config, shutdown_signal()).await;
    telemetry.shutdown();
    result.map_err(Into::into)
}
