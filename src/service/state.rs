//! What the tokens carry: a committed seed with its expiry, and a whole round with
//! everything its reveal needs. The payloads are protobuf messages private to the engine;
//! only their sealed form ever leaves it.

use zeroize::Zeroize;

use crate::error::EngineError;
use crate::fairness::ServerSeed;
use crate::game::{Card, Decision, Decks, Money, Paytable, Phase, Round, RoundSnapshot, Seat, Spread};

/// The sealed content of a commitment token.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CommitmentPayload {
    /// The 32-byte server seed.
    #[prost(bytes = "vec", tag = "1")]
    pub server_seed: Vec<u8>,
    /// Unix milliseconds after which StartRound refuses the token.
    #[prost(int64, tag = "2")]
    pub expires_at_unix_ms: i64,
}

impl CommitmentPayload {
    /// The seed, if the payload holds a well-formed one.
    pub fn seed(&self) -> Result<ServerSeed, EngineError> {
        let bytes: [u8; 32] = self.server_seed.as_slice().try_into().map_err(|_| EngineError::InvalidToken)?;
        Ok(ServerSeed::from_bytes(bytes))
    }
}

impl Drop for CommitmentPayload {
    fn drop(&mut self) {
        self.server_seed.zeroize();
    }
}

/// The sealed content of a round token.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RoundPayload {
    #[prost(bytes = "vec", tag = "1")]
    pub server_seed: Vec<u8>,
    #[prost(string, tag = "2")]
    pub client_seed: String,
    #[prost(uint64, tag = "3")]
    pub nonce: u64,
    #[prost(uint32, tag = "4")]
    pub decks: u32,
    #[prost(string, tag = "5")]
    pub round_id: String,
    /// `true` once every card is face up.
    #[prost(bool, tag = "6")]
    pub complete: bool,
    /// Card codes: the two face-up cards, then the third card if one is dealt (face down
    /// while awaiting decisions).
    #[prost(bytes = "vec", tag = "7")]
    pub cards: Vec<u8>,
    /// Original bets, one per seat.
    #[prost(uint64, repeated, tag = "8")]
    pub bets: Vec<u64>,
    /// One byte per seat: 0 undecided, 1 raise, 2 stand.
    #[prost(bytes = "vec", tag = "9")]
    pub decisions: Vec<u8>,
    /// The paytable the round was dealt under: odds for spreads 1..=11, then three of a kind.
    #[prost(uint32, repeated, tag = "10")]
    pub paytable: Vec<u32>,
}

impl Drop for RoundPayload {
    fn drop(&mut self) {
        self.server_seed.zeroize();
    }
}

/// A round with everything needed to continue, settle and reveal it.
#[derive(Debug, Clone)]
pub struct RoundState {
    pub round: Round,
    pub seed: ServerSeed,
    pub client_seed: String,
    pub nonce: u64,
    pub decks: Decks,
    pub round_id: String,
    pub paytable: Paytable,
}

impl RoundState {
    /// The payload to seal.
    pub fn to_payload(&self) -> RoundPayload {
        let snap = self.round.snapshot();
        let mut cards = Vec::with_capacity(3);
        cards.extend(snap.cards.iter().map(|c| c.code()));
        cards.extend(snap.third.map(|c| c.code()));
        let mut paytable = Vec::with_capacity(12);
        paytable.extend(Spread::all().map(|s| self.paytable.spread_odds(s)));
        paytable.push(self.paytable.three_of_a_kind_odds());
        RoundPayload {
            server_seed: self.seed.expose().to_vec(),
            client_seed: self.client_seed.clone(),
            nonce: self.nonce,
            decks: u32::from(self.decks.get()),
            round_id: self.round_id.clone(),
            complete: snap.phase == Phase::Complete,
            cards,
            bets: snap.seats.iter().map(|s| s.bet.0).collect(),
            decisions: snap
                .seats
                .iter()
                .map(|s| match s.decision {
                    None => 0,
                    Some(Decision::Raise) => 1,
                    Some(Decision::Stand) => 2,
                })
                .collect(),
            paytable,
        }
    }

    /// Rebuilds the round from an opened payload. A payload no genuine token could hold is
    /// an invalid token, never a panic.
    pub fn from_payload(p: RoundPayload) -> Result<RoundState, EngineError> {
        let bad = || EngineError::InvalidToken;
        let seed: [u8; 32] = p.server_seed.as_slice().try_into().map_err(|_| bad())?;
        let card = |i: usize| p.cards.get(i).and_then(|&c| Card::from_code(c));
        let cards = [card(0).ok_or_else(bad)?, card(1).ok_or_else(bad)?];
        let third = match p.cards.len() {
            2 => None,
            3 => Some(card(2).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        if p.bets.len() != p.decisions.len() || p.paytable.len() != 12 {
            return Err(bad());
        }
        let seats = p
            .bets
            .iter()
            .zip(&p.decisions)
            .map(|(&bet, &d)| {
                let decision = match d {
                    0 => None,
                    1 => Some(Decision::Raise),
                    2 => Some(Decision::Stand),
                    _ => return Err(bad()),
                };
                Ok(Seat { bet: Money(bet), decision })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let phase = if p.complete { Phase::Complete } else { Phase::AwaitingDecisions };
        let round = Round::restore(RoundSnapshot { phase, cards, third, seats }).map_err(|_| bad())?;
        let mut spread = [0u32; 11];
        spread.copy_from_slice(&p.paytable[..11]);
        let paytable = Paytable::new(spread, p.paytable[11]).map_err(|_| bad())?;
        let decks = Decks::new(p.decks).map_err(|_| bad())?;
        Ok(RoundState {
            round,
            seed: ServerSeed::from_bytes(seed),
            client_seed: p.client_seed.clone(),
            nonce: p.nonce,
            decks,
            round_id: p.round_id.clone(),
            paytable,
        })
    }

    /// The cards the round has dealt, in order: two, or three once the third is dealt
    /// (face up or not). These are the first cards of the fair shoe.
    pub fn dealt_cards(&self) -> Vec<Card> {
        let snap = self.round.snapshot();
        let mut v = snap.cards.to_vec();
        v.extend(snap.third);
        v
    }
}
