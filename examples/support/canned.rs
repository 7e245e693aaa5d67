//! The canned answers the benchmark's baselines serve (`grpc_ratio --serve-noop` behind the
//! engine's transport here; `bench/plain-tonic` reads the same file into its own generated
//! messages): the engine's real answers to the benchmark's requests, stored in a file as a
//! 4-byte big-endian length and the encoded message each (GetRules, CommitSeed, StartRound,
//! Decide, Settle), answered without doing any work.

use std::path::Path;

use prost::Message;
use reddog::service::proto::red_dog_server::RedDog;
use reddog::service::proto::{self};
use tonic::{Request, Response, Status};

/// Answers each RPC with a stored copy of the engine's answer to the benchmark's request.
#[derive(Clone, Default)]
pub struct Canned {
    pub rules: proto::GetRulesResponse,
    pub commit: proto::CommitSeedResponse,
    pub start: proto::StartRoundResponse,
    pub decide: proto::DecideResponse,
    pub settle: proto::SettleResponse,
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
        // Not benchmarked.
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

pub fn write_responses(path: &Path, c: &Canned) {
    let mut out = Vec::new();
    for m in [
        c.rules.encode_to_vec(),
        c.commit.encode_to_vec(),
        c.start.encode_to_vec(),
        c.decide.encode_to_vec(),
        c.settle.encode_to_vec(),
    ] {
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(&m);
    }
    std::fs::write(path, out).expect("write the responses file");
}

pub fn read_responses(path: &Path) -> Canned {
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
