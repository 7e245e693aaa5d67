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
    let addr = reddog::testing::spawn_metrics("127.0.0.1:0".parse().unwrap(), Default::default())
        .await
        .unwrap()
        .expect("the recorder is installed");
    // Handles registered by a service show at 0 from the start.
    let _svc = reddog::testing::Metrics::register();
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
    assert!(metrics.1.contains("reddog_rpc_requests_total{method=\"Decide\",code=\"OK\"} "), "{}", metrics.1);
    assert_eq!(root.0, "HTTP/1.1 200 OK");
    assert!(root.1.contains("/metrics"));
    assert_eq!(missing.0, "HTTP/1.1 404 Not Found");
    assert_eq!(post.0, "HTTP/1.1 404 Not Found");
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

/// Plays `rounds` rounds with `bets` at the default table (seat 0 raises when it may);
/// returns the staked and returned totals the Settle answers give.
async fn play(c: &mut TestClient, prefix: &str, bets: &[u64], rounds: u64) -> (u128, u128) {
    let (mut staked, mut returned) = (0u128, 0u128);
    for i in 0..rounds {
        let id = format!("{prefix}-{i}");
        let commit = c.commit_seed(req::commit_seed().round(&id).nonce(i)).await.unwrap();
        let started =
            c.start_round(req::start_round(commit.commitment_token).round(&id).nonce(i).bets(bets)).await.unwrap();
        let mut token = started.round_token;
        if started.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            token = c.decide(req::decide(token).raise(0).round(&id)).await.unwrap().round_token;
        }
        let settled = c.settle(req::settle(token).round(id)).await.unwrap();
        staked += u128::from(settled.total_staked);
        returned += u128::from(settled.total_returned);
    }
    (staked, returned)
}

/// Two `Application`s in one process, each with its own `/metrics`: each shows the money its
/// own service settled and nothing of the other's (the exact sums are the application's, not
/// the process's).
#[tokio::test]
async fn two_applications_in_one_process_keep_their_own_money_totals() {
    let (a, a_metrics) = with_metrics(settings(&ring_a())).await;
    let (b, b_metrics) = with_metrics(settings(&ring_a())).await;
    assert_ne!(a_metrics, b_metrics);
    let (mut ca, mut cb) = (a.client().await, b.client().await);

    let a_sums = play(&mut ca, "apart-a", &[500, 700], 6).await;
    assert!(a_sums.0 > 0);
    assert_eq!(money_totals(a_metrics).await, a_sums, "a shows its own settlements");
    assert_eq!(money_totals(b_metrics).await, (0, 0), "b settled nothing");

    let b_sums = play(&mut cb, "apart-b", &[900], 4).await;
    assert_eq!(money_totals(b_metrics).await, b_sums, "b shows its own settlements");
    assert_eq!(money_totals(a_metrics).await, a_sums, "b's rounds left a's totals alone");

    drop((ca, cb));
    a.stop().await;
    b.stop().await;
}
