//! The `reddog.v1.RedDog` service: each RPC opens its token, applies one step of the game
//! core, seals the result and answers. Nothing is remembered between calls.
//!
//! Retry safety:
//! - `CommitSeed` draws a fresh seed each call; a retried call simply yields another unused
//!   commitment.
//! - `StartRound` is a pure function of (commitment token, client seed, nonce, bets, round id):
//!   the same request deals the same cards and returns the same round token bytes (tokens use
//!   a synthetic nonce, see [`super::token`]).
//! - `Decide` on a token refuses seats that token records as decided; the same request on the
//!   same token returns the same new token bytes. The platform keeps only the newest token.
//! - `Settle` on a token always returns the same settlement and reveal.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use tracing::{debug, debug_span, info};

use super::convert;
use super::error::invalid_token;
use super::metrics::{self, Method, Metrics};
use super::proto::{self, red_dog_server::RedDog};
use super::state::{CommitmentPayload, RoundPayload, RoundState};
use super::token::{KeyRing, TokenKind};
use crate::error::EngineError;
use crate::fairness::{ALGORITHM, DealInputs, FairShoe, Reveal, ServerSeed};
use crate::game::{Money, Round, Table};

/// What the service needs to run.
#[derive(Debug)]
pub struct EngineConfig {
    /// The table: deck count, paytable and the engine's own bet limits.
    pub table: Table,
    /// The keys tokens are sealed and opened with.
    pub key_ring: KeyRing,
    /// How long a commitment token stays usable.
    pub commitment_ttl: Duration,
}

/// The service implementation. Cheap to clone (one `Arc`).
#[derive(Clone, Debug)]
pub struct RedDogService {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    table: Table,
    ring: KeyRing,
    ttl_ms: i64,
    rules: proto::GetRulesResponse,
    metrics: Metrics,
}

/// An optional card for a log field: the card's text, or nothing (no `String` built).
struct MaybeCard(Option<crate::game::Card>);

impl std::fmt::Display for MaybeCard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.map_or(Ok(()), |c| c.fmt(f))
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl RedDogService {
    /// Runs a handler body with an RPC span, latency and status metrics.
    fn observe<T>(&self, method: Method, f: impl FnOnce() -> Result<T, Status>) -> Result<Response<T>, Status> {
        let started = Instant::now();
        // DEBUG: built only when trace export or debug logs want it (see `telemetry::init`).
        let span = debug_span!("rpc", rpc.service = "reddog.v1.RedDog", rpc.method = method.name());
        let result = span.in_scope(f);
        let code = result.as_ref().map_or_else(Status::code, |_| tonic::Code::Ok);
        self.inner.metrics.rpc(method, code, started);
        if let Err(status) = &result {
            debug!(method = method.name(), code = ?status.code(), message = status.message(), "rpc refused");
        }
        result.map(Response::new)
    }

    pub fn new(config: EngineConfig) -> RedDogService {
        let ttl_ms = i64::try_from(config.commitment_ttl.as_millis()).unwrap_or(i64::MAX);
        let rules = super::rules::rules(&config.table, config.commitment_ttl);
        RedDogService {
            inner: Arc::new(Inner {
                table: config.table,
                ring: config.key_ring,
                ttl_ms,
                rules,
                metrics: Metrics::register(),
            }),
        }
    }

    fn open_round(&self, method: Method, token: &[u8], round_id: &str) -> Result<RoundState, Status> {
        convert::required_token("round_token", token)?;
        convert::round_id("round_id", round_id)?;
        let state =
            self.inner.ring.open::<RoundPayload>(TokenKind::Round, token).and_then(RoundState::from_payload).map_err(
                |_| {
                    metrics::token_rejected(method);
                    invalid_token("round_token")
                },
            )?;
        if !round_id.is_empty() && round_id != state.round_id {
            return Err(EngineError::invalid("round_id", "does not match the round id carried in round_token").into());
        }
        Ok(state)
    }

    fn commit_seed(&self, req: &proto::CommitSeedRequest) -> Result<proto::CommitSeedResponse, Status> {
        convert::round_id("round_id", &req.round_id)?;
        let seed = ServerSeed::generate()?;
        let expires_at_unix_ms = now_ms().saturating_add(self.inner.ttl_ms);
        let payload = CommitmentPayload { server_seed: seed.expose().to_vec(), expires_at_unix_ms };
        let token = self.inner.ring.seal(TokenKind::Commitment, &payload)?;
        let commitment = seed.commitment().to_hex();
        info!(target: "reddog::audit", event = "seed_committed", round_id = %req.round_id, %commitment, expires_at_unix_ms);
        Ok(proto::CommitSeedResponse {
            round_id: req.round_id.clone(),
            commitment,
            commitment_token: token,
            expires_at_unix_ms,
            algorithm: ALGORITHM.to_string(),
        })
    }

    fn start_round(&self, req: &proto::StartRoundRequest) -> Result<proto::StartRoundResponse, Status> {
        convert::required_token("commitment_token", &req.commitment_token)?;
        convert::client_seed(&req.client_seed)?;
        convert::round_id("round_id", &req.round_id)?;
        let table = convert::round_table(&self.inner.table, req.player_limits.as_ref())?;
        let bets: Vec<Money> = req.seats.iter().map(|s| Money(s.bet)).collect();
        let committed = self
            .inner
            .ring
            .open::<CommitmentPayload>(TokenKind::Commitment, &req.commitment_token)
            .and_then(|p| if now_ms() > p.expires_at_unix_ms { Err(EngineError::InvalidToken) } else { p.seed() })
            .map_err(|_| {
                metrics::token_rejected(Method::StartRound);
                invalid_token("commitment_token")
            })?;
        let inputs = DealInputs {
            server_seed: &committed,
            client_seed: req.client_seed.as_bytes(),
            nonce: req.nonce,
            decks: table.decks,
        };
        let round = Round::start(&table, &bets, &mut FairShoe::new(&inputs))?;
        let state = RoundState {
            round,
            seed: committed,
            client_seed: req.client_seed.clone(),
            nonce: req.nonce,
            decks: table.decks,
            round_id: req.round_id.clone(),
            paytable: table.paytable.clone(),
        };
        let token = self.inner.ring.seal(TokenKind::Round, &state.to_payload())?;
        let commitment = state.seed.commitment().to_hex();
        let class = state.round.class();
        self.inner.metrics.round_started(class);
        info!(
            target: "reddog::audit",
            event = "round_started",
            round_id = %state.round_id,
            %commitment,
            nonce = state.nonce,
            seats = bets.len(),
            total_bet = bets.iter().map(|b| b.0).sum::<u64>(),
            hand_class = class.name(),
            spread = class.spread().map_or(0, |s| s.get()),
            cards = %format_args!("{} {}", state.round.cards()[0], state.round.cards()[1]),
        );
        Ok(proto::StartRoundResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)),
            round_id: state.round_id,
            round_token: token,
            commitment,
        })
    }

    fn decide(&self, req: &proto::DecideRequest) -> Result<proto::DecideResponse, Status> {
        let mut state = self.open_round(Method::Decide, &req.round_token, &req.round_id)?;
        let decisions = convert::decisions(&req.decisions, state.round.seats().len())?;
        let mut raised = 0u64;
        for &(seat, decision) in &decisions {
            state.round.decide(seat, decision)?;
            if decision == crate::game::Decision::Raise {
                raised = raised.saturating_add(state.round.seats()[seat].bet.0);
            }
        }
        let token = self.inner.ring.seal(TokenKind::Round, &state.to_payload())?;
        info!(
            target: "reddog::audit",
            event = "seats_decided",
            round_id = %state.round_id,
            decisions = %format_args!("{decisions:?}"),
            raised_amount = raised,
            complete = matches!(state.round, Round::Complete(_)),
        );
        Ok(proto::DecideResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)),
            round_id: state.round_id,
            round_token: token,
            raised_amount: raised,
        })
    }

    fn settle(&self, req: &proto::SettleRequest) -> Result<proto::SettleResponse, Status> {
        let mut state = self.open_round(Method::Settle, &req.round_token, &req.round_id)?;
        state.round.close();
        let table = Table { decks: state.decks, paytable: state.paytable.clone(), limits: self.inner.table.limits };
        let settlement = state.round.settle(&table)?;
        let mut staked = 0u64;
        let mut returned = 0u64;
        let results = settlement
            .seats
            .iter()
            .map(|s| {
                staked = staked.saturating_add(s.stake.0);
                returned = returned.saturating_add(s.returned.0);
                proto::SeatResult {
                    seat: s.seat as u32,
                    bet: s.bet.0,
                    raised: s.raised,
                    stood_by_default: s.stood_by_default,
                    stake: s.stake.0,
                    outcome: convert::outcome(s.outcome) as i32,
                    rule: convert::rule(s.rule) as i32,
                    odds: s.odds,
                    returned: s.returned.0,
                }
            })
            .collect();
        let inputs = DealInputs {
            server_seed: &state.seed,
            client_seed: state.client_seed.as_bytes(),
            nonce: state.nonce,
            decks: state.decks,
        };
        let round_id = (!state.round_id.is_empty()).then(|| state.round_id.clone());
        let reveal = Reveal::new(&inputs, &state.client_seed, &state.dealt_cards(), round_id);
        let reveal_json = serde_json::to_string(&reveal).map_err(|e| EngineError::Internal(e.to_string()))?;
        self.inner.metrics.settled(&settlement, staked, returned);
        info!(
            target: "reddog::audit",
            event = "round_settled",
            round_id = %state.round_id,
            commitment = %reveal.commitment,
            hand_class = settlement.class.name(),
            third_card = %MaybeCard(settlement.third),
            total_staked = staked,
            total_returned = returned,
        );
        Ok(proto::SettleResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)),
            results,
            total_staked: staked,
            total_returned: returned,
            reveal: Some(proto::Reveal {
                algorithm: reveal.algorithm,
                server_seed: reveal.server_seed,
                commitment: reveal.commitment,
                client_seed: reveal.client_seed,
                nonce: reveal.nonce,
                decks: u32::from(reveal.decks),
                cards: reveal.cards,
                round_id: state.round_id.clone(),
            }),
            round_id: state.round_id,
            reveal_json,
        })
    }
}

#[tonic::async_trait]
impl RedDog for RedDogService {
    async fn get_rules(
        &self,
        _request: Request<proto::GetRulesRequest>,
    ) -> Result<Response<proto::GetRulesResponse>, Status> {
        self.observe(Method::GetRules, || Ok(self.inner.rules.clone()))
    }

    async fn commit_seed(
        &self,
        request: Request<proto::CommitSeedRequest>,
    ) -> Result<Response<proto::CommitSeedResponse>, Status> {
        self.observe(Method::CommitSeed, || self.commit_seed(request.get_ref()))
    }

    async fn start_round(
        &self,
        request: Request<proto::StartRoundRequest>,
    ) -> Result<Response<proto::StartRoundResponse>, Status> {
        self.observe(Method::StartRound, || self.start_round(request.get_ref()))
    }

    async fn decide(&self, request: Request<proto::DecideRequest>) -> Result<Response<proto::DecideResponse>, Status> {
        self.observe(Method::Decide, || self.decide(request.get_ref()))
    }

    async fn settle(&self, request: Request<proto::SettleRequest>) -> Result<Response<proto::SettleResponse>, Status> {
        self.observe(Method::Settle, || self.settle(request.get_ref()))
    }
}
