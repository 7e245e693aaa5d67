//! Sandbox tables: test tables where a platform asks for the deal it needs.
//!
//! A table configured with `"sandbox": true` is served only by an engine started with
//! `--allow-sandbox` ([`refuse_without_flag`] stops the start-up otherwise, naming the
//! table). At such a table `StartRound` accepts `sandbox_cards`, the deal to use instead of
//! the fair shoe ([`requested_deal`]); every other table refuses them with
//! `FAILED_PRECONDITION` on `sandbox_cards`.
//!
//! Every round at a sandbox table is a sandbox round, requested deal or not: its commitment
//! token and round token carry `sandbox`, its answers show `round.sandbox`, its audit records
//! say `sandbox: true`, and its reveal is the version-2 reveal under the format
//! [`SANDBOX_REVEAL_FORMAT`], which every verifier refuses — a sandbox round never verifies
//! as a fair round.
//!
//! The requested deal, `sandbox_cards` (the card codes of `docs/FAIRNESS.md`, e.g. `7h`):
//! the two face-up cards then the third. Exactly 2 cards when the first two are consecutive
//! (no third card is dealt, as in a fair round), exactly 3 otherwise; each card at most as
//! often as the table's shoe holds it (once per deck). The rules then play the round exactly
//! as a fair one: decisions, settlement and payouts are the game core's.

use crate::error::EngineError;
use crate::game::{Card, Decks, HandClass, StackedDeck};
use crate::service::ops::metrics::MetricsRegistry;
use crate::service::rules::tables::Tables;

pub(crate) use crate::fairness::SANDBOX_REVEAL_FORMAT;

/// The request field of the requested deal.
pub(crate) const FIELD: &str = "sandbox_cards";

/// Refuses a configuration with a sandbox table on an engine started without
/// `--allow-sandbox`, naming the first such table.
pub(crate) fn refuse_without_flag(tables: &Tables, allow_sandbox: bool) -> Result<(), String> {
    match tables.iter().find(|t| t.sandbox) {
        Some(t) if !allow_sandbox => Err(format!(
            "table {:?} is marked \"sandbox\": true (requested deals, never fair rounds), but the engine was \
             started without --allow-sandbox; add the flag on a test engine, or remove the table (never in \
             production)",
            t.id
        )),
        _ => Ok(()),
    }
}

/// Publishes `reddog_table_sandbox{table}` in `metrics`: 1 for a sandbox table, 0 for a fair
/// one. Every per-table metric carries the `table` label, so dashboards and alerts leave
/// sandbox rounds out with `unless on(table) reddog_table_sandbox == 1`.
pub(crate) fn register_metrics(tables: &Tables, metrics: &MetricsRegistry) {
    metrics.describe_gauge(
        "reddog_table_sandbox",
        "1 for a sandbox table (requested deals, never fair rounds), 0 for a fair table",
    );
    for t in tables.iter() {
        metrics.gauge("reddog_table_sandbox", &[("table", t.id.clone())]).set(if t.sandbox { 1.0 } else { 0.0 });
    }
}

/// The precondition a commitment and its table must meet: a commitment made at a sandbox
/// table deals only there, and a fair one only at a fair table (the table may have been
/// re-configured between `CommitSeed` and `StartRound`).
pub(crate) fn check_commitment(
    committed_sandbox: bool,
    table_sandbox: bool,
    table_id: &str,
) -> Result<(), EngineError> {
    if committed_sandbox == table_sandbox {
        return Ok(());
    }
    Err(EngineError::SandboxChanged { committed_sandbox, table_id: table_id.to_string() })
}

/// The deal `sandbox_cards` asks for, as a stacked deck, or `None` for a fair deal (an empty
/// list). Refused: any card at a table that is not a sandbox table (`FAILED_PRECONDITION`),
/// a card that is not a canonical code, the wrong number of cards for the hand, or a card
/// more often than a shoe of `decks` holds it (`INVALID_ARGUMENT`).
pub(crate) fn requested_deal(
    cards: &[String],
    sandbox_table: bool,
    table_id: &str,
    decks: Decks,
) -> Result<Option<StackedDeck>, EngineError> {
    if cards.is_empty() {
        return Ok(None);
    }
    if !sandbox_table {
        return Err(EngineError::NotASandboxTable { table_id: table_id.to_string() });
    }
    if cards.len() > 3 {
        return Err(cards_error(FIELD, format!("{} cards: a round deals 2 or 3", cards.len())));
    }
    let parsed = parse_cards(cards, decks)?;
    let consecutive = parsed.len() >= 2 && HandClass::of(parsed[0], parsed[1]) == HandClass::Consecutive;
    match (parsed.len(), consecutive) {
        (2, true) | (3, false) => Ok(Some(StackedDeck::new(parsed))),
        (3, true) => Err(cards_error(
            FIELD,
            format!("{} {} is consecutive: no third card is dealt, so give exactly 2 cards", parsed[0], parsed[1]),
        )),
        (2, false) => Err(cards_error(
            FIELD,
            format!("{} {} is not consecutive: give the third card too (3 cards)", parsed[0], parsed[1]),
        )),
        _ => Err(cards_error(FIELD, "1 card: a round deals 2 or 3")),
    }
}

/// The cards `cards` names, in order; an error names the first that is not a card code, or
/// that a shoe of `decks` holds fewer times than it is given.
fn parse_cards(cards: &[String], decks: Decks) -> Result<Vec<Card>, EngineError> {
    let mut parsed = Vec::with_capacity(3);
    for (i, text) in cards.iter().enumerate() {
        let card = Card::from_text(text).ok_or_else(|| {
            cards_error(format!("{FIELD}[{i}]"), format!("{text:?} is not a card code like \"7h\" or \"Tc\""))
        })?;
        let held = parsed.iter().filter(|&&c| c == card).count() + 1;
        if held > usize::from(decks.get()) {
            return Err(cards_error(
                format!("{FIELD}[{i}]"),
                format!("{text} appears {held} times but a {}-deck shoe holds it {} time(s)", decks.get(), decks.get()),
            ));
        }
        parsed.push(card);
    }
    Ok(parsed)
}

/// A malformed requested deal at a sandbox table.
fn cards_error(field: impl Into<std::borrow::Cow<'static, str>>, reason: impl Into<String>) -> EngineError {
    EngineError::InvalidSandboxCards { field: field.into(), reason: reason.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::{CardSource, Money, Round, Table};

    fn cards(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn field_of(err: &EngineError) -> String {
        err.field().unwrap_or_default().into_owned()
    }

    #[test]
    fn a_requested_deal_deals_exactly_those_cards() {
        for (list, class) in [
            (&["7h", "7d", "7s"][..], HandClass::Pair),
            (&["9d", "Ts"][..], HandClass::Consecutive),
            (&["2c", "Ad", "9h"][..], HandClass::of("2c".parse().unwrap(), "Ad".parse().unwrap())),
        ] {
            let mut deck = requested_deal(&cards(list), true, "sb", Decks::ONE).unwrap().unwrap();
            let round = Round::start(&Table::default(), &[Money(500)], &mut deck).unwrap();
            assert_eq!(round.class(), class);
            let dealt: Vec<String> =
                round.cards().iter().chain(round.dealt_third().as_ref()).map(|c| c.to_string()).collect();
            assert_eq!(dealt, cards(list));
        }
        assert!(requested_deal(&[], true, "sb", Decks::ONE).unwrap().is_none());
        let mut two_decks = requested_deal(&cards(&["Ah", "Ah", "5c"]), true, "sb", Decks::new(2).unwrap()).unwrap();
        assert_eq!(two_decks.as_mut().unwrap().draw().to_string(), "Ah");
    }

    #[test]
    fn a_requested_deal_at_a_fair_table_is_a_failed_precondition_on_sandbox_cards() {
        let err = requested_deal(&cards(&["7h", "7d", "7s"]), false, "default", Decks::ONE).unwrap_err();
        assert!(matches!(err, EngineError::NotASandboxTable { .. }), "{err:?}");
        assert_eq!(field_of(&err), "sandbox_cards");
        assert!(err.to_string().contains("not a sandbox table"), "{err}");
    }

    #[test]
    fn malformed_requested_deals_name_the_card_at_fault() {
        let cases: [(&[&str], Decks, &str); 7] = [
            (&["7h", "7h", "7s"], Decks::ONE, "sandbox_cards[1]"),
            (&["Ah", "Ah", "Ah"], Decks::new(2).unwrap(), "sandbox_cards[2]"),
            (&["7h", "x", "7s"], Decks::ONE, "sandbox_cards[1]"),
            (&["10h", "2c", "5d"], Decks::ONE, "sandbox_cards[0]"),
            (&["9d", "Ts", "2c"], Decks::ONE, "sandbox_cards"),
            (&["2d", "Ts"], Decks::ONE, "sandbox_cards"),
            (&["2d"], Decks::ONE, "sandbox_cards"),
        ];
        for (list, decks, field) in cases {
            let err = requested_deal(&cards(list), true, "sb", decks).unwrap_err();
            assert!(matches!(err, EngineError::InvalidSandboxCards { .. }), "{list:?}: {err:?}");
            assert_eq!(field_of(&err), field, "{list:?}: {err}");
        }
        let four = requested_deal(&cards(&["2c", "3c", "4c", "5c"]), true, "sb", Decks::ONE).unwrap_err();
        assert_eq!(field_of(&four), "sandbox_cards");
    }

    #[test]
    fn a_sandbox_table_is_refused_without_the_flag_naming_it() {
        let tables = Tables::from_json(r#"{"tables":{"default":{},"lab":{"sandbox":true}}}"#).unwrap();
        let err = refuse_without_flag(&tables, false).unwrap_err();
        assert!(err.contains("\"lab\"") && err.contains("--allow-sandbox"), "{err}");
        assert!(refuse_without_flag(&tables, true).is_ok());
        let fair = Tables::from_json(r#"{"tables":{"default":{}}}"#).unwrap();
        assert!(refuse_without_flag(&fair, false).is_ok());
    }

    #[test]
    fn a_commitment_deals_only_at_a_table_of_its_own_kind() {
        assert!(check_commitment(true, true, "lab").is_ok());
        assert!(check_commitment(false, false, "default").is_ok());
        for (committed, table) in [(true, false), (false, true)] {
            let err = check_commitment(committed, table, "lab").unwrap_err();
            assert_eq!(field_of(&err), "commitment_token");
        }
    }
}
