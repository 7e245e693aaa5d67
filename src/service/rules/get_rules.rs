//! The `GetRules` answer, computed once at startup from the table configuration.

use std::time::Duration;

use crate::fairness::{ALGORITHM, ALGORITHM_VERSION, RulesDigest};
use crate::game::{MAX_SEATS, Spread, Table};
use crate::ids::{MAX_CLIENT_SEED_BYTES, MAX_ROUND_ID_BYTES};
use crate::odds::{Analysis, RtpDefinition, decimal, fraction};
use crate::proto;
use crate::service::build_info;

/// The rules of `table` (id `table_id`, amounts in `currency`, rules digest `rules_digest`)
/// as the API states them; `max_token_bytes` is the longest token the engine seals.
pub(crate) fn rules(
    table: &Table,
    commitment_ttl: Duration,
    table_id: &str,
    currency: proto::Currency,
    rules_digest: RulesDigest,
    max_token_bytes: u32,
) -> proto::GetRulesResponse {
    let (rtp_exact, rtp_decimal, raise_rule) = rtp(table);
    proto::GetRulesResponse {
        decks: u32::from(table.decks().get()),
        spread_odds: spread_odds(table),
        three_of_a_kind_odds: table.paytable().three_of_a_kind_odds(),
        table_limits: Some(proto::Limits { min_bet: table.limits().min().0, max_bet: table.limits().max().0 }),
        max_seats: MAX_SEATS as u32,
        rtp_exact,
        rtp_decimal,
        raise_rule,
        fairness_algorithm: ALGORITHM.to_string(),
        fairness_algorithm_version: ALGORITHM_VERSION,
        commitment_ttl_secs: commitment_ttl.as_secs(),
        max_client_seed_bytes: MAX_CLIENT_SEED_BYTES as u32,
        max_round_id_bytes: MAX_ROUND_ID_BYTES as u32,
        max_token_bytes,
        rtp_figures: rtp_figures(table),
        table_id: table_id.to_string(),
        currency: Some(currency),
        rules_digest: rules_digest.to_hex(),
        // Set by the service, which knows whether the table is a sandbox table.
        sandbox: false,
        // Set by the service, which holds the key ring.
        signing_keys: Vec::new(),
        engine: Some(engine_build()),
    }
}

/// The odds the table pays on each spread.
fn spread_odds(table: &Table) -> Vec<proto::SpreadOdds> {
    Spread::all()
        .map(|s| proto::SpreadOdds { spread: u32::from(s.get()), odds: table.paytable().spread_odds(s) })
        .collect()
}

/// The engine's build: version, git commit and build date.
fn engine_build() -> proto::BuildInfo {
    proto::BuildInfo {
        version: build_info::VERSION.to_string(),
        git_commit: build_info::GIT_COMMIT.to_string(),
        build_date: build_info::BUILD_DATE.to_string(),
    }
}

/// Best and worst strategy under each RTP definition, exact (see
/// [`Analysis::rtp_extremes`] for why the extremes over raise sets cover every strategy).
fn rtp_figures(table: &Table) -> Vec<proto::RtpFigure> {
    let analysis = Analysis::new(table.decks(), table.paytable());
    let mut out = Vec::with_capacity(4);
    for def in [RtpDefinition::PerInitialBet, RtpDefinition::PerTotalWagered] {
        let x = analysis.rtp_extremes(def);
        for (strategy, value, raise) in [("best", &x.best, x.best_raise), ("worst", &x.worst, x.worst_raise)] {
            out.push(proto::RtpFigure {
                strategy: strategy.to_string(),
                definition: def.key().to_string(),
                definition_text: def.text().to_string(),
                exact: fraction(value),
                decimal: decimal(value, 10),
                raise_rule: raise_rule(&raise.spreads()),
                raise_spreads: raise.spreads().into_iter().map(u32::from).collect(),
            });
        }
    }
    out
}

/// Exact RTP (reduced fraction, 10-place decimal) of the best strategy, and its raise rule in
/// words, from the exact enumeration in [`crate::odds`].
pub fn rtp(table: &Table) -> (String, String, String) {
    let analysis = Analysis::new(table.decks(), table.paytable());
    let raise = analysis.optimal_raise_set();
    let figures = analysis.figures(raise);
    (fraction(&figures.rtp), decimal(&figures.rtp, 10), raise_rule(&raise.spreads()))
}

/// "raise when the spread is 7 or more", "raise when the spread is 1, 2 or 7-11", "never raise".
fn raise_rule(spreads: &[u8]) -> String {
    let (Some(&first), Some(&last)) = (spreads.first(), spreads.last()) else {
        return "never raise".to_string();
    };
    if spreads.len() == usize::from(last - first) + 1 && last == Spread::MAX {
        return if first == 1 {
            "always raise".to_string()
        } else {
            format!("raise when the spread is {first} or more, otherwise stand")
        };
    }
    let listed: Vec<String> = spreads.iter().map(u8::to_string).collect();
    format!("raise when the spread is one of {}, otherwise stand", listed.join(", "))
}
