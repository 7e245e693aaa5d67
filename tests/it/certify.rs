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
    };
    let fair = FairDeals { seed: 7 };
    let report = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    assert!(report.verdict.passed, "{:?}", report.checks.iter().filter(|c| !c.passed).collect::<Vec<_>>());
    let [w] = &report.warnings[..] else { panic!("one warning: {:?}", report.warnings) };
    assert!(w.contains("table promo") && w.contains("more than the stake"), "{w}");
    options.strict = true;
    let strict = run_with(&options, &fair, Some(&fair), &|_| {}).unwrap();
    let failed: Vec<&str> = strict.checks.iter().filter(|c| !c.passed).map(|c| c.detail.as_str()).collect();
    assert_eq!(failed, [w.as_str()]);
    assert_eq!(strict.exit_code(), 1);
    assert!(strict.reproduce.contains("--strict"));
}
