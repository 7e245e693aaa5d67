//! The engine, as a platform sees it: a gRPC client generated from the engine's public
//! schema (`proto/reddog/v1/reddog.proto`, compiled by this crate's `build.rs`) and a thin
//! wrapper that says which failures are definite refusals and which may be retried.

use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

/// The generated protobuf types and client of `reddog.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("reddog.v1");
}

use pb::red_dog_client::RedDogClient;

/// What the platform needs from `GetRules`.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Decks in the shoe.
    pub decks: u32,
    /// Table limits (minor units).
    pub min_bet: u64,
    /// Table limits (minor units).
    pub max_bet: u64,
    /// Odds for spreads 1..=11.
    pub spread_odds: Vec<u32>,
    /// Three-of-a-kind odds.
    pub three_of_a_kind_odds: u32,
    /// Deal algorithm name.
    pub algorithm: String,
    /// How long a commitment lasts.
    pub commitment_ttl_secs: u64,
    /// The longest client seed the engine accepts.
    pub max_client_seed_bytes: u32,
    /// The raise rule of the best strategy, in words.
    pub raise_rule: String,
    /// Most seats one deal may have (at least 1).
    pub max_seats: u32,
    /// The table's currency (ISO 4217; `XXX` when none is configured).
    pub currency: String,
    /// Decimals of the minor unit (2 for USD and EUR).
    pub minor_unit_exponent: u32,
    /// The engine's public keys that sign receipts (empty when it signs none).
    pub signing_keys: Vec<SigningKey>,
}

/// A public key the engine signs receipts with (`GetRules` `signing_keys`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SigningKey {
    /// The id Settle answers name in `signing_key_id`.
    pub key_id: String,
    /// `ed25519`.
    pub algorithm: String,
    /// The 32-byte public key, 64 hex.
    pub public_key_hex: String,
}

/// A fresh commitment for one round.
#[derive(Debug, Clone)]
pub struct Commitment {
    /// SHA-256 of the server seed (hex): shown to the player before the client seed is fixed.
    pub commitment: String,
    /// The sealed seed: stored by the platform, never sent to the browser.
    pub token: Vec<u8>,
    /// When the engine stops accepting the token (Unix ms).
    pub expires_ms: i64,
    /// The table the round will be dealt at (`default`).
    pub table_id: String,
    /// The deck count the round will be dealt from.
    pub decks: u32,
    /// The table's rules digest (64 hex) the engine bound into the commitment: shown to the
    /// player with the commitment, and checked against the reveal's.
    pub rules_digest: String,
}

/// How an engine call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine answered and refused the request (INVALID_ARGUMENT, OUT_OF_RANGE,
    /// FAILED_PRECONDITION, …): the call had no effect; retrying the same request is refused
    /// again.
    #[error("engine refused: {0}")]
    Refused(tonic::Status),
    /// No definite answer (unreachable, timeout, cancelled, internal): the call may or may
    /// not have happened. The engine's calls are deterministic, so the platform retries the
    /// same request later.
    #[error("engine unavailable: {0}")]
    Unavailable(tonic::Status),
}

impl From<tonic::Status> for EngineError {
    fn from(status: tonic::Status) -> Self {
        use tonic::Code::*;
        match status.code() {
            InvalidArgument | OutOfRange | FailedPrecondition | NotFound | AlreadyExists | PermissionDenied
            | Unauthenticated | Unimplemented => EngineError::Refused(status),
            _ => EngineError::Unavailable(status),
        }
    }
}

/// A cloneable handle to the engine.
#[derive(Clone)]
pub struct Engine {
    client: RedDogClient<Channel>,
}

impl Engine {
    /// A client for `url` (e.g. `http://127.0.0.1:50051`). Connects lazily; every call has a
    /// 10-second deadline.
    pub fn new(url: &str) -> Result<Self, tonic::transport::Error> {
        let endpoint = Endpoint::from_shared(url.to_string())?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10));
        Ok(Self { client: RedDogClient::new(endpoint.connect_lazy()) })
    }

    /// `GetRules`.
    pub async fn rules(&self) -> Result<Rules, EngineError> {
        // The default table (a platform with several tables would ask for each).
        let req = pb::GetRulesRequest { table_id: String::new() };
        let r = self.client.clone().get_rules(req).await?.into_inner();
        let currency = r.currency.clone().unwrap_or_default();
        let limits = r.table_limits.unwrap_or_default();
        Ok(Rules {
            decks: r.decks,
            min_bet: limits.min_bet,
            max_bet: limits.max_bet,
            spread_odds: r.spread_odds.iter().map(|s| s.odds).collect(),
            three_of_a_kind_odds: r.three_of_a_kind_odds,
            algorithm: r.fairness_algorithm,
            commitment_ttl_secs: r.commitment_ttl_secs,
            max_client_seed_bytes: r.max_client_seed_bytes,
            raise_rule: r.raise_rule,
            max_seats: r.max_seats.max(1),
            currency: currency.code,
            // Absent only from an engine before explicit presence, which left out a 0.
            minor_unit_exponent: currency.minor_unit_exponent.unwrap_or(0),
            signing_keys: r
                .signing_keys
                .into_iter()
                .map(|k| SigningKey { key_id: k.key_id, algorithm: k.algorithm, public_key_hex: k.public_key_hex })
                .collect(),
        })
    }

    /// `CommitSeed` for one round, bound to its round id and nonce (and the default table):
    /// the engine's `StartRound` refuses any other round id, nonce or table for this
    /// commitment.
    pub async fn commit(&self, round_id: &str, nonce: u64) -> Result<Commitment, EngineError> {
        let req = pb::CommitSeedRequest { round_id: round_id.to_string(), nonce, table_id: String::new() };
        let r = self.client.clone().commit_seed(req).await?.into_inner();
        if r.nonce != nonce || r.round_id != round_id {
            // The echo is what the player is shown; it must be what the platform asked for.
            return Err(EngineError::Refused(tonic::Status::internal("CommitSeed echoed another round id or nonce")));
        }
        Ok(Commitment {
            commitment: r.commitment,
            token: r.commitment_token,
            expires_ms: r.expires_at_unix_ms,
            table_id: r.table_id,
            decks: r.decks,
            rules_digest: r.rules_digest,
        })
    }

    /// `StartRound` with one seat per bet, in seat order.
    pub async fn start(
        &self,
        commitment_token: Vec<u8>,
        client_seed: &str,
        nonce: u64,
        round_id: &str,
        bets: &[u64],
        limits: (u64, u64),
    ) -> Result<pb::StartRoundResponse, EngineError> {
        let req = pb::StartRoundRequest {
            sandbox_cards: vec![],
            commitment_token,
            client_seed: client_seed.to_string(),
            nonce,
            round_id: round_id.to_string(),
            seats: bets.iter().map(|&bet| pb::SeatBet { bet }).collect(),
            player_limits: Some(pb::Limits { min_bet: limits.0, max_bet: limits.1 }),
            // Empty: the table the commitment was made for.
            table_id: String::new(),
        };
        Ok(self.client.clone().start_round(req).await?.into_inner())
    }

    /// `Decide` for one or more seats: `(seat, raise)` in ascending seat order.
    pub async fn decide(
        &self,
        round_token: Vec<u8>,
        round_id: &str,
        decisions: &[(u32, bool)],
    ) -> Result<pb::DecideResponse, EngineError> {
        let action = |raise: bool| if raise { pb::Action::Raise } else { pb::Action::Stand };
        let req = pb::DecideRequest {
            round_token,
            decisions: decisions
                .iter()
                .map(|&(seat, raise)| pb::SeatDecision { seat, action: action(raise) as i32 })
                .collect(),
            round_id: round_id.to_string(),
        };
        Ok(self.client.clone().decide(req).await?.into_inner())
    }

    /// `Settle`.
    pub async fn settle(&self, round_token: Vec<u8>, round_id: &str) -> Result<pb::SettleResponse, EngineError> {
        let req = pb::SettleRequest { round_token, round_id: round_id.to_string() };
        Ok(self.client.clone().settle(req).await?.into_inner())
    }
}

/// The engine's hand class as the platform stores and shows it.
pub fn hand_class_name(v: i32) -> &'static str {
    match pb::HandClass::try_from(v) {
        Ok(pb::HandClass::Pair) => "pair",
        Ok(pb::HandClass::Consecutive) => "consecutive",
        Ok(pb::HandClass::NonConsecutive) => "non_consecutive",
        _ => "unknown",
    }
}

/// The engine's outcome as the platform stores and shows it.
pub fn outcome_name(v: i32) -> &'static str {
    match pb::Outcome::try_from(v) {
        Ok(pb::Outcome::Win) => "win",
        Ok(pb::Outcome::Lose) => "lose",
        Ok(pb::Outcome::Push) => "push",
        _ => "unknown",
    }
}

/// The engine's rule as the platform stores and shows it.
pub fn rule_name(v: i32) -> &'static str {
    match pb::Rule::try_from(v) {
        Ok(pb::Rule::ThreeOfAKind) => "three_of_a_kind",
        Ok(pb::Rule::PairNoMatch) => "pair_no_match",
        Ok(pb::Rule::Consecutive) => "consecutive",
        Ok(pb::Rule::ThirdCardBetween) => "third_card_between",
        Ok(pb::Rule::ThirdCardMatches) => "third_card_matches",
        Ok(pb::Rule::ThirdCardOutside) => "third_card_outside",
        _ => "unknown",
    }
}
