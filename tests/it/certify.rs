//! `reddog certify`'s verdict must be able to fail: a deliberately biased shuffle (test-only:
//! each Fisher–Yates step picks with `(7 random bits) % bound`, a modulo bias) in place of the
//! production deal makes the randomness section fail and the whole report's verdict and exit
//! status non-zero, while the production deal passes the same tests with the same sample
//! sizes and seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use reddog::certify::randomness::{self, DealSource, DieharderPlan, FairDeals, RandomnessPlan};
use reddog::certify::{Options, Plan, run_with};
use reddog::game::{Card, CardSource, Decks, Shoe, Table};
use reddog::service::Tables;

/// A shoe shuffled with modulo bias: position `i` swaps with `i + (r % (n − i))`, `r` 7 random
/// bits (for the first card, 24 of the 52 picks are 3/2 as likely as the other 28).
struct BiasedShoe {
    shoe: Shoe,
    rng: ChaCha8Rng,
}

impl CardSource for BiasedShoe {
    fn draw(&mut self) -> Card {
        let rng = &mut self.rng;
        self.shoe.draw_with(|bound| (rng.next_u32() & 0x7f) % bound).expect("a round never exhausts the shoe")
    }
}

struct ModuloBiased;

impl DealSource for ModuloBiased {
    type Shoe = BiasedShoe;

    fn describe(&self) -> String {
        "test-only modulo-biased shuffle".into()
    }

    fn shoe(&self, experiment: &str, decks: Decks, index: u64) -> BiasedShoe {
        let tag = experiment.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let mut rng = ChaCha8Rng::seed_from_u64(tag);
        rng.set_stream(index);
        BiasedShoe { shoe: Shoe::new(decks), rng }
    }
}

/// Small enough for a debug build, large enough to see a modulo bias.
fn small_plan() -> Plan {
    Plan {
        name: "custom".into(),
        sim_rounds: 1 << 16,
        randomness: RandomnessPlan {
            shoe_deals: 2_000,
            triple_deals: 30_000,
            repeat_runs: 20,
            repeat_deals: 500,
            alpha: 1e-6,
            dieharder: DieharderPlan::Skip,
            dieharder_required: false,
            dieharder_parallel: 1,
        },
        self_test_rounds: 3,
    }
}

#[test]
fn a_biased_shuffle_fails_the_randomness_section_and_the_verdict() {
    let options = Options {
        plan: small_plan(),
        seed: 7,
        tables: Tables::single(Table::default()),
        table_config: None,
        command_line: vec!["test".into()],
        strict: false,
        change: None,
    };
    let report = run_with(&options, &ModuloBiased, None, &|_| {}).unwrap();
    let failed: Vec<&str> = report.checks.iter().filter(|c| !c.passed).map(|c| c.id.as_str()).collect();
    assert!(failed.iter().any(|id| id.starts_with("randomness.shuffle: card x position")), "{failed:?}");
    assert!(failed.iter().all(|id| id.starts_with("randomness.")), "only the randomness section may fail: {failed:?}");
    assert!(!report.verdict.passed);
    assert_eq!(report.verdict.checks_failed, failed.len());
    assert_eq!(report.exit_code(), 1);
    // The other sections still ran on the production code and passed.
    assert!(report.protocol.self_test_passed() && report.protocol.vectors_passed());
}

#[test]
fn the_production_deal_passes_the_same_tests() {
    let plan = small_plan().randomness;
    let fair = FairDeals { seed: 7 };
    let r = randomness::run(&fair, &[1], &plan, &|_| {}, Some(&fair));
    let failed: Vec<String> =
        r.tests().iter().filter(|t| !t.passed).map(|t| format!("{} p={}", t.name, t.p_value)).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert!(r.dieharder_passed(), "dieharder was not asked for");
}

/// A table whose best play returns more than the stake (allowed with `allow_rtp_over_1`) is a
/// warning that names it; with `--strict` it fails the verdict, and nothing else does.
#[test]
fn an_rtp_above_1_warns_and_fails_only_with_strict() {
    let config = r#"{"tables": {"promo": {"decks": 6, "allow_rtp_over_1": true,
        "paytable": {"spread": [50, 40, 20, 10, 10, 10, 10, 10, 10, 10, 10], "three_of_a_kind": 50}}}}"#;
    let mut options = Options {
        plan: small_plan(),
        seed: 7,
        tables: Tables::from_json(config).unwrap(),
        table_config: None,
        command_line: vec!["test".into()],
        strict: false,
        change: None,
    };
    let fair = FairDeals { seed: 7 };
    let report = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    assert!(report.verdict.passed, "{:?}", report.checks.iter().filter(|c| !c.passed).collect::<Vec<_>>());
    let [w] = &report.warnings[..] else { panic!("one warning: {:?}", report.warnings) };
    assert!(w.contains("table promo") && w.contains("a promotion") && w.contains("more than the stake"), "{w}");
    options.strict = true;
    let strict = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    let failed: Vec<&str> = strict.checks.iter().filter(|c| !c.passed).map(|c| c.detail.as_str()).collect();
    assert_eq!(failed, [w.as_str()]);
    assert_eq!(strict.exit_code(), 1);
    assert!(strict.reproduce.contains("--strict"));
}

/// The SHA-256 of the engine binary the tests run (`sha256sum`'s answer).
pub fn binary_sha256() -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(std::fs::read(crate::common::reddog_binary()).unwrap()))
}

/// `reddog certify` as a child process with `args`: its exit status, stdout and stderr.
fn certify(args: &[&str]) -> (std::process::ExitStatus, String, String) {
    let out = std::process::Command::new(crate::common::reddog_binary())
        .arg("certify")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The repository's shipped certified rules (`deploy/base/certified-rules.json`).
fn shipped() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/certified-rules.json")
}

/// Issue 45, must show 1: against the certified rules in force, a config whose three of a
/// kind pays 1 prints the changed entry and both exact RTPs and exits non-zero without
/// `--approve`, writing nothing; every other entry of the paytable, changed alone, is named
/// and refused without approval too (12 entries).
#[test]
fn a_paytable_typo_against_the_rules_in_force_is_shown_and_refused_without_approval() {
    let dir = tempfile::tempdir().unwrap();
    let base: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/table.json"))
            .unwrap(),
    )
    .unwrap();
    let previous = reddog::service::CertifiedRules::from_json(&std::fs::read_to_string(shipped()).unwrap()).unwrap();
    let rtp_before = &previous.tables[0].rtp_exact;
    let mut entries: Vec<(String, serde_json::Value)> = Vec::new();
    let mut typo = base.clone();
    typo["paytable"]["three_of_a_kind"] = 1.into();
    entries.push(("paytable.three_of_a_kind: 11 -> 1".into(), typo));
    for s in 0..11 {
        let mut t = base.clone();
        let odds = t["paytable"]["spread"][s].as_u64().unwrap();
        // One less where the rules allow it (odds are at least 1), else one more — declared a
        // promotion where that makes the best play return more than the stake.
        let new = if odds > 1 { odds - 1 } else { odds + 1 };
        t["paytable"]["spread"][s] = new.into();
        if reddog::service::Tables::from_json(&t.to_string()).is_err() {
            t["allow_rtp_over_1"] = true.into();
        }
        entries.push((format!("paytable.spread[{}]: {odds} -> {new}", s + 1), t));
    }
    for (i, (line, config)) in entries.iter().enumerate() {
        let path = dir.path().join(format!("typo-{i}.json"));
        std::fs::write(&path, config.to_string()).unwrap();
        let out = dir.path().join(format!("out-{i}"));
        let (status, stdout, stderr) = certify(&[
            "--quick",
            "--table-config",
            path.to_str().unwrap(),
            "--against",
            shipped().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
        assert!(stdout.contains(line), "{line}: {stdout}");
        let rtp_after = reddog::service::rtp(
            &reddog::service::Tables::from_json(&config.to_string()).unwrap().get("default").unwrap().table,
        )
        .0;
        assert!(
            stdout.contains(&format!("rtp: {rtp_before} (")) && stdout.contains(&format!("-> {rtp_after} (")),
            "{stdout}"
        );
        assert!(stdout.contains("needs approval") && stdout.contains("NOT APPROVED"), "{stdout}");
        assert!(!out.join("certified-rules.json").exists() && !out.join("report.json").exists());
        if i == 0 {
            println!("{stdout}");
        }
    }
    println!("{} one-entry changes refused without --approve", entries.len());
}

/// Issue 45, must show 2: a paytable returning 2.82 per unit bet without a promotion flag is
/// refused, naming the field and the RTP, and no certified-rules.json is written — not even
/// one an earlier passing run left in the directory.
#[test]
fn an_rtp_above_1_without_a_promotion_flag_certifies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rtp277.json");
    // Every spread pays 5 to 1: the best play returns 2.82 per unit bet.
    let paytable = r#"{"spread":[5,5,5,5,5,5,5,5,5,5,5],"three_of_a_kind":11}"#;
    std::fs::write(&config, format!(r#"{{"decks":1,"paytable":{paytable}}}"#)).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("certified-rules.json"), "an earlier pass").unwrap();
    let (status, stdout, stderr) =
        certify(&["--quick", "--table-config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("tables.default.paytable") && stderr.contains("returns 2.8199"), "{stderr}");
    assert!(!out.join("certified-rules.json").exists(), "a failed certification left a certified-rules.json");
    println!("{}", stderr.lines().next().unwrap_or_default());
}

/// Only a pass yields the file: tables whose best play returns more than the stake without a
/// declared promotion (built in code, as the configuration parser would refuse them) fail the
/// verdict on `game.<id>.rtp`, and the report yields no certified rules; the same table
/// declared a promotion passes, the report and the file say so.
#[test]
fn only_a_passed_report_yields_certified_rules_and_a_promotion_is_stated() {
    use reddog::game::{BetLimits, Decks, Money, Paytable, Table};
    let generous: Paytable =
        serde_json::from_str(r#"{"spread":[60,60,60,60,60,60,60,60,60,60,60],"three_of_a_kind":60}"#).unwrap();
    let limits = BetLimits::new(Money(500), Money(1000)).unwrap();
    let table = Table::new(Decks::ONE, generous, limits).unwrap();
    let options = Options {
        plan: small_plan(),
        seed: 7,
        tables: Tables::single(table),
        table_config: None,
        command_line: vec!["test".into()],
        strict: false,
        change: None,
    };
    let fair = FairDeals { seed: 7 };
    let report = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    let failed: Vec<&str> = report.checks.iter().filter(|c| !c.passed).map(|c| c.id.as_str()).collect();
    assert_eq!(failed, ["game.default.rtp"]);
    assert!(report.certified_rules.is_none());

    let config = r#"{"tables": {"promo": {"decks": 1, "min_bet": 500, "max_bet": 1000, "allow_rtp_over_1": true,
        "paytable": {"spread": [60,60,60,60,60,60,60,60,60,60,60], "three_of_a_kind": 60}}}}"#;
    let options = Options { tables: Tables::from_json(config).unwrap(), ..options };
    let report = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    assert!(report.verdict.passed, "{:?}", report.checks.iter().filter(|c| !c.passed).collect::<Vec<_>>());
    let check = report.checks.iter().find(|c| c.id == "game.promo.rtp").unwrap();
    assert!(check.detail.contains("a promotion"), "{check:?}");
    assert!(report.tables[0].rules.promotion);
    let file = report.certified_rules.unwrap();
    assert!(file.tables[0].promotion && file.verdict == "pass");
    assert_eq!(file.binary_sha256, report.identity.binary_sha256);
}

/// Sandbox tables are certified as sandbox tables: the self-test plays them on a test engine,
/// each round shows itself a sandbox round and its reveal is refused by the verifier; the
/// file marks the table `sandbox` (and the fair tables not), and a sandbox entry never
/// certifies the same rules served as a fair table.
#[test]
fn sandbox_tables_are_certified_as_sandbox_never_as_fair() {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sandbox-tables.json"))
            .unwrap();
    let tables = Tables::from_json(&text).unwrap();
    let options = Options {
        plan: small_plan(),
        seed: 7,
        tables: tables.clone(),
        table_config: None,
        command_line: vec!["test".into()],
        strict: false,
        change: None,
    };
    let fair = FairDeals { seed: 7 };
    let report = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    assert!(report.verdict.passed, "{:?}", report.checks.iter().filter(|c| !c.passed).collect::<Vec<_>>());
    assert_eq!(report.protocol.self_test.verified, report.protocol.self_test.rounds);
    let file = report.certified_rules.unwrap();
    let marks: Vec<(&str, bool)> = file.tables.iter().map(|t| (t.table_id.as_str(), t.sandbox)).collect();
    assert_eq!(marks, [("default", false), ("jpy", false), ("lab", true)]);
    assert_eq!(file.check(&tables), Ok(()));
    let unflagged = Tables::from_json(&text.replace(r#", "sandbox": true"#, "")).unwrap();
    assert!(file.check(&unflagged).unwrap_err().contains("\"lab\""));
}

/// The sandbox flag is part of the rules digest: the sandbox table's digest differs from the
/// same table's without the flag.
#[test]
fn a_sandbox_tables_digest_differs_from_the_same_table_without_the_flag() {
    let text =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sandbox-tables.json"))
            .unwrap();
    let with = Tables::from_json(&text).unwrap().get("lab").unwrap().digest();
    let without = Tables::from_json(&text.replace(r#", "sandbox": true"#, "")).unwrap().get("lab").unwrap().digest();
    assert_ne!(with, without);
}

/// Issue 45, must show 3: `serve --certified-rules F` where F names another binary's digest
/// exits non-zero naming both digests; with `--allow-uncertified-binary` it serves and reports
/// itself uncertified (`reddog_binary_certified 0`, `reddog_rules_certified 0`, a warning);
/// with F naming this binary it reports `1`.
#[tokio::test]
async fn served_rules_are_bound_to_the_binary_that_certified_them() {
    use crate::common::{Log, ServerProcess, ring_a};
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("table.json");
    std::fs::write(&config, r#"{"decks":1}"#).unwrap();
    let tables = Tables::from_json(r#"{"decks":1}"#).unwrap();
    let own = binary_sha256();
    let other = "ab".repeat(32);
    let write = |name: &str, digest: &str| {
        let path = dir.path().join(name);
        let file = reddog::service::CertifiedRules::of(&tables, digest, "test");
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (mine, theirs) = (write("mine.json", &own), write("theirs.json", &other));
    let args = |file: &str| {
        vec!["--table-config".to_string(), config.to_str().unwrap().into(), "--certified-rules".into(), file.into()]
    };

    let (status, out) = ServerProcess::builder().args(&args(&theirs)).env("REDDOG_KEY_RING", &ring_a()).refused();
    assert!(!status.success(), "{out}");
    assert!(out.contains(&own) && out.contains(&other) && out.contains("binary_sha256"), "{out}");

    let mut allowed = args(&theirs);
    allowed.push("--allow-uncertified-binary".into());
    let served = ServerProcess::builder().args(&allowed).env("REDDOG_KEY_RING", &ring_a()).log(Log::Keep).spawn();
    served.wait_for_log("UNCERTIFIED", std::time::Duration::from_secs(30));
    assert_eq!(served.scrape("reddog_binary_certified").await, Some(0.0));
    let digest = tables.get("default").unwrap().digest().to_hex();
    let series = format!("reddog_rules_certified{{table=\"default\",rules_digest=\"{digest}\"}}");
    assert_eq!(served.scrape(&series).await, Some(0.0));
    served.terminate().await;

    let served = ServerProcess::builder().args(&args(&mine)).env("REDDOG_KEY_RING", &ring_a()).log(Log::Keep).spawn();
    assert_eq!(served.scrape("reddog_binary_certified").await, Some(1.0));
    assert_eq!(served.scrape(&series).await, Some(1.0));
    assert!(!served.log_contains("UNCERTIFIED"));
    served.terminate().await;
}

/// A malformed file is refused at start-up naming the field: one case per kind of field the
/// binary checks (the unit tests of `service::certified` cover every field).
#[test]
fn a_malformed_certified_rules_file_is_refused_naming_the_field() {
    use crate::common::{ServerProcess, ring_a};
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("table.json");
    std::fs::write(&config, r#"{"decks":1}"#).unwrap();
    let tables = Tables::from_json(r#"{"decks":1}"#).unwrap();
    let good = serde_json::to_value(reddog::service::CertifiedRules::of(&tables, &binary_sha256(), "test")).unwrap();
    let cases: [(&str, &str, serde_json::Value); 4] = [
        ("binary_sha256", "/binary_sha256", "not hex".into()),
        ("tables[0].rules_digest", "/tables/0/rules_digest", "ABC".into()),
        ("tables[0].rtp_exact", "/tables/0/rtp_exact", "1/1".into()),
        ("verdict", "/verdict", "fail".into()),
    ];
    for (field, pointer, value) in cases {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = value;
        let path = dir.path().join("bad.json");
        std::fs::write(&path, v.to_string()).unwrap();
        let args = ["--table-config", config.to_str().unwrap(), "--certified-rules", path.to_str().unwrap()];
        let (status, out) = ServerProcess::builder().args(&args).env("REDDOG_KEY_RING", &ring_a()).refused();
        assert!(!status.success(), "{out}");
        assert!(out.contains(&format!("{field}: ")), "{field}: {out}");
    }
}

/// `--full` runs dieharder's whole battery as `-a` does (80 processes) and its progress bar
/// counts each process at its measured cost, so the ETA includes the battery, which is most
/// of the plan's work: one core's 33 minutes, run two at a time on two cores.
#[test]
fn the_full_plans_progress_counts_the_whole_battery_at_its_measured_cost() {
    let full = Plan::full();
    let r = &full.randomness;
    assert_eq!(r.dieharder.jobs(), randomness::all_jobs());
    let reference = randomness::dieharder_reference_ms();
    let battery = r.dieharder_work();
    assert_eq!(battery, reference * randomness::DEALS_PER_DIEHARDER_MS);
    let share = battery as f64 / r.work(&[1]) as f64;
    println!("battery: {} CPU-s on one core, {:.0} % of the one-deck randomness work", reference / 1000, share * 100.0);
    assert!(share > 0.8, "{share}");
    assert!((25 * 60_000..40 * 60_000).contains(&reference), "{reference} ms");
    // The whole plan's CPU time on the reference machine (work / 10,750 simulated rounds per
    // ms), run on two cores, ends well within an hour.
    let minutes = |tables: &Tables| full.work(tables) as f64 / 10_750.0 / 1000.0 / 60.0 / 2.0;
    let one = minutes(&Tables::single(Table::default()));
    let examples =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/examples/tables.json"))
            .unwrap();
    let three = minutes(&Tables::from_json(&examples).unwrap());
    println!("--full: about {one:.0} minutes for one table, {three:.0} for deploy/examples/tables.json, on two cores");
    assert!(one < 40.0 && three < 45.0, "{one} {three}");
}
