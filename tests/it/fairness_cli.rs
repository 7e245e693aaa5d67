//! The binary's fairness commands: `reddog commit`, `reddog verify` and `reddog rng-dump`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn reddog(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(crate::common::reddog_binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command that refuses its arguments exits without reading its input: the pipe may
    // then be closed before the input is written (seen on a loaded CI machine).
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing the command's input: {e}"),
    }
    child.wait_with_output().unwrap()
}

fn worked_example() -> String {
    let out = reddog(&["commit", "--server-seed", SEED, "--reveal", "--client-seed", "lucky-7"], "");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn commit_prints_a_seed_and_its_commitment() {
    let out = reddog(&["commit"], "");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("server_seed ") && text.contains("\ncommitment  "), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("manual experiments only"));
}

#[test]
fn the_worked_example_of_the_spec_verifies_from_stdin() {
    let reveal = worked_example();
    assert!(
        reveal.contains("\"Jd\"")
            && reveal.contains("630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd")
    );
    let out = reddog(&["verify"], &reveal);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("cards       Jd 6h 6d") && text.contains("verdict     VERIFIED"), "{text}");
    assert!(text.contains("non_consecutive, spread 4"), "{text}");
}

#[test]
fn a_tampered_reveal_fails_with_a_non_zero_exit_status() {
    let reveal = worked_example().replace("\"6d\"", "\"7d\"");
    let out = reddog(&["verify", "-"], &reveal);
    assert_eq!(out.status.code(), Some(1), "not verified: exit status 1");
    assert!(String::from_utf8(out.stdout).unwrap().contains("NOT VERIFIED"));
    assert!(String::from_utf8(out.stderr).unwrap().contains("cards differ"));
}

#[test]
fn a_malformed_reveal_is_an_error_naming_the_field() {
    let reveal = worked_example().replace("\"decks\": 1", "\"decks\": 9");
    let out = reddog(&["verify"], &reveal);
    assert_eq!(out.status.code(), Some(2), "malformed: exit status 2");
    assert!(String::from_utf8(out.stderr).unwrap().contains("decks"));
    let out = reddog(&["verify"], "not json");
    assert_eq!(out.status.code(), Some(2));
    let out = reddog(&["verify", "/nonexistent/reveal.json"], "");
    assert_eq!(out.status.code(), Some(2), "unreadable: exit status 2");
}

#[test]
fn expectations_must_match_what_the_player_was_shown() {
    let reveal = worked_example();
    let commitment = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd";
    let ok = reddog(
        &[
            "verify",
            "--expect-commitment",
            commitment,
            "--expect-client-seed",
            "lucky-7",
            "--expect-nonce",
            "0",
            "--expect-decks",
            "1",
        ],
        &reveal,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stdout));
    for wrong in [
        ["--expect-commitment", &"00".repeat(32)],
        ["--expect-client-seed", "lucky-8"],
        ["--expect-nonce", "1"],
        ["--expect-decks", "2"],
        ["--expect-round-id", "r-1"],
    ] {
        let out = reddog(&["verify", wrong[0], wrong[1]], &reveal);
        assert_eq!(out.status.code(), Some(1), "{wrong:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("MISMATCH"), "{wrong:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shown.json");
    std::fs::write(&file, format!(r#"{{"commitment":"{commitment}","nonce":0}}"#)).unwrap();
    let out = reddog(&["verify", "--expect", file.to_str().unwrap()], &reveal);
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(&file, r#"{"nonce":0,"nonce":1}"#).unwrap();
    let out = reddog(&["verify", "--expect", file.to_str().unwrap()], &reveal);
    assert_eq!(out.status.code(), Some(2), "duplicate keys in the expectations file");
    for never in [["--expect-commitment", "zz"], ["--expect-decks", "9"], ["--expect-nonce", "18446744073709551616"]] {
        let out = reddog(&["verify", never[0], never[1]], &reveal);
        assert_eq!(out.status.code(), Some(2), "{never:?} can never match: malformed input");
    }
    std::fs::write(&file, r#"{"commitment":"xyz"}"#).unwrap();
    let out = reddog(&["verify", "--expect", file.to_str().unwrap()], &reveal);
    assert_eq!(out.status.code(), Some(2), "a non-hex commitment in the file");
    std::fs::write(&file, r#"{"player":"x"}"#).unwrap();
    let out = reddog(&["verify", "--expect", file.to_str().unwrap()], &reveal);
    assert_eq!(out.status.code(), Some(2), "unknown key in the expectations file");
}

#[test]
fn rng_dump_writes_the_keystream_of_the_deal_key() {
    // The worked example's key and its first ChaCha20 block (docs/FAIRNESS.md, section 8).
    let out = reddog(&["rng-dump", "--server-seed", SEED, "--client-seed", "lucky-7", "--bytes", "64"], "");
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        hex::decode(
            "a1ff916eb81a9ba2b32894622b52afd283c7a73dd0ffccf97bd8f50b0e2085bc\
             2e451f854acea675eb939243cb3d4f97a5926d43710ece166fd42e0de9965c76"
        )
        .unwrap()
    );
    let rounds = reddog(&["rng-dump", "--stream", "rounds", "--server-seed", SEED, "--bytes", "100"], "");
    assert_eq!(rounds.stdout.len(), 100);
}

/// A case of `tests/vectors/reveal-negative.json` by name: (reveal text, expectations).
fn negative_vector(name: &str) -> (String, serde_json::Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reveal-negative.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
        .clone();
    (case["reveal"].as_str().unwrap().to_string(), case["expect"].clone())
}

/// Finding 1: a genuine reveal (seat raised and won 4000) altered to a stand, every odds 1,
/// stake 1000 and return 2000, with its transcript (and rules digest) recomputed from the
/// altered fields, verifies on its own; given the last transcript the player was shown, or
/// the player's decisions, amounts or rules digest, `reddog verify` refuses it.
#[test]
fn a_forged_reveal_with_a_recomputed_transcript_is_refused_given_the_players_record() {
    for format in ["v2", "v3"] {
        let (forged, record) = negative_vector(&format!("forged/{format}/given-the-players-whole-record"));
        let alone = reddog(&["verify"], &forged);
        assert_eq!(alone.status.code(), Some(0), "{format}: the forgery verifies alone");
        let transcript = record["transcript"].as_str().unwrap();
        let digest = record["rules_digest"].as_str().unwrap_or("");
        let upper = transcript.to_uppercase();
        let mut given: Vec<Vec<&str>> = vec![
            vec!["--expect-transcript", transcript],
            vec!["--expect-transcript", &upper],
            vec!["--expect-decisions", "0:raise"],
            vec!["--expect-returned", "4000"],
        ];
        if format == "v3" {
            given.push(vec!["--expect-rules-digest", digest]);
        }
        for args in &given {
            let out = reddog(&[&["verify"][..], &args[..]].concat(), &forged);
            assert_eq!(out.status.code(), Some(1), "{format} {args:?}");
            assert!(String::from_utf8_lossy(&out.stdout).contains("MISMATCH"), "{format} {args:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("record.json");
        std::fs::write(&file, record.to_string()).unwrap();
        let out = reddog(&["verify", "--expect", file.to_str().unwrap()], &forged);
        assert_eq!(out.status.code(), Some(1), "{format}: the whole record as a file");
        // The genuine reveal of the same round matches the same record.
        let (genuine_text, _) = negative_vector(&format!("forged/{format}/given-the-players-last-transcript"));
        assert_eq!(reddog(&["verify"], &genuine_text).status.code(), Some(0));
    }
}

/// The player's whole record, as options and as a file, verifies the genuine round.
#[test]
fn the_genuine_round_matches_the_players_record_given_as_options_or_a_file() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reveal-v3.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "7-seats/three-steps/one-stands-by-default")
        .unwrap();
    let reveal = case["reveal"].as_str().unwrap();
    let r: serde_json::Value = serde_json::from_str(reveal).unwrap();
    let join =
        |key: &str| r["seats"].as_array().unwrap().iter().map(|s| s[key].to_string()).collect::<Vec<_>>().join(",");
    let decisions = r["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            call.as_array()
                .unwrap()
                .iter()
                .map(|d| format!("{}:{}", d["seat"], d["action"].as_str().unwrap()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";");
    assert_eq!(decisions, "0:stand,3:raise;1:raise;2:raise,4:raise,5:stand");
    let (bets, returned) = (join("bet"), join("returned"));
    let args = [
        "verify",
        "--expect-transcript",
        r["transcript"].as_str().unwrap(),
        "--expect-rules-digest",
        r["rules_digest"].as_str().unwrap(),
        "--expect-bets",
        &bets,
        "--expect-returned",
        &returned,
        "--expect-decisions",
        &decisions,
    ];
    let out = reddog(&args, reveal);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let reversed: Vec<Vec<serde_json::Value>> = r["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_array().unwrap().iter().rev().cloned().collect())
        .collect();
    let record = serde_json::json!({
        "transcript": r["transcript"], "rules_digest": r["rules_digest"], "decisions": reversed,
        "bets": r["seats"].as_array().unwrap().iter().map(|s| s["bet"].clone()).collect::<Vec<_>>(),
        "returned": r["seats"].as_array().unwrap().iter().map(|s| s["returned"].clone()).collect::<Vec<_>>(),
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("record.json");
    std::fs::write(&file, record.to_string()).unwrap();
    let out = reddog(&["verify", "--expect", file.to_str().unwrap(), "--expect-bets", &bets], reveal);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // An option that disagrees with the file is malformed input.
    let out = reddog(&["verify", "--expect", file.to_str().unwrap(), "--expect-bets", "1"], reveal);
    assert_eq!(out.status.code(), Some(2));
    // Seats within a call in the order the player decided them; calls stay in order.
    let out = reddog(&["verify", "--expect-decisions", "3:raise,0:stand;1:raise;5:stand,2:raise,4:raise"], reveal);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let out = reddog(&["verify", "--expect-decisions", "1:raise;3:raise,0:stand;5:stand,2:raise,4:raise"], reveal);
    assert_eq!(out.status.code(), Some(1), "calls out of order are another round");
    // Hex in either case, in an option and in the file alike: they agree.
    let upper = r["transcript"].as_str().unwrap().to_uppercase();
    let out = reddog(
        &[
            "verify",
            "--expect",
            file.to_str().unwrap(),
            "--expect-transcript",
            &upper,
            "--expect-decisions",
            "3:raise,0:stand;1:raise;5:stand,2:raise,4:raise",
        ],
        reveal,
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Finding 8: one text form for integers in `--expect-…` options (FAIRNESS.md 4.5): decimal
/// digits without sign or leading zero. `007`, `+7`, ` 7`, `7.0`, `0x7` are malformed input
/// (exit 2), as in `verify/verify.py`; so are lists and decisions not in their text form.
#[test]
fn expectation_integers_with_a_sign_or_a_leading_zero_are_malformed_input() {
    let reveal = worked_example();
    for (option, value) in [
        ("--expect-nonce", "007"),
        ("--expect-nonce", "+0"),
        ("--expect-nonce", "00"),
        ("--expect-nonce", " 0"),
        ("--expect-nonce", "0.0"),
        ("--expect-decks", "+1"),
        ("--expect-decks", "01"),
        ("--expect-decks", "0x1"),
        ("--expect-bets", "500,"),
        ("--expect-bets", "+500"),
        ("--expect-bets", "0500"),
        ("--expect-returned", "1 2"),
        ("--expect-decisions", "0:fold"),
        ("--expect-decisions", "0:raise;"),
        ("--expect-decisions", "00:raise"),
        ("--expect-decisions", "7:raise"),
        ("--expect-transcript", "abc"),
        ("--expect-rules-digest", "zz"),
    ] {
        let out = reddog(&["verify", option, value], &reveal);
        assert_eq!(out.status.code(), Some(2), "{option} {value:?}");
    }
    // The canonical forms are read: the v1 worked example has nonce 0 and one deck.
    let out = reddog(&["verify", "--expect-nonce", "0", "--expect-decks", "1"], &reveal);
    assert_eq!(out.status.code(), Some(0));
    // A v1 reveal carries no transcript, money or decisions: a record of them cannot match.
    for (option, value) in [
        ("--expect-transcript", "00".repeat(32)),
        ("--expect-bets", "500".to_string()),
        ("--expect-decisions", String::new()),
    ] {
        let out = reddog(&["verify", option, &value], &reveal);
        assert_eq!(out.status.code(), Some(1), "{option} {value:?}");
    }
}
