//! Requests to validated domain values (once, at the edge) and domain values to responses.
//! Every error names the request field at fault.

use crate::error::EngineError;
use crate::game::{BetLimits, Card, Decision, HandClass, Money, Outcome, Paytable, Round, Rule, Suit, Table};

use crate::proto;

use crate::ids::{IdError, check_client_seed, check_round_id, check_table_id};

/// Checks a required platform round id: 1 to [`crate::ids::MAX_ROUND_ID_BYTES`] bytes, no control
/// characters.
pub(crate) fn required_round_id(field: &'static str, id: &str) -> Result<(), EngineError> {
    if id.is_empty() {
        return Err(EngineError::Missing { field, what: "required: the platform's id of the round" });
    }
    round_id(field, id)
}

/// Checks a table id: empty (the default table) or 1 to [`crate::ids::MAX_TABLE_ID_BYTES`] bytes of
/// `[A-Za-z0-9._-]`.
pub(crate) fn table_id(id: &str) -> Result<(), EngineError> {
    match check_table_id(id) {
        Ok(()) | Err(IdError::Empty) => Ok(()),
        Err(e) => Err(EngineError::InvalidTableId { reason: e.to_string() }),
    }
}

/// Checks an optional platform round id (empty, or as [`required_round_id`]).
pub(crate) fn round_id(field: &'static str, id: &str) -> Result<(), EngineError> {
    match check_round_id(id) {
        Ok(()) | Err(IdError::Empty) => Ok(()),
        Err(e) => Err(EngineError::InvalidRoundId { field, reason: e.to_string().into() }),
    }
}

/// Checks that a required token field is present.
pub(crate) fn required_token(field: &'static str, token: &[u8]) -> Result<(), EngineError> {
    if token.is_empty() { Err(EngineError::Missing { field, what: "required" }) } else { Ok(()) }
}

/// Checks a client seed: 1 to [`crate::ids::MAX_CLIENT_SEED_BYTES`] bytes (UTF-8 is guaranteed by protobuf).
pub(crate) fn client_seed(seed: &str) -> Result<(), EngineError> {
    match check_client_seed(seed) {
        Ok(()) => Ok(()),
        Err(IdError::Empty) => {
            Err(EngineError::Missing { field: "client_seed", what: "required: the player's client seed" })
        }
        Err(e) => Err(EngineError::InvalidClientSeed { reason: format!("{e} of UTF-8") }),
    }
}

/// The table a round is dealt at: the engine's table narrowed to the player's limits
/// ([`BetLimits::for_player`], [`Table::narrowed_to`]).
pub(crate) fn round_table(table: &Table, limits: Option<&proto::Limits>) -> Result<Table, EngineError> {
    let limits =
        limits.ok_or(EngineError::Missing { field: "player_limits", what: "required: the player's bet limits" })?;
    let player =
        BetLimits::for_player(Money(limits.min_bet), Money(limits.max_bet)).map_err(EngineError::PlayerLimits)?;
    Ok(table.narrowed_to(player)?)
}

/// Validated decisions: at least one, known actions, each seat once and within the round.
pub(crate) fn decisions(list: &[proto::SeatDecision], seats: usize) -> Result<Vec<(usize, Decision)>, EngineError> {
    if list.is_empty() {
        return Err(EngineError::Missing { field: "decisions", what: "at least one decision is required" });
    }
    let mut out: Vec<(usize, Decision)> = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let seat = d.seat as usize;
        if seat >= seats {
            return Err(EngineError::UnknownSeat { index: i, seat: d.seat, seats });
        }
        if out.iter().any(|&(s, _)| s == seat) {
            return Err(EngineError::DuplicateSeat { index: i });
        }
        let decision = match proto::Action::try_from(d.action) {
            Ok(proto::Action::Raise) => Decision::Raise,
            Ok(proto::Action::Stand) => Decision::Stand,
            _ => return Err(EngineError::InvalidAction { index: i }),
        };
        out.push((seat, decision));
    }
    Ok(out)
}

/// A card as the API shows it.
pub(crate) fn card(c: Card) -> proto::Card {
    let suit = match c.suit() {
        Suit::Clubs => proto::Suit::Clubs,
        Suit::Diamonds => proto::Suit::Diamonds,
        Suit::Hearts => proto::Suit::Hearts,
        Suit::Spades => proto::Suit::Spades,
    };
    proto::Card { code: c.text().to_owned(), rank: u32::from(c.rank().value()), suit: suit as i32 }
}

pub(crate) fn hand_class(c: HandClass) -> proto::HandClass {
    match c {
        HandClass::Pair => proto::HandClass::Pair,
        HandClass::Consecutive => proto::HandClass::Consecutive,
        HandClass::NonConsecutive(_) => proto::HandClass::NonConsecutive,
    }
}

pub(crate) fn action(d: Decision) -> proto::Action {
    match d {
        Decision::Raise => proto::Action::Raise,
        Decision::Stand => proto::Action::Stand,
    }
}

pub(crate) fn outcome(o: Outcome) -> proto::Outcome {
    match o {
        Outcome::Win => proto::Outcome::Win,
        Outcome::Lose => proto::Outcome::Lose,
        Outcome::Push => proto::Outcome::Push,
    }
}

pub(crate) fn rule(r: Rule) -> proto::Rule {
    match r {
        Rule::ThreeOfAKind => proto::Rule::ThreeOfAKind,
        Rule::PairNoMatch => proto::Rule::PairNoMatch,
        Rule::Consecutive => proto::Rule::Consecutive,
        Rule::ThirdCardBetween => proto::Rule::ThirdCardBetween,
        Rule::ThirdCardMatches => proto::Rule::ThirdCardMatches,
        Rule::ThirdCardOutside => proto::Rule::ThirdCardOutside,
    }
}

/// The round as the table shows it: never the face-down third card.
pub(crate) fn round_view(round: &Round, paytable: &Paytable) -> Result<proto::RoundView, EngineError> {
    let [first, second] = round.cards();
    let class = round.class();
    let spread = class.spread();
    let seats = round
        .seats()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Ok(proto::SeatView {
                seat: i as u32,
                bet: s.bet.0,
                stake: s.stake()?.0,
                decision: s.decision.map_or(proto::Action::Unspecified, action) as i32,
                allowed_actions: round.allowed(i).iter().map(|&d| action(d) as i32).collect(),
            })
        })
        .collect::<Result<_, crate::game::GameError>>()?;
    Ok(proto::RoundView {
        first_card: Some(card(first)),
        second_card: Some(card(second)),
        hand_class: hand_class(class) as i32,
        spread: spread.map_or(0, |s| u32::from(s.get())),
        spread_odds: spread.map_or(0, |s| paytable.spread_odds(s)),
        third_card: round.third().map(card),
        awaiting_decisions: matches!(round, Round::AwaitingDecisions(_)),
        seats,
        // A sandbox round is marked by the service, which knows the round's table.
        sandbox: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::table::MAX_BET;
    use crate::game::{GameError, LimitsError, TableError};

    fn limits(min_bet: u64, max_bet: u64) -> proto::Limits {
        proto::Limits { min_bet, max_bet }
    }

    #[test]
    fn a_player_max_bet_of_u64_max_means_the_tables_limit() {
        let table = Table::default();
        for max_bet in [u64::MAX, MAX_BET + 1, MAX_BET, 30_000] {
            let round = round_table(&table, Some(&limits(500, max_bet))).unwrap();
            assert_eq!(round.limits(), table.limits(), "{max_bet}");
        }
        let narrower = round_table(&table, Some(&limits(1_000, 2_000))).unwrap();
        assert_eq!((narrower.limits().min().0, narrower.limits().max().0), (1_000, 2_000));
    }

    #[test]
    fn player_limits_out_of_order_or_out_of_range_are_player_limit_errors() {
        let table = Table::default();
        for (l, want) in [
            (limits(0, 1_000), LimitsError::MinBetOutOfRange { min_bet: 0 }),
            (limits(MAX_BET + 1, u64::MAX), LimitsError::MinBetOutOfRange { min_bet: MAX_BET + 1 }),
            (limits(2_000, 1_000), LimitsError::MaxBetBelowMinBet { min_bet: 2_000, max_bet: 1_000 }),
        ] {
            assert_eq!(round_table(&table, Some(&l)), Err(EngineError::PlayerLimits(want)));
        }
        let disjoint = round_table(&table, Some(&limits(40_000, u64::MAX))).unwrap_err();
        assert!(
            matches!(disjoint, EngineError::Game(GameError::Table(TableError::LimitsDoNotOverlap { .. }))),
            "{disjoint:?}"
        );
    }

    #[test]
    fn ids_keep_their_request_field_and_reason() {
        assert_eq!(table_id(""), Ok(()));
        let text = |r: Result<(), EngineError>| r.unwrap_err().to_string();
        assert_eq!(text(table_id("a b")), "table_id: only the characters A-Z a-z 0-9 . _ -");
        assert_eq!(text(table_id(&"t".repeat(65))), "table_id: at most 64 bytes");
        assert_eq!(text(round_id("round_id", "a\u{1}")), "round_id: must not contain control characters");
        assert_eq!(text(client_seed(&"s".repeat(1025))), "client_seed: at most 1024 bytes of UTF-8");
        assert!(matches!(table_id("a b"), Err(EngineError::InvalidTableId { .. })));
        assert!(matches!(round_id("round_id", "a\u{1}"), Err(EngineError::InvalidRoundId { field: "round_id", .. })));
        assert!(matches!(client_seed(""), Err(EngineError::Missing { field: "client_seed", .. })));
    }
}
