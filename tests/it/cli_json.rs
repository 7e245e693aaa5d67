//! The binary's `--json` output: one clean JSON object on stdout with the fields the issue
//! asks for, and the same simulation for the same seed whatever the thread count.

use std::process::Command;

fn run(args: &[&str]) -> serde_json::Value {
    let out = Command::new(crate::common::reddog_binary()).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON object")
}

#[test]
fn odds_json_has_the_fraction_ev_and_decimal_figures_of_each_policy() {
    let v = run(&["odds", "--decks", "1", "--json"]);
    assert_eq!(v["decks"], 1);
    assert_eq!(v["raise_spreads"], serde_json::json!([7, 8, 9, 10, 11]));
    for policy in ["never", "raise_at_least_7", "optimal"] {
        let p = &v["policies"][policy];
        let ev = p["ev"].as_str().unwrap();
        let (num, den) = ev.split_once('/').unwrap();
        assert!(num.parse::<i64>().is_ok() && den.parse::<i64>().is_ok(), "{ev}");
        for field in ["house_edge", "element_of_risk", "rtp"] {
            let x = p[field].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{policy}.{field} = {x} is a fraction, not a percentage");
        }
    }
    assert_eq!(v["policies"]["optimal"]["ev"], "-523/16575");
    assert!((v["policies"]["optimal"]["rtp"].as_f64().unwrap() - 0.968446).abs() < 5e-7);
}

#[test]
fn simulate_json_is_reproducible_for_a_seed_whatever_the_thread_count() {
    let base = ["simulate", "--rounds", "200000", "--decks", "6", "--seats", "3", "--seed", "9", "--json"];
    let one = run(&[&base[..], &["--threads", "1"]].concat());
    let two = run(&[&base[..], &["--threads", "2"]].concat());
    for field in ["rounds", "rtp", "ci_low", "ci_high", "rounds_per_second"] {
        assert!(one[field].is_number(), "{field}");
    }
    assert_eq!(one["rounds"], 200000);
    for field in ["rtp", "ci_low", "ci_high", "totals", "hands"] {
        assert_eq!(one[field], two[field], "{field}");
    }
    assert!(one["ci_low"].as_f64() < one["ci_high"].as_f64());
}

#[test]
fn bad_arguments_fail_cleanly() {
    for args in [
        &["odds", "--decks", "0"][..],
        &["simulate", "--rounds", "10", "--seats", "8"],
        &["simulate", "--rounds", "10", "--policy", "raise-at-least:99"],
        &["odds", "--paytable", "/nonexistent/paytable.json"],
    ] {
        let out = Command::new(crate::common::reddog_binary()).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{args:?}");
    }
}
