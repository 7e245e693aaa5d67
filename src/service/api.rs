//! The `reddog.v1.RedDog` service: each RPC opens its token, applies one step of the game
//! core, seals the result and answers. Nothing is remembered between calls.
//!
//! Retry safety:
//! - `CommitSeed` draws a fresh seed each call; a retried call simply yields another unused
//!   commitment (bound to the same round id and nonce).
//! - `StartRound` is a pure function of (commitment token, client seed, nonce, bets, round id):
//!   the same request deals the same cards and returns the same round token bytes (tokens use
//!   a synthetic nonce, see [`super::token`]). The commitment token is bound to one round id,
//!   nonce and table: another is refused, so one commitment deals one round's cards.
//! - `Decide` on a token refuses seats that token records as decided; the same request on the
//!   same token returns the same new token bytes (decisions are sorted by seat first). The
//!   platform keeps only the newest token. Each Decide extends the round's transcript, so two
//!   forks of a round never share a transcript, a reveal or an audit line.
//! - `Settle` on a token always returns the same settlement and reveal.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use tracing::{debug, debug_span, info};

use super::convert;
use super::error::invalid_token;
use super::metrics::{self, Method, Metrics};
use super::proto::{self, red_dog_server::RedDog};
use super::state::{Binding, CommitmentPayload, DEFAULT_TABLE_ID, RoundPayload, RoundState};
use super::token::{KeyRing, TokenKind};
use crate::error::{BoundField, EngineError};
use crate::fairness::{ALGORITHM, DealInputs, FairShoe, RevealV2, ServerSeed, SettledRound, action_text};
use crate::game::{Money, Round, Spread, Table};

/// What the service needs to run.
#[derive(Debug)]
pub struct EngineConfig {
    /// The table: deck count, paytable and the engine's own bet limits. Its id is
    /// [`DEFAULT_TABLE_ID`].
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

/// One Decide step's decisions for the audit line, `0:raise,1:stand`, written without
/// building a `String`.
struct DecisionList<'a>(&'a [(usize, crate::game::Decision)]);

impl std::fmt::Display for DecisionList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, &(seat, d)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{seat}:{}", action_text(d))?;
        }
        Ok(())
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

    /// The table with this id (empty = the default table) and its id.
    fn table(&self, table_id: &str) -> Result<(&Table, &'static str), EngineError> {
        match table_id {
            "" | DEFAULT_TABLE_ID => Ok((&self.inner.table, DEFAULT_TABLE_ID)),
            other => Err(EngineError::UnknownTable { table_id: other.to_string() }),
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
        convert::required_round_id("round_id", &req.round_id)?;
        convert::table_id(&req.table_id)?;
        let (table, table_id) = self.table(&req.table_id)?;
        let seed = ServerSeed::generate()?;
        let expires_at_unix_ms = now_ms().checked_add(self.inner.ttl_ms).unwrap_or(i64::MAX);
        let payload = CommitmentPayload {
            server_seed: seed.expose().to_vec(),
            expires_at_unix_ms,
            round_id: req.round_id.clone(),
            nonce: req.nonce,
            table_id: table_id.to_string(),
            decks: u32::from(table.decks().get()),
        };
        let token = self.inner.ring.seal(TokenKind::Commitment, &payload)?;
        let commitment = seed.commitment().to_hex();
        info!(
            target: "reddog::audit",
            event = "seed_committed",
            round_id = %req.round_id,
            %commitment,
            nonce = req.nonce,
            table_id,
            decks = table.decks().get(),
            expires_at_unix_ms,
        );
        Ok(proto::CommitSeedResponse {
            round_id: req.round_id.clone(),
            commitment,
            commitment_token: token,
            expires_at_unix_ms,
            algorithm: ALGORITHM.to_string(),
            nonce: req.nonce,
            table_id: table_id.to_string(),
            decks: u32::from(table.decks().get()),
        })
    }

    fn start_round(&self, req: &proto::StartRoundRequest) -> Result<proto::StartRoundResponse, Status> {
        convert::required_token("commitment_token", &req.commitment_token)?;
        convert::client_seed(&req.client_seed)?;
        convert::required_round_id("round_id", &req.round_id)?;
        convert::table_id(&req.table_id)?;
        let payload = self
            .inner
            .ring
            .open::<CommitmentPayload>(TokenKind::Commitment, &req.commitment_token)
            .and_then(|p| if now_ms() > p.expires_at_unix_ms { Err(EngineError::InvalidToken) } else { Ok(p) })
            .and_then(|p| Ok((p.seed()?, p.binding()?)))
            .map_err(|_| {
                metrics::token_rejected(Method::StartRound);
                invalid_token("commitment_token")
            })?;
        let (committed, binding) = payload;
        let (table, table_id) = match &binding {
            Binding::Unbound => self.table(&req.table_id)?,
            Binding::Bound { round_id, nonce, table_id, decks } => {
                let mismatch = |field, committed: String, requested: String| {
                    Status::from(EngineError::CommitmentMismatch { field, committed, requested })
                };
                if *round_id != req.round_id {
                    return Err(mismatch(BoundField::RoundId, format!("{round_id:?}"), format!("{:?}", req.round_id)));
                }
                if *nonce != req.nonce {
                    return Err(mismatch(BoundField::Nonce, nonce.to_string(), req.nonce.to_string()));
                }
                if !req.table_id.is_empty() && *table_id != req.table_id {
                    return Err(mismatch(BoundField::TableId, format!("{table_id:?}"), format!("{:?}", req.table_id)));
                }
                let (table, id) = self.table(table_id)?;
                if table.decks() != *decks {
                    return Err(EngineError::TableChanged {
                        committed_decks: decks.get(),
                        table_decks: table.decks().get(),
                    }
                    .into());
                }
                (table, id)
            }
        };
        let table = convert::round_table(table, req.player_limits.as_ref())?;
        let bets: Vec<Money> = req.seats.iter().map(|s| Money(s.bet)).collect();
        let inputs = DealInputs {
            server_seed: &committed,
            client_seed: req.client_seed.as_bytes(),
            nonce: req.nonce,
            decks: table.decks(),
        };
        let round = Round::start(&table, &bets, &mut FairShoe::new(&inputs))?;
        let mut state = RoundState {
            round,
            seed: committed,
            client_seed: req.client_seed.clone(),
            nonce: req.nonce,
            decks: table.decks(),
            round_id: req.round_id.clone(),
            table_id: table_id.to_string(),
            paytable: table.paytable().clone(),
            steps: Vec::new(),
            transcript: crate::fairness::Transcript([0; 32]),
        };
        state.transcript = state.start_transcript();
        let token = self.inner.ring.seal(TokenKind::Round, &state.to_payload())?;
        let commitment = state.seed.commitment().to_hex();
        let transcript = state.transcript.to_hex();
        let class = state.round.class();
        self.inner.metrics.round_started(class);
        info!(
            target: "reddog::audit",
            event = "round_started",
            round_id = %state.round_id,
            %commitment,
            table_id,
            nonce = state.nonce,
            step = 0u32,
            %transcript,
            seats = bets.len(),
            // A sum for the log only; u128 cannot overflow for 7 u64 bets.
            total_bet = bets.iter().map(|b| u128::from(b.0)).sum::<u128>() as f64,
            hand_class = class.name(),
            spread = class.spread().map_or(0, Spread::get),
            cards = %format_args!("{} {}", state.round.cards()[0], state.round.cards()[1]),
        );
        Ok(proto::StartRoundResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)?),
            round_id: state.round_id,
            round_token: token,
            commitment,
            step: 0,
            transcript,
            table_id: state.table_id,
        })
    }

    fn decide(&self, req: &proto::DecideRequest) -> Result<proto::DecideResponse, Status> {
        let mut state = self.open_round(Method::Decide, &req.round_token, &req.round_id)?;
        let decisions = convert::decisions(&req.decisions, state.round.seats().len())?;
        let (sorted, raised) = state.round.decide_all(&decisions)?;
        let (parent_step, parent) = (state.step(), state.transcript);
        state.transcript = parent.decide(&sorted);
        state.steps.push(sorted);
        let token = self.inner.ring.seal(TokenKind::Round, &state.to_payload())?;
        let transcript = state.transcript.to_hex();
        let decided = DecisionList(state.steps.last().map_or(&[][..], Vec::as_slice));
        info!(
            target: "reddog::audit",
            event = "seats_decided",
            round_id = %state.round_id,
            commitment = %state.seed.commitment(),
            step = state.step(),
            %transcript,
            parent_step,
            parent_transcript = %parent,
            decisions = %decided,
            raised_amount = raised.0,
            complete = matches!(state.round, Round::Complete(_)),
        );
        Ok(proto::DecideResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)?),
            step: state.step(),
            round_id: state.round_id,
            round_token: token,
            raised_amount: raised.0,
            transcript,
        })
    }

    fn settle(&self, req: &proto::SettleRequest) -> Result<proto::SettleResponse, Status> {
        let mut state = self.open_round(Method::Settle, &req.round_token, &req.round_id)?;
        state.round.close();
        let settlement = state.round.settle(&state.paytable)?;
        let results = settlement
            .seats
            .iter()
            .map(|s| proto::SeatResult {
                seat: s.seat as u32,
                bet: s.bet.0,
                raised: s.raised,
                stood_by_default: s.stood_by_default,
                stake: s.stake.0,
                outcome: convert::outcome(s.outcome) as i32,
                rule: convert::rule(s.rule) as i32,
                odds: s.odds,
                returned: s.returned.0,
            })
            .collect();
        let cards = state.dealt_cards();
        let reveal = RevealV2::new(&SettledRound {
            seed: &state.seed,
            table_id: &state.table_id,
            round_id: &state.round_id,
            client_seed: &state.client_seed,
            nonce: state.nonce,
            decks: state.decks,
            cards: &cards,
            paytable: &state.paytable,
            steps: &state.steps,
            settlement: &settlement,
            transcript: state.transcript,
        });
        let reveal_json = reveal.to_json();
        self.inner.metrics.settled(&settlement);
        info!(
            target: "reddog::audit",
            event = "round_settled",
            round_id = %state.round_id,
            commitment = %reveal.commitment,
            step = state.step(),
            transcript = %reveal.transcript,
            hand_class = settlement.class.name(),
            third_card = %MaybeCard(settlement.third),
            total_staked = settlement.total_staked.0,
            total_returned = settlement.total_returned.0,
        );
        Ok(proto::SettleResponse {
            round: Some(convert::round_view(&state.round, &state.paytable)?),
            results,
            total_staked: settlement.total_staked.0,
            total_returned: settlement.total_returned.0,
            step: state.step(),
            transcript: reveal.transcript.clone(),
            reveal: Some(reveal_message(&reveal)),
            round_id: state.round_id,
            reveal_json,
        })
    }
}

/// The reveal as protobuf fields (the same content as `reveal_json`).
fn reveal_message(r: &RevealV2) -> proto::Reveal {
    let paytable = &r.paytable;
    proto::Reveal {
        format: r.format.clone(),
        algorithm: r.algorithm.clone(),
        server_seed: r.server_seed.clone(),
        commitment: r.commitment.clone(),
        table_id: r.table_id.clone(),
        round_id: r.round_id.clone(),
        client_seed: r.client_seed.clone(),
        nonce: r.nonce,
        decks: u32::from(r.decks),
        cards: r.cards.clone(),
        paytable: Some(proto::RevealPaytable {
            spread: Spread::all().map(|s| paytable.spread_odds(s)).collect(),
            three_of_a_kind: paytable.three_of_a_kind_odds(),
        }),
        decisions: r
            .decisions
            .iter()
            .map(|step| proto::RevealStep {
                decisions: step
                    .iter()
                    .map(|d| proto::SeatDecision {
                        seat: d.seat as u32,
                        action: if d.action == "raise" { proto::Action::Raise } else { proto::Action::Stand } as i32,
                    })
                    .collect(),
            })
            .collect(),
        seats: r
            .seats
            .iter()
            .map(|s| proto::RevealSeat { bet: s.bet, raised: s.raised, stake: s.stake, returned: s.returned })
            .collect(),
        transcript: r.transcript.clone(),
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
