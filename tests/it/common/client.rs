//! [`TestClient`]: the generated client with answers unwrapped from `tonic::Response`, and
//! [`req`]: request builders with sensible defaults, so a test names only what it is about.
//!
//! ```ignore
//! let mut c = server.client().await;
//! let committed = c.commit_seed(req::commit_seed().nonce(7)).await.unwrap();
//! let started = c.start_round(req::start_round(committed.commitment_token).nonce(7).bets(&[500, 500])).await.unwrap();
//! let decided = c.decide(req::decide(started.round_token).raise(0).stand(1)).await.unwrap();
//! let settled = c.settle(req::settle(decided.round_token)).await.unwrap();
//! // or all of it at once:
//! let played = c.play_round(req::round().nonce(7).bets(&[500, 500]).raise(0)).await;
//! ```

use std::net::SocketAddr;

use reddog::service::proto::red_dog_client::RedDogClient;
use reddog::service::proto::{
    self, Action, CommitSeedRequest, DecideRequest, GetRulesRequest, ListTablesRequest, SettleRequest,
    StartRoundRequest,
};
use tonic::Status;
use tonic::transport::Channel;

/// The generated `RedDogClient` whose calls take a builder from [`req`] (or a raw request)
/// and return the answer itself. `raw` is the generated client, for calls with metadata.
#[derive(Clone, Debug)]
pub struct TestClient {
    pub raw: RedDogClient<Channel>,
}

impl TestClient {
    pub fn new(channel: Channel) -> TestClient {
        TestClient { raw: RedDogClient::new(channel) }
    }

    /// Connects to `addr` (retried, bounded: 5 s, while the server comes up).
    pub async fn connect(addr: SocketAddr) -> TestClient {
        TestClient::new(super::channel(addr).await)
    }

    pub async fn commit_seed(&mut self, r: impl Into<CommitSeedRequest>) -> Result<proto::CommitSeedResponse, Status> {
        self.raw.commit_seed(r.into()).await.map(tonic::Response::into_inner)
    }

    pub async fn start_round(&mut self, r: impl Into<StartRoundRequest>) -> Result<proto::StartRoundResponse, Status> {
        self.raw.start_round(r.into()).await.map(tonic::Response::into_inner)
    }

    pub async fn decide(&mut self, r: impl Into<DecideRequest>) -> Result<proto::DecideResponse, Status> {
        self.raw.decide(r.into()).await.map(tonic::Response::into_inner)
    }

    pub async fn settle(&mut self, r: impl Into<SettleRequest>) -> Result<proto::SettleResponse, Status> {
        self.raw.settle(r.into()).await.map(tonic::Response::into_inner)
    }

    pub async fn get_rules(&mut self, r: impl Into<GetRulesRequest>) -> Result<proto::GetRulesResponse, Status> {
        self.raw.get_rules(r.into()).await.map(tonic::Response::into_inner)
    }

    pub async fn list_tables(&mut self) -> Result<proto::ListTablesResponse, Status> {
        self.raw.list_tables(ListTablesRequest {}).await.map(tonic::Response::into_inner)
    }

    /// Plays a whole round: CommitSeed, StartRound, one Decide for every seat when the deal
    /// awaits decisions (the plan's raises, every other seat stands), Settle. Panics on any
    /// refusal, naming the step.
    pub async fn play_round(&mut self, plan: req::Round) -> Played {
        let req::Round { commit, start, raise } = plan;
        let committed = self.commit_seed(commit.clone()).await.unwrap_or_else(|s| panic!("CommitSeed: {s:?}"));
        let start = start.token(committed.commitment_token.clone());
        let seats = start.seats.len() as u32;
        let started = self.start_round(start).await.unwrap_or_else(|s| panic!("StartRound: {s:?}"));
        let mut token = started.round_token.clone();
        let decided = if started.round.as_ref().is_some_and(|r| r.awaiting_decisions) {
            let mut d = req::decide(token);
            for seat in 0..seats {
                d = if raise.contains(&seat) { d.raise(seat) } else { d.stand(seat) };
            }
            let decided = self.decide(d).await.unwrap_or_else(|s| panic!("Decide: {s:?}"));
            token = decided.round_token.clone();
            Some(decided)
        } else {
            None
        };
        let settled = self.settle(req::settle(token)).await.unwrap_or_else(|s| panic!("Settle: {s:?}"));
        Played { committed, started, decided, settled }
    }
}

/// Every answer of a round [`TestClient::play_round`] played.
#[derive(Clone, Debug)]
pub struct Played {
    pub committed: proto::CommitSeedResponse,
    pub started: proto::StartRoundResponse,
    /// `None` when the deal needed no decision.
    pub decided: Option<proto::DecideResponse>,
    pub settled: proto::SettleResponse,
}

/// Request builders. Defaults: round id `round-{nonce}`, nonce 0, the default table, client
/// seed [`super::CLIENT_SEED`], one seat betting 1000, player limits 100..=100 000.
pub mod req {
    use super::*;

    /// `round-{nonce}` unless a round id was set.
    fn round_id(set: &Option<String>, nonce: u64) -> String {
        set.clone().unwrap_or_else(|| format!("round-{nonce}"))
    }

    #[derive(Clone, Debug, Default)]
    pub struct CommitSeed {
        round_id: Option<String>,
        nonce: u64,
        table_id: String,
    }

    pub fn commit_seed() -> CommitSeed {
        CommitSeed::default()
    }

    impl CommitSeed {
        pub fn round(mut self, id: impl Into<String>) -> Self {
            self.round_id = Some(id.into());
            self
        }
        pub fn nonce(mut self, nonce: u64) -> Self {
            self.nonce = nonce;
            self
        }
        pub fn table(mut self, id: impl Into<String>) -> Self {
            self.table_id = id.into();
            self
        }
        pub fn build(self) -> CommitSeedRequest {
            self.into()
        }
    }

    impl From<CommitSeed> for CommitSeedRequest {
        fn from(b: CommitSeed) -> Self {
            CommitSeedRequest { round_id: round_id(&b.round_id, b.nonce), nonce: b.nonce, table_id: b.table_id }
        }
    }

    #[derive(Clone, Debug)]
    pub struct StartRound {
        token: Vec<u8>,
        client_seed: String,
        nonce: u64,
        round_id: Option<String>,
        pub(super) seats: Vec<u64>,
        limits: Option<proto::Limits>,
        table_id: String,
        sandbox_cards: Vec<String>,
    }

    /// StartRound with the commitment token `token`.
    pub fn start_round(token: Vec<u8>) -> StartRound {
        StartRound {
            token,
            client_seed: super::super::CLIENT_SEED.to_string(),
            nonce: 0,
            round_id: None,
            seats: vec![1000],
            limits: Some(proto::Limits { min_bet: 100, max_bet: 100_000 }),
            table_id: String::new(),
            sandbox_cards: vec![],
        }
    }

    impl StartRound {
        pub fn token(mut self, token: Vec<u8>) -> Self {
            self.token = token;
            self
        }
        pub fn client_seed(mut self, seed: impl Into<String>) -> Self {
            self.client_seed = seed.into();
            self
        }
        pub fn nonce(mut self, nonce: u64) -> Self {
            self.nonce = nonce;
            self
        }
        pub fn round(mut self, id: impl Into<String>) -> Self {
            self.round_id = Some(id.into());
            self
        }
        /// One seat per bet, seat 0 first.
        pub fn bets(mut self, bets: &[u64]) -> Self {
            self.seats = bets.to_vec();
            self
        }
        /// The player's limits.
        pub fn limits(mut self, min_bet: u64, max_bet: u64) -> Self {
            self.limits = Some(proto::Limits { min_bet, max_bet });
            self
        }
        /// No player limits at all (a malformed request).
        pub fn no_limits(mut self) -> Self {
            self.limits = None;
            self
        }
        pub fn table(mut self, id: impl Into<String>) -> Self {
            self.table_id = id.into();
            self
        }
        pub fn sandbox_cards<S: AsRef<str>>(mut self, cards: &[S]) -> Self {
            self.sandbox_cards = cards.iter().map(|c| c.as_ref().to_string()).collect();
            self
        }
        pub fn build(self) -> StartRoundRequest {
            self.into()
        }
    }

    impl From<StartRound> for StartRoundRequest {
        fn from(b: StartRound) -> Self {
            StartRoundRequest {
                round_id: round_id(&b.round_id, b.nonce),
                commitment_token: b.token,
                client_seed: b.client_seed,
                nonce: b.nonce,
                seats: b.seats.into_iter().map(|bet| proto::SeatBet { bet }).collect(),
                player_limits: b.limits,
                table_id: b.table_id,
                sandbox_cards: b.sandbox_cards,
            }
        }
    }

    #[derive(Clone, Debug)]
    pub struct Decide(DecideRequest);

    /// Decide on the round token `token`, with no decision yet.
    pub fn decide(token: Vec<u8>) -> Decide {
        Decide(DecideRequest { round_token: token, decisions: vec![], round_id: String::new() })
    }

    impl Decide {
        pub fn raise(self, seat: u32) -> Self {
            self.action(seat, Action::Raise)
        }
        pub fn stand(self, seat: u32) -> Self {
            self.action(seat, Action::Stand)
        }
        pub fn action(self, seat: u32, action: Action) -> Self {
            self.action_number(seat, action as i32)
        }
        /// A decision by its wire number, also one `Action` does not have (a malformed request).
        pub fn action_number(mut self, seat: u32, action: i32) -> Self {
            self.0.decisions.push(proto::SeatDecision { seat, action });
            self
        }
        /// The round id the platform expects the token to carry (empty: not checked).
        pub fn round(mut self, id: impl Into<String>) -> Self {
            self.0.round_id = id.into();
            self
        }
        pub fn build(self) -> DecideRequest {
            self.0
        }
    }

    impl From<Decide> for DecideRequest {
        fn from(b: Decide) -> Self {
            b.0
        }
    }

    #[derive(Clone, Debug)]
    pub struct Settle(SettleRequest);

    /// Settle the round token `token`.
    pub fn settle(token: Vec<u8>) -> Settle {
        Settle(SettleRequest { round_token: token, round_id: String::new() })
    }

    impl Settle {
        /// The round id the platform expects the token to carry (empty: not checked).
        pub fn round(mut self, id: impl Into<String>) -> Self {
            self.0.round_id = id.into();
            self
        }
        pub fn build(self) -> SettleRequest {
            self.0
        }
    }

    impl From<Settle> for SettleRequest {
        fn from(b: Settle) -> Self {
            b.0
        }
    }

    /// GetRules of the default table.
    pub fn get_rules() -> GetRules {
        GetRules(GetRulesRequest { table_id: String::new() })
    }

    #[derive(Clone, Debug)]
    pub struct GetRules(GetRulesRequest);

    impl GetRules {
        pub fn table(mut self, id: impl Into<String>) -> Self {
            self.0.table_id = id.into();
            self
        }
        pub fn build(self) -> GetRulesRequest {
            self.0
        }
    }

    impl From<GetRules> for GetRulesRequest {
        fn from(b: GetRules) -> Self {
            b.0
        }
    }

    pub fn list_tables() -> ListTablesRequest {
        ListTablesRequest {}
    }

    /// A whole round for [`TestClient::play_round`].
    #[derive(Clone, Debug)]
    pub struct Round {
        pub(super) commit: CommitSeed,
        pub(super) start: StartRound,
        pub(super) raise: Vec<u32>,
    }

    /// A round: nonce 0, one seat betting 1000 that stands.
    pub fn round() -> Round {
        Round { commit: commit_seed(), start: start_round(vec![]), raise: vec![] }
    }

    impl Round {
        pub fn nonce(mut self, nonce: u64) -> Self {
            self.commit = self.commit.nonce(nonce);
            self.start = self.start.nonce(nonce);
            self
        }
        pub fn round(mut self, id: impl Into<String>) -> Self {
            let id = id.into();
            self.commit = self.commit.round(id.clone());
            self.start = self.start.round(id);
            self
        }
        pub fn table(mut self, id: impl Into<String>) -> Self {
            self.commit = self.commit.table(id);
            self
        }
        pub fn client_seed(mut self, seed: impl Into<String>) -> Self {
            self.start = self.start.client_seed(seed);
            self
        }
        pub fn bets(mut self, bets: &[u64]) -> Self {
            self.start = self.start.bets(bets);
            self
        }
        pub fn limits(mut self, min_bet: u64, max_bet: u64) -> Self {
            self.start = self.start.limits(min_bet, max_bet);
            self
        }
        /// `seat` raises when the deal allows it; every other seat stands.
        pub fn raise(mut self, seat: u32) -> Self {
            self.raise.push(seat);
            self
        }
    }
}
