//! The `GetRules` answer, computed once at startup from the table configuration.

use std::time::Duration;

use super::convert::MAX_CLIENT_SEED_BYTES;
use super::proto;
use crate::fairness::{ALGORITHM, ALGORITHM_VERSION};
use crate::game::{MAX_SEATS, Spread, Table};

/// The rules of `table` as the API states them.
pub fn rules(table: &Table, commitment_ttl: Duration) -> proto::GetRulesResponse {
    let (rtp_exact, rtp_decimal, raise_rule) = rtp(table);
    proto::GetRulesResponse {
        decks: u32::from(table.decks.get()),
        spread_odds: Spread::all()
            .map(|s| proto::SpreadOdds { spread: u32::from(s.get()), odds: table.paytable.spread_odds(s) })
            .collect(),
        three_of_a_kind_odds: table.paytable.three_of_a_kind_odds(),
        table_limits: Some(proto::Limits { min_bet: table.limits.min().0, max_bet: table.limits.max().0 }),
        max_seats: MAX_SEATS as u32,
        rtp_exact,
        rtp_decimal,
        raise_rule,
        fairness_algorithm: ALGORITHM.to_string(),
        fairness_algorithm_version: ALGORITHM_VERSION,
        commitment_ttl_secs: commitment_ttl.as_secs(),
        max_client_seed_bytes: MAX_CLIENT_SEED_BYTES as u32,
    }
}

/// Exact RTP (fraction, decimal) and the raise rule of the best strategy.
fn rtp(_table: &Table) -> (String, String, String) {
    (String::new(), String::new(), String::new())
}
