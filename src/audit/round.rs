//! One round as the trails tell it (`reddog audit-log --round ID`; `docs/AUDIT.md`, "One
//! round"): every record of the round id across replicas in transcript order, its state, its
//! money and its findings — what support staff need when a player calls about a round.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use super::Finding;

/// One record of the round, as logged, with where it was read.
#[derive(Clone, Debug, Serialize)]
pub struct RoundRecord {
    /// `FILE:LINE`.
    pub source: String,
    pub record: Value,
}

/// Where the round stands in the trails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// A `round_settled` record: the platform credits what it returned.
    Settled,
    /// Dealt (`round_started`) and never settled: the platform settles the newest token.
    Open,
    /// Committed (`seed_committed`) and never dealt: nothing was staked at the engine; the
    /// platform voids it and rolls back any bet it debited.
    Abandoned,
}

/// The round's money, in minor units of its currency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Money {
    pub table_id: Option<String>,
    pub currency: Option<String>,
    pub exponent: Option<u64>,
    /// A sandbox round (dealt from requested cards at a test table): never a fair round.
    pub sandbox: bool,
    /// The seats' bets (`round_started`).
    pub bets: Vec<u64>,
    /// The raises of the logged Decides (one per transcript, retries counted once).
    pub raised: u64,
    /// Staked: the settlement's `total_staked`, else the bets plus the raises so far.
    pub staked: u64,
    /// The settlement's `total_returned`; `None` while the round is not settled.
    pub returned: Option<u64>,
    /// The settlement's seats (`bet`, `raised`, `stake`, `returned`).
    pub seats: Value,
}

/// Everything about one round id.
#[derive(Clone, Debug, Serialize)]
pub struct RoundView {
    pub round_id: String,
    pub state: State,
    pub money: Money,
    pub records: Vec<RoundRecord>,
    pub findings: Vec<Finding>,
}

/// `(step, rank)` of a record on the transcript chain: the commitment, the deal at step 0,
/// each Decide at its step, a Settle after the Decide of its step.
fn position(record: &Value) -> (u64, u8) {
    let step = record["step"].as_u64().unwrap_or(0);
    match record["event"].as_str() {
        Some("seed_committed") => (0, 0),
        Some("round_started") => (0, 1),
        Some("seats_decided") => (step, 2),
        _ => (step, 3),
    }
}

fn sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0u64, u64::saturating_add)
}

/// The view of `round_id` from its `records` and every finding of the analysis; `None` when
/// no record names the round.
pub fn view(round_id: &str, mut records: Vec<RoundRecord>, findings: &[Finding]) -> Option<RoundView> {
    if records.is_empty() {
        return None;
    }
    records.sort_by(|a, b| {
        let key = |r: &RoundRecord| {
            let v = &r.record;
            (
                position(v),
                v["at"].as_str().map(str::to_owned),
                v["replica"].as_str().map(str::to_owned),
                v["seq"].as_u64(),
            )
        };
        key(a).cmp(&key(b))
    });
    let of = |event: &'static str| records.iter().map(|r| &r.record).filter(move |v| v["event"] == event);
    let started = of("round_started").next();
    let settled = of("round_settled").next_back();
    let state = match (started, settled) {
        (_, Some(_)) => State::Settled,
        (Some(_), None) => State::Open,
        (None, None) => State::Abandoned,
    };
    let first = started.or(settled).or_else(|| records.first().map(|r| &r.record));
    let text = |v: Option<&Value>, k: &str| v.and_then(|v| v[k].as_str()).map(str::to_owned);
    let mut decided = BTreeSet::new();
    let raised = sum(of("seats_decided")
        .filter(|v| decided.insert(v["transcript"].as_str().unwrap_or_default().to_owned()))
        .map(|v| v["raised_amount"].as_u64().unwrap_or(0)));
    let bets: Vec<u64> = started
        .and_then(|v| v["bets"].as_array())
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let money = Money {
        table_id: text(first, "table_id"),
        currency: text(started.or(settled), "currency"),
        exponent: started.or(settled).and_then(|v| v["exponent"].as_u64()),
        sandbox: records.iter().any(|r| r.record["sandbox"] == true),
        staked: settled
            .and_then(|v| v["total_staked"].as_u64())
            .unwrap_or_else(|| sum(bets.iter().copied()).saturating_add(raised)),
        returned: settled.and_then(|v| v["total_returned"].as_u64()),
        seats: settled.map(|v| v["seats"].clone()).unwrap_or(Value::Null),
        bets,
        raised,
    };
    let findings = findings.iter().filter(|f| f.round_id.as_deref() == Some(round_id)).cloned().collect();
    Some(RoundView { round_id: round_id.to_owned(), state, money, records, findings })
}

/// One record as a text line: time, replica and seq, event, then what it says.
pub fn record_line(r: &RoundRecord) -> String {
    let v = &r.record;
    let s = |k: &str| v[k].as_str().unwrap_or("?").to_owned();
    let short = |k: &str| v[k].as_str().map(|t| t.chars().take(16).collect::<String>()).unwrap_or_else(|| "?".into());
    let list = |k: &str| {
        v[k].as_array()
            .map(|a| {
                a.iter().map(|x| x.as_str().map(str::to_owned).unwrap_or_else(|| x.to_string())).collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .join(" ")
    };
    let decisions = |d: &Value| {
        d.as_array()
            .map(|a| {
                a.iter()
                    .map(|x| format!("seat {} {}", x["seat"], x["action"].as_str().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let what = match v["event"].as_str().unwrap_or("?") {
        "seed_committed" => {
            format!(
                "table {} nonce {} commitment {} rules {}",
                s("table_id"),
                v["nonce"],
                s("commitment"),
                short("rules_digest")
            )
        }
        "round_started" => format!(
            "step 0 transcript {}… cards {} {} bets {} {}",
            short("transcript"),
            list("cards"),
            s("hand_class"),
            list("bets"),
            s("currency")
        ),
        "seats_decided" => format!(
            "step {} transcript {}… from {}… {} raised {}",
            v["step"],
            short("transcript"),
            short("parent_transcript"),
            decisions(&v["decisions"]),
            v["raised_amount"]
        ),
        "round_settled" => format!(
            "step {} transcript {}… cards {} staked {} returned {} {}",
            v["step"],
            short("transcript"),
            list("cards"),
            v["total_staked"],
            v["total_returned"],
            s("currency")
        ),
        other => other.to_owned(),
    };
    format!("{} replica {} seq {} {:<14} {what}  ({})", s("at"), s("replica"), v["seq"], s("event"), r.source)
}
