//! `reddog certify`: the evidence a test lab asks for, regenerated in one command for the
//! exact binary that runs it and the exact tables it is given.
//!
//! [`run`] produces a [`Report`] (written as `report.json`, versioned, every figure in it,
//! and rendered by [`html::render`] as one self-contained `report.html`) with these sections:
//!
//! - [`identity`]: binary SHA-256, build, dependencies (and a CycloneDX SBOM), table
//!   configuration and rules digests, date, command line;
//! - [`game`]: every exact figure of the enumeration per table;
//! - [`agreement`]: the simulator on the production round code against those figures;
//! - [`randomness`]: the production deal under statistical test (and dieharder);
//! - [`protocol`]: the test vectors and a live self-test through the real gRPC service;
//! - [`change`]: with `--against PREVIOUS`, what changed against the certified rules in
//!   force, and the approver's note;
//! - the verdict: every check with pass/fail; the command exits non-zero if any fails, and
//!   only a passed report yields a `certified-rules.json` ([`Report::certified_rules`]).
//!
//! The randomness source is a [`randomness::DealSource`]: [`run_with`] takes any, so a test
//! can certify a deliberately biased shuffle and see the verdict fail.

pub mod agreement;
pub mod change;
pub mod game;
pub mod html;
pub mod identity;
pub mod protocol;
pub mod randomness;
pub mod stats;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::game::{Paytable, Table};
use crate::odds::Exact;
use crate::service::build_info;
use crate::service::rules::certified::{CertifiedRules, Change};
use crate::service::rules::tables::Tables;
use randomness::{DealSource, DieharderPlan, FairDeals, RandomnessPlan};

/// The report format's name and version (a change of meaning of any field bumps it).
pub const FORMAT: &str = "reddog-certification-report";
/// See [`FORMAT`].
pub const FORMAT_VERSION: u32 = 1;

/// How much work each section does.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// `quick`, `full` or `custom`.
    pub name: String,
    /// Simulated rounds per table.
    pub sim_rounds: u64,
    pub randomness: RandomnessPlan,
    /// Live rounds per table through the in-process service.
    pub self_test_rounds: u64,
}

impl Plan {
    /// Minutes of work on two cores: CI's plan.
    pub fn quick() -> Plan {
        Plan {
            name: "quick".into(),
            sim_rounds: 1 << 19,
            randomness: RandomnessPlan {
                shoe_deals: 1_600,
                triple_deals: 60_000,
                repeat_runs: 50,
                repeat_deals: 1_000,
                alpha: 1e-6,
                dieharder: DieharderPlan::Tests(vec![0]),
                dieharder_required: false,
                dieharder_parallel: 1,
            },
            self_test_rounds: 30,
        }
    }

    /// Lab grade: 10⁸ simulated rounds per table, large samples, dieharder's whole battery.
    pub fn full() -> Plan {
        Plan {
            name: "full".into(),
            sim_rounds: 100_000_000,
            randomness: RandomnessPlan {
                shoe_deals: 1_000_000,
                triple_deals: 20_000_000,
                repeat_runs: 500,
                repeat_deals: 20_000,
                alpha: 1e-6,
                dieharder: DieharderPlan::All,
                dieharder_required: true,
                dieharder_parallel: crate::service::worker_threads(0),
            },
            self_test_rounds: 500,
        }
    }

    /// Units of work for a progress bar: simulated rounds, deals (weighted by their cost
    /// relative to a simulated round) and live rounds.
    pub fn work(&self, tables: &Tables) -> u64 {
        let decks = deck_counts(tables);
        self.sim_rounds * tables.len() as u64
            + DEAL_WEIGHT * self.randomness.work(&decks)
            + LIVE_WEIGHT * self.self_test_rounds * tables.len() as u64
    }
}

/// Progress weight of one dealt 52-card shoe, in simulated rounds: their CPU costs' ratio,
/// measured with the release build (`reddog simulate` plays 10,750 rounds per CPU
/// millisecond, the randomness section deals 534 shoes: [`randomness::DEALS_PER_CPU_MS`]),
/// so the progress bar's ETA holds across sections, dieharder's included.
const DEAL_WEIGHT: u64 = 20;
/// Progress weight of one live round (four calls through gRPC, about 1.4 ms), in simulated
/// rounds.
const LIVE_WEIGHT: u64 = 15_000;

/// What to certify.
#[derive(Clone, Debug)]
pub struct Options {
    pub plan: Plan,
    pub seed: u64,
    pub tables: Tables,
    /// The configuration file's path and bytes; `None`: the built-in default table.
    pub table_config: Option<(String, Vec<u8>)>,
    pub command_line: Vec<String>,
    /// `--strict`: a warning (a table whose best play returns more than the stake) fails the
    /// verdict.
    pub strict: bool,
    /// `--against PREVIOUS`: the change against the certified rules in force ([`change::diff`]).
    pub change: Option<Change>,
}

/// One table's rules as configured.
#[derive(Clone, Debug, Serialize)]
pub struct Rules {
    pub decks: u8,
    pub paytable: Paytable,
    pub min_bet: u64,
    pub max_bet: u64,
    pub currency: String,
    pub minor_unit_exponent: u8,
    pub rules_digest: String,
    /// A sandbox table (requested deals, never fair rounds): certified as a sandbox table.
    pub sandbox: bool,
    /// Declared a promotion (`allow_rtp_over_1`): its best play may return more than the stake.
    pub promotion: bool,
}

/// The commands that reproduce a table's figures (run in the report's directory, which
/// holds `paytable-<id>.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Reproduce {
    pub odds: String,
    pub simulate: String,
    pub paytable_file: String,
}

/// Everything about one table.
#[derive(Clone, Debug, Serialize)]
pub struct TableReport {
    pub id: String,
    pub rules: Rules,
    pub game: game::GameFigures,
    pub agreement: agreement::Agreement,
    pub reproduce: Reproduce,
}

/// One check of the verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub id: String,
    pub section: String,
    pub description: String,
    pub passed: bool,
    pub detail: String,
}

/// The verdict: passed when every check passed.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub passed: bool,
    pub checks_passed: usize,
    pub checks_failed: usize,
}

/// The report (`report.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub format: String,
    pub format_version: u32,
    pub plan: Plan,
    pub seed: u64,
    pub identity: identity::Identity,
    pub tables: Vec<TableReport>,
    pub randomness: randomness::Randomness,
    pub protocol: protocol::Protocol,
    pub checks: Vec<Check>,
    /// What a lab must look at though no check failed (with `--strict`, each is also a failed
    /// check): a table whose best play returns more than the stake.
    pub warnings: Vec<String>,
    pub verdict: Verdict,
    /// The command that reproduces the whole report.
    pub reproduce: String,
    /// `--against`: what changed against the certified rules in force, and the approval.
    pub change: Option<Change>,
    /// The `certified-rules.json` this report yields: `None` unless every check passed.
    #[serde(skip)]
    pub certified_rules: Option<CertifiedRules>,
    /// Wall-clock seconds of each section, and of the whole run.
    pub timings: std::collections::BTreeMap<String, f64>,
    pub elapsed_seconds: f64,
}

impl Report {
    /// The process exit status the command uses: 0 when every check passed, else 1.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.verdict.passed)
    }

    /// The CycloneDX SBOM (`sbom.cdx.json`).
    pub fn sbom(&self) -> serde_json::Value {
        identity::cyclonedx(&self.identity.binary_sha256, &self.identity.date, &self.identity.dependencies)
    }
}

/// The distinct deck counts of the tables, ascending.
pub fn deck_counts(tables: &Tables) -> Vec<u8> {
    tables.iter().map(|t| t.table.decks().get()).collect::<BTreeSet<_>>().into_iter().collect()
}

/// The paytable file name of a table in the output directory.
pub fn paytable_file(id: &str) -> String {
    format!("paytable-{id}.json")
}

fn now_rfc3339() -> String {
    // Whole seconds, UTC: `2026-12-02T01:02:03Z`.
    jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .map_or_else(|_| "unknown".to_string(), |t| t.to_string())
}

/// What can stop a certification run.
#[derive(Debug, thiserror::Error)]
pub enum CertifyError {
    /// The running binary, whose hash the report states, cannot be read.
    #[error("cannot read the running binary")]
    Binary(#[source] std::io::Error),
    /// The dependency graph recorded at build time is missing or unreadable.
    #[error("dependencies: {0}")]
    Dependencies(String),
    /// The simulator refused the table or failed.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
}

/// Certifies the production deal: [`run_with`] and [`FairDeals`].
pub fn run(options: &Options, progress: &(dyn Fn(u64) + Sync)) -> Result<Report, CertifyError> {
    let source = FairDeals { seed: options.seed };
    run_with(options, &source, Some(&source), progress)
}

/// Certifies with `source` as the randomness under test (`fair`: the production deal's seed
/// derivation, for listing server seeds and running dieharder; `None` for any other source).
/// `progress(units)` adds units of [`Plan::work`] as they finish.
pub fn run_with<S: DealSource>(
    options: &Options,
    source: &S,
    fair: Option<&FairDeals>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Report, CertifyError> {
    let started = std::time::Instant::now();
    let plan = &options.plan;
    let (binary_sha256, binary_path) = identity::binary_sha256().map_err(CertifyError::Binary)?;
    let dependencies = identity::dependencies(identity::DEPENDENCY_GRAPH, identity::CARGO_LOCK, "reddog")
        .map_err(CertifyError::Dependencies)?;
    let mut rules_digests = std::collections::BTreeMap::new();
    let mut tables = Vec::new();
    let mut warnings = Vec::new();
    let mut timings = std::collections::BTreeMap::new();
    let mut clock = std::time::Instant::now();
    let mut lap = |name: &str, timings: &mut std::collections::BTreeMap<String, f64>| {
        timings.insert(name.to_string(), clock.elapsed().as_secs_f64());
        clock = std::time::Instant::now();
    };
    for (i, named) in options.tables.iter().enumerate() {
        let t = &named.table;
        let (code, exp) = (named.currency.code(), named.currency.minor_unit_exponent());
        let digest = named.digest().to_hex();
        rules_digests.insert(named.id.clone(), digest.clone());
        let seed = options.seed.wrapping_add(i as u64);
        let best = crate::odds::Analysis::new(t.decks(), t.paytable()).policy(crate::odds::Policy::Optimal).rtp;
        let promotion = options.tables.is_promotion(&named.id);
        if best > Exact::from(1) && promotion {
            warnings.push(format!(
                "table {}: a promotion: the best play returns {} per unit bet, more than the stake (RTP above 1: \
                 the house loses in the long run; declared by \"allow_rtp_over_1\")",
                named.id,
                crate::odds::decimal(&best, 6)
            ));
        }
        let game = game::figures(t);
        lap(&format!("game {}", named.id), &mut timings);
        let agreement = agreement::run(t, plan.sim_rounds, seed, progress)?;
        lap(&format!("agreement {}", named.id), &mut timings);
        tables.push(TableReport {
            id: named.id.clone(),
            rules: Rules {
                decks: t.decks().get(),
                paytable: t.paytable().clone(),
                min_bet: t.limits().min().minor(),
                max_bet: t.limits().max().minor(),
                currency: code.to_string(),
                minor_unit_exponent: exp,
                rules_digest: digest,
                sandbox: named.sandbox,
                promotion,
            },
            game,
            agreement,
            reproduce: reproduce(&named.id, t, plan.sim_rounds, seed),
        });
    }
    let deal_progress = |n: u64| progress(n * DEAL_WEIGHT);
    let randomness = randomness::run(source, &deck_counts(&options.tables), &plan.randomness, &deal_progress, fair);
    lap("randomness", &mut timings);
    let live_progress = |n: u64| progress(n * LIVE_WEIGHT);
    let vectors = protocol::vectors();
    lap("protocol vectors", &mut timings);
    let self_test = protocol::self_test(&options.tables, plan.self_test_rounds, &live_progress);
    lap("protocol self-test", &mut timings);
    let protocol = protocol::Protocol { scheme: protocol::SCHEME.to_string(), vectors, self_test };
    let identity = identity::Identity {
        binary_sha256,
        binary_path,
        version: build_info::VERSION.to_string(),
        git_commit: build_info::GIT_COMMIT.to_string(),
        build_date: build_info::BUILD_DATE.to_string(),
        rustc: identity::RUSTC.to_string(),
        target: identity::TARGET.to_string(),
        profile: identity::PROFILE.to_string(),
        cargo_lock_sha256: identity::sha256_hex(identity::CARGO_LOCK.as_bytes()),
        dependencies,
        licences: "each package's licence as its manifest declares it; `cargo deny check licenses` \
                   (deny.toml, CI step 60-supply-chain.sh) enforces the allowed set"
            .to_string(),
        table_config_sha256: options.table_config.as_ref().map(|(_, b)| identity::sha256_hex(b)),
        table_config: options.table_config.as_ref().map_or("built-in default table".to_string(), |(p, _)| p.clone()),
        rules_digests,
        rules_digest_method:
            "docs/design/evidence-contract.md section 3, computed by fairness::TableRules::of (the engine's own)"
                .to_string(),
        date: now_rfc3339(),
        command_line: options.command_line.clone(),
    };
    let mut checks = checks(&identity, &tables, &randomness, &protocol);
    if let Some(c) = &options.change {
        let approved = c.needs_approval.is_empty() || c.approval.as_deref().is_some_and(|n| !n.trim().is_empty());
        checks.push(check(
            "change.approved".into(),
            "change",
            format!("the change against {} is approved where it needs to be", c.against.file),
            approved,
            if c.needs_approval.is_empty() {
                "needs no approval".to_string()
            } else {
                format!("{}; approval: {}", c.needs_approval.join("; "), c.approval.as_deref().unwrap_or("none"))
            },
        ));
    }
    if options.strict {
        checks.extend(warnings.iter().enumerate().map(|(i, w)| {
            check(format!("strict.warning.{i}"), "game", "--strict: no warning".into(), false, w.clone())
        }));
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    let certified_rules = (failed == 0).then(|| {
        let mut file = CertifiedRules::of(&options.tables, &identity.binary_sha256, &plan.name);
        file.certified_at = identity.date.clone();
        file.change = options.change.clone();
        file
    });
    let config = options.table_config.as_ref().map_or(String::new(), |(p, _)| format!(" --table-config {p}"));
    Ok(Report {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        plan: plan.clone(),
        seed: options.seed,
        identity,
        tables,
        randomness,
        protocol,
        verdict: Verdict { passed: failed == 0, checks_passed: checks.len() - failed, checks_failed: failed },
        checks,
        warnings,
        reproduce: format!(
            "reddog certify --{}{config}{} --seed {} --out DIR",
            plan.name,
            if options.strict { " --strict" } else { "" },
            options.seed
        ),
        change: options.change.clone(),
        certified_rules,
        timings,
        elapsed_seconds: started.elapsed().as_secs_f64(),
    })
}

fn reproduce(id: &str, t: &Table, rounds: u64, seed: u64) -> Reproduce {
    let file = paytable_file(id);
    let pay = if agreement::is_standard(t.paytable()) { String::new() } else { format!(" --paytable {file}") };
    let d = t.decks().get();
    Reproduce {
        odds: format!("reddog odds --json --decks {d}{pay}"),
        simulate: format!(
            "reddog simulate --json --rounds {rounds} --decks {d} --seats 1 --policy optimal --seed {seed}{pay}"
        ),
        paytable_file: file,
    }
}

fn check(id: String, section: &str, description: String, passed: bool, detail: String) -> Check {
    Check { id, section: section.to_string(), description, passed, detail }
}

fn checks(
    identity: &identity::Identity,
    tables: &[TableReport],
    randomness: &randomness::Randomness,
    protocol: &protocol::Protocol,
) -> Vec<Check> {
    let mut out = vec![check(
        "identity.binary".into(),
        "identity",
        "the running binary was read and hashed".into(),
        identity.binary_sha256.len() == 64,
        format!("sha256 {} of {}", identity.binary_sha256, identity.binary_path),
    )];
    for t in tables {
        let sum: Exact = t
            .game
            .outcomes
            .iter()
            .filter_map(|(_, f)| f.fraction.split_once('/'))
            .filter_map(|(n, d)| Some(Exact::new(n.parse().ok()?, d.parse().ok()?)))
            .sum();
        out.push(check(
            format!("game.{}.outcomes", t.id),
            "game",
            format!("table {}: win, push and loss probabilities sum to exactly 1", t.id),
            sum == Exact::from(1) && t.game.largest_payout.is_some(),
            format!("sum = {}", crate::odds::fraction(&sum)),
        ));
        let best = rtp_of(&t.game);
        let over = best.as_ref().is_none_or(|b| *b > Exact::from(1));
        out.push(check(
            format!("game.{}.rtp", t.id),
            "game",
            format!(
                "table {}: the best play returns at most the stake (RTP at most 1), unless the table is a declared \
                 promotion",
                t.id
            ),
            !over || t.rules.promotion,
            match (&best, over, t.rules.promotion) {
                (None, _, _) => "the optimal RTP is missing from the game figures".to_string(),
                (Some(b), false, _) => format!("best-play RTP {}", crate::odds::decimal(b, 10)),
                (Some(b), true, true) => {
                    format!("best-play RTP {}: a promotion (allow_rtp_over_1)", crate::odds::decimal(b, 10))
                }
                (Some(b), true, false) => format!(
                    "best-play RTP {} is above 1 and the table does not declare \"allow_rtp_over_1\"",
                    crate::odds::decimal(b, 10)
                ),
            },
        ));
        let a = &t.agreement;
        let outside: Vec<String> = a.comparisons.iter().filter(|c| !c.inside).map(|c| c.figure.clone()).collect();
        out.push(check(
            format!("agreement.{}", t.id),
            "agreement",
            format!("table {}: every exact figure inside the simulation's 99.9% interval ({} rounds)", t.id, a.rounds),
            outside.is_empty(),
            if outside.is_empty() {
                format!("{} figures inside", a.comparisons.len())
            } else {
                format!("outside: {}", outside.join(", "))
            },
        ));
    }
    for r in randomness.tests() {
        out.push(check(
            format!("randomness.{}", r.name),
            "randomness",
            r.name.clone(),
            r.passed,
            format!("statistic {:.4}, {}, p = {:.6}, alpha = {:e}", r.statistic, r.distribution, r.p_value, r.alpha),
        ));
    }
    let dh = &randomness.dieharder;
    out.push(check(
        "randomness.dieharder".into(),
        "randomness",
        "dieharder on the raw deal stream: no FAILED".into(),
        randomness.dieharder_passed(),
        format!("{}: {} passed, {} weak, {} failed", dh.status, dh.passed, dh.weak, dh.failed),
    ));
    for v in &protocol.vectors {
        out.push(check(
            format!("protocol.vectors.{}", v.file),
            "protocol",
            format!("every case of {} gives its expected result", v.file),
            v.cases > 0 && v.passed == v.cases,
            format!(
                "{} of {} cases{}",
                v.passed,
                v.cases,
                if v.failures.is_empty() { String::new() } else { format!(": {}", v.failures.join("; ")) }
            ),
        ));
    }
    let s = &protocol.self_test;
    out.push(check(
        "protocol.self_test".into(),
        "protocol",
        "live rounds through the in-process gRPC service: every reveal verifies and matches what was shown".into(),
        protocol.self_test_passed(),
        format!(
            "{} of {} rounds verified{}",
            s.verified,
            s.rounds,
            if s.failures.is_empty() { String::new() } else { format!(": {}", s.failures.join("; ")) }
        ),
    ));
    out
}

/// The optimal rule's RTP (per initial bet) from a table's game figures.
fn rtp_of(game: &game::GameFigures) -> Option<Exact> {
    let f = &game.rules.first()?.rtp.fraction;
    let (n, d) = f.split_once('/')?;
    Some(Exact::new(n.parse().ok()?, d.parse().ok()?))
}
