//! Hidden means hidden (docs/FAIRNESS.md, "What each party may know, and when"): the real
//! binary with a signing key, logs at `trace` (JSON, span fields included), its audit trail
//! in a file and its `/metrics`, plays 235 rounds — 200 of 2 seats and 5 of each of 1 to 7
//! seats, four players side by side — with random partial decisions (several `Decide` calls, seats left undecided) and
//! refused calls in between. Every round is played up to its last step before `Settle`; then
//! everything the engine has said so far is kept, and only then is every round settled and
//! its reveal read. Each output made while a card was face down is decoded and searched:
//!
//! - each `StartRound` and `Decide` answer (round view, receipt, signature, transcript, every
//!   other field): the round view shows no third card, the receipt parses to exactly the cards
//!   shown and its signature covers that message, and the answer's text contains neither the
//!   face-down card nor the seed (hex) nor a hash of the cards (below);
//! - the round token's visible bytes: its header only (version, kind, key id), and the seed
//!   nowhere in it (raw or hex);
//! - each refused call's status message and details;
//! - every audit record of the round written before `Settle`;
//! - every log line before the first `Settle` (all rounds): no card at all, no seed, no hash;
//! - `/metrics` before the first `Settle`: no settlement counted, no card in any label.
//!
//! "The face-down card" is the third card of a non-consecutive hand while a seat is still
//! undecided, and the shoe's position 2 of a consecutive hand (never dealt, but fixed by the
//! seed). The hashes searched for are those a leaking engine would write: SHA-256 of the
//! dealt cards' text, of their codes, of the face-down card alone, and of the version-1 step
//! message with three cards (what engines before receipts v2 signed).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use reddog::fairness::receipt::{parse_step_receipt, verify_message};
use reddog::fairness::{DealInputs, FairShoe, RevealV2, ServerSeed};
use reddog::game::{Card, Decks, HandClass};
use reddog::service::proto;
use sha2::{Digest, Sha256};

use crate::common::{ServerProcess, TestClient, connect, eventually, req};

const SECRET: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const TOKEN_KEY: &str = "5555555555555555555555555555555555555555555555555555555555555555";

/// SplitMix64: the test's choices (seats decided, calls), reproducible.
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One output made while the round's face-down card was hidden.
struct Said {
    what: String,
    text: String,
    /// A receipt to parse and check (answers only).
    receipt: Option<(String, String)>,
    /// The cards the table showed with it.
    shown: Vec<String>,
}

/// One round, played up to its last step before `Settle`.
struct Round {
    round_id: String,
    nonce: u64,
    client_seed: String,
    token: Vec<u8>,
    tokens: Vec<Vec<u8>>,
    said: Vec<Said>,
    /// Whether the last Decide turned the third card up (every seat decided).
    turned: bool,
}

/// The answer's text without its round token (ciphertext, searched apart).
fn answer_text<T: std::fmt::Debug>(answer: &T, token: &[u8]) -> String {
    let text = format!("{answer:?}");
    text.replace(&format!("{token:?}"), "[token]")
}

fn shown_of(view: &proto::RoundView) -> Vec<String> {
    [&view.first_card, &view.second_card, &view.third_card].into_iter().flatten().map(|c| c.code.clone()).collect()
}

/// Whether `text` holds `card` as a token of its own (not inside hex or a word).
fn holds_card(text: &str, card: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(card).any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + 2).copied();
        !before.is_some_and(|c| c.is_ascii_alphanumeric()) && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// Every card-shaped token of `text` (rank then suit, standing alone), in one pass.
fn card_tokens(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(1))
        .filter(|&i| {
            b"23456789TJQKA".contains(&b[i])
                && b"cdhs".contains(&b[i + 1])
                && !(i > 0 && b[i - 1].is_ascii_alphanumeric())
                && !b.get(i + 2).is_some_and(|c| c.is_ascii_alphanumeric())
        })
        .map(|i| text[i..i + 2].to_string())
        .collect()
}

/// Every run of exactly 64 hex digits in `text`, lower-cased (a seed or a SHA-256 in hex).
fn hex64_runs(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        if i - start >= 64 {
            // Inside a longer run too (e.g. a signature): every 64-digit window.
            for w in start..=i - 64 {
                out.push(text[w..w + 64].to_ascii_lowercase());
            }
        }
        i += 1;
    }
    out
}

/// The hex SHA-256 digests a leaking engine would have written for this deal.
fn leak_hashes(cards: &[Card; 3], commitment: &[u8; 32], round_id: &str, t0: &[u8; 32]) -> Vec<String> {
    let texts: String = cards.iter().map(|c| c.to_string()).collect();
    let codes: Vec<u8> = cards.iter().map(|c| c.code()).collect();
    let field = |m: &mut Vec<u8>, b: &[u8]| {
        m.extend_from_slice(&(b.len() as u32).to_be_bytes());
        m.extend_from_slice(b);
    };
    let mut v1 = Vec::new();
    field(&mut v1, b"reddog/receipt/step/v1");
    field(&mut v1, commitment);
    field(&mut v1, round_id.as_bytes());
    field(&mut v1, &0u32.to_be_bytes());
    field(&mut v1, t0);
    field(&mut v1, texts.as_bytes());
    field(&mut v1, &[]);
    [texts.as_bytes(), &codes, cards[2].to_string().as_bytes(), &codes[2..], &v1]
        .iter()
        .map(|p| hex::encode(Sha256::digest(p)))
        .collect()
}

async fn refused(what: &str, r: Result<impl std::fmt::Debug, tonic::Status>) -> Said {
    let status = r.expect_err(what);
    let text = format!("{} {:?} {}", status.message(), status.details(), String::from_utf8_lossy(status.details()));
    Said { what: format!("refused {what}"), text, receipt: None, shown: Vec::new() }
}

/// Plays a round up to its last step before Settle, with partial decisions and refused calls.
async fn play(c: &mut TestClient, nonce: u64, seats: usize, choose: &mut Choices) -> Round {
    let round_id = format!("hidden-{nonce}");
    let client_seed = format!("player-{}", choose.next());
    let committed = c.commit_seed(req::commit_seed().round(&round_id).nonce(nonce)).await.unwrap();
    let bets: Vec<u64> = (0..seats).map(|s| 500 + 100 * s as u64).collect();
    let started = c
        .start_round(
            req::start_round(committed.commitment_token.clone())
                .round(&round_id)
                .nonce(nonce)
                .client_seed(&client_seed)
                .bets(&bets),
        )
        .await
        .unwrap();
    let view = started.round.clone().unwrap();
    let mut r = Round {
        round_id: round_id.clone(),
        nonce,
        client_seed,
        token: started.round_token.clone(),
        tokens: vec![started.round_token.clone()],
        said: vec![Said {
            what: "StartRound".into(),
            text: answer_text(&started, &started.round_token),
            receipt: Some((started.receipt_json.clone(), started.signature.clone())),
            shown: shown_of(&view),
        }],
        turned: false,
    };
    // A seat that does not exist: refused, whatever the hand.
    r.said.push(
        refused("Decide seat out of range", c.decide(req::decide(r.token.clone()).raise(seats as u32)).await).await,
    );
    if !view.awaiting_decisions {
        r.said.push(
            refused("Decide on a hand without decisions", c.decide(req::decide(r.token.clone()).stand(0)).await).await,
        );
        return r;
    }
    let mut undecided: Vec<u32> = (0..seats as u32).collect();
    // 0 to `seats` Decide calls, each deciding a random non-empty set; often stopping early.
    while !undecided.is_empty() && choose.below(4) != 0 {
        let take = 1 + choose.below(undecided.len() as u64) as usize;
        let mut d = req::decide(r.token.clone());
        let mut decided = Vec::new();
        for _ in 0..take {
            let seat = undecided.remove(choose.below(undecided.len() as u64) as usize);
            d = if choose.below(2) == 0 { d.raise(seat) } else { d.stand(seat) };
            decided.push(seat);
        }
        let answer = c.decide(d).await.unwrap();
        let view = answer.round.clone().unwrap();
        r.token = answer.round_token.clone();
        r.tokens.push(answer.round_token.clone());
        if undecided.is_empty() {
            assert!(view.third_card.is_some(), "the last Decide turns the third card up");
            r.turned = true;
        } else {
            r.said.push(Said {
                what: format!("Decide step {}", answer.step),
                text: answer_text(&answer, &answer.round_token),
                receipt: Some((answer.receipt_json.clone(), answer.signature.clone())),
                shown: shown_of(&view),
            });
            let again = c.decide(req::decide(r.token.clone()).stand(decided[0])).await;
            r.said.push(refused("Decide of a seat that decided", again).await);
        }
    }
    r
}

#[tokio::test]
async fn no_output_before_settle_reveals_a_face_down_card_or_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("reddog.log");
    let trail_path = dir.path().join("audit.jsonl");
    let ring =
        format!(r#"{{"primary":"r1","keys":{{"r1":"{TOKEN_KEY}"}},"signing":{{"id":"s1","secret":"{SECRET}"}}}}"#);
    let server = ServerProcess::spawn(
        &[
            ("REDDOG_KEY_RING", ring.as_str()),
            ("RUST_LOG", "trace"),
            ("REDDOG_LOG_FORMAT", "json"),
            ("REDDOG_AUDIT_LOG", trail_path.to_str().unwrap()),
        ],
        Stdio::from(std::fs::File::create(&log_path).unwrap()),
    );
    let clock = std::time::Instant::now();
    let plan: Vec<usize> = std::iter::repeat_n(2, 200).chain((1..=7).flat_map(|s| std::iter::repeat_n(s, 5))).collect();
    // Four players side by side (each its own connection and choices), in the plan's order.
    const PLAYERS: usize = 4;
    let mut tasks = tokio::task::JoinSet::new();
    for p in 0..PLAYERS {
        let mine: Vec<(u64, usize)> =
            plan.iter().enumerate().skip(p).step_by(PLAYERS).map(|(n, &s)| (n as u64, s)).collect();
        let addr = server.addr;
        tasks.spawn(async move {
            let mut c = connect(addr).await;
            let mut choose = Choices(42 + p as u64);
            let mut out = Vec::new();
            for (nonce, seats) in mine {
                out.push(play(&mut c, nonce, seats, &mut choose).await);
            }
            out
        });
    }
    let mut rounds: Vec<Round> = tasks.join_all().await.into_iter().flatten().collect();
    rounds.sort_by_key(|r| r.nonce);
    let mut c = connect(server.addr).await;
    // Everything said before the first Settle: the trail once the last round's records are
    // out (written in batches), the log, /metrics.
    let last = rounds.last().unwrap().round_id.clone();
    eventually(Duration::from_secs(20), "the last round's records in the trail", || {
        std::fs::read_to_string(&trail_path).unwrap_or_default().contains(&format!("\"{last}\""))
    })
    .await;
    let metrics = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut conn = tokio::net::TcpStream::connect(server.metrics).await.unwrap();
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await.unwrap();
        let mut body = String::new();
        conn.read_to_string(&mut body).await.unwrap();
        body
    };
    let played = clock.elapsed();
    let log = std::fs::read_to_string(&log_path).unwrap();
    let trail = std::fs::read_to_string(&trail_path).unwrap();

    // Now settle every round and learn what was hidden.
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut searched = 0usize;
    let mut all_secrets: Vec<String> = Vec::new();
    assert_eq!(hex64_runs(&format!("x{}y", "ab".repeat(33))).len(), 3, "every 64-digit window of a longer run");
    assert_eq!(card_tokens("[\"7h\",\"Td\"] a7h 7hx"), vec!["7h", "Td"]);
    for r in &rounds {
        let settled = c.settle(req::settle(r.token.clone())).await.unwrap();
        let reveal: RevealV2 = serde_json::from_str(&settled.reveal_json).unwrap();
        let seed_bytes: [u8; 32] = hex::decode(&reveal.server_seed).unwrap().try_into().unwrap();
        let seed = ServerSeed::from_bytes(seed_bytes);
        let inputs =
            DealInputs { server_seed: &seed, client_seed: r.client_seed.as_bytes(), nonce: r.nonce, decks: Decks::ONE };
        let dealt = FairShoe::deal(&inputs, 3);
        let cards: [Card; 3] = [dealt[0], dealt[1], dealt[2]];
        let class = HandClass::of(cards[0], cards[1]);
        *classes.entry(class.name()).or_default() += 1;
        let commitment: [u8; 32] = hex::decode(&reveal.commitment).unwrap().try_into().unwrap();
        let t0 = {
            let said = &r.said[0].text;
            let at = said.find("transcript: \"").unwrap() + "transcript: \"".len();
            <[u8; 32]>::try_from(hex::decode(&said[at..at + 64]).unwrap()).unwrap()
        };
        let hashes = leak_hashes(&cards, &commitment, &r.round_id, &t0);
        let (seed_hex, seed_upper) = (reveal.server_seed.clone(), reveal.server_seed.to_uppercase());
        // The face-down card: a non-consecutive hand's third until turned, a consecutive
        // hand's position 2 always; a pair's third is dealt face up.
        let hidden = match class {
            HandClass::Pair => None,
            _ => Some(cards[2].to_string()),
        };
        for s in &r.said {
            searched += 1;
            let ctx = format!("round {} ({class:?}), {}: {}", r.round_id, s.what, s.text);
            assert!(!s.text.contains(&seed_hex) && !s.text.contains(&seed_upper), "seed in {ctx}");
            for h in &hashes {
                assert!(!s.text.contains(h.as_str()), "a hash of the cards in {ctx}");
            }
            if let Some(card) = &hidden {
                assert!(!holds_card(&s.text, card), "the face-down {card} in {ctx}");
                assert!(!s.shown.contains(card), "the round view shows {card}: {ctx}");
            }
            if let Some((json, signature)) = &s.receipt {
                let (claim, sig) = parse_step_receipt(json).unwrap();
                let listed: Vec<String> = claim.cards.iter().map(|c| c.to_string()).collect();
                assert_eq!(listed, s.shown, "the receipt names exactly the cards shown: {ctx}");
                assert_eq!(hex::encode(sig), *signature);
                let public: [u8; 32] = hex::decode(PUBLIC).unwrap().try_into().unwrap();
                assert!(verify_message(&public, &sig, &claim.message()), "the signature covers what is shown: {ctx}");
            }
        }
        // A round token's visible bytes are its header (version, kind, key id); the rest is a
        // keyed PRF's nonce and AES-256-GCM-SIV ciphertext. Neither holds the seed.
        for token in &r.tokens {
            assert_eq!(&token[..5], b"\x02r\x02r1", "the header of a token of {}", r.round_id);
            assert!(!token.windows(32).any(|w| w == seed_bytes), "seed bytes in a token of {}", r.round_id);
            assert!(!String::from_utf8_lossy(token).contains(&seed_hex), "seed hex in a token of {}", r.round_id);
        }
        // The round's audit records before Settle.
        for line in trail.lines().filter(|l| l.contains(&format!("\"{}\"", r.round_id))) {
            searched += 1;
            assert!(!line.contains(&seed_hex), "seed in the trail: {line}");
            for h in &hashes {
                assert!(!line.contains(h.as_str()), "a hash of the cards in the trail: {line}");
            }
            if let Some(card) = &hidden {
                assert!(!holds_card(line, card), "the face-down {card} in the trail: {line}");
            }
        }
        all_secrets.push(seed_hex);
        all_secrets.extend(hashes);
        let _ = r.turned;
    }
    // The log before the first Settle: no card at all, no seed, no hash of any round.
    let log_lines: Vec<&str> = log.lines().collect();
    assert!(log_lines.len() > 1000 && log.contains("\"TRACE\""), "trace-level lines were written: {}", log_lines.len());
    let secrets: std::collections::HashSet<String> = all_secrets.into_iter().collect();
    for line in &log_lines {
        let cards = card_tokens(line);
        assert!(cards.is_empty(), "a card ({cards:?}) in a log line before Settle: {line}");
        for run in hex64_runs(line) {
            assert!(!secrets.contains(&run), "seed or card hash in a log line: {line}");
        }
    }
    // /metrics before the first Settle: nothing settled is counted, no card in a label.
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let series = line.split(' ').next().unwrap_or("");
        assert!(card_tokens(series).is_empty(), "a card in a metric label: {line}");
        if ["reddog_rounds_settled_total", "reddog_seats_settled_total", "reddog_returned_minor_units_total"]
            .iter()
            .any(|m| series.starts_with(m))
        {
            assert!(line.ends_with(" 0"), "settlement counted before Settle: {line}");
        }
    }
    // Every hand class and every seat count was played.
    assert_eq!(rounds.len(), 235);
    for class in ["pair", "consecutive", "non_consecutive"] {
        assert!(classes.get(class).copied().unwrap_or(0) > 0, "no {class} in {classes:?}");
    }
    let turned = rounds.iter().filter(|r| r.turned).count();
    let partial = rounds.iter().filter(|r| !r.turned && r.said.len() > 2).count();
    assert!(turned > 0 && partial > 0, "{turned} rounds fully decided, {partial} left partial");
    println!(
        "hidden-until-shown: {} rounds {classes:?}, {searched} outputs and records searched, {} log lines, {turned} turned by \
         the last Decide, {partial} partial; played in {played:.0?}, all in {:.0?}",
        rounds.len(),
        log_lines.len(),
        clock.elapsed()
    );
    drop(c);
    assert!(server.terminate().await.success());
}
