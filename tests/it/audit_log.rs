//! `reddog audit-log` on `reddog-audit-v1` trails of several replicas, written by the
//! generator (`reddog_tools::generate`: real deals, money, transcripts and SHA-256 chains,
//! without running the engine): every planted misuse is found for its round and nothing
//! else; clocks shifted ±50 ms change nothing; tampered and truncated files are reported;
//! input without audit records exits 2; open rounds are listed; partitioned and in-memory
//! checks agree; a disputed reveal is checked against the log.

use std::path::{Path, PathBuf};
use std::process::Command;

use reddog::audit::{Finding, Kind};
use reddog_tools::generate::{self, Expected};

/// Writes a generated trail, one file per replica, into `dir`; returns the files and what
/// the generator planted.
fn trail(dir: &Path, opts: generate::Options) -> (Vec<PathBuf>, generate::Summary) {
    std::fs::create_dir_all(dir).unwrap();
    let files: Vec<PathBuf> = (0..opts.replicas).map(|r| dir.join(format!("replica-{r}.jsonl"))).collect();
    let mut outs: Vec<std::fs::File> = files.iter().map(|f| std::fs::File::create(f).unwrap()).collect();
    let summary = generate::generate(&opts, &mut outs).unwrap();
    (files, summary)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn audit_log(args: &[&str], files: &[PathBuf]) -> Run {
    let out = Command::new(crate::common::reddog_binary()).arg("audit-log").args(args).args(files).output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The findings of `audit-log --json`.
fn findings(args: &[&str], files: &[PathBuf]) -> (Option<i32>, Vec<Finding>) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let run = audit_log(&all, files);
    let v: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (run.code, serde_json::from_value(v["findings"].clone()).unwrap())
}

fn as_expected(found: &[Finding]) -> Vec<Expected> {
    let mut v: Vec<Expected> = found
        .iter()
        .map(|f| Expected {
            kind: f.kind,
            table_id: f.table_id.clone().unwrap_or_default(),
            round_id: f.round_id.clone().unwrap_or_default(),
            commitment: f.commitment.clone(),
        })
        .collect();
    v.sort();
    v
}

fn opts(rounds: u64, replicas: usize, misuse: u32, seed: u64) -> generate::Options {
    generate::Options { rounds, replicas, misuse, seed, ..generate::Options::default() }
}

/// The generator is a developer tool (`tools/`), not part of the shipped binary: the binary
/// refuses `audit-gen` and its help does not name it (run against the release binary by
/// scripts/ci.d/70-soak-faults.sh).
#[test]
fn the_shipped_binary_has_no_audit_gen() {
    let bin = crate::common::reddog_binary();
    let out = Command::new(&bin).args(["audit-gen", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand 'audit-gen'"));
    let help = Command::new(&bin).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("audit-log") && !help.contains("audit-gen"), "{help}");
}

#[test]
fn every_planted_misuse_is_found_for_its_round_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (files, summary) = trail(dir.path(), opts(400, 3, 2, 21));
    let (code, found) = findings(&[], &files);
    assert_eq!(code, Some(1));
    let planted: Vec<Expected> = summary.expected.iter().filter(|e| e.kind != Kind::OpenRound).cloned().collect();
    assert!(planted.len() >= 14, "{planted:?}");
    assert_eq!(as_expected(&found), planted);
    // With --open-rounds, the unsettled rounds are added, and only they.
    let (code, found) = findings(&["--open-rounds"], &files);
    assert_eq!(code, Some(1));
    assert_eq!(as_expected(&found), summary.expected);
}

#[test]
fn settling_the_pre_decision_token_is_reported() {
    // One seat on one replica; two seats decided in one call; the Decide on one replica and
    // the Settle on another whose clock puts the Settle first.
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(50, 2, 1, 22));
    let (_, found) = findings(&[], &files);
    for round in ["m-peek-one-0", "m-peek-two-0", "m-peek-across-0"] {
        let kinds: Vec<Kind> = found.iter().filter(|f| f.round_id.as_deref() == Some(round)).map(|f| f.kind).collect();
        assert_eq!(kinds, vec![Kind::PeekThenPlay], "{round}: {found:?}");
    }
    let text = audit_log(&[], &files);
    assert!(text.stdout.contains("peek_then_play    table default round m-peek-across-0"), "{}", text.stdout);
}

#[test]
fn a_clean_two_replica_log_passes_with_one_clock_shifted_50_ms_either_way() {
    let dir = tempfile::tempdir().unwrap();
    for skew in [0, 50, -50] {
        let o = generate::Options { skew_ms: vec![0, skew], ..opts(800, 2, 0, 23) };
        let (files, summary) = trail(&dir.path().join(format!("skew{skew}")), o);
        assert!(summary.records > 3000);
        let run = audit_log(&[], &files);
        assert_eq!(run.code, Some(0), "skew {skew} ms: {}", run.stdout);
        assert!(run.stdout.contains("findings: 0"), "{}", run.stdout);
    }
}

/// The lines of `file`.
fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(file: &Path, lines: &[String]) {
    std::fs::write(file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

#[test]
fn a_tampered_record_is_reported_as_an_edit_of_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(200, 2, 0, 24));
    let mut l = lines(&files[0]);
    let i = l.iter().position(|x| x.contains("\"event\":\"round_settled\"")).unwrap();
    let edited = l[i].replacen("\"total_returned\":", "\"total_returned\":1", 1);
    assert_ne!(edited, l[i]);
    l[i] = edited;
    write_lines(&files[0], &l);
    let (code, found) = findings(&[], &files);
    assert_eq!(code, Some(1));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, Kind::ChainEdit);
    assert_eq!((found[0].replica.as_deref(), found[0].seq), (Some("replica-0"), Some(i as u64 + 1)));
}

/// A run whose first records are gone (1, 100, and past a 4,096-record block) is a gap from
/// `seq` 0, found whatever the partitioning, and exits 1.
#[test]
fn a_run_without_its_first_records_is_a_gap_from_seq_0() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(3000, 1, 0, 31));
    let original = lines(&files[0]);
    let seq_of = |l: &str| serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"].as_u64().unwrap();
    for n in [1usize, 100, 4100] {
        let cut: Vec<String> = original[n..].to_vec();
        let first = seq_of(&cut[0]);
        write_lines(&files[0], &cut);
        for mode in [&[][..], &["--partitions", "7"][..]] {
            let (code, found) = findings(mode, &files);
            assert_eq!(code, Some(1), "{n} removed {mode:?}: {found:?}");
            assert_eq!(found.len(), 1, "{n} removed: {found:?}");
            assert_eq!((found[0].kind, found[0].seq), (Kind::ChainGap, Some(0)));
            assert!(found[0].detail.contains(&format!("({first} records)")), "{}", found[0].detail);
        }
    }
    eprintln!("first 1, 100 and 4100 records removed: each one gap from seq 0, exit 1 (in memory and 7 partitions)");
}

/// A torn last line with the next run's records glued to it (what an engine that did not
/// close off the tail wrote): the torn line is flagged, and so is the next run, whose
/// `audit_started` is lost in it.
#[test]
fn a_torn_line_and_a_run_glued_to_it_are_flagged() {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = trail(&dir.path().join("a"), opts(50, 1, 0, 32));
    // The next run: the same records (as retries) under another run id, chained afresh.
    let run =
        serde_json::from_str::<serde_json::Value>(&lines(&first[0])[0]).unwrap()["run"].as_str().unwrap().to_string();
    let mut prev = "0".repeat(64);
    let mut next = String::new();
    for line in lines(&first[0]) {
        let mut v: serde_json::Value = serde_json::from_str(&line.replace(&run, &"f".repeat(32))).unwrap();
        if v.get("head").is_some() {
            v["head"] = serde_json::Value::String(prev.clone());
        }
        v["prev"] = serde_json::Value::String(prev);
        let text = serde_json::to_string(&v).unwrap();
        prev = hex::encode(Sha256::digest(text.as_bytes()));
        next.push_str(&text);
        next.push('\n');
    }
    let mut text = std::fs::read_to_string(&first[0]).unwrap();
    text.truncate(text.len() - 40);
    let glued = dir.path().join("glued.jsonl");
    std::fs::write(&glued, text.clone() + &next).unwrap();
    let (code, found) = findings(&[], std::slice::from_ref(&glued));
    assert_eq!(code, Some(1));
    let mut kinds: Vec<(Kind, Option<u64>)> = found.iter().map(|f| (f.kind, f.seq)).collect();
    kinds.sort();
    assert_eq!(kinds, vec![(Kind::ChainGap, Some(0)), (Kind::TornRecord, None)], "{found:?}");
    // Closed off with a line feed (as the engine now does), the second run is whole.
    std::fs::write(&glued, text + "\n" + &next).unwrap();
    let (code, found) = findings(&[], std::slice::from_ref(&glued));
    assert_eq!(code, Some(1));
    assert_eq!(found.iter().map(|f| f.kind).collect::<Vec<_>>(), vec![Kind::TornRecord], "{found:?}");
}

#[test]
fn a_truncated_chain_is_reported_as_a_gap_and_a_reordered_one_as_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(200, 2, 0, 25));
    let original = lines(&files[1]);
    let mut cut = original.clone();
    cut.drain(40..45);
    write_lines(&files[1], &cut);
    let (code, found) = findings(&[], &files);
    assert_eq!(code, Some(1));
    let gaps: Vec<(Kind, Option<u64>)> =
        found.iter().filter(|f| f.kind == Kind::ChainGap).map(|f| (f.kind, f.seq)).collect();
    assert_eq!(gaps, vec![(Kind::ChainGap, Some(40))], "{found:?}");

    let mut moved = original;
    let line = moved.remove(60);
    moved.insert(63, line);
    write_lines(&files[1], &moved);
    let (code, found) = findings(&[], &files);
    assert_eq!(code, Some(1));
    let kinds: Vec<(Kind, Option<u64>)> = found.iter().map(|f| (f.kind, f.seq)).collect();
    assert_eq!(kinds, vec![(Kind::ChainOrder, Some(60))], "{found:?}");
}

#[test]
fn input_without_any_audit_record_exits_2_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let diagnostics = dir.path().join("diag.log");
    std::fs::write(
        &diagnostics,
        "{\"timestamp\":\"2026-12-01T12:00:00Z\",\"level\":\"INFO\",\"fields\":{\"message\":\"listening\"}}\n\
         2026-12-01T12:00:00Z INFO reddog: serving\n",
    )
    .unwrap();
    for file in [&empty, &diagnostics] {
        let run = audit_log(&[], std::slice::from_ref(file));
        assert_eq!(run.code, Some(2), "{}", run.stdout);
        assert!(run.stderr.contains("no reddog-audit-v1 record"), "{}", run.stderr);
        assert!(!run.stdout.contains("findings: 0"));
    }
    let run = audit_log(&[], &[dir.path().join("missing.log")]);
    assert_eq!(run.code, Some(2));
}

#[test]
fn other_lines_between_the_records_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(100, 1, 0, 26));
    let mut l = lines(&files[0]);
    l.insert(10, "2026-12-01T12:00:00Z WARN reddog: a diagnostic".into());
    l.insert(20, "{\"level\":\"INFO\",\"message\":\"other JSON\"}".into());
    write_lines(&files[0], &l);
    let run = audit_log(&["--json"], &files);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["skipped_lines"], 2);
    assert_eq!(v["records"].as_u64(), Some(l.len() as u64 - 2));
}

#[test]
fn open_rounds_lists_an_unsettled_round_older_than_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (files, summary) = trail(dir.path(), opts(300, 2, 1, 27));
    let open: Vec<&Expected> = summary.expected.iter().filter(|e| e.kind == Kind::OpenRound).collect();
    assert_eq!(open.len(), 1);
    let (code, found) = findings(&["--open-rounds"], &files);
    assert_eq!(code, Some(1));
    let listed: Vec<&Finding> = found.iter().filter(|f| f.kind == Kind::OpenRound).collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].round_id.as_deref(), Some(open[0].round_id.as_str()));
    assert!(listed[0].replica.is_some() && listed[0].started_at.is_some(), "{listed:?}");
    // The trail spans about a second; the open round started mid-way: more than 100 ms before
    // the newest record, not a day before it.
    let (_, found) = findings(&["--open-rounds", "--older-than", "1d"], &files);
    assert!(found.iter().all(|f| f.kind != Kind::OpenRound), "{found:?}");
    let (_, found) = findings(&["--open-rounds", "--older-than", "100ms"], &files);
    assert_eq!(found.iter().filter(|f| f.kind == Kind::OpenRound).count(), 1);
}

#[test]
fn partitioned_and_in_memory_checks_give_identical_findings() {
    let dir = tempfile::tempdir().unwrap();
    let o = generate::Options { checkpoint_every: 50, ..opts(1500, 3, 3, 28) };
    let (files, _) = trail(dir.path(), o);
    // Tamper too, so the chain checks have something to find across partitions.
    let mut l = lines(&files[2]);
    l.drain(100..103);
    l[500] = l[500].replacen("\"at\":\"2026", "\"at\":\"2025", 1);
    write_lines(&files[2], &l);
    let (code, memory) = findings(&["--open-rounds", "--in-memory"], &files);
    assert_eq!(code, Some(1));
    assert!(memory.iter().any(|f| f.kind == Kind::ChainGap) && memory.iter().any(|f| f.kind == Kind::ChainEdit));
    for n in ["2", "7", "64"] {
        let (code, parts) = findings(&["--open-rounds", "--partitions", n], &files);
        assert_eq!(code, Some(1));
        assert_eq!(parts, memory, "{n} partitions");
    }
}

#[test]
fn a_disputed_reveal_is_checked_against_the_logged_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let o = generate::Options { reveals: true, ..opts(100, 2, 1, 29) };
    let (files, summary) = trail(dir.path(), o);
    let reveal = |round: &str| summary.reveals.iter().find(|(r, _)| r == round).unwrap().1.clone();
    let path = dir.path().join("reveal.json");

    // The honest round's reveal: its transcript was settled, nothing found on it.
    std::fs::write(&path, reveal("r-000000000")).unwrap();
    let run = audit_log(&["--reveal", path.to_str().unwrap()], &files);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(run.stdout.contains("consistent with the log"), "{}", run.stdout);

    let v: serde_json::Value = serde_json::from_str(&reveal("r-000000000")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(
            &audit_log(&["--reveal", path.to_str().unwrap(), "--json"], &files).stdout
        )
        .unwrap()["reveal_verified"],
        true
    );
    // The same reveal with another server seed: its transcript is settled in the log, but the
    // reveal itself does not hold (the seed is not the committed one), so it is not consistent.
    let other_seed = reveal("r-000000000").replace(v["server_seed"].as_str().unwrap(), &"cd".repeat(32));
    std::fs::write(&path, other_seed).unwrap();
    let run = audit_log(&["--reveal", path.to_str().unwrap()], &files);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("transcript") && run.stdout.contains("was settled as logged"), "{}", run.stdout);
    assert!(run.stdout.contains("NOT VERIFIED: the commitment is not SHA-256 of the server seed"), "{}", run.stdout);
    assert!(run.stdout.contains("NOT consistent with the log"), "{}", run.stdout);

    // The same reveal with another transcript (a forged reveal recomputes it): not logged.
    let forged = reveal("r-000000000").replace(v["transcript"].as_str().unwrap(), &"ab".repeat(32));
    std::fs::write(&path, forged).unwrap();
    let run = audit_log(&["--reveal", path.to_str().unwrap()], &files);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("appears nowhere in the log"), "{}", run.stdout);

    // The peek's reveal: settled as logged, but the log holds a Decide from that token.
    std::fs::write(&path, reveal("m-peek-one-0")).unwrap();
    let run = audit_log(&["--reveal", path.to_str().unwrap(), "--json"], &files);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["transcript_settled"], true);
    assert_eq!(v["findings"][0]["kind"], "peek_then_play");
}

/// Every record of `round_id` in `files`, as JSON values.
fn records_of(files: &[PathBuf], round_id: &str) -> Vec<serde_json::Value> {
    files
        .iter()
        .flat_map(|f| lines(f))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|v| v["round_id"] == round_id)
        .collect()
}

fn round(id: &str, files: &[PathBuf]) -> (Option<i32>, serde_json::Value) {
    let run = audit_log(&["--json", "--round", id], files);
    let v = serde_json::from_str(&run.stdout).unwrap_or(serde_json::Value::Null);
    (run.code, v)
}

#[test]
fn one_round_is_printed_with_every_record_its_state_money_and_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (files, summary) = trail(dir.path(), opts(200, 3, 1, 31));
    // A settled round that was decided: every record of it across the replicas, in
    // transcript order (commitment, deal, decisions by step, settlement), and its money.
    let all: Vec<serde_json::Value> = files
        .iter()
        .flat_map(|f| lines(f))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .collect();
    let decided =
        all.iter().find(|v| v["event"] == "seats_decided" && v["round_id"].as_str().unwrap().starts_with("r-"));
    let id = decided.expect("a decided honest round")["round_id"].as_str().unwrap().to_owned();
    let logged = records_of(&files, &id);
    let (code, v) = round(&id, &files);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["round_id"], id.as_str());
    assert_eq!(v["state"], "settled");
    let printed: Vec<&serde_json::Value> = v["records"].as_array().unwrap().iter().map(|r| &r["record"]).collect();
    assert_eq!(printed.len(), logged.len());
    assert!(logged.iter().all(|l| printed.contains(&l)), "every logged record is printed");
    let events: Vec<&str> = printed.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(events.first(), Some(&"seed_committed"), "{events:?}");
    assert_eq!(events.last(), Some(&"round_settled"), "{events:?}");
    let steps: Vec<u64> = printed.iter().map(|r| r["step"].as_u64().unwrap_or(0)).collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "transcript order: {steps:?}");
    let settled = logged.iter().find(|l| l["event"] == "round_settled").unwrap();
    let started = logged.iter().find(|l| l["event"] == "round_started").unwrap();
    let m = &v["money"];
    assert_eq!(m["staked"], settled["total_staked"]);
    assert_eq!(m["returned"], settled["total_returned"]);
    assert_eq!(m["currency"], started["currency"]);
    assert_eq!(m["table_id"], started["table_id"]);
    assert_eq!(m["bets"], started["bets"]);
    assert_eq!(m["raised"], decided.unwrap()["raised_amount"]);
    assert_eq!(m["sandbox"], false);
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0));
    // The text form says the same.
    let text = audit_log(&["--round", &id], &files);
    assert_eq!(text.code, Some(0));
    assert!(text.stdout.starts_with(&format!("round {id}: settled\n")), "{}", text.stdout);
    assert!(
        text.stdout.contains(&format!("staked {} returned {}", settled["total_staked"], settled["total_returned"]))
    );
    assert_eq!(text.stdout.matches(" replica ").count(), logged.len(), "{}", text.stdout);

    // A planted open round is open, and its finding says so; a fork's round shows the fork.
    for (kind, state) in [(Kind::OpenRound, "open"), (Kind::Fork, "settled"), (Kind::PeekThenPlay, "settled")] {
        let planted = summary.expected.iter().find(|e| e.kind == kind).unwrap();
        let (code, v) = round(&planted.round_id, &files);
        assert_eq!(code, Some(1), "{kind:?}: {v}");
        assert_eq!(v["state"], state, "{kind:?}");
        assert!(v["findings"].as_array().unwrap().iter().any(|f| f["kind"] == kind.name()), "{v}");
    }
}

#[test]
fn a_round_committed_and_never_dealt_is_abandoned_and_an_unknown_id_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = trail(dir.path(), opts(50, 1, 0, 32));
    let mut l = lines(&files[0]);
    let id = "r-000000007";
    let before = l.len();
    l.retain(|line| !line.contains(&format!("\"round_id\":\"{id}\"")) || line.contains("\"seed_committed\""));
    let commits = l.iter().filter(|line| line.contains(&format!("\"round_id\":\"{id}\""))).count();
    assert!(l.len() < before && commits > 0);
    write_lines(&files[0], &l);
    let (code, v) = round(id, &files);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["state"], "abandoned");
    assert_eq!(v["records"].as_array().map(Vec::len), Some(commits));
    assert_eq!(v["money"]["staked"], 0);
    assert!(v["money"]["returned"].is_null());

    let unknown = audit_log(&["--round", "no-such-round"], &files);
    assert_eq!(unknown.code, Some(1));
    assert!(unknown.stdout.is_empty(), "{}", unknown.stdout);
    assert!(unknown.stderr.contains("\"no-such-round\": no record of this round id"), "{}", unknown.stderr);
}
