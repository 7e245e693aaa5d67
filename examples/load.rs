//! Throughput of each RedDog RPC against a no-op tonic unary RPC, on 127.0.0.1 with the same
//! client, concurrency and connection count.
//!
//! ```text
//! cargo run --release --example load -- [--secs 3] [--concurrency 32] [--connections 4] [--target ADDR]
//! ```
//! The no-op baseline is a RedDog server in this process whose handlers return an empty
//! response at once. The engine is the real service (metrics recorder installed, no log
//! subscriber) started in this process — or, with `--target ADDR`, an already running
//! `reddog serve` (e.g. the release binary with its default `info` logs).
//! Every call's gRPC status is checked: an error aborts the run.
//!
//! Two rates are printed: calls per wall-clock second, and calls per CPU-second of this
//! process (client and server together, from `/proc/self/stat`). On a machine shared with
//! other work the CPU-based ratio is the meaningful one (with `--target` the server's CPU is
//! in another process, so only the wall-clock figures mean anything).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reddog::service::proto::red_dog_client::RedDogClient;
use reddog::service::proto::red_dog_server::{RedDog, RedDogServer};
use reddog::service::proto::{self, Action};
use reddog::service::{Application, KeyRingSource, Settings};
use tonic::transport::{Channel, Server};
use tonic::{Request, Response, Status};

/// Answers every RPC with an empty message: the cost of a tonic unary call and nothing else.
struct Noop;

#[tonic::async_trait]
impl RedDog for Noop {
    async fn get_rules(
        &self,
        _: Request<proto::GetRulesRequest>,
    ) -> Result<Response<proto::GetRulesResponse>, Status> {
        Ok(Response::new(proto::GetRulesResponse::default()))
    }
    async fn list_tables(
        &self,
        _: Request<proto::ListTablesRequest>,
    ) -> Result<Response<proto::ListTablesResponse>, Status> {
        Ok(Response::new(proto::ListTablesResponse::default()))
    }
    async fn commit_seed(
        &self,
        _: Request<proto::CommitSeedRequest>,
    ) -> Result<Response<proto::CommitSeedResponse>, Status> {
        Ok(Response::new(proto::CommitSeedResponse::default()))
    }
    async fn start_round(
        &self,
        _: Request<proto::StartRoundRequest>,
    ) -> Result<Response<proto::StartRoundResponse>, Status> {
        Ok(Response::new(proto::StartRoundResponse::default()))
    }
    async fn decide(
        &self,
        _: Request<proto::DecideRequest>,
    ) -> Result<Response<proto::DecideResponse>, Status> {
        Ok(Response::new(proto::DecideResponse::default()))
    }
    async fn settle(
        &self,
        _: Request<proto::SettleRequest>,
    ) -> Result<Response<proto::SettleResponse>, Status> {
        Ok(Response::new(proto::SettleResponse::default()))
    }
}

/// Answers each RPC with a stored copy of a real engine response: the cost of a tonic unary
/// call carrying the same request and response bytes, without the engine's work.
#[derive(Clone, Default)]
struct Canned {
    rules: proto::GetRulesResponse,
    commit: proto::CommitSeedResponse,
    start: proto::StartRoundResponse,
    decide: proto::DecideResponse,
    settle: proto::SettleResponse,
}

#[tonic::async_trait]
impl RedDog for Canned {
    async fn get_rules(
        &self,
        _: Request<proto::GetRulesRequest>,
    ) -> Result<Response<proto::GetRulesResponse>, Status> {
        Ok(Response::new(self.rules.clone()))
    }
    async fn list_tables(
        &self,
        _: Request<proto::ListTablesRequest>,
    ) -> Result<Response<proto::ListTablesResponse>, Status> {
        Ok(Response::new(proto::ListTablesResponse::default()))
    }
    async fn commit_seed(
        &self,
        _: Request<proto::CommitSeedRequest>,
    ) -> Result<Response<proto::CommitSeedResponse>, Status> {
        Ok(Response::new(self.commit.clone()))
    }
    async fn start_round(
        &self,
        _: Request<proto::StartRoundRequest>,
    ) -> Result<Response<proto::StartRoundResponse>, Status> {
        Ok(Response::new(self.start.clone()))
    }
    async fn decide(
        &self,
        _: Request<proto::DecideRequest>,
    ) -> Result<Response<proto::DecideResponse>, Status> {
        Ok(Response::new(self.decide.clone()))
    }
    async fn settle(
        &self,
        _: Request<proto::SettleRequest>,
    ) -> Result<Response<proto::SettleResponse>, Status> {
        Ok(Response::new(self.settle.clone()))
    }
}

struct Opts {
    secs: u64,
    concurrency: usize,
    connections: usize,
    target: Option<SocketAddr>,
}

fn opts() -> Opts {
    let mut o = Opts {
        secs: 3,
        concurrency: 32,
        connections: 4,
        target: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().map(String::as_str).unwrap_or_default();
        match a.as_str() {
            "--secs" => o.secs = v.parse().expect("--secs N"),
            "--concurrency" => o.concurrency = v.parse().expect("--concurrency N"),
            "--connections" => o.connections = v.parse().expect("--connections N"),
            "--target" => o.target = Some(v.parse().expect("--target IP:PORT")),
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

async fn clients(addr: SocketAddr, n: usize) -> Vec<RedDogClient<Channel>> {
    let mut out = Vec::new();
    for _ in 0..n {
        let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        out.push(RedDogClient::new(ch));
    }
    out
}

#[derive(Clone)]
enum Call {
    GetRules,
    CommitSeed,
    StartRound(proto::StartRoundRequest),
    Decide(proto::DecideRequest),
    Settle(proto::SettleRequest),
}

async fn one(c: &mut RedDogClient<Channel>, call: &Call) -> Result<(), Status> {
    match call {
        Call::GetRules => c
            .get_rules(proto::GetRulesRequest::default())
            .await
            .map(drop),
        Call::CommitSeed => c
            .commit_seed(proto::CommitSeedRequest {
                round_id: "load".into(),
                nonce: 0,
                table_id: String::new(),
            })
            .await
            .map(drop),
        Call::StartRound(r) => c.start_round(r.clone()).await.map(drop),
        Call::Decide(r) => c.decide(r.clone()).await.map(drop),
        Call::Settle(r) => c.settle(r.clone()).await.map(drop),
    }
}

/// CPU time this process has used (user + system, all threads), from `/proc/self/stat`; 0
/// where that file does not exist.
fn cpu_secs() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime is the 12th, stime the
    // 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A measurement: calls per wall-clock second, and calls per CPU-second of this process
/// (client and server together). The second is what the ratios use: on a machine shared with
/// other work it measures the cost of a call, not the share of the cores this process got.
#[derive(Clone, Copy)]
struct Rate {
    wall: f64,
    cpu: f64,
}

/// Calls per second with `concurrency` callers spread over the clients, for `secs`.
async fn rate(clients: &[RedDogClient<Channel>], call: &Call, o: &Opts) -> Rate {
    // Warm up.
    let mut c = clients[0].clone();
    for _ in 0..200 {
        one(&mut c, call).await.expect("warm-up call failed");
    }
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(o.secs);
    let started = Instant::now();
    let cpu0 = cpu_secs();
    let tasks: Vec<_> = (0..o.concurrency)
        .map(|i| {
            let mut c = clients[i % clients.len()].clone();
            let call = call.clone();
            let done = done.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    one(&mut c, &call).await.expect("call failed under load");
                    n += 1;
                }
                done.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let n = done.load(Ordering::Relaxed) as f64;
    Rate {
        wall: n / started.elapsed().as_secs_f64(),
        cpu: n / (cpu_secs() - cpu0).max(0.01),
    }
}

async fn serve_noop() -> SocketAddr {
    serve_baseline(Noop).await
}

async fn serve_baseline<S: RedDog>(svc: S) -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(
        Server::builder()
            .add_service(RedDogServer::new(svc))
            .serve_with_incoming(
                tonic::transport::server::TcpIncoming::from(l).with_nodelay(Some(true)),
            ),
    );
    addr
}

async fn serve_engine() -> SocketAddr {
    let mut settings = Settings::local(KeyRingSource::Development);
    settings.commitment_ttl = Duration::from_secs(3600);
    settings.drain_timeout = Duration::from_secs(1);
    // A load generator measures the engine, not the shedding: lift the global cap.
    settings.limits.max_in_flight = 100_000;
    let app = Application::build(settings).await.unwrap();
    let addr = app.local_addr();
    tokio::spawn(app.run(std::future::pending()));
    addr
}

/// Request fixtures: a commitment token, a round awaiting decisions, a complete round.
async fn fixtures(
    c: &mut RedDogClient<Channel>,
) -> (
    proto::StartRoundRequest,
    proto::DecideRequest,
    proto::SettleRequest,
) {
    for nonce in 0.. {
        let committed = c
            .commit_seed(proto::CommitSeedRequest {
                round_id: "load-round-0001".into(),
                nonce,
                table_id: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        let start = proto::StartRoundRequest {
            sandbox_cards: vec![],
            commitment_token: committed.commitment_token,
            client_seed: "load test client seed".into(),
            nonce,
            round_id: "load-round-0001".into(),
            table_id: String::new(),
            seats: vec![proto::SeatBet { bet: 1000 }, proto::SeatBet { bet: 2500 }],
            player_limits: Some(proto::Limits {
                min_bet: 500,
                max_bet: 30_000,
            }),
        };
        let started = c.start_round(start.clone()).await.unwrap().into_inner();
        if started.round.unwrap().awaiting_decisions {
            let decide = proto::DecideRequest {
                round_token: started.round_token.clone(),
                decisions: vec![proto::SeatDecision {
                    seat: 0,
                    action: Action::Raise as i32,
                }],
                round_id: String::new(),
            };
            let settle = proto::SettleRequest {
                round_token: started.round_token,
                round_id: String::new(),
            };
            return (start, decide, settle);
        }
    }
    unreachable!()
}

fn main() {
    let o = opts();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let noop = clients(serve_noop().await, o.connections).await;
        let engine_addr = match o.target {
            Some(a) => a,
            None => serve_engine().await,
        };
        let engine = clients(engine_addr, o.connections).await;
        let (start, decide, settle) = fixtures(&mut engine[0].clone()).await;
        let mut e = engine[0].clone();
        let canned = Canned {
            rules: e.get_rules(proto::GetRulesRequest::default()).await.unwrap().into_inner(),
            commit: e.commit_seed(proto::CommitSeedRequest { round_id: "load".into(), nonce: 0, table_id: String::new() }).await.unwrap().into_inner(),
            start: e.start_round(start.clone()).await.unwrap().into_inner(),
            decide: e.decide(decide.clone()).await.unwrap().into_inner(),
            settle: e.settle(settle.clone()).await.unwrap().into_inner(),
        };
        let canned = clients(serve_baseline(canned).await, o.connections).await;
        println!(
            "concurrency {}, connections {}, {} s per measurement, engine {}",
            o.concurrency,
            o.connections,
            o.secs,
            if o.target.is_some() {
                "external"
            } else {
                "in-process"
            }
        );
        let baseline = rate(&noop, &Call::GetRules, &o).await;
        println!(
            "{:<12} {:>8.0} calls/s wall {:>8.0} calls/CPU-s  (baseline)",
            "no-op", baseline.wall, baseline.cpu
        );
        let calls = [
            ("GetRules", Call::GetRules),
            ("CommitSeed", Call::CommitSeed),
            ("StartRound", Call::StartRound(start)),
            ("Decide", Call::Decide(decide)),
            ("Settle", Call::Settle(settle)),
        ];
        for (name, call) in calls {
            let r = rate(&engine, &call, &o).await;
            // Re-measure the baselines next to each RPC to cancel drift from other load.
            let b = rate(&noop, &Call::GetRules, &o).await;
            let c = rate(&canned, &call, &o).await;
            println!(
                "{name:<12} {:>8.0} calls/s wall {:>8.0} calls/CPU-s | no-op {:>8.0} wall {:>8.0} CPU | ratio wall {:.3} CPU {:.3} | same bytes, no engine: {:>8.0} CPU, ratio CPU {:.3}",
                r.wall,
                r.cpu,
                b.wall,
                b.cpu,
                r.wall / b.wall,
                r.cpu / b.cpu,
                c.cpu,
                r.cpu / c.cpu
            );
        }
    });
}
