//! Signed receipts (docs/FAIRNESS.md 4.7), through the service's handlers and the binary:
//! a signed reveal verifies with the public key alone, the forgery of a reveal with a
//! recomputed transcript (the `forged/…` vectors' recipe) is refused with the public key
//! alone, a ring without a signing key signs nothing, a retried Settle returns the same
//! signature, and no secret reaches `Debug`, errors or `keygen --public`.
//!
//! `tests/vectors/receipt-v1.json` is regenerated here on every run and compared byte for
//! byte; `REDDOG_WRITE_VECTORS=1 cargo test --test it receipts::` rewrites it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::{Want, bound_commitment_token, classify, deal, req};
use reddog::fairness::receipt::{
    CommitReceipt, StepClaim, parse_step_receipt, verify_commit, verify_message, verify_settle,
};
use reddog::fairness::{AnyReveal, RevealDecision, StartInputs, TableRules, parse_reveal};
use reddog::game::{BetLimits, Decision, Decks, HandClass, Money, Paytable, Table};
use reddog::service::Tables;
use reddog::service::proto;
use reddog::service::proto::red_dog_server::RedDog;
use reddog::service::{EngineConfig, KeyRing, RedDogService};
use serde_json::json;
use tonic::Request;

/// RFC 8032 test 1's secret: a published test key, never a real one.
const SECRET: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const TOKEN_KEY: &str = "6666666666666666666666666666666666666666666666666666666666666666";
const SEED: [u8; 32] = [77; 32];
const CLIENT_SEED: &str = "lucky";

fn signing_ring() -> String {
    format!(r#"{{"primary":"r1","keys":{{"r1":"{TOKEN_KEY}"}},"signing":{{"id":"s1","secret":"{SECRET}"}}}}"#)
}

fn plain_ring() -> String {
    format!(r#"{{"primary":"r1","keys":{{"r1":"{TOKEN_KEY}"}}}}"#)
}

fn service(ring: &str) -> RedDogService {
    let tables = Tables::single(Table::default());
    let audit =
        reddog::service::AuditSink::start(std::io::sink(), reddog::service::AuditOptions::local(), &tables).unwrap();
    RedDogService::new(EngineConfig {
        tables,
        audit,
        key_ring: KeyRing::from_json(ring).unwrap(),
        commitment_ttl: Duration::from_secs(600),
        clock: reddog::service::Clock::system(),
        metrics: Default::default(),
    })
}

/// The first nonce whose hand is a spread of 4 or more with the third card inside: one seat
/// of 1000 that raises wins 4000 at the standard paytable's 1 to 1 (the round of the
/// `forged/…` vectors).
fn raised_win_nonce() -> u64 {
    (0..100_000)
        .find(|&n| {
            let cards = deal(SEED, CLIENT_SEED, n);
            classify(cards) == Want::Between
                && matches!(HandClass::of(cards[0], cards[1]), HandClass::NonConsecutive(s) if s.get() >= 4)
        })
        .expect("such a deal")
}

/// Plays the raised win through the service; returns every Settle answer (settled `settles`
/// times on the same token).
fn play_raised_win(svc: &RedDogService, rt: &tokio::runtime::Runtime, settles: usize) -> Vec<proto::SettleResponse> {
    let nonce = raised_win_nonce();
    let token = bound_commitment_token(&signing_ring(), SEED, nonce);
    let started = rt
        .block_on(svc.start_round(Request::new(
            req::start_round(token).client_seed(CLIENT_SEED).nonce(nonce).limits(1, u64::MAX).build(),
        )))
        .unwrap()
        .into_inner();
    let decided =
        rt.block_on(svc.decide(Request::new(req::decide(started.round_token).raise(0).build()))).unwrap().into_inner();
    (0..settles)
        .map(|_| {
            rt.block_on(svc.settle(Request::new(req::settle(decided.round_token.clone()).build())))
                .unwrap()
                .into_inner()
        })
        .collect()
}

/// The raised win played through the service with its settle-older twin: the answers to
/// StartRound and Decide (each with its step receipt), the Settle of the latest token (the
/// honest reveal) and the Settle of the pre-raise token (a platform settling the branch the
/// player did not play: no decision, the seat stands and is paid 2000 instead of 4000).
struct TwoBranches {
    started: proto::StartRoundResponse,
    decided: proto::DecideResponse,
    honest: proto::SettleResponse,
    older: proto::SettleResponse,
}

fn play_both_branches(svc: &RedDogService, rt: &tokio::runtime::Runtime) -> TwoBranches {
    let nonce = raised_win_nonce();
    let token = bound_commitment_token(&signing_ring(), SEED, nonce);
    let started = rt
        .block_on(svc.start_round(Request::new(
            req::start_round(token).client_seed(CLIENT_SEED).nonce(nonce).limits(1, u64::MAX).build(),
        )))
        .unwrap()
        .into_inner();
    let decided = rt
        .block_on(svc.decide(Request::new(req::decide(started.round_token.clone()).raise(0).build())))
        .unwrap()
        .into_inner();
    let settle =
        |token: &[u8]| rt.block_on(svc.settle(Request::new(req::settle(token.to_vec()).build()))).unwrap().into_inner();
    let honest = settle(&decided.round_token);
    let older = settle(&started.round_token);
    TwoBranches { started, decided, honest, older }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn unhex<const N: usize>(h: &str) -> [u8; N] {
    let mut b = [0u8; N];
    hex::decode_to_slice(h, &mut b).unwrap();
    b
}

/// The recipe of the `forged/…` vectors applied to a genuine reveal: the raise rewritten as a
/// stand, every odds 1, stake 1000 returned 2000, and the rules digest and transcript
/// recomputed from the altered fields — a reveal that verifies on its own.
fn forge(genuine: &str) -> String {
    let Ok(AnyReveal::V2(mut r)) = parse_reveal(genuine) else { panic!("a v3 reveal") };
    r.decisions = vec![vec![RevealDecision { seat: 0, action: "stand".into() }]];
    r.paytable = Paytable::new([1; 11], 1).unwrap();
    r.seats[0].raised = false;
    r.seats[0].stake = 1000;
    r.seats[0].returned = 2000;
    let (l, c) = (r.limits.unwrap(), r.currency.clone().unwrap());
    let decks = Decks::new(u32::from(r.decks)).unwrap();
    let digest = TableRules {
        decks,
        paytable: &r.paytable,
        limits: BetLimits::new(Money(l.min_bet), Money(l.max_bet)).unwrap(),
        currency: &c.code,
        exponent: c.exponent,
        sandbox: false,
    }
    .digest();
    r.rules_digest = Some(digest.to_hex());
    let commitment: [u8; 32] = unhex(&r.commitment);
    let bets = [Money(1000)];
    let start = StartInputs {
        commitment: &commitment,
        table_id: &r.table_id,
        round_id: &r.round_id,
        nonce: r.nonce,
        decks,
        client_seed: r.client_seed.as_bytes(),
        paytable: &r.paytable,
        bets: &bets,
        rules_digest: Some(&digest),
    };
    r.transcript = start.transcript().decide(&[(0, Decision::Stand)]).to_hex();
    let forged = r.to_json();
    let alone = parse_reveal(&forged).unwrap().verify().unwrap();
    assert!(alone.ok(), "the forgery verifies on its own (checks 1-4 and 6)");
    forged
}

fn reddog(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(crate::common::reddog_binary())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("writing the command's input: {e}"),
    }
    child.wait_with_output().unwrap()
}

/// The trusted-keys file naming the test key (`s1`), as a player got it outside the platform.
fn trusted_file(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("trusted.json");
    std::fs::write(&path, format!(r#"[{{"key_id":"s1","algorithm":"ed25519","public_key_hex":"{PUBLIC}"}}]"#)).unwrap();
    path.to_str().unwrap().to_string()
}

/// `reddog verify FILE --public-key PK --signature SIG --trusted-keys (the test key)`'s exit
/// status for this reveal text.
fn verify_signed(dir: &tempfile::TempDir, reveal: &str, public_key: &str, signature: &str) -> i32 {
    let path = dir.path().join("reveal.json");
    std::fs::write(&path, reveal).unwrap();
    let trusted = trusted_file(dir);
    let args = ["verify", path.to_str().unwrap(), "--public-key", public_key, "--signature", signature];
    reddog(&[&args[..], &["--trusted-keys", &trusted]].concat(), "").status.code().unwrap()
}

fn settle_ok(signature: &str, transcript: &str, reveal: &str) -> bool {
    verify_settle(&unhex(PUBLIC), &unhex(signature), Some("s1"), &unhex(transcript), reveal.as_bytes()) == Some(2)
}

#[test]
fn a_signed_reveal_verifies_with_the_public_key_and_a_forgery_is_refused_by_it_alone() {
    let rt = runtime();
    let svc = service(&signing_ring());
    let settled = play_raised_win(&svc, &rt, 1).remove(0);
    assert_eq!(settled.total_returned, 4000);
    assert_eq!(settled.signing_key_id, "s1");
    let genuine = settled.reveal_json.as_str();
    assert!(settle_ok(&settled.signature, &settled.transcript, genuine), "a version-2 Settle receipt under s1");
    let (pk, sig): ([u8; 32], [u8; 64]) = (unhex(PUBLIC), unhex(&settled.signature));
    assert_eq!(verify_settle(&pk, &sig, Some("s2"), &unhex(&settled.transcript), genuine.as_bytes()), None);

    let forged = forge(genuine);
    let Ok(AnyReveal::V2(f)) = parse_reveal(&forged) else { panic!() };
    assert!(!settle_ok(&settled.signature, &f.transcript, &forged));

    // The binary: exit 0 for the genuine reveal (also saved with a trailing line feed), 1 for
    // the forgery, which verifies (0) without the key.
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(verify_signed(&dir, genuine, PUBLIC, &settled.signature), 0);
    assert_eq!(verify_signed(&dir, &format!("{genuine}\n"), PUBLIC, &settled.signature), 0);
    assert_eq!(verify_signed(&dir, &forged, PUBLIC, &settled.signature), 1);
    assert_eq!(reddog(&["verify"], &forged).status.code(), Some(0), "the forgery verifies alone");
    let out =
        reddog(&["verify", "--public-key", PUBLIC, "--signature", &settled.signature, "--allow-untrusted"], &forged);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("signature") && text.contains("MISMATCH"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("signature does not cover this reveal"));
    // Any other key, or a reveal changed by one byte of whitespace, fails too.
    let other_key = hex::encode(reddog::service::ReceiptSigner::new("x", &[9; 32]).unwrap().public_key());
    assert_eq!(verify_signed(&dir, genuine, &other_key, &settled.signature), 1);
    assert_eq!(verify_signed(&dir, &format!(" {genuine}"), PUBLIC, &settled.signature), 1);
    // The text forms: 64 and 128 hex digits, either case; anything else is malformed (2).
    assert_eq!(verify_signed(&dir, genuine, &PUBLIC.to_uppercase(), &settled.signature.to_uppercase()), 0);
    assert_eq!(verify_signed(&dir, genuine, &PUBLIC[..62], &settled.signature), 2);
    assert_eq!(verify_signed(&dir, genuine, PUBLIC, &settled.signature[2..]), 2);
    let only_key = reddog(&["verify", "--public-key", PUBLIC], genuine);
    assert_eq!(only_key.status.code(), Some(2), "--public-key needs --signature");
}

/// A key the player does not trust never gives "verified" unless the player says
/// `--allow-untrusted`: the platform signing a forged reveal with its own key, and naming
/// that key, gets exit 1.
#[test]
fn a_reveal_signed_by_a_key_absent_from_trusted_keys_is_not_verified() {
    let rt = runtime();
    let settled = play_raised_win(&service(&signing_ring()), &rt, 1).remove(0);
    let forged = forge(&settled.reveal_json);
    let platform = reddog::service::ReceiptSigner::new("s1", &[9; 32]).unwrap();
    let Ok(AnyReveal::V2(f)) = parse_reveal(&forged) else { panic!() };
    let platform_sig = platform.sign_settle(&unhex(&f.transcript), forged.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let (path, trusted) = (dir.path().join("forged.json"), trusted_file(&dir));
    std::fs::write(&path, &forged).unwrap();
    let run = |extra: &[&str]| {
        let args = ["verify", path.to_str().unwrap(), "--public-key", &platform.public_key_hex()];
        let out = reddog(&[&args[..], &["--signature", &platform_sig, "--key-id", "s1"], extra].concat(), "");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stdout, stderr) = run(&["--trusted-keys", &trusted]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("NOT among your --trusted-keys") && stderr.contains("not among your --trusted-keys"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(1), "no trusted keys at all: not verified either");
    assert!(stderr.contains("no --trusted-keys given"), "{stderr}");
    let (code, stdout, _) = run(&["--allow-untrusted"]);
    assert_eq!(code, Some(0), "the player accepts the platform's key knowingly: {stdout}");
    assert!(stdout.contains("untrusted, --allow-untrusted") && stdout.contains("prove only"), "{stdout}");
    // The trusted file lists the engine's key under another id than the signatures carry.
    std::fs::write(dir.path().join("reveal.json"), &settled.reveal_json).unwrap();
    let wrong_id = dir.path().join("wrong-id.json");
    std::fs::write(&wrong_id, format!(r#"[{{"key_id":"s9","algorithm":"ed25519","public_key_hex":"{PUBLIC}"}}]"#))
        .unwrap();
    let reveal = dir.path().join("reveal.json");
    let args = ["verify", reveal.to_str().unwrap(), "--public-key", PUBLIC, "--signature", &settled.signature];
    let out = reddog(&[&args[..], &["--trusted-keys", wrong_id.to_str().unwrap(), "--key-id", "s1"]].concat(), "");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("key ids")
            || String::from_utf8_lossy(&out.stderr).contains("key id")
    );
}

/// `reddog verify` of a reveal with `--public-key`, its Settle `--signature` and these
/// `--receipt` texts, the test key trusted: exit status, stdout and stderr.
fn verify_with_receipts(dir: &tempfile::TempDir, reveal: &str, signature: &str, receipts: &[&str]) -> Output {
    let path = dir.path().join("reveal.json");
    std::fs::write(&path, reveal).unwrap();
    let trusted = trusted_file(dir);
    let mut args = vec!["verify".to_string(), path.to_str().unwrap().to_string(), "--public-key".into(), PUBLIC.into()];
    args.extend(["--trusted-keys".to_string(), trusted]);
    if !signature.is_empty() {
        args.extend(["--signature".to_string(), signature.to_string()]);
    }
    for (i, r) in receipts.iter().enumerate() {
        let p = dir.path().join(format!("receipt-{i}.json"));
        std::fs::write(&p, r).unwrap();
        args.extend(["--receipt".to_string(), p.to_str().unwrap().to_string()]);
    }
    reddog(&args.iter().map(String::as_str).collect::<Vec<_>>(), "")
}

#[test]
fn a_reveal_of_the_branch_not_played_is_refused_with_the_decide_receipt() {
    let rt = runtime();
    let svc = service(&signing_ring());
    let b = play_both_branches(&svc, &rt);
    // Every step is signed: StartRound and Decide carry a version-2 receipt that verifies,
    // names its key inside the message and shows only the cards the table showed.
    for (id, sig, json, cards) in [
        (&b.started.signing_key_id, &b.started.signature, &b.started.receipt_json, 2),
        (&b.decided.signing_key_id, &b.decided.signature, &b.decided.receipt_json, 3),
    ] {
        assert_eq!(id, "s1");
        assert_eq!(sig.len(), 128, "a non-empty signature");
        let (step, parsed_sig) = parse_step_receipt(json).unwrap();
        assert_eq!((step.version, step.signing_key_id.as_str(), step.cards.len()), (2, "s1", cards), "{json}");
        assert_eq!(hex::encode(parsed_sig), *sig);
        assert!(verify_message(&unhex(PUBLIC), &parsed_sig, &step.message()));
        let renamed = StepClaim { signing_key_id: "s2".into(), ..step.clone() };
        assert!(!verify_message(&unhex(PUBLIC), &parsed_sig, &renamed.message()), "the key id is signed");
    }
    let (step1, _) = parse_step_receipt(&b.decided.receipt_json).unwrap();
    assert_eq!((step1.step, hex::encode(step1.transcript)), (1, b.decided.transcript.clone()));
    assert_eq!(step1.decisions, vec![(0, Decision::Raise)]);
    // The platform's two branches: both reveals carry a valid Settle signature.
    assert_eq!((b.honest.total_returned, b.older.total_returned), (4000, 2000));
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(verify_signed(&dir, &b.older.reveal_json, PUBLIC, &b.older.signature), 0, "signature alone");
    // With the Decide receipt the player kept: the older branch is refused, the honest passes.
    let older = verify_with_receipts(&dir, &b.older.reveal_json, &b.older.signature, &[&b.decided.receipt_json]);
    assert_eq!(older.status.code(), Some(1), "{}", String::from_utf8_lossy(&older.stdout));
    let text = String::from_utf8_lossy(&older.stdout);
    assert!(text.contains("does not descend from this receipt"), "{text}");
    let honest = verify_with_receipts(&dir, &b.honest.reveal_json, &b.honest.signature, &[&b.decided.receipt_json]);
    assert_eq!(honest.status.code(), Some(0), "{}", String::from_utf8_lossy(&honest.stdout));
    // Both receipts together, without the Settle signature: the same answers.
    let both = [b.started.receipt_json.as_str(), b.decided.receipt_json.as_str()];
    assert_eq!(verify_with_receipts(&dir, &b.honest.reveal_json, "", &both).status.code(), Some(0));
    assert_eq!(verify_with_receipts(&dir, &b.older.reveal_json, "", &both).status.code(), Some(1));
    // The StartRound receipt alone cannot tell the branches apart: both descend from step 0.
    assert_eq!(verify_with_receipts(&dir, &b.older.reveal_json, "", &both[..1]).status.code(), Some(0));
    // A receipt altered in any value no longer verifies with the key; a malformed one is 2.
    let altered = b.decided.receipt_json.replace("\"raise\"", "\"stand\"");
    assert_ne!(altered, b.decided.receipt_json);
    let out = verify_with_receipts(&dir, &b.honest.reveal_json, "", &[&altered]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not signed by this key"));
    assert_eq!(verify_with_receipts(&dir, &b.honest.reveal_json, "", &["{}"]).status.code(), Some(2));
    let out = verify_with_receipts(&dir, &b.honest.reveal_json, "", &[&b.decided.receipt_json]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("a trusted key (\"s1\" in --trusted-keys)"));
    // The signature alone is reported as what it proves, and no more.
    let out = verify_with_receipts(&dir, &b.older.reveal_json, &b.older.signature, &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("not that it is the round"));
}

#[test]
fn a_retried_settle_returns_the_identical_signature() {
    let rt = runtime();
    let svc = service(&signing_ring());
    let answers = play_raised_win(&svc, &rt, 3);
    let first = &answers[0];
    assert!(settle_ok(&first.signature, &first.transcript, &first.reveal_json));
    for a in &answers[1..] {
        assert_eq!(a.reveal_json, answers[0].reveal_json);
        assert_eq!(a.signature, answers[0].signature);
    }
}

#[test]
fn commit_seed_signs_the_commitment_and_what_it_binds() {
    let rt = runtime();
    let svc = service(&signing_ring());
    let c = rt
        .block_on(svc.commit_seed(Request::new(req::commit_seed().round("r-1").nonce(7).build())))
        .unwrap()
        .into_inner();
    assert_eq!(c.signing_key_id, "s1");
    let (commitment, digest): ([u8; 32], [u8; 32]) = (unhex(&c.commitment), unhex(&c.rules_digest));
    let receipt = CommitReceipt {
        key_id: "s1",
        commitment: &commitment,
        round_id: &c.round_id,
        nonce: c.nonce,
        table_id: &c.table_id,
        decks: u8::try_from(c.decks).unwrap(),
        rules_digest: &digest,
        expires_at_unix_ms: c.expires_at_unix_ms,
        algorithm: &c.algorithm,
        sandbox: c.sandbox,
    };
    let sig: [u8; 64] = unhex(&c.signature);
    assert!(verify_commit(&unhex(PUBLIC), &sig, &receipt));
    // Shown with another nonce, key id (or any other bound field), the signature fails.
    assert!(!verify_commit(&unhex(PUBLIC), &sig, &CommitReceipt { nonce: 8, ..receipt }));
    assert!(!verify_commit(&unhex(PUBLIC), &sig, &CommitReceipt { key_id: "s2", ..receipt }));
    let rules = rt.block_on(svc.get_rules(Request::new(req::get_rules().build()))).unwrap().into_inner();
    assert_eq!(
        rules.signing_keys,
        vec![proto::PublicKey { key_id: "s1".into(), algorithm: "ed25519".into(), public_key_hex: PUBLIC.into() }]
    );
    let tables = rt.block_on(svc.list_tables(Request::new(req::list_tables()))).unwrap().into_inner();
    assert!(tables.tables.iter().all(|t| t.signing_keys == rules.signing_keys));

    // Its receipt_json, kept by the player, is checked by `reddog verify --receipt`: the
    // round played under it descends from it (expiry shown); another round's reveal does not.
    let started = rt
        .block_on(svc.start_round(Request::new(
            req::start_round(c.commitment_token.clone()).round("r-1").nonce(7).client_seed("x").build(),
        )))
        .unwrap()
        .into_inner();
    let settled = rt.block_on(svc.settle(Request::new(req::settle(started.round_token).build()))).unwrap().into_inner();
    let other = play_raised_win(&svc, &rt, 1).remove(0);
    let dir = tempfile::tempdir().unwrap();
    let out = verify_with_receipts(&dir, &settled.reveal_json, "", &[&c.receipt_json]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("commit (expires at {} Unix ms)", c.expires_at_unix_ms)), "{text}");
    assert_eq!(verify_with_receipts(&dir, &other.reveal_json, "", &[&c.receipt_json]).status.code(), Some(1));
    let forged = c.receipt_json.replace("\"nonce\":7", "\"nonce\":8");
    assert_ne!(forged, c.receipt_json);
    let out = verify_with_receipts(&dir, &settled.reveal_json, "", &[&forged]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("not signed by this key"));
}

#[test]
fn a_ring_without_a_signing_key_gives_empty_signature_fields_and_no_public_keys() {
    let rt = runtime();
    let svc = service(&plain_ring());
    let c = rt
        .block_on(svc.commit_seed(Request::new(req::commit_seed().round("r-1").nonce(7).build())))
        .unwrap()
        .into_inner();
    assert_eq!((c.commitment.len(), c.commitment.bytes().all(|b| b.is_ascii_hexdigit())), (64, true));
    assert_eq!((c.signing_key_id.as_str(), c.signature.as_str(), c.receipt_json.as_str()), ("", "", ""));
    let settled = play_raised_win(&service(&plain_ring()), &rt, 1).remove(0);
    assert_eq!(settled.total_returned, 4000, "the round is otherwise the same");
    assert_eq!((settled.signing_key_id.as_str(), settled.signature.as_str()), ("", ""));
    let b = play_both_branches(&service(&plain_ring()), &rt);
    for step in [
        [&b.started.signing_key_id, &b.started.signature, &b.started.receipt_json],
        [&b.decided.signing_key_id, &b.decided.signature, &b.decided.receipt_json],
    ] {
        assert!(step.iter().all(|f| f.is_empty()), "no step receipt without a signing key");
    }
    let rules = rt.block_on(svc.get_rules(Request::new(req::get_rules().build()))).unwrap().into_inner();
    assert!(rules.signing_keys.is_empty());
}

#[test]
fn the_signing_secret_never_appears_in_debug_output_or_errors() {
    let svc = service(&signing_ring());
    let ring = KeyRing::from_json(&signing_ring()).unwrap();
    for text in [format!("{svc:?}"), format!("{ring:?}")] {
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains(PUBLIC), "the public key identifies the signer");
    }
    // A secret with one bad digit: refused naming the field, without the secret's text.
    let bad = signing_ring().replace(SECRET, &format!("{}z", &SECRET[..63]));
    let err = KeyRing::from_json(&bad).unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(text.contains("key_ring.signing.secret"), "{text}");
    assert!(!text.contains(&SECRET[..40]), "{text}");
    // The binary refusing such a ring prints no part of it either.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.json");
    std::fs::write(&path, &bad).unwrap();
    let out = reddog(&["keygen", "--public", path.to_str().unwrap()], "");
    assert!(!out.status.success());
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains(&SECRET[..40]) && !all.contains(TOKEN_KEY), "{all}");
}

#[test]
fn keygen_public_prints_the_public_key_and_no_secret() {
    // From a file and from stdin.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.json");
    std::fs::write(&path, signing_ring()).unwrap();
    for out in
        [reddog(&["keygen", "--public", path.to_str().unwrap()], ""), reddog(&["keygen", "--public"], &signing_ring())]
    {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, format!("s1 ed25519 {PUBLIC}\n"));
        assert!(!text.contains(SECRET) && !text.contains(TOKEN_KEY));
    }
    let out = reddog(&["keygen", "--public"], &plain_ring());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no signing key"));
}

#[test]
fn keygen_signing_makes_a_ring_the_engine_signs_with() {
    let out = reddog(&["keygen", "--id", "k1", "--signing", "s7"], "");
    assert!(out.status.success());
    let ring = String::from_utf8(out.stdout).unwrap();
    let parsed = KeyRing::from_json(&ring).unwrap();
    let signer = parsed.signer().expect("a signing key");
    assert_eq!(signer.id(), "s7");
    let public = reddog(&["keygen", "--public"], &ring);
    assert_eq!(String::from_utf8(public.stdout).unwrap(), format!("s7 ed25519 {}\n", signer.public_key_hex()));
    // Added to an existing ring without one; refused on a ring that has one.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, plain_ring()).unwrap();
    let added = reddog(&["keygen", "--add-to", plain.to_str().unwrap(), "--signing", "s8"], "");
    assert!(added.status.success());
    let added = KeyRing::from_json(&String::from_utf8(added.stdout).unwrap()).unwrap();
    assert_eq!(added.signer().map(|s| s.id()), Some("s8"));
    let signed = dir.path().join("signed.json");
    std::fs::write(&signed, ring).unwrap();
    let again = reddog(&["keygen", "--add-to", signed.to_str().unwrap(), "--signing", "s9"], "");
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has a signing key"));
}

/// The identity point (order 1) and the point of order 2, as public keys; with R = the
/// identity and S = 0 a cofactorless verifier without the small-order rule accepts any
/// message under them.
const IDENTITY: &str = "0100000000000000000000000000000000000000000000000000000000000000";
const ORDER_TWO: &str = "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
const R_IDENTITY_S_ZERO: &str = "01000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000";

/// A step receipt's JSON with one change, signed again by the test key: what a leaking or
/// sandbox engine would have signed (the engine itself cannot: its receipts take
/// [`reddog::game::ShownCards`]).
fn resigned(json: &str, change: impl FnOnce(&mut StepClaim)) -> String {
    let (mut claim, _) = parse_step_receipt(json).unwrap();
    change(&mut claim);
    let signer = KeyRing::from_json(&signing_ring()).unwrap().signer().unwrap().clone();
    let signature = hex::encode(signer.sign_bytes(&claim.message()));
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["cards"] = json!(claim.cards.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    v["sandbox"] = json!(claim.sandbox);
    v["signature"] = json!(signature);
    v.to_string()
}

/// `tests/vectors/receipt-v2.json`: the key, the CommitSeed receipt vector of FAIRNESS.md
/// 4.7, and cases — a reveal with a public key, a Settle signature, a key id, receipts and
/// trusted keys — each with the verdict every verifier must give.
fn render_vectors() -> String {
    let rt = runtime();
    let svc = service(&signing_ring());
    let signer = KeyRing::from_json(&signing_ring()).unwrap().signer().unwrap().clone();
    let b = play_both_branches(&svc, &rt);
    let genuine = b.honest.reveal_json.clone();
    let forged = forge(&genuine);
    let sig = b.honest.signature.clone();
    let flip = |h: &str| format!("{}{}", if h.starts_with('0') { '1' } else { '0' }, &h[1..]);
    let transcript: [u8; 32] = unhex(&b.honest.transcript);
    let settle_hex = hex::encode(reddog::fairness::receipt::settle_message("s1", &transcript, genuine.as_bytes()));
    let other = reddog::service::ReceiptSigner::new("x", &[9; 32]).unwrap();
    // The platform's own key, under the engine's key id.
    let platform = reddog::service::ReceiptSigner::new("s1", &[9; 32]).unwrap();
    let Ok(AnyReveal::V2(f)) = parse_reveal(&forged) else { panic!() };
    let forged_by_platform = platform.sign_settle(&unhex(&f.transcript), forged.as_bytes());

    let commitment: [u8; 32] = unhex("674c8b102200e7f72744971e12454d03bd0eb01c2bdb2c194e64c3527bce58ae");
    let digest: [u8; 32] = unhex("ba6aea6bf53856b62d2cdacdc49e46ae65b537c2f21a31d8a5207706a8eba781");
    let commit = CommitReceipt {
        key_id: "s1",
        commitment: &commitment,
        round_id: "round-7",
        nonce: 0,
        table_id: "default",
        decks: 1,
        rules_digest: &digest,
        expires_at_unix_ms: 1_796_169_600_000,
        algorithm: "reddog-deal-v1",
        sandbox: false,
    };
    let (decided, started) = (b.decided.receipt_json.as_str(), b.started.receipt_json.as_str());
    let (decide_claim, _) = parse_step_receipt(decided).unwrap();
    let mut sig_flipped: serde_json::Value = serde_json::from_str(decided).unwrap();
    sig_flipped["signature"] = json!(flip(sig_flipped["signature"].as_str().unwrap()));
    let stood = decided.replace("\"raise\"", "\"stand\"");
    let renamed = decided.replace("\"signing_key_id\":\"s1\"", "\"signing_key_id\":\"s2\"");
    assert_ne!(renamed, decided);
    // What a leaking engine signed at StartRound: the face-down card too.
    let Ok(AnyReveal::V2(h)) = parse_reveal(&genuine) else { panic!() };
    let leaked = resigned(started, |c| c.cards.push(h.cards[2].parse().unwrap()));
    let sandbox_start = resigned(started, |c| c.sandbox = true);
    let mut identity_signed: serde_json::Value = serde_json::from_str(started).unwrap();
    identity_signed["signature"] = json!(R_IDENTITY_S_ZERO);
    let identity_signed = identity_signed.to_string();
    // The CommitSeed receipt of that round, as the engine signs it (fixed expiry), and as it
    // would be were the round a sandbox round.
    let (c_bytes, d_bytes): ([u8; 32], [u8; 32]) = (unhex(&h.commitment), unhex(h.rules_digest.as_ref().unwrap()));
    let round_commit = CommitReceipt {
        key_id: "s1",
        commitment: &c_bytes,
        round_id: &h.round_id,
        nonce: h.nonce,
        table_id: &h.table_id,
        decks: h.decks,
        rules_digest: &d_bytes,
        expires_at_unix_ms: 1_796_169_600_000,
        algorithm: "reddog-deal-v1",
        sandbox: false,
    };
    let commit_json = signer.sign_commit(&round_commit).1;
    let commit_json = commit_json.as_str();
    let sandbox_commit = signer.sign_commit(&CommitReceipt { sandbox: true, ..round_commit }).1;
    let commit_altered = commit_json.replace(&format!("\"nonce\":{}", h.nonce), &format!("\"nonce\":{}", h.nonce + 1));
    let commit_renamed = commit_json.replace("\"signing_key_id\":\"s1\"", "\"signing_key_id\":\"s2\"");
    assert_ne!(commit_altered, commit_json);
    assert_ne!(commit_renamed, commit_json);

    let key = |id: &str, hex_key: &str| json!({"key_id": id, "algorithm": "ed25519", "public_key_hex": hex_key});
    let trusted = json!([key("s1", PUBLIC)]);
    #[allow(clippy::too_many_arguments)]
    let case = |name: &str,
                reveal: &str,
                public_key: &str,
                key_id: &str,
                signature: &str,
                receipts: &[&str],
                trusted_keys: &serde_json::Value,
                allow_untrusted: bool,
                verdict: &str| {
        json!({"name": name, "reveal": reveal, "public_key": public_key, "key_id": key_id, "signature": signature,
               "receipts": receipts, "trusted_keys": trusted_keys, "allow_untrusted": allow_untrusted, "verdict": verdict})
    };
    let none = serde_json::Value::Null;
    let t = &trusted;
    let (g, o) = (genuine.as_str(), b.older.reveal_json.as_str());
    let cases = vec![
        case("settle/genuine", g, PUBLIC, "s1", &sig, &[], t, false, "verified"),
        case("settle/genuine-key-id-from-the-trusted-keys", g, PUBLIC, "", &sig, &[], t, false, "verified"),
        case(
            "settle/genuine-with-a-trailing-line-feed",
            &format!("{genuine}\n"),
            PUBLIC,
            "s1",
            &sig,
            &[],
            t,
            false,
            "verified",
        ),
        case(
            "settle/forged-raise-rewritten-as-a-stand-transcript-recomputed",
            &forged,
            PUBLIC,
            "s1",
            &sig,
            &[],
            t,
            false,
            "not_verified",
        ),
        case(
            "settle/forged-signed-by-the-platforms-key-not-in-trusted-keys",
            &forged,
            &platform.public_key_hex(),
            "s1",
            &forged_by_platform,
            &[],
            t,
            false,
            "not_verified",
        ),
        case(
            "settle/forged-signed-by-the-platforms-key-no-trusted-keys",
            &forged,
            &platform.public_key_hex(),
            "s1",
            &forged_by_platform,
            &[],
            &none,
            false,
            "not_verified",
        ),
        case(
            "settle/forged-signed-by-the-platforms-key-allow-untrusted",
            &forged,
            &platform.public_key_hex(),
            "s1",
            &forged_by_platform,
            &[],
            &none,
            true,
            "verified",
        ),
        case("settle/genuine-signature-altered", g, PUBLIC, "s1", &flip(&sig), &[], t, false, "not_verified"),
        case(
            "settle/genuine-under-another-trusted-public-key",
            g,
            &other.public_key_hex(),
            "s1",
            &sig,
            &[],
            &json!([key("s1", &other.public_key_hex())]),
            false,
            "not_verified",
        ),
        case(
            "settle/genuine-with-a-leading-space",
            &format!(" {genuine}"),
            PUBLIC,
            "s1",
            &sig,
            &[],
            t,
            false,
            "not_verified",
        ),
        case("settle/genuine-under-another-key-id", g, PUBLIC, "s2", &sig, &[], t, false, "not_verified"),
        case(
            "settle/genuine-trusted-under-another-key-id",
            g,
            PUBLIC,
            "",
            &sig,
            &[],
            &json!([key("s9", PUBLIC)]),
            false,
            "not_verified",
        ),
        case(
            "settle/forged-identity-key-r-identity-s-zero",
            &forged,
            IDENTITY,
            "s1",
            R_IDENTITY_S_ZERO,
            &[],
            &json!([key("s1", IDENTITY)]),
            false,
            "not_verified",
        ),
        case(
            "settle/forged-order-2-key-r-identity-s-zero",
            &forged,
            ORDER_TWO,
            "s1",
            R_IDENTITY_S_ZERO,
            &[],
            &json!([key("s1", ORDER_TWO)]),
            true,
            "not_verified",
        ),
        case("step/honest-with-the-decide-receipt", g, PUBLIC, "", &sig, &[decided], t, false, "verified"),
        case(
            "step/honest-with-both-receipts-no-settle-signature",
            g,
            PUBLIC,
            "",
            "",
            &[started, decided],
            t,
            false,
            "verified",
        ),
        case(
            "step/settle-older-with-the-decide-receipt",
            o,
            PUBLIC,
            "",
            &b.older.signature,
            &[decided],
            t,
            false,
            "not_verified",
        ),
        case(
            "step/settle-older-with-the-start-receipt-only",
            o,
            PUBLIC,
            "",
            &b.older.signature,
            &[started],
            t,
            false,
            "verified",
        ),
        case("step/forged-with-the-decide-receipt", &forged, PUBLIC, "", "", &[decided], t, false, "not_verified"),
        case(
            "step/decide-receipt-signature-altered",
            g,
            PUBLIC,
            "",
            "",
            &[&sig_flipped.to_string()],
            t,
            false,
            "not_verified",
        ),
        case("step/decide-receipt-raise-rewritten-as-stand", g, PUBLIC, "", "", &[&stood], t, false, "not_verified"),
        case(
            "step/decide-receipt-key-id-rewritten",
            g,
            PUBLIC,
            "",
            "",
            &[&renamed],
            &json!([key("s2", PUBLIC)]),
            false,
            "not_verified",
        ),
        case("step/start-receipt-naming-the-face-down-card", g, PUBLIC, "", "", &[&leaked], t, false, "not_verified"),
        case("step/start-receipt-of-a-sandbox-round", g, PUBLIC, "", "", &[&sandbox_start], t, false, "not_verified"),
        case(
            "step/start-receipt-under-the-identity-key-r-identity-s-zero",
            g,
            IDENTITY,
            "",
            "",
            &[&identity_signed],
            &json!([key("s1", IDENTITY)]),
            false,
            "not_verified",
        ),
        case(
            "step/honest-receipts-no-trusted-keys",
            g,
            PUBLIC,
            "",
            "",
            &[started, decided],
            &none,
            false,
            "not_verified",
        ),
        case("step/honest-receipts-allow-untrusted", g, PUBLIC, "", "", &[started, decided], &none, true, "verified"),
        case(
            "step/receipt-of-another-format",
            g,
            PUBLIC,
            "",
            "",
            &[&decided.replace("reddog-step-receipt-v2", "reddog-step-receipt-v0")],
            t,
            false,
            "malformed",
        ),
        case("commit/honest-with-the-commit-receipt", g, PUBLIC, "", "", &[commit_json], t, false, "verified"),
        case(
            "commit/settle-older-with-the-commit-receipt-only",
            o,
            PUBLIC,
            "",
            "",
            &[commit_json],
            t,
            false,
            "verified",
        ),
        case(
            "commit/forged-rules-with-the-commit-receipt",
            &forged,
            PUBLIC,
            "",
            "",
            &[commit_json],
            t,
            false,
            "not_verified",
        ),
        case("commit/receipt-nonce-altered", g, PUBLIC, "", "", &[&commit_altered], t, false, "not_verified"),
        case(
            "commit/receipt-key-id-rewritten",
            g,
            PUBLIC,
            "",
            "",
            &[&commit_renamed],
            &json!([key("s2", PUBLIC)]),
            false,
            "not_verified",
        ),
        case(
            "commit/settle-older-with-commit-and-decide-receipts",
            o,
            PUBLIC,
            "",
            "",
            &[commit_json, decided],
            t,
            false,
            "not_verified",
        ),
        case(
            "commit/sandbox-commit-receipt-with-a-fair-reveal",
            g,
            PUBLIC,
            "",
            "",
            &[&sandbox_commit],
            t,
            false,
            "not_verified",
        ),
    ];
    let doc = json!({
        "format": "reddog-receipt-vectors",
        "receipt_version": 2,
        "note": "Signed receipts, version 2 (docs/FAIRNESS.md 4.7): what the engine signs today. `secret` is RFC 8032 test 1's key (id `key_id`). `commit`: the CommitSeed receipt's fields, the exact message signed (`message_hex`) and its signature. Each case: give the verifier the reveal (exact bytes), --public-key, --key-id unless empty, --signature unless empty, each of `receipts` as a --receipt file, `trusted_keys` (unless null) as a --trusted-keys file and --allow-untrusted when true; `verdict` is its answer (verified: exit 0, not_verified: 1, malformed: 2). The genuine reveal is a round played through the engine (one seat of 1000 raised and won 4000); the forged one is it rewritten as a stand at odds 1 returning 2000 with its transcript and rules digest recomputed (it verifies without the key); the older one is the pre-raise token settled after the raise. `settle_message_hex` and `step_message_hex` are the exact messages of the genuine Settle receipt and of the Decide receipt.",
        "secret": SECRET,
        "key_id": "s1",
        "public_key": signer.public_key_hex(),
        "commit": {
            "commitment": hex::encode(commitment), "round_id": commit.round_id, "nonce": commit.nonce,
            "table_id": commit.table_id, "decks": commit.decks, "rules_digest": hex::encode(digest),
            "expires_at_unix_ms": commit.expires_at_unix_ms, "algorithm": commit.algorithm, "sandbox": commit.sandbox,
            "message_hex": hex::encode(commit.message()), "signature": signer.sign_commit(&commit).0,
        },
        "settle_message_hex": settle_hex,
        "step_message_hex": hex::encode(decide_claim.message()),
        "cases": cases,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap();
    text.push('\n');
    text
}

fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors").join(name)
}

#[test]
fn the_receipt_vector_file_is_exactly_what_the_engine_signs_today() {
    let expected = render_vectors();
    if std::env::var_os("REDDOG_WRITE_VECTORS").is_some() {
        std::fs::write(vector_path("receipt-v2.json"), &expected).unwrap();
        return;
    }
    let actual = std::fs::read_to_string(vector_path("receipt-v2.json")).expect("tests/vectors/receipt-v2.json exists");
    assert!(
        actual == expected,
        "tests/vectors/receipt-v2.json differs from what the engine signs; review and rewrite with \
         REDDOG_WRITE_VECTORS=1 cargo test --test it receipts::"
    );
}

/// A receipt vector case through the binary: its exit status.
fn run_case(dir: &tempfile::TempDir, case: &serde_json::Value) -> Option<i32> {
    let reveal = dir.path().join("reveal.json");
    std::fs::write(&reveal, case["reveal"].as_str().unwrap()).unwrap();
    let mut args: Vec<String> = vec!["verify".into(), reveal.to_str().unwrap().into()];
    args.extend(["--public-key".into(), case["public_key"].as_str().unwrap().to_string()]);
    for flag in ["key_id", "signature"] {
        let value = case[flag].as_str().unwrap();
        if !value.is_empty() {
            args.extend([format!("--{}", flag.replace('_', "-")), value.to_string()]);
        }
    }
    for (i, r) in case["receipts"].as_array().unwrap().iter().enumerate() {
        let p = dir.path().join(format!("receipt-{i}.json"));
        std::fs::write(&p, r.as_str().unwrap()).unwrap();
        args.extend(["--receipt".into(), p.to_str().unwrap().into()]);
    }
    if !case["trusted_keys"].is_null() {
        let p = dir.path().join("trusted.json");
        std::fs::write(&p, case["trusted_keys"].to_string()).unwrap();
        args.extend(["--trusted-keys".into(), p.to_str().unwrap().into()]);
    }
    if case["allow_untrusted"] == true {
        args.push("--allow-untrusted".into());
    }
    reddog(&args.iter().map(String::as_str).collect::<Vec<_>>(), "").status.code()
}

#[test]
fn every_receipt_vector_gets_its_verdict_from_reddog_verify() {
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for file in ["receipt-v1.json", "receipt-v2.json"] {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(vector_path(file)).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            let want = match case["verdict"].as_str().unwrap() {
                "verified" => 0,
                "not_verified" => 1,
                _ => 2,
            };
            assert_eq!(run_case(&dir, case), Some(want), "{file}: {}", case["name"]);
            ran += 1;
        }
    }
    assert!(ran >= 50, "{ran} cases");
}

/// An output the test reads after the sink wrote it.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An audit trail written by an engine whose ring has the signing key: two signed
/// checkpoints.
fn signed_trail() -> String {
    use reddog::service::{AuditOptions, AuditSink, CheckpointSigner};
    let out = Shared::default();
    let ring = KeyRing::from_json(&signing_ring()).unwrap();
    let signer = ring.signer().map(|s| std::sync::Arc::clone(s) as std::sync::Arc<dyn CheckpointSigner>);
    let tables = Tables::single(Table::default());
    let options = AuditOptions {
        replica: "replica-a".into(),
        checkpoint_interval: Duration::from_secs(3600),
        checkpoint_records: 0,
        signer,
        ..AuditOptions::local()
    };
    let audit = AuditSink::start(out.clone(), options, &tables).unwrap();
    let svc = RedDogService::new(EngineConfig {
        tables,
        audit: audit.clone(),
        key_ring: ring,
        commitment_ttl: Duration::from_secs(600),
        clock: reddog::service::Clock::system(),
        metrics: Default::default(),
    });
    let rt = runtime();
    for n in 0..3 {
        let request = req::commit_seed().round(format!("r-{n}")).nonce(n).build();
        rt.block_on(svc.commit_seed(Request::new(request))).unwrap();
        if n > 0 {
            assert!(audit.checkpoint().unwrap(), "a checkpoint is written");
        }
    }
    audit.stop(Duration::from_secs(10));
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert_eq!(text.matches(r#""event":"checkpoint""#).count(), 2);
    assert_eq!(text.matches(r#""key_id":"s1""#).count(), 3, "two checkpoints and audit_stopped: {text}");
    text
}

#[test]
fn audit_log_verifies_signed_checkpoints_with_the_public_key_and_says_when_it_did_not() {
    let trail = signed_trail();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, &trail).unwrap();
    let file = path.to_str().unwrap();

    let out = reddog(&["audit-log", file, "--public-key", PUBLIC], "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("checkpoints: 2 read, 2 signature(s) verified"), "{text}");

    let out = reddog(&["audit-log", file], "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("signatures not checked"), "{text}");

    // Under another key every checkpoint is a finding (the chain itself is intact).
    let other = hex::encode(reddog::service::ReceiptSigner::new("x", &[9; 32]).unwrap().public_key());
    let out = reddog(&["audit-log", file, "--public-key", &other, "--json"], "");
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["by_kind"], json!({"checkpoint_signature": 3}), "{report}");
    assert_eq!(report["checkpoints"], json!({"records": 2, "signatures_checked": true, "signatures_verified": 0}));

    // A signature altered in the file: that checkpoint is a finding (and the chain shows
    // the edit).
    let at = trail.find(r#""signature":""#).unwrap() + r#""signature":""#.len();
    let mut altered = trail.clone().into_bytes();
    altered[at] = if altered[at] == b'0' { b'1' } else { b'0' };
    std::fs::write(&path, &altered).unwrap();
    let out = reddog(&["audit-log", file, "--public-key", PUBLIC, "--json"], "");
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["by_kind"]["checkpoint_signature"], 1, "{report}");
    assert_eq!(report["checkpoints"]["signatures_verified"], 1);

    // A malformed key is bad usage.
    assert_eq!(reddog(&["audit-log", file, "--public-key", "abc"], "").status.code(), Some(2));
}

/// The real binary with the signing ring, logs at `trace`: a signed round leaves no trace of
/// the signing secret (nor of the token key) in the diagnostics or the audit trail, and the
/// trail's checkpoint is signed.
#[tokio::test]
async fn the_signing_secret_never_appears_in_trace_logs_or_the_audit_trail() {
    use crate::common::{ServerProcess, connect, req};
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("reddog.log");
    let trail_path = dir.path().join("audit.jsonl");
    let ring = signing_ring();
    let server = ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("RUST_LOG", "trace"),
            ("REDDOG_AUDIT_LOG", trail_path.to_str().unwrap()),
            ("REDDOG_AUDIT_CHECKPOINT_SECS", "1"),
        ],
        Stdio::from(std::fs::File::create(&log_path).unwrap()),
    );
    let mut c = connect(server.addr).await;
    let committed = c.commit_seed(req::commit_seed().nonce(1)).await.unwrap();
    assert_eq!(committed.signing_key_id, "s1");
    let started = c.start_round(req::start_round(committed.commitment_token).nonce(1).bets(&[500])).await.unwrap();
    let settled = c.settle(req::settle(started.round_token)).await.unwrap();
    assert_eq!(settled.signature.len(), 128);
    // A checkpoint follows within its interval (bounded wait).
    crate::common::eventually(Duration::from_secs(20), "a checkpoint in the trail", || {
        std::fs::read_to_string(&trail_path).unwrap_or_default().contains(r#""event":"checkpoint""#)
    })
    .await;
    drop(c);
    assert!(server.terminate().await.success());
    let log = std::fs::read_to_string(&log_path).unwrap();
    let trail = std::fs::read_to_string(&trail_path).unwrap();
    assert!(log.contains("TRACE") || log.contains("trace"), "trace-level events were written");
    assert!(trail.contains(r#""key_id":"s1""#), "the checkpoint is signed");
    for text in [&log, &trail] {
        assert!(!text.to_lowercase().contains(SECRET), "the signing secret was written");
        assert!(!text.contains(TOKEN_KEY), "the token key was written");
    }
}

/// `reddog audit-log --reveal FILE --public-key HEX --receipt FILE`: the step receipts are
/// checked against the disputed reveal too; the reveal of the branch not played does not
/// descend from the Decide receipt.
#[test]
fn audit_log_checks_the_players_step_receipts_against_a_disputed_reveal() {
    use reddog::service::{AuditOptions, AuditSink};
    let out = Shared::default();
    let tables = Tables::single(Table::default());
    let audit = AuditSink::start(out.clone(), AuditOptions::local(), &tables).unwrap();
    let svc = RedDogService::new(EngineConfig {
        tables,
        audit: audit.clone(),
        key_ring: KeyRing::from_json(&signing_ring()).unwrap(),
        commitment_ttl: Duration::from_secs(600),
        clock: reddog::service::Clock::system(),
        metrics: Default::default(),
    });
    let b = play_both_branches(&svc, &runtime());
    audit.stop(Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("trail.jsonl");
    std::fs::write(&trail, out.0.lock().unwrap().clone()).unwrap();
    let receipt = dir.path().join("decide.json");
    std::fs::write(&receipt, &b.decided.receipt_json).unwrap();
    let check = |reveal: &str| {
        let path = dir.path().join("reveal.json");
        std::fs::write(&path, reveal).unwrap();
        let args = ["audit-log", trail.to_str().unwrap(), "--reveal", path.to_str().unwrap(), "--public-key", PUBLIC];
        let out = reddog(&[&args[..], &["--json", "--receipt", receipt.to_str().unwrap()]].concat(), "");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
        (out.status.code(), v["receipts"][0]["signed"].clone(), v["receipts"][0]["descends"].clone())
    };
    let (_, signed, descends) = check(&b.honest.reveal_json);
    assert_eq!((signed, descends), (json!(true), json!(true)));
    let (code, signed, descends) = check(&b.older.reveal_json);
    assert_eq!((code, signed, descends), (Some(1), json!(true), json!(false)));
}
