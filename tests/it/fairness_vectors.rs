//! The deal's test vectors (`tests/vectors/deal-v1.json`, format in `docs/FAIRNESS.md`,
//! "Test vectors"): regenerated here on every run and compared byte for byte with the file,
//! so the algorithm cannot drift unnoticed.
//!
//! To rewrite the file on purpose (a new algorithm version, a new case):
//! `REDDOG_WRITE_VECTORS=1 cargo test --test it fairness_vectors::`, then review the diff.

use std::path::PathBuf;

use reddog::fairness::{self, ALGORITHM, ALGORITHM_VERSION, DealInputs, DealStream, FairShoe, RevealV1, ServerSeed};
use reddog::game::{Card, Decks, Shoe};
use serde_json::{Value, json};

/// Cards listed per case.
const CARDS: usize = 20;
const SEED_A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const SEED_B: &str = "e17682c0f40393f4a4ce260aa46d98a29e675cc85a59b54d08a4b47489043862";
const SEED_C: &str = "307577470a3c5d0d01ed8d3dbed397f654cf4564c083b01bea926c40999e52d6";
const SEED_D: &str = "f22e5ed02331386d9049e39bd0101967c9e74764ebe69969610576a2ec0e7b63";
const SEED_R: &str = "c3e4f36e9555973f3a32cf932574c8a99f6aeb8c4e4a4f218257e0fe534fd4a6";
const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const NON_ASCII: &str = "grüße, 世界 🎲";
/// Client seed used by the rejection-sampling cases (found by `search_rejection_cases`).
const REJECTION_CLIENT: &str = "rejection";

fn long_ascii() -> String {
    "0123456789abcdef".repeat(80) // 1280 bytes
}

fn long_non_ascii() -> String {
    "é".repeat(600) // 1200 bytes
}

struct Case {
    name: String,
    seed: &'static str,
    client: String,
    nonce: u64,
    decks: u8,
}

fn case(name: impl Into<String>, seed: &'static str, client: impl Into<String>, nonce: u64, decks: u8) -> Case {
    Case { name: name.into(), seed, client: client.into(), nonce, decks }
}

fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    let clients = [("empty", String::new()), ("ascii", "lucky-7".into()), ("non-ascii", NON_ASCII.into())];
    let clients = clients.into_iter().chain([("long", long_ascii())]);
    for (label, client) in clients {
        for decks in [1u8, 8] {
            for (nonce_label, nonce) in [("0", 0u64), ("max", u64::MAX)] {
                let seed = if nonce == 0 { SEED_A } else { SEED_B };
                all.push(case(
                    format!("{decks}-deck/{label}-client/nonce-{nonce_label}"),
                    seed,
                    client.clone(),
                    nonce,
                    decks,
                ));
            }
        }
    }
    all.extend([
        case("zero-seed/empty-client/nonce-0", ZERO, "", 0, 1),
        case("2-deck/colon-client/nonce-1", SEED_C, "a:b", 1, 2),
        case("2-deck/colon-client-shifted/nonce-1", SEED_C, "a", 1, 2),
        case("6-deck/nonce-2^32", SEED_C, "six decks", 1 << 32, 6),
        case("4-deck/nonce-12345", SEED_D, "player-42", 12345, 4),
        case("1-deck/long-non-ascii-client/nonce-7", SEED_D, long_non_ascii(), 7, 1),
        case("1-deck/control-characters-client/nonce-99", SEED_D, "line1\nline2\t\"quoted\"\\", 99, 1),
        case("8-deck/ascii-client/nonce-1", SEED_D, "lucky-7", 1, 8),
        case("1-deck/rejection", SEED_R, REJECTION_CLIENT, 20_319_252, 1),
        case("8-deck/rejection", SEED_R, REJECTION_CLIENT, 4_203_422, 8),
        // FAIRNESS.md §3.4: "a" with *another* nonce is a third, different message.
        case("2-deck/colon-client-shifted/nonce-2", SEED_C, "a", 2, 2),
    ]);
    all
}

fn seed(hex: &str) -> ServerSeed {
    let mut bytes = [0u8; 32];
    hex::decode_to_slice(hex, &mut bytes).unwrap();
    ServerSeed::from_bytes(bytes)
}

/// The HMAC message exactly as `docs/FAIRNESS.md` spells it, built independently of
/// `derive_key`.
fn hmac_message(client: &[u8], nonce: u64, decks: u8) -> Vec<u8> {
    let mut msg = Vec::new();
    for field in [&b"reddog/deal"[..], &ALGORITHM_VERSION.to_be_bytes(), client, &nonce.to_be_bytes(), &[decks]] {
        msg.extend_from_slice(&(field.len() as u32).to_be_bytes());
        msg.extend_from_slice(field);
    }
    msg
}

/// The first `count` cards by the spec's shuffle, counting rejected words; cross-checked
/// against `FairShoe`.
fn deal_counting_rejections(inputs: &DealInputs<'_>, count: usize) -> (Vec<Card>, u32) {
    let mut stream = DealStream::new(inputs);
    let mut shoe = Shoe::new(inputs.decks);
    let mut rejected = 0;
    let cards: Vec<Card> = (0..count)
        .map(|_| {
            shoe.draw_with(|n| {
                let limit = (1u64 << 32) - (1u64 << 32) % u64::from(n);
                loop {
                    let x = stream.next_word();
                    if u64::from(x) < limit {
                        return x % n;
                    }
                    rejected += 1;
                }
            })
            .unwrap()
        })
        .collect();
    assert_eq!(cards, FairShoe::deal(inputs, count), "FairShoe disagrees with the spec's shuffle");
    (cards, rejected)
}

fn render_case(c: &Case) -> Vec<(&'static str, Value)> {
    let server_seed = seed(c.seed);
    let decks = Decks::new(u32::from(c.decks)).unwrap();
    let inputs = DealInputs { server_seed: &server_seed, client_seed: c.client.as_bytes(), nonce: c.nonce, decks };
    let key = fairness::derive_key(&inputs);
    let mut block0 = [0u8; 64];
    DealStream::from_key(key).fill_bytes(&mut block0);
    let (cards, rejected) = deal_counting_rejections(&inputs, CARDS);
    vec![
        ("name", json!(c.name)),
        ("server_seed", json!(c.seed)),
        ("commitment", json!(server_seed.commitment().to_string())),
        ("client_seed", json!(c.client)),
        ("client_seed_hex", json!(hex::encode(c.client.as_bytes()))),
        ("nonce", json!(c.nonce)),
        ("decks", json!(c.decks)),
        ("hmac_message", json!(hex::encode(hmac_message(c.client.as_bytes(), c.nonce, c.decks)))),
        ("key", json!(hex::encode(key))),
        ("keystream_block0", json!(hex::encode(block0))),
        ("rejected_words", json!(rejected)),
        ("cards", json!(cards.iter().map(Card::to_string).collect::<Vec<_>>())),
        ("codes", json!(cards.iter().map(|c| c.code()).collect::<Vec<_>>())),
    ]
}

/// The vector file's text: one field per line, lists on one line, so diffs stay readable.
fn render() -> String {
    let mut out = String::from("{\n");
    out += &format!("  \"algorithm\": {},\n", json!(ALGORITHM));
    out += &format!("  \"version\": {ALGORITHM_VERSION},\n");
    out += "  \"spec\": \"docs/FAIRNESS.md\",\n";
    out += &format!(
        "  \"note\": {},\n",
        json!(
            "Generated by tests/it/fairness_vectors.rs (REDDOG_WRITE_VECTORS=1 rewrites it). Every case lists the inputs, \
             the commitment SHA-256(server_seed), the HMAC message and the derived key, the first ChaCha20 block, \
             the number of words rejected while dealing, and the first 20 cards of the shuffled shoe."
        )
    );
    out += "  \"cases\": [\n";
    let cases = cases();
    for (i, c) in cases.iter().enumerate() {
        let fields = render_case(c);
        out += "    {\n";
        for (j, (k, v)) in fields.iter().enumerate() {
            let comma = if j + 1 < fields.len() { "," } else { "" };
            out += &format!("      \"{k}\": {v}{comma}\n");
        }
        out += if i + 1 < cases.len() { "    },\n" } else { "    }\n" };
    }
    out += "  ]\n}\n";
    out
}

fn vector_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/deal-v1.json")
}

#[test]
fn the_vector_file_is_exactly_what_the_algorithm_produces_today() {
    let expected = render();
    if std::env::var_os("REDDOG_WRITE_VECTORS").is_some_and(|v| v == "1") {
        std::fs::write(vector_file(), &expected).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(vector_file()).expect("tests/vectors/deal-v1.json is missing");
    if on_disk != expected {
        let line = on_disk.lines().zip(expected.lines()).position(|(a, b)| a != b).unwrap_or(0) + 1;
        panic!(
            "tests/vectors/deal-v1.json differs from the algorithm's output from line {line} on: the deal changed. \
             If that is intended (a new ALGORITHM_VERSION), rewrite it with REDDOG_WRITE_VECTORS=1 and review the diff."
        );
    }
}

#[test]
fn the_vectors_cover_what_the_issue_asks_for() {
    let all = cases();
    assert!(all.len() >= 24, "{} cases", all.len());
    let has = |f: &dyn Fn(&Case) -> bool| all.iter().any(f);
    assert!(has(&|c| c.decks == 1) && has(&|c| c.decks == 8));
    assert!(has(&|c| c.client.is_empty()));
    assert!(has(&|c| c.client.len() > 1024 && c.client.is_ascii()));
    assert!(has(&|c| c.client.len() > 1024 && !c.client.is_ascii()));
    assert!(has(&|c| !c.client.is_ascii()));
    assert!(has(&|c| c.nonce == 0) && has(&|c| c.nonce == u64::MAX));
    // FAIRNESS.md §3.4: "a:b" with one nonce, "a" with the same nonce and with another: three
    // different messages, so three unrelated keys.
    let colon: Vec<&Case> = all.iter().filter(|c| c.client == "a:b" || c.client == "a").collect();
    assert!(colon.iter().any(|c| c.client == "a" && c.nonce != colon[0].nonce));
    let keys: std::collections::HashSet<String> =
        colon.iter().map(|c| render_case(c).into_iter().find(|(k, _)| *k == "key").unwrap().1.to_string()).collect();
    assert_eq!(keys.len(), 3, "the colon cases must give three different keys");
    let rejecting = all.iter().filter(|c| render_case(c).iter().any(|(k, v)| *k == "rejected_words" && v != 0));
    assert!(rejecting.count() >= 2, "no case exercises the rejection of a word");
}

#[test]
fn every_vector_verifies_as_a_reveal_and_fails_with_a_changed_card() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(vector_file()).unwrap()).unwrap();
    for case in doc["cases"].as_array().unwrap() {
        let mut cards: Vec<String> = serde_json::from_value(case["cards"].clone()).unwrap();
        // A round deals 2 cards on a consecutive hand, 3 otherwise.
        let (a, b): (Card, Card) = (cards[0].parse().unwrap(), cards[1].parse().unwrap());
        cards.truncate(if reddog::game::HandClass::of(a, b) == reddog::game::HandClass::Consecutive { 2 } else { 3 });
        let mut reveal = RevealV1 {
            algorithm: ALGORITHM.into(),
            server_seed: case["server_seed"].as_str().unwrap().into(),
            commitment: case["commitment"].as_str().unwrap().into(),
            client_seed: case["client_seed"].as_str().unwrap().into(),
            nonce: case["nonce"].as_u64().unwrap(),
            decks: case["decks"].as_u64().unwrap() as u8,
            cards,
            round_id: None,
        };
        assert!(fairness::verify_v1(&reveal).unwrap().ok(), "{}", case["name"]);
        // Another suit of the same rank: the hand class stays, the card differs.
        let first: Card = reveal.cards[0].parse().unwrap();
        reveal.cards[0] = Card::from_code(first.code() ^ 1).unwrap().to_string();
        assert!(!fairness::verify_v1(&reveal).unwrap().cards_ok, "{}", case["name"]);
    }
}

/// How the rejection cases were found: the first nonce whose first 20 draws reject at
/// least one word. Slow in debug; run with
/// `cargo test --release --test it fairness_vectors:: -- --ignored --nocapture`.
#[test]
#[ignore = "a search, not a test; run by hand when choosing vectors"]
fn search_rejection_cases() {
    let server_seed = seed(SEED_R);
    for decks in [1u8, 8] {
        let decks = Decks::new(u32::from(decks)).unwrap();
        let nonce = (0u64..)
            .find(|&nonce| {
                let inputs =
                    DealInputs { server_seed: &server_seed, client_seed: REJECTION_CLIENT.as_bytes(), nonce, decks };
                let mut stream = DealStream::new(&inputs);
                (0..CARDS as u32).any(|i| {
                    let n = decks.cards() as u32 - i;
                    u64::from(stream.next_word()) >= (1u64 << 32) - (1u64 << 32) % u64::from(n)
                })
            })
            .unwrap();
        println!("{} deck(s): first nonce with a rejection in the first {CARDS} draws: {nonce}", decks.get());
    }
}
