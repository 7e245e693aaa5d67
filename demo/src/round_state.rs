//! A round's state and a seat's decision as types, with their one conversion to and from the
//! text the database stores (`rounds.state`, the `decision` of each seat in `rounds.seats`)
//! and the browser is shown. Text that names no state is an error, never a panic.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};

/// Where a round is: the platform's write-ahead record (demo/migrations/0001_init.sql).
/// Every non-terminal state names the next engine call or the player's next move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundState {
    /// `CommitSeed` done; commitment and nonce shown; nothing debited.
    Committed,
    /// Bets debited; `StartRound` is next.
    Betting,
    /// `StartRound` done; waiting for the player's raise or stand.
    Dealt,
    /// A decision recorded (a raise debited); `Decide` is next.
    Deciding,
    /// `Settle` is next.
    Settling,
    /// Credited; terminal.
    Settled,
    /// The commitment expired unused; nothing was debited; terminal.
    Expired,
    /// The engine refused to deal; the bets were refunded; terminal.
    Voided,
}

/// Text that is not one of the names [`RoundState::as_str`] or [`Decision::as_str`] give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: unknown value {text:?} (expected one of {expected})")]
pub struct UnknownName {
    /// What was being read (`rounds.state`, a seat's `decision`).
    pub what: &'static str,
    /// The text found.
    pub text: String,
    /// The names allowed, comma-separated.
    pub expected: &'static str,
}

impl RoundState {
    /// Every state, in the order a round can pass through them.
    pub const ALL: [RoundState; 8] = [
        RoundState::Committed,
        RoundState::Betting,
        RoundState::Dealt,
        RoundState::Deciding,
        RoundState::Settling,
        RoundState::Settled,
        RoundState::Expired,
        RoundState::Voided,
    ];

    /// The name stored in `rounds.state` and shown to the browser.
    pub const fn as_str(self) -> &'static str {
        match self {
            RoundState::Committed => "committed",
            RoundState::Betting => "betting",
            RoundState::Dealt => "dealt",
            RoundState::Deciding => "deciding",
            RoundState::Settling => "settling",
            RoundState::Settled => "settled",
            RoundState::Expired => "expired",
            RoundState::Voided => "voided",
        }
    }

    /// The state a stored name stands for.
    pub fn parse(text: &str) -> Result<RoundState, UnknownName> {
        Self::ALL.into_iter().find(|s| s.as_str() == text).ok_or_else(|| UnknownName {
            what: "rounds.state",
            text: text.to_string(),
            expected: "committed, betting, dealt, deciding, settling, settled, expired, voided",
        })
    }

    /// Nothing more happens to the round (the SQL spelling is [`TERMINAL_SQL`]).
    pub const fn is_terminal(self) -> bool {
        matches!(self, RoundState::Settled | RoundState::Expired | RoundState::Voided)
    }

    /// The platform owes the round an engine call (recovery finishes it).
    pub const fn owes_engine_call(self) -> bool {
        matches!(self, RoundState::Betting | RoundState::Deciding | RoundState::Settling)
    }

    /// The round waits for the player: a commitment to deal on, or a hand to decide.
    pub const fn waits_for_player(self) -> bool {
        matches!(self, RoundState::Committed | RoundState::Dealt)
    }
}

/// The terminal states as an SQL list, for `state NOT IN (…)` (the partial index
/// `one_open_round` uses the same list). A test checks it against
/// [`RoundState::is_terminal`].
#[macro_export]
macro_rules! terminal_states_sql {
    () => {
        "('settled', 'expired', 'voided')"
    };
}
/// [`terminal_states_sql!`] as a constant.
pub const TERMINAL_SQL: &str = terminal_states_sql!();

impl std::fmt::Display for RoundState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToSql for RoundState {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for RoundState {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        RoundState::parse(value.as_str()?).map_err(|e| FromSqlError::Other(Box::new(e)))
    }
}

/// A seat's decision, as stored in `rounds.seats` and shown to the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The stake doubled.
    Raise,
    /// The bet stays.
    Stand,
    /// Stood because the round was settled without the player's decision.
    Default,
}

impl Decision {
    /// The name stored and shown.
    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Raise => "raise",
            Decision::Stand => "stand",
            Decision::Default => "default",
        }
    }

    /// The decision a stored name stands for.
    pub fn parse(text: &str) -> Result<Decision, UnknownName> {
        [Decision::Raise, Decision::Stand, Decision::Default]
            .into_iter()
            .find(|d| d.as_str() == text)
            .ok_or_else(|| UnknownName { what: "decision", text: text.to_string(), expected: "raise, stand, default" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_through_its_name_and_serde() {
        for s in RoundState::ALL {
            assert_eq!(RoundState::parse(s.as_str()), Ok(s));
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::Value::String(s.as_str().into()));
        }
        for d in [Decision::Raise, Decision::Stand, Decision::Default] {
            assert_eq!(Decision::parse(d.as_str()), Ok(d));
            assert_eq!(serde_json::to_value(d).unwrap(), serde_json::Value::String(d.as_str().into()));
        }
    }

    #[test]
    fn unknown_text_is_an_error_naming_the_field_and_the_text() {
        let e = RoundState::parse("Settled").unwrap_err();
        assert_eq!((e.what, e.text.as_str()), ("rounds.state", "Settled"));
        assert!(e.to_string().contains("\"Settled\""), "{e}");
        assert!(Decision::parse("double").unwrap_err().to_string().starts_with("decision:"));
        assert!(serde_json::from_str::<Decision>("\"double\"").is_err());
    }

    #[test]
    fn the_sql_list_of_terminal_states_is_the_enum_s() {
        let listed: Vec<&str> = TERMINAL_SQL
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(|s| s.trim().trim_matches('\''))
            .collect();
        let terminal: Vec<&str> = RoundState::ALL.into_iter().filter(|s| s.is_terminal()).map(|s| s.as_str()).collect();
        assert_eq!(listed, terminal);
    }

    #[test]
    fn the_database_accepts_every_state_and_an_unknown_one_reads_as_an_error() {
        let conn = crate::db::open_in_memory().unwrap();
        // The schema's CHECK lists exactly the enum's states: each one is accepted...
        conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = OFF;").unwrap();
        for (k, s) in RoundState::ALL.into_iter().enumerate() {
            let inserted = conn.execute(
                "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                     commit_expires_ms, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, 0, 't', 1, 'c', x'00', 0, 0, 0)",
                rusqlite::params![format!("r{k}"), i64::try_from(k).unwrap(), s],
            );
            assert_eq!(inserted.unwrap(), 1, "{s}");
            let back: RoundState = conn
                .query_row("SELECT state FROM rounds WHERE round_id = ?1", [format!("r{k}")], |r| r.get(0))
                .unwrap();
            assert_eq!(back, s);
        }
        // ...and other text is refused by the CHECK.
        let refused = conn.execute(
            "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                 commit_expires_ms, created_ms, updated_ms)
             VALUES ('x', 99, 'paused', 0, 't', 1, 'c', x'00', 0, 0, 0)",
            [],
        );
        assert!(refused.is_err());
        // Text that got in anyway (the CHECK switched off) is a read error, not a panic.
        conn.execute_batch("PRAGMA ignore_check_constraints = ON;").unwrap();
        conn.execute(
            "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                 commit_expires_ms, created_ms, updated_ms)
             VALUES ('x', 99, 'paused', 0, 't', 1, 'c', x'00', 0, 0, 0)",
            [],
        )
        .unwrap();
        let read = conn.query_row("SELECT state FROM rounds WHERE round_id = 'x'", [], |r| r.get::<_, RoundState>(0));
        let message = read.unwrap_err().to_string();
        assert!(message.contains("rounds.state: unknown value \"paused\""), "{message}");
    }
}
