//! The Prometheus endpoint: `GET /metrics` answers the text format over HTTP/1.1 (with
//! keep-alive), `GET /` a pointer, anything else 404; the payout monitor's sums; and the
//! money sums of each `Application` in a process apart.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use reddog::service::{Application, Settings, proto};

use crate::common::{TestClient, TestServer, req, ring_a, settings};

/// Sends `request` and reads one response: (status line, body).
fn exchange(stream: &mut std::net::TcpStream, request: &str) -> (String, String) {
    stream.write_all(request.as_bytes()).unwrap();
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).unwrap();
    (status.trim_end().to_string(), String::from_utf8(body).unwrap())
}

#[tokio::test]
async fn metrics_endpoint_serves_the_text_format_and_404s_the_rest() {
    let (srv, addr) = with_metrics(settings(&ring_a())).await;
    let result = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let get = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        // Two requests on one connection: keep-alive works.
        let metrics = exchange(&mut s, &get("/metrics"));
        let root = exchange(&mut s, &get("/"));
        let missing = exchange(&mut s, &get("/nope"));
        let post = exchange(&mut s, "POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
        (metrics, root, missing, post)
    })
    .await
    .unwrap();
    let (metrics, root, missing, post) = result;
    assert_eq!(metrics.0, "HTTP/1.1 200 OK");
    // Handles registered by the service show at 0 from the start.
    assert!(metrics.1.contains("reddog_rpc_requests_total{method=\"Decide\",code=\"OK\"} 0\n"), "{}", metrics.1);
    assert!(metrics.1.contains("# TYPE process_cpu_seconds_total counter\n"), "{}", metrics.1);
    assert_eq!(root.0, "HTTP/1.1 200 OK");
    assert!(root.1.contains("/metrics"));
    assert_eq!(missing.0, "HTTP/1.1 404 Not Found");
    assert_eq!(post.0, "HTTP/1.1 404 Not Found");
    srv.stop().await;
}

/// The payout monitor: after rounds at a table of its own (two decks, an unusual paytable),
/// the exported expected return is exactly the sum of each round's expectation computed
/// from its Settle answer (the first two cards, every seat's stake), and the variance sum
/// likewise.
#[tokio::test]
async fn the_expected_return_counter_is_the_exact_sum_over_the_settled_rounds() {
    use reddog::game::{Decks, HandClass, Money, Paytable, Rank};
    use reddog::odds::{Exact, decimal, round_expectation};

    const TABLE: &str = "payout-monitor";
    let config = r#"{"tables":{"payout-monitor":{"decks":2,"min_bet":1,"max_bet":1000,
        "paytable":{"spread":[6,4,2,1,1,1,1,1,1,1,1],"three_of_a_kind":10}}}}"#;
    let paytable = Paytable::new([6, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], 10).unwrap();
    let mut s = settings(&ring_a());
    s.tables = Some(reddog::service::Tables::from_json(config).unwrap());
    let (srv, metrics) = with_metrics(s).await;
    let mut c = srv.client().await;
    let (mut expected, mut variance, mut classes) = (Exact::from(0), 0.0f64, std::collections::BTreeSet::new());
    for i in 0..60u64 {
        let id = format!("pm-{i}");
        let commit = c.commit_seed(req::commit_seed().round(&id).nonce(i).table(TABLE)).await.unwrap();
        let start = req::start_round(commit.commitment_token).round(&id).nonce(i).client_seed("payout monitor");
        let started = c.start_round(start.bets(&[7, 100]).limits(1, 1000).table(TABLE)).await.unwrap();
        let mut token = started.round_token;
        if started.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            // The first seat raises, the second stands by default.
            token = c.decide(req::decide(token).raise(0).round(&id)).await.unwrap().round_token;
        }
        let settled = c.settle(req::settle(token).round(id)).await.unwrap();
        let view = settled.round.unwrap();
        let rank = |card: Option<proto::Card>| Rank::new(card.unwrap().rank as u8).unwrap();
        let class = HandClass::of_ranks(rank(view.first_card), rank(view.second_card));
        classes.insert(class.name());
        let law =
            round_expectation(Decks::new(2).unwrap(), class, &paytable, settled.results.iter().map(|r| Money(r.stake)))
                .unwrap();
        expected += law.expected();
        variance += law.variance_f64();
    }
    assert!(classes.contains("non_consecutive"), "rounds with a raise were played: {classes:?}");
    let text = scrape(metrics).await;
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}{{table=\"{TABLE}\"}} ")))
            .unwrap_or_else(|| panic!("{name} for {TABLE} in:\n{text}"))
            .to_string()
    };
    assert_eq!(value("reddog_expected_returned_minor_units_total"), decimal(&expected, 6));
    let exported: f64 = value("reddog_returned_variance_minor_units_squared_total").parse().unwrap();
    assert!((exported - variance).abs() <= 1e-9 * variance, "{exported} vs {variance}");
    srv.stop().await;
}

/// Builds and starts an application with its own metrics listener on 127.0.0.1:0; returns
/// the server and the listener's address.
async fn with_metrics(mut s: Settings) -> (TestServer, SocketAddr) {
    s.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    let app = Application::build(s).await.unwrap();
    let metrics = app.metrics_addr().expect("the metrics listener");
    (TestServer::run(app), metrics)
}

/// The `/metrics` page at `addr`.
async fn scrape(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await.unwrap();
    let mut page = String::new();
    conn.read_to_string(&mut page).await.unwrap();
    page
}

/// The exact staked and returned totals of table `default` on the `/metrics` page at `addr`.
async fn money_totals(addr: SocketAddr) -> (u128, u128) {
    let page = scrape(addr).await;
    let value = |name: &str| -> u128 {
        let prefix = format!("{name}{{table=\"default\"}} ");
        page.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{prefix} in:\n{page}"))
            .parse()
            .unwrap()
    };
    (value("reddog_staked_minor_units_total"), value("reddog_returned_minor_units_total"))
}

/// What [`play`] played: the staked and returned totals its Settle answers gave, rounds,
/// seats settled, and the rounds that took a Decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Played {
    staked: u128,
    returned: u128,
    rounds: u64,
    seats: u64,
    decided: u64,
}

/// Plays `rounds` rounds with `bets` at the default table (seat 0 raises when it may).
async fn play(c: &mut TestClient, prefix: &str, bets: &[u64], rounds: u64) -> Played {
    let mut p = Played::default();
    for i in 0..rounds {
        let id = format!("{prefix}-{i}");
        let commit = c.commit_seed(req::commit_seed().round(&id).nonce(i)).await.unwrap();
        let started =
            c.start_round(req::start_round(commit.commitment_token).round(&id).nonce(i).bets(bets)).await.unwrap();
        let mut token = started.round_token;
        if started.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            token = c.decide(req::decide(token).raise(0).round(&id)).await.unwrap().round_token;
            p.decided += 1;
        }
        let settled = c.settle(req::settle(token).round(id)).await.unwrap();
        p.staked += u128::from(settled.total_staked);
        p.returned += u128::from(settled.total_returned);
        p.seats += settled.results.len() as u64;
        p.rounds += 1;
    }
    p
}

/// The sum of every series of `family` on a `/metrics` page (0 when it has none).
fn family_sum(page: &str, family: &str) -> f64 {
    page.lines()
        .filter(|l| l.strip_prefix(family).is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' ')))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
        .sum()
}

/// The counts one application's page must show after it played `p` (and nothing else):
/// every RPC, round, seat, seal and audit record, each family summed over its series.
fn expected_counts(p: Played) -> Vec<(String, f64)> {
    let n = p.rounds as f64;
    let ok = |method: &str| format!("reddog_rpc_requests_total{{method=\"{method}\",code=\"OK\"}}");
    let took = |method: &str| format!("reddog_rpc_duration_seconds_count{{method=\"{method}\"}}");
    vec![
        (ok("CommitSeed"), n),
        (ok("StartRound"), n),
        (ok("Decide"), p.decided as f64),
        (ok("Settle"), n),
        (took("CommitSeed"), n),
        (took("Settle"), n),
        ("reddog_rpc_requests_total".to_string(), 3.0 * n + p.decided as f64),
        ("reddog_rounds_started_total".to_string(), n),
        ("reddog_rounds_settled_total".to_string(), n),
        ("reddog_seats_settled_total".to_string(), p.seats as f64),
        // CommitSeed, StartRound and Decide each seal a token.
        ("reddog_token_seals_total".to_string(), 2.0 * n + p.decided as f64),
        // audit_started, then one record per CommitSeed, StartRound, Decide and Settle.
        ("reddog_audit_records_total".to_string(), 1.0 + 3.0 * n + p.decided as f64),
    ]
}

/// Checks `page` against [`expected_counts`]`(p)`: `who` names the application.
fn assert_counts(page: &str, p: Played, who: &str) -> usize {
    let want = expected_counts(p);
    for (series, value) in &want {
        let got = if series.contains('{') {
            page.lines().find_map(|l| l.strip_prefix(series.as_str())?.trim().parse::<f64>().ok()).unwrap_or(0.0)
        } else {
            family_sum(page, series)
        };
        assert_eq!(got, *value, "{who}: {series}");
    }
    want.len()
}

/// Two `Application`s in one process, each with its own registry and `/metrics`: rounds
/// played on one leave every count of the other at zero (RPCs, latencies, rounds, seats,
/// seals, audit records, money), and each shows exactly its own — no sum of the process's
/// servers; stopping one sets only its own `reddog_serving` to 0. Building them installed no
/// process-wide `metrics` recorder.
#[tokio::test]
async fn two_applications_in_one_process_count_only_their_own_calls_rounds_and_money() {
    let apart = |mut s: Settings| {
        s.audit.checkpoint_interval = Duration::from_secs(3600);
        s
    };
    let (a, a_metrics) = with_metrics(apart(settings(&ring_a()))).await;
    let (b, b_metrics) = with_metrics(apart(settings(&ring_a()))).await;
    assert_ne!(a_metrics, b_metrics);
    let (mut ca, mut cb) = (a.client().await, b.client().await);

    let a_played = play(&mut ca, "apart-a", &[500, 700], 6).await;
    assert!(a_played.staked > 0 && a_played.rounds == 6);
    let checked = assert_counts(&scrape(a_metrics).await, a_played, "a");
    assert_counts(&scrape(b_metrics).await, Played::default(), "b, which played nothing");
    assert_eq!(money_totals(a_metrics).await, (a_played.staked, a_played.returned), "a shows its own settlements");
    assert_eq!(money_totals(b_metrics).await, (0, 0), "b settled nothing");

    let b_played = play(&mut cb, "apart-b", &[900], 4).await;
    assert_counts(&scrape(b_metrics).await, b_played, "b");
    assert_counts(&scrape(a_metrics).await, a_played, "a, after b's rounds");
    assert_eq!(money_totals(b_metrics).await, (b_played.staked, b_played.returned), "b shows its own settlements");
    assert_eq!(money_totals(a_metrics).await, (a_played.staked, a_played.returned), "b's rounds left a's totals alone");
    eprintln!("two applications apart: {checked} counts of each checked after each one's rounds, 2 money sums each");

    // Nothing installed a process-wide recorder: the global slot is still free.
    assert!(metrics::set_global_recorder(metrics::NoopRecorder).is_ok(), "a global metrics recorder was installed");

    // Readiness is each application's own: draining a leaves b's `reddog_serving` at 1.
    let serving = |page: String| page.lines().find_map(|l| l.strip_prefix("reddog_serving ")?.parse::<f64>().ok());
    assert_eq!((serving(scrape(a_metrics).await), serving(scrape(b_metrics).await)), (Some(1.0), Some(1.0)));
    drop((ca, cb));
    a.stop().await;
    assert_eq!(serving(scrape(a_metrics).await), Some(0.0), "a drained");
    assert_eq!(serving(scrape(b_metrics).await), Some(1.0), "a's drain is not b's");
    b.stop().await;
}

/// What in `source` (Rust, comments dropped) holds a metrics handle in a `static` (a
/// `OnceLock<PrometheusHandle>`, a `thread_local!` recorder, …) or reaches the `metrics`
/// crate's global recorder (its macros, or installing a recorder): one line per finding.
fn global_metrics(source: &str) -> Vec<String> {
    const HANDLES: [&str; 10] = [
        "Counter",
        "Gauge",
        "Histogram",
        "Prometheus",
        "Recorder",
        "Collector",
        "MetricsRegistry",
        "MoneyMetrics",
        "TableMetrics",
        "metrics::",
    ];
    const GLOBAL: [&str; 9] = [
        "counter!",
        "gauge!",
        "histogram!",
        "describe_counter!",
        "describe_gauge!",
        "describe_histogram!",
        "set_global_recorder",
        "set_default_local_recorder",
        "install_recorder",
    ];
    let code: String = source.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("static ") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '\'') {
            continue; // `'static`, or part of a longer word
        }
        let declared = &code[at..];
        let end = declared.find(['=', ';']).unwrap_or(declared.len());
        let declaration = &declared[..end];
        if declaration.contains(':') && HANDLES.iter().any(|h| declaration.contains(h)) {
            found.push(format!(
                "a static metrics handle: {}",
                declaration.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    for call in GLOBAL {
        for (at, _) in code.match_indices(call) {
            let before = code[..at].chars().next_back();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                found.push(format!("the global recorder: {call}"));
            }
        }
    }
    found
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// No file under src/ keeps a metrics handle in a `static` or records through the `metrics`
/// crate's process-wide recorder: every metric goes to an application's own registry. The
/// check finds what the engine had before (a `static HANDLE`, a `static COLLECTOR`, `counter!`).
#[test]
fn no_file_under_src_holds_a_static_metrics_handle_or_reaches_a_global_recorder() {
    let planted = [
        "static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();",
        "fn c() -> &'static metrics_process::Collector {\n    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();\n}",
        "thread_local! { static SEALS: RefCell<Option<metrics::Counter>> = RefCell::new(None); }",
        "metrics::counter!(\"reddog_log_writer_waits_total\").increment(1);",
        "fn f() { gauge!(\"x\").set(1.0) }",
        "metrics::set_global_recorder(recorder).ok()?;",
    ];
    for code in planted {
        assert!(!global_metrics(code).is_empty(), "the check misses: {code}");
    }
    for clean in ["fn f(x: &'static str) {}", "static BASE: OnceLock<Instant> = OnceLock::new();", "// counter!(\"x\")"]
    {
        assert_eq!(global_metrics(clean), Vec::<String>::new(), "{clean}");
    }
    let mut files = Vec::new();
    rust_files(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() > 40, "found {} files under src/", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|f| {
            global_metrics(&std::fs::read_to_string(f).unwrap())
                .into_iter()
                .map(move |w| format!("{}: {w}", f.display()))
        })
        .collect();
    assert!(found.is_empty(), "{found:#?}");
    eprintln!(
        "{} files under src/: no static metrics handle, no global recorder ({} planted cases caught)",
        files.len(),
        planted.len()
    );
}
