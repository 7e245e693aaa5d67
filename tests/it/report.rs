//! `reddog report` on generated `reddog-audit-v1` trails of several replicas
//! (`reddog_tools::generate`, calls retried on other replicas): the JSON rows and the CSV
//! carry the same figures, each settled round is counted once, a trail whose table is not
//! configured as it was played exits 2 naming the table (without `--tables` the rules come
//! from the trail, and a record that disagrees with them exits 2), and `--reconcile` exits 0 on a
//! ledger of exactly the settled seats and 1 on one with a planted difference, naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use reddog_tools::generate;

/// The generator's tables, as a `--tables` file.
const TABLES: &str = r#"{"tables": {
  "default": {"decks": 1, "min_bet": 500, "max_bet": 30000, "currency": "EUR", "minor_unit_exponent": 2},
  "vip": {"decks": 6, "min_bet": 1000, "max_bet": 100000, "currency": "JPY", "minor_unit_exponent": 0}
}}"#;

fn trail(dir: &Path) -> Vec<PathBuf> {
    let opts = generate::Options { rounds: 120, replicas: 3, seed: 5, ..generate::Options::default() };
    let files: Vec<PathBuf> = (0..opts.replicas).map(|r| dir.join(format!("replica-{r}.jsonl"))).collect();
    let mut outs: Vec<std::fs::File> = files.iter().map(|f| std::fs::File::create(f).unwrap()).collect();
    generate::generate(&opts, &mut outs).unwrap();
    std::fs::write(dir.join("tables.json"), TABLES).unwrap();
    files
}

fn report(args: &[&str], files: &[PathBuf]) -> (Option<i32>, String, String) {
    let out = Command::new(crate::common::reddog_binary()).arg("report").args(args).args(files).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each settlement once (by round id and transcript): round id → each seat's (stake, returned).
fn settled_seats(files: &[PathBuf]) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut seen = BTreeMap::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            if r["event"] == "round_settled" {
                let seats = r["seats"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| (s["stake"].as_u64().unwrap(), s["returned"].as_u64().unwrap()))
                    .collect::<Vec<_>>();
                let prev = seen.insert(r["round_id"].as_str().unwrap().to_string(), seats.clone());
                assert!(prev.is_none_or(|p| p == seats), "the generator settles each round one way");
            }
        }
    }
    seen
}

#[test]
fn json_rows_and_csv_carry_the_same_figures_and_each_round_once() {
    let dir = tempfile::tempdir().unwrap();
    let files = trail(dir.path());
    let tables = dir.path().join("tables.json");
    let tables = tables.to_str().unwrap();
    let (code, json, err) = report(&["--json", "--tables", tables], &files);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["repeated_settlements"].as_u64().unwrap() > 0, "the generator retries Settle");
    let rows = v["rows"].as_array().unwrap();
    let seats = settled_seats(&files);
    let sum = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("rounds"), seats.len() as u64);
    assert_eq!(sum("seats"), seats.values().map(|s| s.len() as u64).sum::<u64>());
    assert_eq!(sum("staked"), seats.values().flatten().map(|s| s.0).sum::<u64>());
    assert_eq!(sum("returned"), seats.values().flatten().map(|s| s.1).sum::<u64>());
    let (code, csv, _) = report(&["--csv", "--tables", tables], &files);
    assert_eq!(code, Some(0));
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        &header[..9],
        ["table_id", "currency", "day", "sandbox", "rounds", "seats", "staked", "returned", "ggr"]
    );
    let csv_rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(csv_rows.len(), rows.len());
    for (c, j) in csv_rows.iter().zip(rows) {
        for (i, name) in header.iter().enumerate() {
            let want = match &j[*name] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => String::new(),
                serde_json::Value::Number(n) if n.is_f64() => format!("{:.6}", n.as_f64().unwrap()),
                other => other.to_string(),
            };
            if name.starts_with("observed_return_ci95") {
                continue; // an array in JSON, two columns in CSV
            }
            assert_eq!(c[i], want, "column {name}");
        }
    }
}

#[test]
fn a_trail_played_under_other_rules_exits_2_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let files = trail(dir.path());
    // The table `default` with another minimum bet: its digest is not the records'.
    let other = dir.path().join("other.json");
    std::fs::write(&other, TABLES.replace("\"min_bet\": 500", "\"min_bet\": 100")).unwrap();
    let (code, out, err) = report(&["--tables", other.to_str().unwrap()], &files);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("table \"default\": the record's rules digest"), "{err}");
    assert!(out.is_empty(), "no report on stdout: {out}");
    // Without --tables the rules come from the trail itself: the report is given.
    let (code, out, err) = report(&[], &files);
    assert_eq!(code, Some(0), "{out}{err}");
    // A record whose paytable is not that of the other records of its digest is refused.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let at = text.find("\"round_settled\"").unwrap();
    let odds = at + text[at..].find("\"three_of_a_kind\":11").unwrap();
    let altered = format!("{}\"three_of_a_kind\":12{}", &text[..odds], &text[odds + "\"three_of_a_kind\":11".len()..]);
    std::fs::write(&files[0], altered).unwrap();
    let (code, out, err) = report(&[], &files);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("rules digest") && err.contains("three_of_a_kind: 12"), "{err}");
}

#[test]
fn reconcile_exits_0_on_the_settled_seats_and_1_naming_a_planted_difference() {
    let dir = tempfile::tempdir().unwrap();
    let files = trail(dir.path());
    let tables = dir.path().join("tables.json");
    let tables = tables.to_str().unwrap();
    let seats = settled_seats(&files);
    let ledger = |plant: Option<&str>| {
        let mut text = String::from("round_id,seat,staked,credited\n");
        for (round, s) in &seats {
            for (i, &(stake, returned)) in s.iter().enumerate() {
                let credited = if Some(round.as_str()) == plant && i == 0 { returned + 100 } else { returned };
                text.push_str(&format!("{round},{i},{stake},{credited}\n"));
            }
        }
        let path = dir.path().join(if plant.is_some() { "planted.csv" } else { "ledger.csv" });
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let clean = ledger(None);
    let (code, out, err) = report(&["--reconcile", &clean, "--tables", tables], &files);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("differences: 0"), "{out}");
    let planted_round = seats.keys().nth(7).unwrap().clone();
    let planted = ledger(Some(&planted_round));
    let (code, out, err) = report(&["--reconcile", &planted, "--json", "--tables", tables], &files);
    assert_eq!(code, Some(1), "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let diffs = v["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(diffs[0]["kind"], "credited_differs");
    assert_eq!(diffs[0]["round_id"], planted_round.as_str());
    assert_eq!(diffs[0]["seat"], 0);
    assert_eq!(diffs[0]["ledger"]["credited"].as_u64().unwrap(), diffs[0]["audit"]["credited"].as_u64().unwrap() + 100);
}

/// The largest table the engine accepts: 8 decks, every entry of the paytable at the largest
/// odds, `max_bet` the largest those odds allow, 7 seats at it, every seat raising. A few
/// rounds return more than `u64::MAX` minor units in all: the report's JSON and CSV sums must
/// be exact and equal the Settle answers.
#[tokio::test]
async fn report_sums_past_64_bits_at_the_largest_table_equal_the_settle_answers() {
    use reddog::game::paytable::{MAX_ODDS, PaytableSpec};
    use reddog::game::{MAX_DECKS, MAX_SEATS, Paytable, largest_max_bet};
    use reddog::service::proto::Action;

    use crate::common::{ServerProcess, connect, req, ring_a};

    let paytable = Paytable::try_from(PaytableSpec { spread: vec![MAX_ODDS; 11], three_of_a_kind: MAX_ODDS }).unwrap();
    let max_bet = largest_max_bet(&paytable).0;
    let dir = tempfile::tempdir().unwrap();
    let tables = dir.path().join("tables.json");
    let table = serde_json::json!({"tables": {"max": {
        "decks": MAX_DECKS, "min_bet": 1, "max_bet": max_bet, "paytable": paytable,
        "allow_rtp_over_1": true, "currency": "EUR", "minor_unit_exponent": 2,
    }}});
    std::fs::write(&tables, table.to_string()).unwrap();
    let trail = dir.path().join("audit.jsonl");
    let ring = ring_a();
    let server = ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("REDDOG_TABLE_CONFIG", tables.to_str().unwrap()),
            ("REDDOG_AUDIT_LOG", trail.to_str().unwrap()),
        ],
        std::process::Stdio::null(),
    );
    let mut c = connect(server.addr).await;
    let bets = vec![max_bet; MAX_SEATS];
    let (mut rounds, mut seats, mut staked, mut returned) = (0u64, 0u64, 0u128, 0u128);
    while returned <= u128::from(u64::MAX) || rounds < 3 {
        assert!(rounds < 400, "no sum past 64 bits in {rounds} rounds");
        let id = format!("max-{rounds}");
        let committed = c.commit_seed(req::commit_seed().round(&id).nonce(rounds).table("max")).await.unwrap();
        let start = req::start_round(committed.commitment_token).round(&id).nonce(rounds).bets(&bets);
        let started = c.start_round(start.limits(1, max_bet).table("max")).await.unwrap();
        let mut token = started.round_token;
        if started.round.unwrap().awaiting_decisions {
            for seat in 0..MAX_SEATS as u32 {
                token = c.decide(req::decide(token).action(seat, Action::Raise)).await.unwrap().round_token;
            }
        }
        let settled = c.settle(req::settle(token)).await.unwrap();
        rounds += 1;
        for r in &settled.results {
            seats += 1;
            staked += u128::from(r.stake);
            returned += u128::from(r.returned);
        }
    }
    drop(c);
    assert!(server.terminate().await.success());

    let files = [trail];
    let tables = tables.to_str().unwrap();
    let (code, json, err) = report(&["--json", "--tables", tables], &files);
    assert_eq!(code, Some(0), "{err}");
    #[derive(serde::Deserialize)]
    struct Sums {
        rounds: u64,
        seats: u64,
        staked: u128,
        returned: u128,
        ggr: i128,
    }
    #[derive(serde::Deserialize)]
    struct Report {
        rows: Vec<Sums>,
        totals: Vec<Sums>,
    }
    let rep: Report = serde_json::from_str(&json).unwrap();
    for sums in [&rep.rows, &rep.totals] {
        let [s] = &sums[..] else { panic!("one row and one total: {json}") };
        assert_eq!((s.rounds, s.seats, s.staked, s.returned), (rounds, seats, staked, returned), "{json}");
        assert_eq!(s.ggr, staked as i128 - returned as i128);
    }
    let (code, csv, err) = report(&["--csv", "--tables", tables], &files);
    assert_eq!(code, Some(0), "{err}");
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let want = [rounds.to_string(), seats.to_string(), staked.to_string(), returned.to_string()];
    assert_eq!(row[4..8], want.each_ref().map(String::as_str), "{csv}");
    assert_eq!(row[8], (staked as i128 - returned as i128).to_string());
    let (code, _, err) = report(&["--tables", tables], &files);
    assert_eq!(code, Some(0), "{err}");
}
