//! The gRPC benchmark's baseline: what a user would otherwise run — a plain tonic server
//! with tonic's default settings (`Server::builder()`, tokio's default multi-thread runtime,
//! no transport limits, no log subscriber) serving `reddog.v1.RedDog` with canned answers.
//!
//! ```text
//! plain_tonic RESPONSES_FILE
//! ```
//! RESPONSES_FILE holds the engine's real answers to the benchmark's requests (GetRules,
//! CommitSeed, StartRound, Decide, Settle), each a 4-byte big-endian length and the encoded
//! message, as `examples/grpc_ratio.rs` writes it; each RPC answers its stored copy, so the
//! server moves the same bytes as the engine and does none of its work. Prints
//! `listening on ADDR` (127.0.0.1, any free port) and serves until SIGINT.

use std::io::Write;

use prost::Message;
use reddog::service::proto::red_dog_server::{RedDog, RedDogServer};
use reddog::service::proto::{self};
use tonic::{Request, Response, Status};

/// The stored answers.
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
    async fn get_rules(&self, _: Request<proto::GetRulesRequest>) -> Result<Response<proto::GetRulesResponse>, Status> {
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
    async fn decide(&self, _: Request<proto::DecideRequest>) -> Result<Response<proto::DecideResponse>, Status> {
        Ok(Response::new(self.decide.clone()))
    }
    async fn settle(&self, _: Request<proto::SettleRequest>) -> Result<Response<proto::SettleResponse>, Status> {
        Ok(Response::new(self.settle.clone()))
    }
}

fn read_responses(path: &str) -> Canned {
    let data = std::fs::read(path).expect("read the responses file");
    let mut parts = Vec::new();
    let mut rest = data.as_slice();
    while rest.len() >= 4 {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        parts.push(&rest[4..4 + n]);
        rest = &rest[4 + n..];
    }
    assert_eq!(parts.len(), 5, "responses file");
    Canned {
        rules: Message::decode(parts[0]).unwrap(),
        commit: Message::decode(parts[1]).unwrap(),
        start: Message::decode(parts[2]).unwrap(),
        decide: Message::decode(parts[3]).unwrap(),
        settle: Message::decode(parts[4]).unwrap(),
    }
}

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).expect("usage: plain_tonic RESPONSES_FILE");
    let canned = read_responses(&path);
    // What `Server::serve(addr)` does with tonic's defaults (TCP_NODELAY on), on a port the
    // caller learns from the `listening on` line.
    let incoming = tonic::transport::server::TcpIncoming::bind("127.0.0.1:0".parse().unwrap())
        .expect("bind")
        .with_nodelay(Some(true));
    println!("listening on {}", incoming.local_addr().expect("addr"));
    let _ = std::io::stdout().flush();
    tonic::transport::Server::builder()
        .add_service(RedDogServer::new(canned))
        .serve_with_incoming_shutdown(incoming, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .expect("serve");
}
