//! The binary's fairness commands: `reddog commit`, `reddog verify` and `reddog rng-dump`.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

fn reddog(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reddog"))
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
