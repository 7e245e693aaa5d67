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
//! - `Settle` on a token always returns the same settlement and reveal, and — with a signing
//!   key in the ring — the same signature (Ed25519 is deterministic; FAIRNESS.md 4.7).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tonic::{Request, Response, Status};
use tracing::{debug, debug_span};

use crate::audit::record::{self, Amounts, Cards, DealClass, Decisions, Event, Hex32, Odds, SeatMoney, Steps};
use crate::error::EngineError;
use crate::fairness::commitment::{self, RoundRef};
use crate::fairness::receipt::{CommitReceipt, StepReceipt};
use crate::fairness::{
    ALGORITHM, Commitment, DealInputs, FairShoe, RevealV2, RulesDigest, ServerSeed, SettledRound, Transcript,
};
use crate::game::{Card, Decision, MAX_SEATS, Money, Round, Settlement, Spread};
use crate::proto::{self, red_dog_server::RedDog};
use crate::service::error::invalid_token;
use crate::service::evidence::audit_sink::{AuditRefused, AuditSink};
use crate::service::ops::metrics::{Method, Metrics, MetricsRegistry, TableMetrics};
use crate::service::round::convert;
use crate::service::round::refusal_log::{Peer, REFUSAL_LOG_INTERVAL, RefusalLog};
use crate::service::round::sandbox;
use crate::service::round::state::{Binding, CommitmentPayload, RoundPayload, RoundState};
use crate::service::round::token::{KeyRing, MAX_TOKEN_LEN, TokenKind, TokenRefusal, check_age};
use crate::service::rules::tables::{Currency, NamedTable, Tables};
use std::collections::BTreeMap;

/// What the service needs to run.
#[derive(Debug)]
pub struct EngineConfig {
    /// The tables: each with its deck count, paytable, bet limits and currency (see
    /// [`Tables`]; `Tables::single(table)` for one table, id `default`).
    pub tables: Tables,
    /// The keys tokens are sealed and opened with.
    pub key_ring: KeyRing,
    /// How long a commitment token stays usable.
    pub commitment_ttl: Duration,
    /// Where every answered CommitSeed, StartRound, Decide and Settle is recorded.
    pub audit: AuditSink,
    /// The wall clock commitments expire by ([`Clock::system`] but in tests).
    pub clock: Clock,
    /// The metrics the service records (its rounds, money, RPCs, tokens): its
    /// [`crate::service::Application`]'s registry, which its `/metrics` shows (`Default::default()`
    /// for a registry of its own).
    pub metrics: MetricsRegistry,
}

/// Wall-clock time in Unix milliseconds, as the engine reads it for a commitment's expiry.
/// [`Clock::system`] in the binary; a test sets its own to expire a commitment without waiting.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> i64 + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(now_ms))
    }

    /// A clock that reads `now` (Unix milliseconds).
    pub fn from_fn(now: impl Fn() -> i64 + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(now))
    }

    pub fn now_ms(&self) -> i64 {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// The service implementation. Cheap to clone (one `Arc`).
#[derive(Clone, Debug)]
pub struct RedDogService {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    tables: Tables,
    ring: KeyRing,
    ttl_ms: i64,
    clock: Clock,
    /// GetRules' answer per table id, computed once.
    rules: BTreeMap<String, proto::GetRulesResponse>,
    /// Each table's rules digest, computed once.
    digests: BTreeMap<String, RulesDigest>,
    metrics: Metrics,
    table_metrics: BTreeMap<String, TableMetrics>,
    audit: AuditSink,
    /// Token refusals, logged at most once per reason per interval.
    refusals: RefusalLog,
}

/// A table's currency as the API shows it.
fn currency(c: &Currency) -> proto::Currency {
    proto::Currency { code: c.code().to_string(), minor_unit_exponent: Some(u32::from(c.minor_unit_exponent())) }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl RedDogService {
    /// Runs a handler body with an RPC span, latency and status metrics. The span follows
    /// OpenTelemetry's RPC conventions and continues the caller's trace when the request
    /// carries a W3C `traceparent` (see [`crate::service::ops::telemetry::continue_trace`]).
    ///
    /// Write-ahead: when the handler wrote an audit record (`Some(seq)`), the answer waits
    /// until the trail's output took that record, and is refused (`AUDIT_UNAVAILABLE`) if
    /// the output fails or stalls first ([`AuditSink::written`]).
    async fn observe<T>(
        &self,
        method: Method,
        metadata: &tonic::metadata::MetadataMap,
        f: impl FnOnce() -> Result<(T, Option<u64>), Status>,
    ) -> Result<Response<T>, Status> {
        let started = Instant::now();
        // DEBUG: built only when trace export or debug logs want it (see `telemetry::init`).
        let span = debug_span!(
            "rpc",
            otel.name = method.full_name(),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            rpc.system = "grpc",
            rpc.service = "reddog.v1.RedDog",
            rpc.method = method.name(),
            rpc.grpc.status_code = tracing::field::Empty,
        );
        if !span.is_disabled() {
            crate::service::ops::telemetry::continue_trace(&span, metadata);
        }
        let result = match span.in_scope(f) {
            Ok((answer, Some(record))) => self.inner.audit.written(record).await.map(|()| answer).map_err(Status::from),
            Ok((answer, None)) => Ok(answer),
            Err(status) => Err(status),
        };
        let code = result.as_ref().map_or_else(Status::code, |_| tonic::Code::Ok);
        if !span.is_disabled() {
            span.record("rpc.grpc.status_code", code as i64);
            if crate::service::ops::telemetry::is_server_error(code) {
                span.record("otel.status_code", "error");
            }
        }
        self.inner.metrics.rpc(method, code, started);
        if let Err(status) = &result {
            debug!(method = method.name(), code = ?status.code(), message = status.message(), "rpc refused");
        }
        result.map(Response::new)
    }

    pub fn new(config: EngineConfig) -> RedDogService {
        let ttl_ms = i64::try_from(config.commitment_ttl.as_millis()).unwrap_or(i64::MAX);
        let digests: BTreeMap<String, RulesDigest> = config.tables.iter().map(|t| (t.id.clone(), t.digest())).collect();
        let rules = rules_per_table(&config);
        sandbox::register_metrics(&config.tables, &config.metrics);
        let table_metrics = config
            .tables
            .iter()
            .map(|t| (t.id.clone(), TableMetrics::register(&t.id, &t.table, &t.currency, t.digest(), &config.metrics)))
            .collect();
        RedDogService {
            inner: Arc::new(Inner {
                tables: config.tables,
                ring: config.key_ring,
                ttl_ms,
                clock: config.clock,
                rules,
                digests,
                metrics: Metrics::register(&config.metrics),
                table_metrics,
                audit: config.audit,
                refusals: RefusalLog::new(REFUSAL_LOG_INTERVAL),
            }),
        }
    }

    /// A configured table's rules digest (zeros for a table no longer configured).
    fn digest(&self, table_id: &str) -> &[u8; 32] {
        self.inner.digests.get(table_id).map_or(&[0; 32], |d| &d.0)
    }

    /// The table with this id (empty = the default table).
    fn table(&self, table_id: &str) -> Result<&NamedTable, EngineError> {
        self.inner.tables.get(table_id)
    }

    /// A configured table's rules digest (computed at startup).
    fn digest_of(&self, named: &NamedTable) -> RulesDigest {
        self.inner.digests.get(&named.id).copied().unwrap_or_else(|| named.digest())
    }

    fn get_rules(&self, req: &proto::GetRulesRequest) -> Result<proto::GetRulesResponse, Status> {
        convert::table_id(&req.table_id)?;
        let id = &self.table(&req.table_id)?.id;
        self.inner.rules.get(id).cloned().ok_or_else(|| EngineError::UnknownTable { table_id: id.clone() }.into())
    }

    fn list_tables(&self) -> proto::ListTablesResponse {
        proto::ListTablesResponse {
            tables: self.inner.rules.values().cloned().collect(),
            default_table_id: self.inner.tables.default_table().map(|t| t.id.clone()).unwrap_or_default(),
        }
    }

    fn open_round(&self, method: Method, peer: Peer, token: &[u8], round_id: &str) -> Result<RoundState, Status> {
        convert::required_token("round_token", token)?;
        convert::round_id("round_id", round_id)?;
        let state = self
            .inner
            .ring
            .open_checked::<RoundPayload>(TokenKind::Round, token)
            .and_then(RoundState::from_payload)
            .and_then(|s| check_age(s.issued_at_unix_ms, self.inner.clock.now_ms()).map(|()| s))
            .map_err(|why| self.token_refused(method, why, peer, "round_token"))?;
        if !round_id.is_empty() && round_id != state.round_id {
            let reason = "does not match the round id carried in round_token".into();
            return Err(EngineError::InvalidRoundId { field: "round_id", reason }.into());
        }
        Ok(state)
    }

    /// Seals a token under the primary key, counted in `reddog_token_seals_total{key_id}`.
    fn seal(&self, kind: TokenKind, payload: &impl prost::Message) -> Result<Vec<u8>, EngineError> {
        let token = self.inner.ring.seal(kind, payload)?;
        self.inner.metrics.sealed(self.inner.ring.primary_id());
        Ok(token)
    }

    /// Counts a refused token in request field `field`, logs it within the refusal log's
    /// bound, and answers: the one uniform answer, or — for a token older than the support
    /// window — the precise one.
    fn token_refused(&self, method: Method, why: TokenRefusal, peer: Peer, field: &'static str) -> Status {
        self.inner.metrics.token_rejected(method, why.label());
        self.inner.refusals.refused(method, why.label(), peer);
        match why {
            TokenRefusal::TooOld(_) => why.error(field).into(),
            _ => invalid_token(field),
        }
    }

    fn commit_seed(&self, req: &proto::CommitSeedRequest) -> Result<(proto::CommitSeedResponse, u64), Status> {
        convert::required_round_id("round_id", &req.round_id)?;
        convert::table_id(&req.table_id)?;
        let named = self.table(&req.table_id)?;
        let seed = ServerSeed::generate().map_err(EngineError::from)?;
        let rules_digest = self.digest_of(named);
        let (issued_at_unix_ms, expires_at_unix_ms) = self.commitment_validity();
        let payload = commitment_payload(&seed, req, named, &rules_digest, (issued_at_unix_ms, expires_at_unix_ms));
        let (token, committed) = (self.seal(TokenKind::Commitment, &payload)?, seed.commitment());
        let receipt = CommitReceipt {
            key_id: "", // the signer puts its own id in (`ReceiptSigner::sign_commit`)
            commitment: &committed.0,
            round_id: &req.round_id,
            nonce: req.nonce,
            table_id: &named.id,
            decks: named.table.decks().get(),
            rules_digest: &rules_digest.0,
            expires_at_unix_ms,
            algorithm: ALGORITHM,
            sandbox: named.sandbox,
        };
        let record = self.audit_seed_committed(&receipt, &committed)?;
        let (signing_key_id, signature, receipt_json) = self.sign_commit(&receipt);
        let unsigned = commit_response(req, named, &committed, token, &rules_digest, expires_at_unix_ms);
        Ok((proto::CommitSeedResponse { signing_key_id, signature, receipt_json, ..unsigned }, record))
    }

    /// A new commitment's issue time and its expiry (`--commitment-ttl-secs` later), in Unix ms.
    fn commitment_validity(&self) -> (i64, i64) {
        let issued_at_unix_ms = self.inner.clock.now_ms();
        (issued_at_unix_ms, issued_at_unix_ms.checked_add(self.inner.ttl_ms).unwrap_or(i64::MAX))
    }

    /// Records a commitment in the audit trail.
    fn audit_seed_committed(&self, receipt: &CommitReceipt<'_>, committed: &Commitment) -> Result<u64, AuditRefused> {
        self.inner.audit.record(Event::SeedCommitted(record::SeedCommitted {
            round_id: Cow::Borrowed(receipt.round_id),
            table_id: Cow::Borrowed(receipt.table_id),
            nonce: receipt.nonce,
            decks: receipt.decks,
            commitment: Hex32(committed.0),
            rules_digest: Hex32(*self.digest(receipt.table_id)),
            expires_at_unix_ms: receipt.expires_at_unix_ms,
            sandbox: receipt.sandbox,
        }))
    }

    /// The commitment's receipt: key id, signature and JSON, or three empty strings without
    /// a signing key (FAIRNESS.md 4.7).
    fn sign_commit(&self, receipt: &CommitReceipt<'_>) -> (String, String, String) {
        let Some(signer) = self.inner.ring.signer() else { return (String::new(), String::new(), String::new()) };
        let (signature, json) = signer.sign_commit(receipt);
        (signer.id().to_string(), signature, json)
    }

    /// The step receipt of the round in `state` after a step that took `decisions`: key id,
    /// signature and JSON, or three empty strings without a signing key (FAIRNESS.md 4.7).
    /// It signs what the table shows ([`crate::game::Round::shown`]): the face-down card of
    /// a round whose seats are deciding is not reachable from here.
    fn sign_step(&self, state: &RoundState, decisions: &[(usize, Decision)]) -> (String, String, String) {
        let Some(signer) = self.inner.ring.signer() else { return (String::new(), String::new(), String::new()) };
        let (signature, json) = signer.sign_step(&StepReceipt {
            key_id: signer.id(),
            commitment: state.seed.commitment().0,
            table_id: &state.table_id,
            round_id: &state.round_id,
            rules_digest: Some(state.rules().digest().0),
            sandbox: state.sandbox,
            step: state.step(),
            transcript: state.transcript.0,
            shown: state.round.shown(),
            decisions,
        });
        (signer.id().to_string(), signature, json)
    }

    fn start_round(
        &self,
        peer: Peer,
        req: &proto::StartRoundRequest,
    ) -> Result<(proto::StartRoundResponse, u64), Status> {
        convert::required_token("commitment_token", &req.commitment_token)?;
        convert::client_seed(&req.client_seed)?;
        convert::required_round_id("round_id", &req.round_id)?;
        convert::table_id(&req.table_id)?;
        let (committed, binding, committed_sandbox, issued_at) =
            self.resolve_commitment(peer, &req.commitment_token)?;
        let dealt = self.committed_table(binding, req)?;
        let here = self.table(&dealt.id).ok();
        sandbox::check_commitment(committed_sandbox, here.is_some_and(|t| t.sandbox), &dealt.id)?;
        let bets: Vec<Money> = req.seats.iter().map(|s| Money(s.bet)).collect();
        let mut state = deal(committed, committed_sandbox, &dealt, &bets, req)?;
        state.issued_at_unix_ms = issued_at;
        let token = self.seal(TokenKind::Round, &state.to_payload())?;
        let record = self.audit_round_started(&state, &dealt, &bets)?;
        if let Some(m) = self.inner.table_metrics.get(&dealt.id) {
            m.round_started(state.round.class());
        }
        let (signing_key_id, signature, receipt_json) = self.sign_step(&state, &[]);
        Ok((
            proto::StartRoundResponse {
                round: Some(round_view(&state)?),
                commitment: state.seed.commitment().to_hex(),
                transcript: state.transcript.to_hex(),
                round_id: state.round_id,
                round_token: token,
                step: 0,
                table_id: state.table_id,
                currency: Some(currency(&dealt.currency)),
                signing_key_id,
                signature,
                receipt_json,
            },
            record,
        ))
    }

    /// Opens a commitment token: its server seed, what it is bound to, whether it is a
    /// sandbox commitment, and its issue time. A token that is not this ring's, expired or
    /// malformed is counted, logged within bounds and refused as an invalid
    /// `commitment_token`; one older than the support window, as that.
    fn resolve_commitment(&self, peer: Peer, token: &[u8]) -> Result<(ServerSeed, Binding, bool, i64), Status> {
        let now = self.inner.clock.now_ms();
        self.inner
            .ring
            .open_checked::<CommitmentPayload>(TokenKind::Commitment, token)
            .and_then(|p| {
                let binding = p.binding()?;
                check_age(p.issued_at_unix_ms, now)?;
                commitment::check_expiry(p.expires_at_unix_ms, now).map_err(|_| TokenRefusal::Expired)?;
                Ok((p.seed()?, binding, p.sandbox, p.issued_at_unix_ms))
            })
            .map_err(|why| self.token_refused(Method::StartRound, why, peer, "commitment_token"))
    }

    /// Records a dealt round in the audit trail.
    fn audit_round_started(&self, state: &RoundState, dealt: &NamedTable, bets: &[Money]) -> Result<u64, AuditRefused> {
        let (hand_class, spread) = DealClass::of(state.round.class());
        self.inner.audit.record(Event::RoundStarted(record::RoundStarted {
            round_id: Cow::Borrowed(&state.round_id),
            table_id: Cow::Borrowed(&dealt.id),
            currency: Cow::Borrowed(dealt.currency.code()),
            exponent: dealt.currency.minor_unit_exponent(),
            commitment: state.seed.commitment().into(),
            rules_digest: Hex32(dealt.digest().0),
            nonce: state.nonce,
            decks: state.decks.get(),
            step: 0,
            transcript: state.transcript.into(),
            bets: Amounts(Cow::Borrowed(bets)),
            cards: Cards(Cow::Borrowed(&state.round.cards())),
            hand_class,
            spread,
            sandbox: state.sandbox,
        }))
    }

    /// The table a commitment deals at: the rules it carries, whatever this replica's table
    /// says now. Refused with `COMMITMENT_MISMATCH` for another round, nonce or table than
    /// the commitment's, and with `RULES_CHANGED` when the operator withdrew the committed
    /// rules at this table (`withdrawn_rules`).
    fn committed_table(&self, binding: Binding, req: &proto::StartRoundRequest) -> Result<NamedTable, EngineError> {
        let Binding { round_id, nonce, table_id, table, currency, rules_digest } = binding;
        let requested = RoundRef { round_id: &req.round_id, nonce: req.nonce, table_id: &req.table_id };
        commitment::check_binding(&RoundRef { round_id: &round_id, nonce, table_id: &table_id }, &requested)?;
        if let Ok(named) = self.table(&table_id) {
            self.check_not_withdrawn(named, &rules_digest)?;
        }
        Ok(NamedTable { id: table_id, table, currency, sandbox: false })
    }

    /// Refuses (`RULES_CHANGED`) a commitment to rules the operator withdrew at this table.
    fn check_not_withdrawn(&self, named: &NamedTable, digest: &RulesDigest) -> Result<(), EngineError> {
        if !self.inner.tables.is_withdrawn(&named.id, digest) {
            return Ok(());
        }
        Err(commitment::BindingError::RulesWithdrawn {
            committed: digest.to_hex(),
            table: self.digest_of(named).to_hex(),
        }
        .into())
    }

    fn decide(&self, peer: Peer, req: &proto::DecideRequest) -> Result<(proto::DecideResponse, u64), Status> {
        let mut state = self.open_round(Method::Decide, peer, &req.round_token, &req.round_id)?;
        let decisions = convert::decisions(&req.decisions, state.round.seats().len())?;
        let (sorted, raised) = state.round.decide_all(&decisions).map_err(EngineError::from)?;
        let (parent_step, parent) = (state.step(), state.transcript);
        state.transcript = parent.decide(&sorted);
        state.steps.push(sorted);
        let token = self.seal(TokenKind::Round, &state.to_payload())?;
        let record = self.audit_decided(&state, parent_step, parent, raised)?;
        let transcript = state.transcript.to_hex();
        let currency = Some(currency(&state.currency));
        let (signing_key_id, signature, receipt_json) =
            self.sign_step(&state, state.steps.last().map_or(&[][..], Vec::as_slice));
        Ok((
            proto::DecideResponse {
                round: Some(round_view(&state)?),
                step: state.step(),
                round_id: state.round_id,
                round_token: token,
                raised_amount: raised.0,
                transcript,
                currency,
                table_id: state.table_id,
                signing_key_id,
                signature,
                receipt_json,
            },
            record,
        ))
    }

    /// Records a Decide step in the audit trail.
    fn audit_decided(
        &self,
        state: &RoundState,
        parent_step: u32,
        parent: Transcript,
        raised: Money,
    ) -> Result<u64, AuditRefused> {
        self.inner.audit.record(Event::SeatsDecided(record::SeatsDecided {
            round_id: Cow::Borrowed(&state.round_id),
            table_id: Cow::Borrowed(&state.table_id),
            commitment: state.seed.commitment().into(),
            parent_step,
            parent_transcript: parent.into(),
            step: state.step(),
            transcript: state.transcript.into(),
            decisions: Decisions(Cow::Borrowed(state.steps.last().map_or(&[][..], Vec::as_slice))),
            raised_amount: raised.0,
            complete: matches!(state.round, Round::Complete(_)),
        }))
    }

    fn settle(&self, peer: Peer, req: &proto::SettleRequest) -> Result<(proto::SettleResponse, u64), Status> {
        let mut state = self.open_round(Method::Settle, peer, &req.round_token, &req.round_id)?;
        state.round.close();
        let settlement = state.round.settle(&state.paytable).map_err(EngineError::from)?;
        let cards = state.dealt_cards();
        let (reveal_json, reveal_fields) = reveal(&state, &settlement, &cards);
        let (signing_key_id, signature) = match self.inner.ring.signer() {
            Some(signer) => (signer.id().to_string(), signer.sign_settle(&state.transcript.0, reveal_json.as_bytes())),
            None => (String::new(), String::new()),
        };
        let currency = Some(currency(&state.currency));
        let record = self.audit_settled(&state, &settlement, &cards, currency.as_ref())?;
        if let Some(m) = self.inner.table_metrics.get(&state.table_id) {
            m.settled(&settlement, state.decks, &state.paytable);
        }
        Ok((
            proto::SettleResponse {
                round: Some(round_view(&state)?),
                results: seat_results(&settlement),
                total_staked: settlement.total_staked.0,
                total_returned: settlement.total_returned.0,
                step: state.step(),
                transcript: state.transcript.to_hex(),
                reveal: Some(reveal_fields),
                round_id: state.round_id,
                reveal_json,
                currency,
                table_id: state.table_id,
                signing_key_id,
                signature,
            },
            record,
        ))
    }

    /// Records a settled round in the audit trail, under the rules it was dealt with.
    fn audit_settled(
        &self,
        state: &RoundState,
        settlement: &Settlement,
        cards: &[Card],
        currency: Option<&proto::Currency>,
    ) -> Result<u64, AuditRefused> {
        let rules_digest = state.rules().digest().0;
        let (hand_class, spread) = DealClass::of(settlement.class);
        let mut seats = [SeatMoney::default(); MAX_SEATS];
        self.inner.audit.record(Event::RoundSettled(record::RoundSettled {
            round_id: Cow::Borrowed(&state.round_id),
            table_id: Cow::Borrowed(&state.table_id),
            currency: Cow::Borrowed(currency.map_or("", |c| c.code.as_str())),
            exponent: currency.map_or(0, |c| u8::try_from(c.minor_unit_exponent.unwrap_or(0)).unwrap_or(u8::MAX)),
            commitment: state.seed.commitment().into(),
            rules_digest: Hex32(rules_digest),
            decks: state.decks.get(),
            paytable: Odds(Cow::Borrowed(&state.paytable)),
            step: state.step(),
            transcript: state.transcript.into(),
            cards: Cards(Cow::Borrowed(cards)),
            hand_class,
            spread,
            decisions: Steps(Cow::Borrowed(&state.steps)),
            seats: SeatMoney::all(&settlement.seats, &mut seats),
            total_staked: settlement.total_staked.0,
            total_returned: settlement.total_returned.0,
            sandbox: state.sandbox,
        }))
    }
}

/// A commitment token's payload: the seed and everything the round is bound to, issued at
/// `issued_at_unix_ms`.
pub(crate) fn commitment_payload(
    seed: &ServerSeed,
    req: &proto::CommitSeedRequest,
    named: &NamedTable,
    rules_digest: &RulesDigest,
    (issued_at_unix_ms, expires_at_unix_ms): (i64, i64),
) -> CommitmentPayload {
    let table = &named.table;
    CommitmentPayload {
        server_seed: seed.expose().to_vec(),
        expires_at_unix_ms,
        round_id: req.round_id.clone(),
        nonce: req.nonce,
        table_id: named.id.clone(),
        decks: u32::from(table.decks().get()),
        currency: named.currency.code().to_string(),
        minor_unit_exponent: u32::from(named.currency.minor_unit_exponent()),
        rules_digest: rules_digest.0.to_vec(),
        paytable: crate::service::round::state::paytable_odds(table.paytable()),
        min_bet: table.limits().min().0,
        max_bet: table.limits().max().0,
        sandbox: named.sandbox,
        issued_at_unix_ms,
    }
}

/// Deals the round a commitment was made for at `dealt` (the player's limits applied): from
/// the fair shoe, or from the requested cards of a sandbox commitment; with its opening
/// transcript.
fn deal(
    seed: ServerSeed,
    sandbox_round: bool,
    dealt: &NamedTable,
    bets: &[Money],
    req: &proto::StartRoundRequest,
) -> Result<RoundState, EngineError> {
    let table = convert::round_table(&dealt.table, req.player_limits.as_ref())?;
    let requested = sandbox::requested_deal(&req.sandbox_cards, sandbox_round, &dealt.id, table.decks())?;
    let round = match requested {
        Some(mut deck) => Round::start(&table, bets, &mut deck)?,
        None => {
            let inputs = DealInputs {
                server_seed: &seed,
                client_seed: req.client_seed.as_bytes(),
                nonce: req.nonce,
                decks: table.decks(),
            };
            Round::start(&table, bets, &mut FairShoe::new(&inputs))?
        }
    };
    let mut state = RoundState {
        round,
        seed,
        client_seed: req.client_seed.clone(),
        nonce: req.nonce,
        decks: table.decks(),
        round_id: req.round_id.clone(),
        table_id: dealt.id.clone(),
        paytable: table.paytable().clone(),
        steps: Vec::new(),
        transcript: Transcript([0; 32]),
        currency: dealt.currency.clone(),
        limits: dealt.table.limits(),
        sandbox: sandbox_round,
        issued_at_unix_ms: 0,
    };
    state.transcript = state.start_transcript();
    Ok(state)
}

/// Each seat's result as the API shows it.
fn seat_results(settlement: &Settlement) -> Vec<proto::SeatResult> {
    settlement
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
        .collect()
}

/// The settled round's reveal: its JSON and its protobuf fields.
fn reveal(state: &RoundState, settlement: &Settlement, cards: &[Card]) -> (String, proto::Reveal) {
    let mut reveal = RevealV2::new(&SettledRound {
        seed: &state.seed,
        table_id: &state.table_id,
        round_id: &state.round_id,
        client_seed: &state.client_seed,
        nonce: state.nonce,
        decks: state.decks,
        cards,
        paytable: &state.paytable,
        steps: &state.steps,
        settlement,
        transcript: state.transcript,
        rules: Some(state.rules()),
    });
    if state.sandbox {
        reveal.format = sandbox::SANDBOX_REVEAL_FORMAT.to_string();
    }
    // The JSON first, then the reveal's strings move into the message (no copies).
    (reveal.to_json(), reveal_message(reveal, &state.steps))
}

/// GetRules' answer for each table, with the signing key the ring publishes.
fn rules_per_table(config: &EngineConfig) -> BTreeMap<String, proto::GetRulesResponse> {
    let signing_keys: Vec<proto::PublicKey> = config
        .key_ring
        .signer()
        .map(|s| s.published())
        .map(|k| proto::PublicKey { key_id: k.key_id, algorithm: k.algorithm, public_key_hex: k.public_key_hex })
        .into_iter()
        .collect();
    config
        .tables
        .iter()
        .map(|t| {
            let digest = t.digest();
            let mut rules = crate::service::rules::get_rules::rules(
                &t.table,
                config.commitment_ttl,
                &t.id,
                currency(&t.currency),
                digest,
                MAX_TOKEN_LEN as u32,
            );
            rules.sandbox = t.sandbox;
            rules.signing_keys = signing_keys.clone();
            (t.id.clone(), rules)
        })
        .collect()
}

/// CommitSeed's answer before the signer adds its key id, signature and receipt.
fn commit_response(
    req: &proto::CommitSeedRequest,
    named: &NamedTable,
    committed: &Commitment,
    commitment_token: Vec<u8>,
    rules_digest: &RulesDigest,
    expires_at_unix_ms: i64,
) -> proto::CommitSeedResponse {
    proto::CommitSeedResponse {
        round_id: req.round_id.clone(),
        commitment: committed.to_hex(),
        commitment_token,
        expires_at_unix_ms,
        algorithm: ALGORITHM.to_string(),
        nonce: req.nonce,
        table_id: named.id.clone(),
        decks: u32::from(named.table.decks().get()),
        currency: Some(currency(&named.currency)),
        rules_digest: rules_digest.to_hex(),
        sandbox: named.sandbox,
        ..Default::default()
    }
}

/// The round as the table shows it, marked `sandbox` for a sandbox round.
fn round_view(state: &RoundState) -> Result<proto::RoundView, EngineError> {
    let mut view = convert::round_view(&state.round, &state.paytable)?;
    view.sandbox = state.sandbox;
    Ok(view)
}

/// The reveal as protobuf fields (the same content as `reveal_json`; the decisions from
/// the round's `steps`, which the reveal's are written from).
fn reveal_message(r: RevealV2, steps: &[Vec<(usize, Decision)>]) -> proto::Reveal {
    let paytable = &r.paytable;
    proto::Reveal {
        format: r.format,
        algorithm: r.algorithm,
        server_seed: r.server_seed,
        commitment: r.commitment,
        table_id: r.table_id,
        round_id: r.round_id,
        client_seed: r.client_seed,
        nonce: r.nonce,
        decks: u32::from(r.decks),
        cards: r.cards,
        paytable: Some(proto::RevealPaytable {
            spread: Spread::all().map(|s| paytable.spread_odds(s)).collect(),
            three_of_a_kind: paytable.three_of_a_kind_odds(),
        }),
        limits: r.limits.map(|l| proto::Limits { min_bet: l.min_bet, max_bet: l.max_bet }),
        currency: r
            .currency
            .map(|c| proto::Currency { code: c.code, minor_unit_exponent: Some(u32::from(c.exponent)) }),
        rules_digest: r.rules_digest.unwrap_or_default(),
        decisions: steps
            .iter()
            .map(|step| proto::RevealStep {
                decisions: step
                    .iter()
                    .map(|&(seat, d)| proto::SeatDecision { seat: seat as u32, action: convert::action(d) as i32 })
                    .collect(),
            })
            .collect(),
        seats: r
            .seats
            .iter()
            .map(|s| proto::RevealSeat { bet: s.bet, raised: s.raised, stake: s.stake, returned: s.returned })
            .collect(),
        transcript: r.transcript,
    }
}

/// An answer and the `seq` of the audit record it waits for.
fn recorded<T>((answer, record): (T, u64)) -> (T, Option<u64>) {
    (answer, Some(record))
}

#[tonic::async_trait]
impl RedDog for RedDogService {
    async fn get_rules(
        &self,
        request: Request<proto::GetRulesRequest>,
    ) -> Result<Response<proto::GetRulesResponse>, Status> {
        self.observe(Method::GetRules, request.metadata(), || self.get_rules(request.get_ref()).map(|a| (a, None)))
            .await
    }

    async fn list_tables(
        &self,
        request: Request<proto::ListTablesRequest>,
    ) -> Result<Response<proto::ListTablesResponse>, Status> {
        self.observe(Method::ListTables, request.metadata(), || Ok((self.list_tables(), None))).await
    }

    async fn commit_seed(
        &self,
        request: Request<proto::CommitSeedRequest>,
    ) -> Result<Response<proto::CommitSeedResponse>, Status> {
        self.observe(Method::CommitSeed, request.metadata(), || self.commit_seed(request.get_ref()).map(recorded)).await
    }

    async fn start_round(
        &self,
        request: Request<proto::StartRoundRequest>,
    ) -> Result<Response<proto::StartRoundResponse>, Status> {
        let peer = Peer::of(&request);
        self.observe(Method::StartRound, request.metadata(), || self.start_round(peer, request.get_ref()).map(recorded))
            .await
    }

    async fn decide(&self, request: Request<proto::DecideRequest>) -> Result<Response<proto::DecideResponse>, Status> {
        let peer = Peer::of(&request);
        self.observe(Method::Decide, request.metadata(), || self.decide(peer, request.get_ref()).map(recorded)).await
    }

    async fn settle(&self, request: Request<proto::SettleRequest>) -> Result<Response<proto::SettleResponse>, Status> {
        let peer = Peer::of(&request);
        self.observe(Method::Settle, request.metadata(), || self.settle(peer, request.get_ref()).map(recorded)).await
    }
}
