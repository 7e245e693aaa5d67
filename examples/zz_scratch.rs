use std::time::{Duration, Instant};
use reddog::service::proto::red_dog_server::RedDog;
use reddog::service::proto;
use reddog::service::{EngineConfig, KeyRing, RedDogService};
use tonic::Request;
#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().nth(1).is_some() { reddog::service::metrics::install().unwrap(); }
    let s = RedDogService::new(EngineConfig { table: Default::default(), key_ring: KeyRing::development().unwrap(), commitment_ttl: Duration::from_secs(600) });
    let c = s.commit_seed(Request::new(proto::CommitSeedRequest::default())).await.unwrap().into_inner();
    let start = proto::StartRoundRequest { commitment_token: c.commitment_token, client_seed: "x".into(), nonce: 1, round_id: "r".into(), seats: vec![proto::SeatBet{bet:1000}], player_limits: Some(proto::Limits{min_bet:500,max_bet:30000}) };
    let n = 20000;
    let t = Instant::now();
    let mut tok = vec![];
    for _ in 0..n { tok = s.start_round(Request::new(start.clone())).await.unwrap().into_inner().round_token; }
    println!("start {:?}/call", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n { s.settle(Request::new(proto::SettleRequest{round_token: tok.clone(), round_id: String::new()})).await.unwrap(); }
    println!("settle {:?}/call", t.elapsed() / n);
    let t = Instant::now();
    for _ in 0..n { s.get_rules(Request::new(proto::GetRulesRequest{})).await.unwrap(); }
    println!("rules {:?}/call", t.elapsed() / n);
}
