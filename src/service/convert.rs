//! Requests to validated domain values (once, at the edge) and domain values to responses.
//! Every error names the request field at fault.

use crate::error::EngineError;
use crate::game::table::MAX_BET;
use crate::game::{BetLimits, Card, Decision, HandClass, Money, Outcome, Paytable, Round, Rule, Suit, Table};

use super::proto;

/// Longest client seed, in bytes of UTF-8.
pub const MAX_CLIENT_SEED_BYTES: usize = 1024;
/// Longest platform round id, in bytes of UTF-8.
pub const MAX_ROUND_ID_BYTES: usize = 128;
/// Longest table id, in bytes (`[A-Za-z0-9._-]`).
pub const MAX_TABLE_ID_BYTES: usize = 64;

/// Checks a required platform round id: 1 to [`MAX_ROUND_ID_BYTES`] bytes, no control
/// characters.
pub fn required_round_id(field: &'static str, id: &str) -> Result<(), EngineError> {
    if id.is_empty() {
        return Err(EngineError::invalid(field, "required: the platform's id of the round"));
    }
    round_id(field, id)
}

/// Checks a table id: empty (the default table) or 1 to [`MAX_TABLE_ID_BYTES`] bytes of
/// `[A-Za-z0-9._-]`.
pub fn table_id(id: &str) -> Result<(), EngineError> {
    if id.len() > MAX_TABLE_ID_BYTES {
        return Err(EngineError::invalid("table_id", format!("at most {MAX_TABLE_ID_BYTES} bytes")));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        return Err(EngineError::invalid("table_id", "only the characters A-Z a-z 0-9 . _ -"));
    }
    Ok(())
}

/// Checks an optional platform round id (empty, or as [`required_round_id`]).
pub fn round_id(field: &'static str, id: &str) -> Result<(), EngineError> {
    if id.len() > MAX_ROUND_ID_BYTES {
        return Err(EngineError::invalid(field, format!("at most {MAX_ROUND_ID_BYTES} bytes")));
    }
    if id.chars().any(char::is_control) {
        return Err(EngineError::invalid(field, "must not contain control characters"));
    }
    Ok(())
}

/// Checks that a required token field is present.
pub fn required_token(field: &'static str, token: &[u8]) -> Result<(), EngineError> {
    if token.is_empty() { Err(EngineError::invalid(field, "required")) } else { Ok(()) }
}

/// Checks a client seed: 1 to [`MAX_CLIENT_SEED_BYTES`] bytes (UTF-8 is guaranteed by protobuf).
pub fn client_seed(seed: &str) -> Result<(), EngineError> {
    if seed.is_empty() {
        return Err(EngineError::invalid("client_seed", "required: the player's client seed"));
    }
    if seed.len() > MAX_CLIENT_SEED_BYTES {
        return Err(EngineError::invalid("client_seed", format!("at most {MAX_CLIENT_SEED_BYTES} bytes of UTF-8")));
    }
    Ok(())
}

/// The table a round is dealt at: the engine's table narrowed to the player's limits.
///
/// `player_limits.min_bet` is 1 to [`MAX_BET`]; `max_bet` is at least `min_bet` and may be
/// anything above, `u64::MAX` included ("no limit of the platform's own"): a player maximum
/// above [`MAX_BET`] (which no table exceeds) means the table's maximum applies.
pub fn round_table(table: &Table, limits: Option<&proto::Limits>) -> Result<Table, EngineError> {
    let limits = limits.ok_or_else(|| EngineError::invalid("player_limits", "required: the player's bet limits"))?;
    if limits.min_bet == 0 || limits.min_bet > MAX_BET {
        return Err(EngineError::out_of_range("player_limits.min_bet", limits.min_bet, 1, MAX_BET));
    }
    if limits.max_bet < limits.min_bet {
        return Err(EngineError::out_of_range("player_limits.max_bet", limits.max_bet, limits.min_bet, u64::MAX));
    }
    let player = BetLimits::new(Money(limits.min_bet), Money(limits.max_bet.min(MAX_BET)))?;
    let both =
        table.limits().intersect(player).ok_or(EngineError::LimitsDoNotOverlap { player, table: table.limits() })?;
    // Narrower limits than a valid table's: always a valid table.
    table.with_limits(both)
}

/// Validated decisions: at least one, known actions, each seat once and within the round.
pub fn decisions(list: &[proto::SeatDecision], seats: usize) -> Result<Vec<(usize, Decision)>, EngineError> {
    if list.is_empty() {
        return Err(EngineError::invalid("decisions", "at least one decision is required"));
    }
    let mut out: Vec<(usize, Decision)> = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let seat = d.seat as usize;
        if seat >= seats {
            return Err(EngineError::out_of_range(format!("decisions[{i}].seat"), d.seat, 0, seats as u64 - 1));
        }
        if out.iter().any(|&(s, _)| s == seat) {
            return Err(EngineError::invalid(format!("decisions[{i}].seat"), "the same seat appears twice"));
        }
        let decision = match proto::Action::try_from(d.action) {
            Ok(proto::Action::Raise) => Decision::Raise,
            Ok(proto::Action::Stand) => Decision::Stand,
            _ => {
                return Err(EngineError::invalid(
                    format!("decisions[{i}].action"),
                    "must be ACTION_RAISE or ACTION_STAND",
                ));
            }
        };
        out.push((seat, decision));
    }
    Ok(out)
}

/// A card as the API shows it.
pub fn card(c: Card) -> proto::Card {
    let suit = match c.suit() {
        Suit::Clubs => proto::Suit::Clubs,
        Suit::Diamonds => proto::Suit::Diamonds,
        Suit::Hearts => proto::Suit::Hearts,
        Suit::Spades => proto::Suit::Spades,
    };
    proto::Card { code: c.text().to_owned(), rank: u32::from(c.rank().value()), suit: suit as i32 }
}

pub fn hand_class(c: HandClass) -> proto::HandClass {
    match c {
        HandClass::Pair => proto::HandClass::Pair,
        HandClass::Consecutive => proto::HandClass::Consecutive,
        HandClass::NonConsecutive(_) => proto::HandClass::NonConsecutive,
    }
}

pub fn action(d: Decision) -> proto::Action {
    match d {
        Decision::Raise => proto::Action::Raise,
        Decision::Stand => proto::Action::Stand,
    }
}

pub fn outcome(o: Outcome) -> proto::Outcome {
    match o {
        Outcome::Win => proto::Outcome::Win,
        Outcome::Lose => proto::Outcome::Lose,
        Outcome::Push => proto::Outcome::Push,
    }
}

pub fn rule(r: Rule) -> proto::Rule {
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
pub fn round_view(round: &Round, paytable: &Paytable) -> Result<proto::RoundView, EngineError> {
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
        .collect::<Result<_, EngineError>>()?;
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
    fn player_limits_out_of_order_or_out_of_range_name_the_field() {
        let table = Table::default();
        for (l, field) in [
            (limits(0, 1_000), "player_limits.min_bet"),
            (limits(MAX_BET + 1, u64::MAX), "player_limits.min_bet"),
            (limits(2_000, 1_000), "player_limits.max_bet"),
        ] {
            let err = round_table(&table, Some(&l)).unwrap_err();
            assert!(matches!(err, EngineError::OutOfRange { .. }), "{err:?}");
            assert_eq!(err.field(), Some(field), "{err}");
        }
        let disjoint = round_table(&table, Some(&limits(40_000, u64::MAX))).unwrap_err();
        assert!(matches!(disjoint, EngineError::LimitsDoNotOverlap { .. }), "{disjoint:?}");
    }
}
