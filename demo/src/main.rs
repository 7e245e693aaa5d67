//! The `reddog-demo` binary: `serve` (default) runs the platform; `ledger` prints and checks
//! the ledger of a database file.

#![forbid(unsafe_code)]

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use reddog_demo::accounts::{AccountPolicy, TrustedProxies};
use reddog_demo::{db, engine::Engine, ledger, players, rounds::Platform, web};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "reddog-demo",
    version,
    about = "Reference platform for the Red Dog engine: wallet, ledger, limits and a table in the browser"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the platform (the default).
    Serve(ServeArgs),
    /// Print every account's balance recomputed from the ledger entries, and check the
    /// ledger's invariants; exits 1 if any fails.
    Ledger {
        /// The database file.
        #[arg(long, env = "REDDOG_DEMO_DB", default_value = "reddog-demo.sqlite")]
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args, Clone)]
struct ServeArgs {
    /// The engine's gRPC address.
    #[arg(long, env = "REDDOG_DEMO_ENGINE", default_value = "http://127.0.0.1:50051")]
    engine: String,
    /// Where the table is served (port 0 picks a free one; the bound address is printed).
    #[arg(long, env = "REDDOG_DEMO_LISTEN", default_value = "127.0.0.1:8080")]
    listen: String,
    /// The SQLite database file (created and migrated if needed).
    #[arg(long, env = "REDDOG_DEMO_DB", default_value = "reddog-demo.sqlite")]
    db: PathBuf,
    /// What a new player's wallet starts with, in minor units (100000 = 1000.00).
    #[arg(long, env = "REDDOG_DEMO_NEW_PLAYER_BALANCE", default_value_t = 100_000)]
    new_player_balance: i64,
    /// How long to wait for the engine at start.
    #[arg(long, default_value_t = 30)]
    engine_wait_secs: u64,
    /// A session unused this many minutes is ended.
    #[arg(long, env = "REDDOG_DEMO_SESSION_IDLE_MINS", default_value_t = 30)]
    session_idle_mins: i64,
    /// A session is ended this many hours after sign-in, however busy.
    #[arg(long, env = "REDDOG_DEMO_SESSION_MAX_HOURS", default_value_t = 12)]
    session_max_hours: i64,
    /// A reverse proxy (CIDR network, e.g. 10.0.0.0/8 or 127.0.0.1/32) whose X-Forwarded-For
    /// names the client the sign-in throttle counts; repeat or comma-separate for several.
    /// None by default: the header is then never read.
    #[arg(long = "trusted-proxy", env = "REDDOG_DEMO_TRUSTED_PROXIES", value_delimiter = ',', value_parser = network)]
    trusted_proxies: Vec<ipnet::IpNet>,
}

/// A network in CIDR form, or one address (a network of that address alone).
fn network(text: &str) -> Result<ipnet::IpNet, String> {
    text.trim()
        .parse::<ipnet::IpNet>()
        .or_else(|_| text.trim().parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{text:?} is neither an address nor a CIDR network (such as 10.0.0.0/8)"))
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Ledger { db, json }) => ledger_command(&db, json),
        Some(Command::Serve(args)) => serve(args),
        None => serve(cli.serve),
    }
}

fn ledger_command(path: &std::path::Path, json: bool) -> anyhow::Result<()> {
    if !path.exists() {
        bail!("no database at {}", path.display());
    }
    let conn = db::open(path).with_context(|| format!("opening {}", path.display()))?;
    let report = ledger::check(&conn)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{:<24} {:>14} {:>14} {:>8}", "account", "balance", "entries sum", "entries");
        for a in &report.accounts {
            println!("{:<24} {:>14} {:>14} {:>8}", a.name, a.balance, a.entries_sum, a.entries);
        }
        println!("transactions: {}", report.transactions);
        if report.problems.is_empty() {
            println!("ledger consistent: every transaction sums to 0, every balance equals its entries");
        }
        for p in &report.problems {
            println!("PROBLEM: {p}");
        }
    }
    if !report.problems.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

#[tokio::main]
async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let conn = db::open(&args.db).with_context(|| format!("opening {}", args.db.display()))?;
    let engine = Engine::new(&args.engine).context("engine address")?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.engine_wait_secs);
    let rules = loop {
        match engine.rules().await {
            Ok(rules) => break rules,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, engine = %args.engine, "waiting for the engine");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => bail!("the engine at {} does not answer ({e}); start it first: cargo run --release", args.engine),
        }
    };
    tracing::info!(decks = rules.decks, min = rules.min_bet, max = rules.max_bet, "engine rules");
    // The crash failpoints exist only in builds with the `crash-points` feature (the
    // recovery test's); a release build ignores the variable.
    #[cfg(feature = "crash-points")]
    let crash_at = std::env::var("REDDOG_DEMO_CRASH_AT").ok().filter(|s| !s.is_empty());
    #[cfg(not(feature = "crash-points"))]
    let crash_at = None;
    let accounts = AccountPolicy {
        session_idle_ms: args.session_idle_mins.max(1).saturating_mul(60_000),
        session_max_ms: args.session_max_hours.max(1).saturating_mul(3_600_000),
        ..AccountPolicy::default()
    };
    // Reads that need not wait for the database thread's next commit (sessions, balances,
    // history) use read-only connections of their own.
    let readers = db::Readers::open(&args.db, 4).with_context(|| format!("opening {} to read", args.db.display()))?;
    let mut platform = Platform::new(conn, engine, rules, args.new_player_balance, crash_at)?
        .with_accounts(accounts)
        .with_readers(readers);
    platform.sign_in.trust_proxies(TrustedProxies::new(args.trusted_proxies.clone()));
    let platform = Arc::new(platform);
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let _ = web::METRICS.set(recorder.handle());
    metrics::set_global_recorder(recorder).context("installing the metrics recorder")?;

    let report = platform.recover(true).await?;
    tracing::info!(
        finished = report.finished.len(),
        pending = report.pending.len(),
        expired = report.expired,
        "recovery at start"
    );
    for id in &report.finished {
        println!("recovered round {id}");
    }

    // Rounds left unfinished by an engine outage are retried in the background.
    let background = platform.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            if let Err(e) = background.recover(false).await {
                tracing::warn!(error = %e, "background recovery");
            }
            let policy = background.accounts;
            match background.db(move |c| players::sweep_sessions(c, reddog_demo::rounds::now_ms(), &policy)).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(sessions = n, "expired sessions removed"),
                Err(e) => tracing::warn!(error = %e, "session sweep"),
            }
        }
    });

    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let addr = listener.local_addr()?;
    println!("listening on http://{addr}");
    // The peer address is the sign-in throttle's client key.
    let app = web::router(platform).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, app).with_graceful_shutdown(shutdown()).await?;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
}
