//! Money reports over the audit trail (`reddog report`; `docs/AUDIT.md`, "Reports"): per
//! table, rules digest, currency, UTC day and sandbox flag — rounds, seats, staked, returned, GGR, the
//! observed return with its confidence interval, and the exact expected return of the rounds
//! as dealt and decided; rounds started and never settled; and the reconciliation of the
//! settled rounds against a platform's ledger.
//!
//! **One settlement per round.** A retried Settle writes its `round_settled` record again
//! (any replica, any order): settlements are counted once per (`round_id`, `transcript`), on
//! the UTC day of the earliest of their records. Two different transcripts settled for one
//! round id (a fork, which `reddog audit-log` reports) are two settlements.
//!
//! **Rules from the trail.** Each `round_settled` record carries the decks and paytable the
//! round was paid by, and its rules digest; each run's `audit_started` describes its tables'
//! whole rules. Without a configuration a round's expectation follows from its own record,
//! and the rules the trail describes must agree with every record of their digest (the
//! report refuses otherwise, naming the digest). With a configuration (`--tables`), each
//! record's digest must be its table's as configured: a cross-check.
//!
//! **Exact money.** Amounts are summed as `u128` with checked additions; a round's expected
//! return is `base + swing · w / D` ([`crate::odds::round_expectation`]) with `D` the cards
//! left after the deal (`52 · decks − 2`), so a table's expected returns are summed exactly as
//! numerators over that one denominator. Ratios are printed from exact fractions. Floats
//! appear only in statistics: the confidence interval and the deviation in standard errors.
//!
//! **Bounded memory.** As in [`super::analyse`], the input is read once and each record
//! reduced to a small fact, written to one of several temporary partition files by a hash of
//! its round id (ledger rows too); each partition is then deduplicated, aggregated and
//! compared alone, and the per-row sums merged. What grows is one partition's set of round
//! keys, about [`super::PARTITION_BYTES`] of input each.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::record::{SCHEMA, SeatMoney};
use super::spill::{Partitioned, Spill};
use super::time::parse_timestamp;
use super::{Input, Mode, next_line, partition_count};
use crate::game::{Card, Decks, HandClass, Money, Paytable};
use crate::odds::{Exact, decimal, round_expectation};

/// The normal quantile of a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// What the report needs of a configured table: the rules a round's expectation follows from,
/// and the digest its records must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRules {
    pub decks: Decks,
    pub paytable: Paytable,
    /// Lower-case hex, as in the records' `rules_digest`.
    pub rules_digest: String,
}

/// The configured tables, by id.
pub type Configured = BTreeMap<String, TableRules>;

/// How the report runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub mode: Mode,
    pub temp_dir: Option<PathBuf>,
}

/// A report row's key: the table, the rules digest its rounds were played under, its
/// currency, the UTC day (`YYYY-MM-DD`) and whether its rounds are sandbox rounds (never
/// mixed with real ones).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RowKey {
    pub table_id: String,
    pub rules_digest: String,
    pub currency: String,
    pub day: String,
    pub sandbox: bool,
}

/// The sums of one row. Amounts in minor units.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sums {
    /// Settlements counted (each round once).
    pub rounds: u64,
    /// Seats over those rounds.
    pub seats: u64,
    pub staked: u128,
    pub returned: u128,
    /// Σ expected return, as a numerator over [`Sums::denominator`].
    pub expected_numer: u128,
    /// `52 · decks − 2` of the row's table (0 while no round is counted).
    pub denominator: u64,
    /// Σ Var[returned | deal, decisions] (squared minor units; a statistic).
    pub variance: f64,
    /// Σ returned², Σ returned · staked, Σ staked² (the ratio estimator's interval).
    pub rr: f64,
    pub rs: f64,
    pub ss: f64,
    /// Rounds started (this day) and never settled in the input.
    pub open_rounds: u64,
}

impl Sums {
    fn add(&mut self, o: &Sums) -> Result<(), ReportError> {
        if self.denominator != 0 && o.denominator != 0 && self.denominator != o.denominator {
            return Err(ReportError::Overflow("rounds of one table with different deck counts"));
        }
        if self.denominator == 0 {
            self.denominator = o.denominator;
        }
        let over = || ReportError::Overflow("a row's sums");
        self.rounds = self.rounds.checked_add(o.rounds).ok_or_else(over)?;
        self.seats = self.seats.checked_add(o.seats).ok_or_else(over)?;
        self.staked = self.staked.checked_add(o.staked).ok_or_else(over)?;
        self.returned = self.returned.checked_add(o.returned).ok_or_else(over)?;
        self.expected_numer = self.expected_numer.checked_add(o.expected_numer).ok_or_else(over)?;
        self.open_rounds = self.open_rounds.checked_add(o.open_rounds).ok_or_else(over)?;
        self.variance += o.variance;
        self.rr += o.rr;
        self.rs += o.rs;
        self.ss += o.ss;
        Ok(())
    }

    /// GGR = staked − returned (negative when players won).
    pub fn ggr(&self) -> Option<i128> {
        i128::try_from(self.staked).ok()?.checked_sub(i128::try_from(self.returned).ok()?)
    }

    /// returned / staked, exact; `None` without stakes.
    pub fn observed_return(&self) -> Option<Exact> {
        (self.staked > 0)
            .then(|| Some(Exact::new(i128::try_from(self.returned).ok()?, i128::try_from(self.staked).ok()?)))?
    }

    /// Σ expected return, exact, in minor units.
    pub fn expected_returned(&self) -> Option<Exact> {
        (self.denominator > 0)
            .then(|| Some(Exact::new(i128::try_from(self.expected_numer).ok()?, i128::from(self.denominator))))?
    }

    /// Σ expected return / staked, exact.
    pub fn expected_return(&self) -> Option<Exact> {
        let denom = u128::from(self.denominator).checked_mul(self.staked).filter(|&d| d > 0)?;
        Some(Exact::new(i128::try_from(self.expected_numer).ok()?, i128::try_from(denom).ok()?))
    }

    /// The 95 % confidence interval of the observed return: the ratio estimator's
    /// normal-approximation (delta-method) interval, rounds as the unit,
    /// `ρ ± 1.96 · √(Σ (R − ρS)²) / ΣS`.
    pub fn observed_return_ci95(&self) -> Option<(f64, f64)> {
        if self.staked == 0 || self.rounds < 2 {
            return None;
        }
        let s = self.staked as f64;
        let rho = self.returned as f64 / s;
        let se = (self.rr - 2.0 * rho * self.rs + rho * rho * self.ss).max(0.0).sqrt() / s;
        Some((rho - Z95 * se, rho + Z95 * se))
    }

    /// (returned − expected returned) / √(Σ variance): the payout monitor's statistic over
    /// this row; `None` when no round could have returned otherwise.
    pub fn deviation_se(&self) -> Option<f64> {
        if self.variance <= 0.0 || self.denominator == 0 {
            return None;
        }
        let expected = self.expected_numer as f64 / self.denominator as f64;
        Some((self.returned as f64 - expected) / self.variance.sqrt())
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: RowKey,
    pub sums: Sums,
}

/// One difference between the audit trail and a ledger.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `round_missing_in_ledger`, `round_missing_in_audit`, `seat_missing_in_ledger`,
    /// `seat_missing_in_audit`, `staked_differs`, `credited_differs`,
    /// `round_settled_more_than_once`, `ledger_row_repeated`.
    pub kind: &'static str,
    pub round_id: String,
    /// The round's table and currency, when the trails settled it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat: Option<u32>,
    /// What the audit trail says (staked, returned), when it has the seat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<LedgerAmounts>,
    /// What the ledger says, when it has the seat.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<LedgerAmounts>,
}

/// A seat's staked and credited amounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LedgerAmounts {
    pub staked: u64,
    pub credited: u64,
}

/// One ledger line: `round_id,seat,staked,credited`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRow {
    pub round_id: String,
    pub seat: u32,
    pub amounts: LedgerAmounts,
}

/// What the report read and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub files: usize,
    pub lines: u64,
    /// Audit records read.
    pub records: u64,
    /// Lines naming the audit schema that are not valid records, or round records without
    /// the fields the report needs.
    pub malformed_records: u64,
    /// `round_settled` records read (retries included).
    pub settled_records: u64,
    /// `round_settled` records that repeat a settlement already counted (retried Settles).
    pub repeated_settlements: u64,
    pub partitions: usize,
    /// Rows by key, sorted.
    pub rows: Vec<Row>,
    /// With a ledger: every difference, sorted; `None` without one.
    pub differences: Option<Vec<Difference>>,
    /// With a ledger: its rows and the rounds compared.
    pub ledger_rows: u64,
    pub rounds_compared: u64,
}

/// Why no report can be given.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("{place}: table {table_id:?} is not in the table configuration (give its configuration with --tables)")]
    UnknownTable { place: String, table_id: String },
    #[error(
        "{place}: table {table_id:?}: the record's rules digest {record} is not the configured table's {configured} \
         (the table's decks, paytable, limits or currency differ): give the configuration these rounds were played under with --tables"
    )]
    DigestMismatch { place: String, table_id: String, record: String, configured: String },
    #[error("{place}: {detail}")]
    Ledger { place: String, detail: String },
    #[error(
        "{place}: rules digest {digest}: {detail}; the trail does not describe the rules its rounds were paid by \
         (a record altered or mis-written)"
    )]
    RulesDisagree { place: String, digest: String, detail: String },
    #[error("overflow: {0}")]
    Overflow(&'static str),
}

/// The fields of a line the report reads; every other field is skipped.
#[derive(Debug, Default, Deserialize)]
struct Scan {
    schema: Option<String>,
    at: Option<String>,
    event: Option<String>,
    round_id: Option<String>,
    table_id: Option<String>,
    currency: Option<String>,
    commitment: Option<String>,
    rules_digest: Option<String>,
    transcript: Option<String>,
    cards: Option<Vec<String>>,
    seats: Option<Vec<SeatMoney>>,
    sandbox: Option<bool>,
    decks: Option<u8>,
    paytable: Option<Paytable>,
    /// `audit_started`: the tables' rules.
    tables: Option<Vec<Described>>,
}

/// A table's rules as `audit_started` describes them (absent in a trail written before
/// the trail described its rules).
#[derive(Debug, Deserialize)]
struct Described {
    rules_digest: String,
    decks: Option<u8>,
    paytable: Option<Paytable>,
    min_bet: Option<u64>,
    max_bet: Option<u64>,
    currency: Option<String>,
    minor_unit_exponent: Option<u8>,
    /// A sandbox table (its digest says so: FAIRNESS.md 4.6).
    #[serde(default)]
    sandbox: bool,
}

/// The rules of each digest the trail names: what its `audit_started` records describe, and
/// what its `round_settled` records were paid by; every pair must agree.
#[derive(Default)]
struct TrailRules {
    /// Digest → (decks, paytable) and where that was first read.
    seen: HashMap<String, (u8, Paytable, String)>,
}

impl TrailRules {
    /// Records that `digest` pays by (`decks`, `paytable`) at `place`; refuses a different
    /// pair for one digest.
    fn note(&mut self, digest: &str, decks: u8, paytable: &Paytable, place: &str) -> Result<(), ReportError> {
        match self.seen.get(digest) {
            Some((d, p, first)) if (*d, p) != (decks, paytable) => Err(ReportError::RulesDisagree {
                place: place.to_string(),
                digest: digest.to_string(),
                detail: format!("{decks} deck(s) and paytable {paytable:?} here, {d} deck(s) and {p:?} at {first}"),
            }),
            Some(_) => Ok(()),
            None => {
                self.seen.insert(digest.to_string(), (decks, paytable.clone(), place.to_string()));
                Ok(())
            }
        }
    }

    /// An `audit_started` table: its digest must be that of the rules it describes.
    fn described(&mut self, t: Described, place: &str) -> Result<(), ReportError> {
        let (Some(decks), Some(paytable), Some(min), Some(max), Some(currency), Some(exponent)) =
            (t.decks, t.paytable, t.min_bet, t.max_bet, t.currency, t.minor_unit_exponent)
        else {
            return Ok(());
        };
        let sandbox = t.sandbox;
        let bad = |detail: String| ReportError::RulesDisagree {
            place: place.to_string(),
            digest: t.rules_digest.clone(),
            detail,
        };
        let d = Decks::new(u32::from(decks)).map_err(|e| bad(e.to_string()))?;
        let limits = crate::game::BetLimits::new(Money(min), Money(max)).map_err(|e| bad(e.to_string()))?;
        let rules = crate::fairness::TableRules {
            decks: d,
            paytable: &paytable,
            limits,
            currency: &currency,
            exponent,
            sandbox,
        };
        let computed = rules.digest().to_hex();
        if computed != t.rules_digest {
            return Err(bad(format!("the rules described hash to {computed}")));
        }
        self.note(&t.rules_digest, decks, &paytable, place)
    }
}

/// A settlement, reduced to what the report sums.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Settled {
    round_id: String,
    transcript: String,
    commitment: String,
    /// The record's `at` (seconds, nanos): the earliest record of a settlement gives its day.
    at: (i64, u32),
    key: RowKey,
    /// (stake, returned) per seat.
    seats: Vec<(u64, u64)>,
    expected_numer: u128,
    denominator: u64,
    variance: f64,
}

/// A round start.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Started {
    round_id: String,
    commitment: String,
    at: (i64, u32),
    key: RowKey,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Fact {
    Settled(Settled),
    Started(Started),
    Ledger(LedgerRow),
}

impl Fact {
    fn round_id(&self) -> &str {
        match self {
            Fact::Settled(s) => &s.round_id,
            Fact::Started(s) => &s.round_id,
            Fact::Ledger(l) => &l.round_id,
        }
    }
}

impl Partitioned for Fact {
    /// By round id: a round's settlements, start and ledger rows meet in one partition.
    fn key<H: Hasher>(&self, h: &mut H) {
        self.round_id().hash(h);
    }
}

/// The UTC day (`YYYY-MM-DD`) of a Unix time.
pub fn utc_day(secs: i64) -> Option<String> {
    let ts = jiff::Timestamp::from_second(secs).ok()?;
    Some(ts.strftime("%Y-%m-%d").to_string())
}

/// Reduces a `round_settled` record to its fact; `Ok(None)` when it lacks a field.
fn settled_fact(
    scan: Scan,
    at: (i64, u32),
    tables: Option<&Configured>,
    trail: &mut TrailRules,
    place: &str,
) -> Result<Option<Settled>, ReportError> {
    let (Some(round_id), Some(table_id), Some(currency), Some(commitment), Some(digest), Some(transcript)) =
        (scan.round_id, scan.table_id, scan.currency, scan.commitment, scan.rules_digest, scan.transcript)
    else {
        return Ok(None);
    };
    let (Some(cards), Some(seats), Some(sandbox)) = (scan.cards, scan.seats, scan.sandbox) else {
        return Ok(None);
    };
    let (Some(decks), Some(paytable)) = (scan.decks.and_then(|d| Decks::new(u32::from(d)).ok()), scan.paytable) else {
        return Ok(None);
    };
    trail.note(&digest, decks.get(), &paytable, place)?;
    if let Some(tables) = tables {
        let Some(rules) = tables.get(&table_id) else {
            return Err(ReportError::UnknownTable { place: place.to_string(), table_id });
        };
        if digest != rules.rules_digest {
            return Err(ReportError::DigestMismatch {
                place: place.to_string(),
                table_id,
                record: digest,
                configured: rules.rules_digest.clone(),
            });
        }
    }
    let rules = TableRules { decks, paytable, rules_digest: digest };
    let (Some(a), Some(b)) =
        (cards.first().and_then(|c| Card::from_text(c)), cards.get(1).and_then(|c| Card::from_text(c)))
    else {
        return Ok(None);
    };
    let law =
        round_expectation(rules.decks, HandClass::of(a, b), &rules.paytable, seats.iter().map(|s| Money(s.stake)))
            .map_err(|_| ReportError::Overflow("a round's expected return"))?;
    // p_win = w / D with D the cards left after the deal; Ratio keeps it reduced.
    let d = 52 * u64::from(rules.decks.get()) - 2;
    let p_denom = u64::try_from(*law.p_win.denom()).map_err(|_| ReportError::Overflow("a probability"))?;
    let p_numer = u128::try_from(*law.p_win.numer()).map_err(|_| ReportError::Overflow("a probability"))?;
    let w = p_numer * u128::from(d / p_denom.max(1));
    let expected_numer = law
        .base
        .checked_mul(u128::from(d))
        .and_then(|b| law.swing.checked_mul(w).and_then(|s| b.checked_add(s)))
        .ok_or(ReportError::Overflow("a round's expected return"))?;
    let Some(day) = utc_day(at.0) else { return Ok(None) };
    Ok(Some(Settled {
        round_id,
        transcript,
        commitment,
        at,
        key: RowKey { table_id, rules_digest: rules.rules_digest, currency, day, sandbox },
        seats: seats.iter().map(|s| (s.stake, s.returned)).collect(),
        expected_numer,
        denominator: d,
        variance: law.variance_f64(),
    }))
}

/// Parses one ledger record (`round_id,seat,staked,credited`, read by the `csv` crate: RFC 4180
/// quoting for the round id). `Ok(None)` for the header.
pub fn parse_ledger_record(fields: &csv::StringRecord) -> Result<Option<LedgerRow>, String> {
    if fields.len() != 4 {
        return Err(format!("{} fields, expected 4: round_id,seat,staked,credited", fields.len()));
    }
    if &fields[0] == "round_id" && &fields[1] == "seat" {
        return Ok(None);
    }
    let number = |i: usize, name: &str| -> Result<u64, String> {
        fields[i].trim().parse::<u64>().map_err(|_| format!("{name} {:?} is not a non-negative integer", &fields[i]))
    };
    if fields[0].is_empty() {
        return Err("an empty round_id".into());
    }
    Ok(Some(LedgerRow {
        round_id: fields[0].to_string(),
        seat: u32::try_from(number(1, "seat")?).map_err(|_| format!("seat {:?} is too large", &fields[1]))?,
        amounts: LedgerAmounts { staked: number(2, "staked")?, credited: number(3, "credited")? },
    }))
}

/// The sums over every partition.
#[derive(Default)]
struct Accumulated {
    rows: BTreeMap<RowKey, Sums>,
    repeated: u64,
    reconcile: bool,
    differences: Vec<Difference>,
    ledger_rows: u64,
    rounds_compared: u64,
}

impl Accumulated {
    /// Deduplicates, aggregates and (with a ledger) compares one partition's facts.
    fn partition(&mut self, facts: impl IntoIterator<Item = Fact>) -> Result<(), ReportError> {
        // Each settlement once: the earliest record of a (round id, transcript).
        let mut settled: HashMap<(String, String), Settled> = HashMap::new();
        let mut started: HashMap<(String, String), Started> = HashMap::new();
        let mut ledger: BTreeMap<String, BTreeMap<u32, LedgerAmounts>> = BTreeMap::new();
        for fact in facts {
            match fact {
                Fact::Settled(s) => {
                    let k = (s.round_id.clone(), s.transcript.clone());
                    match settled.get_mut(&k) {
                        Some(old) => {
                            self.repeated += 1;
                            if s.at < old.at {
                                *old = s;
                            }
                        }
                        None => {
                            settled.insert(k, s);
                        }
                    }
                }
                Fact::Started(s) => {
                    let k = (s.round_id.clone(), s.commitment.clone());
                    match started.get_mut(&k) {
                        Some(old) if s.at < old.at => *old = s,
                        Some(_) => {}
                        None => {
                            started.insert(k, s);
                        }
                    }
                }
                Fact::Ledger(l) => {
                    self.ledger_rows += 1;
                    let seats = ledger.entry(l.round_id.clone()).or_default();
                    if let Some(first) = seats.get(&l.seat) {
                        self.differences.push(Difference {
                            kind: "ledger_row_repeated",
                            round_id: l.round_id,
                            table_id: None,
                            currency: None,
                            seat: Some(l.seat),
                            audit: None,
                            ledger: Some(*first),
                        });
                    } else {
                        seats.insert(l.seat, l.amounts);
                    }
                }
            }
        }
        let settled_commitments: HashSet<(&str, &str)> =
            settled.values().map(|s| (s.round_id.as_str(), s.commitment.as_str())).collect();
        let mut rows: BTreeMap<RowKey, Sums> = BTreeMap::new();
        for s in started.values() {
            if !settled_commitments.contains(&(s.round_id.as_str(), s.commitment.as_str())) {
                rows.entry(s.key.clone()).or_default().open_rounds += 1;
            }
        }
        let mut by_round: BTreeMap<&str, Vec<&Settled>> = BTreeMap::new();
        for s in settled.values() {
            let over = || ReportError::Overflow("a round's sums");
            let staked =
                s.seats.iter().try_fold(0u128, |a, &(st, _)| a.checked_add(u128::from(st))).ok_or_else(over)?;
            let returned =
                s.seats.iter().try_fold(0u128, |a, &(_, r)| a.checked_add(u128::from(r))).ok_or_else(over)?;
            let (sf, rf) = (staked as f64, returned as f64);
            let one = Sums {
                rounds: 1,
                seats: s.seats.len() as u64,
                staked,
                returned,
                expected_numer: s.expected_numer,
                denominator: s.denominator,
                variance: s.variance,
                rr: rf * rf,
                rs: rf * sf,
                ss: sf * sf,
                open_rounds: 0,
            };
            rows.entry(s.key.clone()).or_default().add(&one)?;
            by_round.entry(&s.round_id).or_default().push(s);
        }
        for (key, sums) in rows {
            self.rows.entry(key).or_default().add(&sums)?;
        }
        if self.reconcile {
            self.compare(&by_round, &ledger);
        }
        Ok(())
    }

    fn compare(
        &mut self,
        audit: &BTreeMap<&str, Vec<&Settled>>,
        ledger: &BTreeMap<String, BTreeMap<u32, LedgerAmounts>>,
    ) {
        let none = None::<&RowKey>;
        let diff = |kind, round_id: &str, key: Option<&RowKey>, seat, audit, ledger| Difference {
            kind,
            round_id: round_id.to_string(),
            table_id: key.map(|k| k.table_id.clone()),
            currency: key.map(|k| k.currency.clone()),
            seat,
            audit,
            ledger,
        };
        for (&round_id, settlements) in audit {
            self.rounds_compared += 1;
            // The earliest settlement is the one compared; a second one is reported.
            let Some(s) = settlements.iter().min_by_key(|s| s.at) else { continue };
            let key = Some(&s.key);
            if settlements.len() > 1 {
                self.differences.push(diff("round_settled_more_than_once", round_id, key, None, None, None));
            }
            let Some(ledger_seats) = ledger.get(round_id) else {
                // Every seat the engine settled and the ledger never booked, with its amounts.
                for (seat, &(staked, credited)) in s.seats.iter().enumerate() {
                    let seat = u32::try_from(seat).unwrap_or(u32::MAX);
                    let ours = Some(LedgerAmounts { staked, credited });
                    self.differences.push(diff("round_missing_in_ledger", round_id, key, Some(seat), ours, None));
                }
                continue;
            };
            for (seat, &(stake, returned)) in s.seats.iter().enumerate() {
                let seat = u32::try_from(seat).unwrap_or(u32::MAX);
                let ours = LedgerAmounts { staked: stake, credited: returned };
                match ledger_seats.get(&seat) {
                    None => self.differences.push(diff(
                        "seat_missing_in_ledger",
                        round_id,
                        key,
                        Some(seat),
                        Some(ours),
                        None,
                    )),
                    Some(theirs) => {
                        if theirs.staked != ours.staked {
                            self.differences.push(diff(
                                "staked_differs",
                                round_id,
                                key,
                                Some(seat),
                                Some(ours),
                                Some(*theirs),
                            ));
                        }
                        if theirs.credited != ours.credited {
                            self.differences.push(diff(
                                "credited_differs",
                                round_id,
                                key,
                                Some(seat),
                                Some(ours),
                                Some(*theirs),
                            ));
                        }
                    }
                }
            }
            for (&seat, theirs) in ledger_seats.range(u32::try_from(s.seats.len()).unwrap_or(u32::MAX)..) {
                self.differences.push(diff("seat_missing_in_audit", round_id, key, Some(seat), None, Some(*theirs)));
            }
        }
        for (round_id, seats) in ledger {
            if !audit.contains_key(round_id.as_str()) {
                self.rounds_compared += 1;
                for (&seat, theirs) in seats {
                    self.differences.push(diff(
                        "round_missing_in_audit",
                        round_id,
                        none,
                        Some(seat),
                        None,
                        Some(*theirs),
                    ));
                }
            }
        }
    }
}

/// Reads every audit input once (and the ledger, when given) and reports.
pub fn report(
    inputs: Vec<Input>,
    ledger: Option<Input>,
    tables: Option<&Configured>,
    opts: &Options,
) -> Result<Report, ReportError> {
    let mut trail = TrailRules::default();
    let total = inputs.iter().chain(ledger.iter()).try_fold(0u64, |sum, i| i.len.map(|l| sum.saturating_add(l)));
    let mut sink = Spill::new(partition_count(opts.mode, total), opts.temp_dir.as_deref(), "reddog-report-")?;
    let mut report = Report { files: inputs.len(), ..Report::default() };
    let mut line = Vec::with_capacity(4096);
    for mut input in inputs {
        let mut line_no = 0u64;
        while next_line(&mut input.reader, &mut line, &mut line_no)? {
            report.lines += 1;
            let scan = match serde_json::from_slice::<Scan>(&line) {
                Ok(s) if s.schema.as_deref() == Some(SCHEMA) => s,
                Ok(_) => continue,
                Err(_) => {
                    if line.windows(SCHEMA.len()).any(|w| w == SCHEMA.as_bytes()) {
                        report.malformed_records += 1;
                    }
                    continue;
                }
            };
            let Some(at) = scan.at.as_deref().and_then(parse_timestamp) else {
                report.malformed_records += 1;
                continue;
            };
            report.records += 1;
            let place = format!("{}:{line_no}", input.name);
            match scan.event.as_deref() {
                Some("round_settled") => {
                    report.settled_records += 1;
                    match settled_fact(scan, at, tables, &mut trail, &place)? {
                        Some(f) => sink.push(Fact::Settled(f))?,
                        None => report.malformed_records += 1,
                    }
                }
                Some("round_started") => {
                    let (Some(round_id), Some(table_id), Some(currency), Some(commitment), Some(sandbox), Some(day)) =
                        (scan.round_id, scan.table_id, scan.currency, scan.commitment, scan.sandbox, utc_day(at.0))
                    else {
                        report.malformed_records += 1;
                        continue;
                    };
                    let rules_digest = scan.rules_digest.unwrap_or_default();
                    sink.push(Fact::Started(Started {
                        round_id,
                        commitment,
                        at,
                        key: RowKey { table_id, rules_digest, currency, day, sandbox },
                    }))?;
                }
                Some("audit_started") => {
                    for t in scan.tables.unwrap_or_default() {
                        trail.described(t, &place)?;
                    }
                }
                _ => {}
            }
        }
    }
    let reconcile = ledger.is_some();
    if let Some(input) = ledger {
        // Blank lines are skipped; a record's place is the line it starts on.
        let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(input.reader);
        let mut record = csv::StringRecord::new();
        let mut first = true;
        loop {
            let place = |p: Option<&csv::Position>| format!("{}:{}", input.name, p.map_or(0, csv::Position::line));
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) if e.is_io_error() => {
                    return Err(match e.into_kind() {
                        csv::ErrorKind::Io(e) => ReportError::Io(e),
                        kind => ReportError::Io(io::Error::other(format!("{kind:?}"))),
                    });
                }
                Err(e) => return Err(ReportError::Ledger { place: place(e.position()), detail: e.to_string() }),
            }
            match parse_ledger_record(&record) {
                Ok(Some(row)) => sink.push(Fact::Ledger(row))?,
                Ok(None) if first => {}
                Ok(None) => {
                    let detail = "a header line after the first".into();
                    return Err(ReportError::Ledger { place: place(record.position()), detail });
                }
                Err(detail) => return Err(ReportError::Ledger { place: place(record.position()), detail }),
            }
            first = false;
        }
    }
    let mut acc = Accumulated { reconcile, ..Accumulated::default() };
    report.partitions = sink.for_each_partition(|facts| acc.partition(facts))?;
    report.repeated_settlements = acc.repeated;
    report.rows = acc.rows.into_iter().map(|(key, sums)| Row { key, sums }).collect();
    if reconcile {
        acc.differences.sort();
        report.differences = Some(acc.differences);
        report.ledger_rows = acc.ledger_rows;
        report.rounds_compared = acc.rounds_compared;
    }
    Ok(report)
}

/// `r` to `places` decimals, or empty without a value.
pub fn opt_decimal(r: Option<Exact>, places: u32) -> Option<String> {
    r.map(|r| decimal(&r, places))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reddog_tools::generate;

    const DIGEST: &str = "aa11";

    fn tables() -> Configured {
        Configured::from([(
            "t1".to_string(),
            TableRules { decks: Decks::ONE, paytable: Paytable::STANDARD, rules_digest: DIGEST.into() },
        )])
    }

    /// One seat's (bet, raised, returned).
    type Seat = (u64, bool, u64);

    /// A `round_settled` line of table `t1` (one deck, standard paytable).
    fn settled(at: &str, round_id: &str, transcript: &str, cards: &[&str], seats: &[Seat], sandbox: bool) -> String {
        let seats: Vec<serde_json::Value> = seats
            .iter()
            .map(|&(bet, raised, returned)| {
                serde_json::json!({"bet": bet, "raised": raised, "stake": if raised { 2 * bet } else { bet }, "returned": returned})
            })
            .collect();
        let staked: u64 = seats.iter().map(|s| s["stake"].as_u64().unwrap()).sum();
        let returned: u64 = seats.iter().map(|s| s["returned"].as_u64().unwrap()).sum();
        serde_json::json!({
            "schema": SCHEMA, "replica": "r1", "run": "00", "seq": 1, "prev": "00", "at": at,
            "event": "round_settled", "round_id": round_id, "table_id": "t1", "currency": "EUR", "exponent": 2,
            "commitment": format!("c-{round_id}"), "rules_digest": DIGEST, "decks": 1,
            "paytable": {"spread": [5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1], "three_of_a_kind": 11},
            "step": 1, "transcript": transcript, "cards": cards, "hand_class": "spread", "spread": 0,
            "decisions": [], "seats": seats, "total_staked": staked, "total_returned": returned, "sandbox": sandbox,
        })
        .to_string()
    }

    fn started(at: &str, round_id: &str, sandbox: bool) -> String {
        serde_json::json!({
            "schema": SCHEMA, "replica": "r1", "run": "00", "seq": 1, "prev": "00", "at": at,
            "event": "round_started", "round_id": round_id, "table_id": "t1", "currency": "EUR", "exponent": 2,
            "commitment": format!("c-{round_id}"), "rules_digest": DIGEST, "nonce": 1, "decks": 1, "step": 0,
            "transcript": "t0", "bets": [100], "cards": ["5h", "9s"], "hand_class": "spread", "spread": 3,
            "sandbox": sandbox,
        })
        .to_string()
    }

    fn input(name: &str, lines: &[String]) -> Input {
        let text = lines.join("\n") + "\n";
        Input { name: name.into(), len: Some(text.len() as u64), reader: Box::new(io::Cursor::new(text.into_bytes())) }
    }

    fn run(lines: &[String], ledger: Option<&str>, mode: Mode) -> Result<Report, ReportError> {
        let ledger = ledger.map(|l| Input {
            name: "ledger.csv".into(),
            len: Some(l.len() as u64),
            reader: Box::new(io::Cursor::new(l.as_bytes().to_vec())),
        });
        report(vec![input("a.jsonl", lines)], ledger, Some(&tables()), &Options { mode, temp_dir: None })
    }

    const SPREAD3_WIN: &[&str] = &["5h", "9s", "7d"];
    const SPREAD3_LOSS: &[&str] = &["5h", "9s", "Kd"];

    #[test]
    fn a_retried_settle_is_counted_once() {
        let line = |at| settled(at, "r-1", "tx", SPREAD3_WIN, &[(100, false, 300), (200, true, 1200)], false);
        // The same settlement answered three times, by two replicas, out of order.
        let lines = [line("2026-12-01T10:00:02Z"), line("2026-12-01T10:00:00Z"), line("2026-12-01T10:00:01Z")];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        assert_eq!((rep.settled_records, rep.repeated_settlements), (3, 2));
        assert_eq!(rep.rows.len(), 1);
        let s = &rep.rows[0].sums;
        assert_eq!((s.rounds, s.seats, s.staked, s.returned, s.ggr()), (1, 2, 500, 1500, Some(-1000)));
    }

    #[test]
    fn two_transcripts_settled_for_one_round_are_two_settlements() {
        let lines = [
            settled("2026-12-01T10:00:00Z", "r-1", "tx-a", SPREAD3_WIN, &[(100, false, 300)], false),
            settled("2026-12-01T10:00:00Z", "r-1", "tx-b", SPREAD3_LOSS, &[(100, false, 0)], false),
        ];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        assert_eq!((rep.rows[0].sums.rounds, rep.repeated_settlements), (2, 0));
    }

    #[test]
    fn sandbox_rounds_are_kept_apart_from_real_ones() {
        let lines = [
            settled("2026-12-01T10:00:00Z", "real-1", "t1", SPREAD3_LOSS, &[(100, false, 0)], false),
            settled("2026-12-01T10:00:00Z", "lab-1", "t2", SPREAD3_WIN, &[(100, false, 300)], true),
            settled("2026-12-01T11:00:00Z", "lab-2", "t3", SPREAD3_WIN, &[(100, false, 300)], true),
        ];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        let by: Vec<(bool, u64, u128, u128)> =
            rep.rows.iter().map(|r| (r.key.sandbox, r.sums.rounds, r.sums.staked, r.sums.returned)).collect();
        assert_eq!(by, [(false, 1, 100, 0), (true, 2, 200, 600)]);
    }

    #[test]
    fn days_are_utc_days_and_a_retry_across_midnight_counts_on_the_first_day() {
        let lines = [
            settled("2026-12-01T23:59:59.999999999Z", "r-1", "t1", SPREAD3_LOSS, &[(100, false, 0)], false),
            // 00:30 at UTC+01:00 is still the 1st in UTC.
            settled("2026-12-02T00:30:00+01:00", "r-2", "t2", SPREAD3_LOSS, &[(200, false, 0)], false),
            settled("2026-12-02T00:00:00Z", "r-3", "t3", SPREAD3_LOSS, &[(400, false, 0)], false),
            // r-4 settled just before midnight, its retry just after.
            settled("2026-12-02T00:00:00.5Z", "r-4", "t4", SPREAD3_LOSS, &[(800, false, 0)], false),
            settled("2026-12-01T23:59:59.5Z", "r-4", "t4", SPREAD3_LOSS, &[(800, false, 0)], false),
        ];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        let by: Vec<(&str, u64, u128)> =
            rep.rows.iter().map(|r| (r.key.day.as_str(), r.sums.rounds, r.sums.staked)).collect();
        assert_eq!(by, [("2026-12-01", 3, 1100), ("2026-12-02", 1, 400)]);
    }

    #[test]
    fn the_expected_return_is_exact_for_the_deal_and_the_decisions() {
        // Spread 3 at one deck wins 12/50 and pays 2:1: a stake of 100 expects 72, a raised
        // bet of 100 (stake 200) expects 144; variance 300² · 0.24 · 0.76 per 100 staked.
        let lines =
            [settled("2026-12-01T10:00:00Z", "r-1", "t", SPREAD3_LOSS, &[(100, false, 0), (100, true, 0)], false)];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        let s = &rep.rows[0].sums;
        assert_eq!(s.expected_returned(), Some(Exact::from(216)));
        assert_eq!(s.expected_return(), Some(Exact::new(216, 300)));
        assert_eq!(s.observed_return(), Some(Exact::from(0)));
        let sd = (900.0f64 * 900.0 * 0.24 * 0.76).sqrt();
        assert!((s.deviation_se().unwrap() - (-216.0 / sd)).abs() < 1e-9);
    }

    #[test]
    fn a_record_whose_rules_digest_is_not_the_configured_tables_is_refused_naming_the_table() {
        let line = settled("2026-12-01T10:00:00Z", "r-1", "t", SPREAD3_WIN, &[(100, false, 300)], false)
            .replace(DIGEST, "bb22");
        let err = run(&[line], None, Mode::InMemory).unwrap_err();
        assert!(matches!(&err, ReportError::DigestMismatch { table_id, .. } if table_id == "t1"), "{err}");
        assert!(err.to_string().contains("a.jsonl:1: table \"t1\""), "{err}");
        let other = settled("2026-12-01T10:00:00Z", "r-1", "t", SPREAD3_WIN, &[(100, false, 300)], false)
            .replace("\"t1\"", "\"t9\"");
        let err = run(&[other], None, Mode::InMemory).unwrap_err();
        assert!(matches!(&err, ReportError::UnknownTable { table_id, .. } if table_id == "t9"), "{err}");
    }

    #[test]
    fn rounds_started_and_never_settled_are_counted_open_on_their_table() {
        let lines = [
            started("2026-12-01T10:00:00Z", "r-1", false),
            started("2026-12-01T10:00:01Z", "r-1", false), // a retried StartRound
            settled("2026-12-01T10:00:05Z", "r-1", "t", SPREAD3_LOSS, &[(100, false, 0)], false),
            started("2026-12-01T10:01:00Z", "r-2", false),
            started("2026-12-01T10:01:00Z", "r-2", false),
            started("2026-12-01T10:02:00Z", "lab-1", true),
        ];
        let rep = run(&lines, None, Mode::InMemory).unwrap();
        let by: Vec<(bool, u64, u64)> =
            rep.rows.iter().map(|r| (r.key.sandbox, r.sums.rounds, r.sums.open_rounds)).collect();
        assert_eq!(by, [(false, 1, 1), (true, 0, 1)]);
    }

    #[test]
    fn partitioned_and_in_memory_reports_agree_on_a_generated_trail() {
        let opts = generate::Options { rounds: 300, replicas: 3, misuse: 2, ..generate::Options::default() };
        let mut outs = vec![Vec::new(), Vec::new(), Vec::new()];
        generate::generate(&opts, &mut outs).unwrap();
        // The generator's tables: their digests from its audit_started record.
        let first: serde_json::Value = serde_json::from_slice(outs[0].split(|&b| b == b'\n').next().unwrap()).unwrap();
        let tables: Configured = first["tables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let id = t["table_id"].as_str().unwrap().to_string();
                let decks = Decks::new(if id == "default" { 1 } else { 6 }).unwrap();
                let digest = t["rules_digest"].as_str().unwrap().to_string();
                (id, TableRules { decks, paytable: Paytable::STANDARD, rules_digest: digest })
            })
            .collect();
        let inputs = || {
            outs.iter()
                .enumerate()
                .map(|(i, o)| Input {
                    name: format!("replica-{i}"),
                    len: Some(o.len() as u64),
                    reader: Box::new(io::Cursor::new(o.clone())),
                })
                .collect::<Vec<_>>()
        };
        let one = report(inputs(), None, Some(&tables), &Options { mode: Mode::InMemory, temp_dir: None }).unwrap();
        let many =
            report(inputs(), None, Some(&tables), &Options { mode: Mode::Partitions(7), temp_dir: None }).unwrap();
        assert_eq!(many.partitions, 7);
        assert!(one.rows.iter().map(|r| r.sums.rounds).sum::<u64>() >= 300);
        assert!(one.repeated_settlements > 0, "the generator retries calls");
        let key = |r: &Report| -> Vec<(RowKey, u64, u64, u128, u128, u128, u64)> {
            r.rows
                .iter()
                .map(|r| {
                    let s = &r.sums;
                    (r.key.clone(), s.rounds, s.seats, s.staked, s.returned, s.expected_numer, s.open_rounds)
                })
                .collect()
        };
        assert_eq!(key(&one), key(&many));
        assert_eq!(one.repeated_settlements, many.repeated_settlements);
    }

    fn two_rounds() -> [String; 3] {
        [
            settled("2026-12-01T10:00:00Z", "r-1", "t1", SPREAD3_WIN, &[(100, false, 300), (50, true, 300)], false),
            settled("2026-12-01T10:00:01Z", "r-1", "t1", SPREAD3_WIN, &[(100, false, 300), (50, true, 300)], false),
            settled("2026-12-01T10:00:00Z", "r,2", "t2", SPREAD3_LOSS, &[(100, false, 0)], false),
        ]
    }

    const CLEAN_LEDGER: &str = "round_id,seat,staked,credited\nr-1,0,100,300\nr-1,1,100,300\n\"r,2\",0,100,0\n";

    #[test]
    fn a_ledger_that_matches_the_trail_has_no_difference() {
        for mode in [Mode::InMemory, Mode::Partitions(3)] {
            let rep = run(&two_rounds(), Some(CLEAN_LEDGER), mode).unwrap();
            assert_eq!(rep.differences, Some(vec![]));
            assert_eq!((rep.ledger_rows, rep.rounds_compared), (3, 2));
        }
    }

    #[test]
    fn a_planted_difference_in_the_ledger_is_found_and_named() {
        let amounts = |staked, credited| Some(LedgerAmounts { staked, credited });
        // Seat 1 of r-1 credited 30 instead of 300; r,2 missing; r-9 unknown to the engine.
        let ledger = "round_id,seat,staked,credited\nr-1,0,100,300\nr-1,1,100,30\nr-9,0,500,0\n";
        let rep = run(&two_rounds(), Some(ledger), Mode::InMemory).unwrap();
        let diffs = rep.differences.unwrap();
        let d = |kind, round_id: &str, table: Option<&str>, seat, audit, ledger| Difference {
            kind,
            round_id: round_id.into(),
            table_id: table.map(str::to_owned),
            currency: table.map(|_| "EUR".to_owned()),
            seat,
            audit,
            ledger,
        };
        assert_eq!(
            diffs,
            [
                d("credited_differs", "r-1", Some("t1"), Some(1), amounts(100, 300), amounts(100, 30)),
                d("round_missing_in_audit", "r-9", None, Some(0), None, amounts(500, 0)),
                d("round_missing_in_ledger", "r,2", Some("t1"), Some(0), amounts(100, 0), None),
            ]
        );
        // A seat the ledger lacks, one it adds, a stake that differs.
        let ledger = "round_id,seat,staked,credited\nr-1,0,150,300\nr-1,2,10,0\n\"r,2\",0,100,0\n";
        let kinds: Vec<(&str, Option<u32>)> = run(&two_rounds(), Some(ledger), Mode::Partitions(2))
            .unwrap()
            .differences
            .unwrap()
            .iter()
            .map(|d| (d.kind, d.seat))
            .collect();
        assert_eq!(
            kinds,
            [("seat_missing_in_audit", Some(2)), ("seat_missing_in_ledger", Some(1)), ("staked_differs", Some(0))]
        );
    }

    #[test]
    fn a_ledger_line_that_is_not_four_fields_is_refused_naming_its_line() {
        let err = run(&two_rounds(), Some("round_id,seat,staked,credited\nr-1,0,100\n"), Mode::InMemory).unwrap_err();
        assert!(err.to_string().starts_with("ledger.csv:2: 3 fields"), "{err}");
        let err = run(&two_rounds(), Some("r-1,0,-5,0\n"), Mode::InMemory).unwrap_err();
        assert!(err.to_string().contains("staked \"-5\""), "{err}");
        let quoted = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader("\"a\"\"b,c\",1,2,3\n".as_bytes())
            .records()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(parse_ledger_record(&quoted).unwrap().unwrap().round_id, "a\"b,c");
    }
}
