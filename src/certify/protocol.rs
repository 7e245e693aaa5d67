//! The fair-play protocol section: the commit–reveal scheme in one paragraph, the project's
//! test vectors (embedded in the binary at build time) run through the built-in verifier, and
//! a live self-test: the real gRPC service, built in-process exactly as `reddog serve` builds
//! it, on `127.0.0.1:0`, plays rounds at every table through a generated tonic client, and
//! every reveal is checked by the built-in verifier against what the player was shown.

use serde::Serialize;
use serde_json::Value;

use crate::fairness::{
    DealInputs, Expectations, FairShoe, ServerSeed, SignedEvidence, Verification, derive_key, parse_reveal,
    parse_trusted_keys, receipt,
};
use crate::game::{Decks, Spread};
use crate::odds::Policy;
use crate::service::proto::red_dog_client::RedDogClient;
use crate::service::proto::{self, Action, Limits, SeatBet};
use crate::service::rules::tables::Tables;
use crate::service::{Application, KeyRingSource, Settings};

/// The scheme, as the report states it.
pub const SCHEME: &str = "Before a round the engine draws a 32-byte server seed from the operating system and shows \
only its commitment, SHA-256(seed), bound to the round id, nonce, table and rules. The player supplies a client \
seed. The deal is a pure function of (server seed, client seed, nonce, deck count, algorithm version): an HMAC-SHA256 \
key over those inputs drives a ChaCha20 word stream, unbiased rejection sampling and a forward Fisher-Yates shuffle \
(docs/FAIRNESS.md section 3). After settlement the reveal discloses the seed, the cards, every decision and every \
seat's money, chained into a transcript hash; any verifier (`reddog verify`, verify/verify.py, the browser's) \
recomputes the commitment, the cards, the money and the transcript and compares them with what the player was shown.";

const DEAL_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/deal-v1.json"));
const REVEAL_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reveal-v2.json"));
const NEGATIVE_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reveal-negative.json"));
const REVEAL_V3_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/reveal-v3.json"));
const RECEIPT_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/receipt-v1.json"));
const RECEIPT_V2_VECTORS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/receipt-v2.json"));

/// One vector file's result.
#[derive(Clone, Debug, Serialize)]
pub struct VectorFile {
    pub file: String,
    pub sha256: String,
    pub cases: usize,
    pub passed: usize,
    /// Names of the cases that did not give their expected result.
    pub failures: Vec<String>,
}

/// The live self-test's result.
#[derive(Clone, Debug, Serialize)]
pub struct SelfTest {
    pub rounds: u64,
    pub verified: u64,
    /// Rounds per table id.
    pub per_table: Vec<(String, u64)>,
    pub failures: Vec<String>,
    pub method: String,
}

/// The whole section.
#[derive(Clone, Debug, Serialize)]
pub struct Protocol {
    pub scheme: String,
    pub vectors: Vec<VectorFile>,
    pub self_test: SelfTest,
}

impl Protocol {
    /// Whether every vector gave its verdict.
    pub fn vectors_passed(&self) -> bool {
        self.vectors.iter().all(|v| v.cases > 0 && v.passed == v.cases)
    }

    /// Whether every live round verified.
    pub fn self_test_passed(&self) -> bool {
        self.self_test.rounds > 0 && self.self_test.verified == self.self_test.rounds
    }
}

fn file_result(file: &str, text: &str, check: impl Fn(&Value) -> Result<(), String>) -> VectorFile {
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let cases = doc["cases"].as_array().cloned().unwrap_or_default();
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = check(case) {
            failures.push(format!("{}: {why}", case["name"].as_str().unwrap_or("?")));
        }
    }
    VectorFile {
        file: file.to_string(),
        sha256: super::identity::sha256_hex(text.as_bytes()),
        cases: cases.len(),
        passed: cases.len() - failures.len(),
        failures,
    }
}

fn deal_case(case: &Value) -> Result<(), String> {
    let s = |k: &str| case[k].as_str().ok_or_else(|| format!("no {k}"));
    let seed: [u8; 32] = hex::decode(s("server_seed")?)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("server_seed is not 64 hex digits")?;
    let seed = ServerSeed::from_bytes(seed);
    let client = hex::decode(s("client_seed_hex")?).map_err(|e| e.to_string())?;
    let nonce = case["nonce"].as_u64().ok_or("no nonce")?;
    let decks = Decks::new(case["decks"].as_u64().unwrap_or(0) as u32).map_err(|e| e.to_string())?;
    let inputs = DealInputs { server_seed: &seed, client_seed: &client, nonce, decks };
    if seed.commitment().to_hex() != s("commitment")? {
        return Err("commitment differs".into());
    }
    if hex::encode(derive_key(&inputs)) != s("key")? {
        return Err("derived key differs".into());
    }
    let want: Vec<&str> = case["cards"].as_array().ok_or("no cards")?.iter().filter_map(Value::as_str).collect();
    let got: Vec<String> = FairShoe::deal(&inputs, want.len()).iter().map(ToString::to_string).collect();
    if got != want {
        return Err(format!("cards {got:?}, the vector says {want:?}"));
    }
    Ok(())
}

fn reveal_case(case: &Value) -> Result<(), String> {
    let text = case["reveal"].as_str().ok_or("no reveal")?;
    let expect = match case.get("expect") {
        Some(e) => Expectations::parse(&e.to_string()).map_err(|e| e.to_string())?,
        None => Expectations::default(),
    };
    let verdict = match parse_reveal(text).and_then(|r| Ok((r.verify()?, r))) {
        Err(_) => "malformed",
        Ok((v, r)) if v.ok() && expect.check(&r).is_empty() => "verified",
        Ok(_) => "not_verified",
    };
    if case["verdict"] == verdict { Ok(()) } else { Err(format!("{verdict}, the vector says {}", case["verdict"])) }
}

/// A signed-receipt case (`tests/vectors/receipt-v*.json`): the reveal with its public key,
/// Settle signature, key id, receipts and trusted keys checked as `reddog verify` checks them
/// (the one [`Verification`]); a reveal or receipt that does not parse is malformed.
fn receipt_case(case: &Value) -> Result<(), String> {
    let text = case["reveal"].as_str().ok_or("no reveal")?;
    let public_key: [u8; 32] = case["public_key"]
        .as_str()
        .and_then(|h| hex::decode(h).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or("no public_key")?;
    let settle_signature = match case["signature"].as_str().unwrap_or("") {
        "" => None,
        h => Some(hex::decode(h).ok().and_then(|b| b.try_into().ok()).ok_or("signature: not 128 hex digits")?),
    };
    let receipts: Result<Vec<(String, receipt::PlayerReceipt)>, String> = case["receipts"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, t)| receipt::PlayerReceipt::parse(t).map(|r| (format!("receipt {i}"), r)))
        .collect();
    let trusted = match &case["trusted_keys"] {
        Value::Null => None,
        list => Some(parse_trusted_keys(&list.to_string())?),
    };
    let verdict = match receipts {
        Err(_) => "malformed",
        Ok(receipts) => {
            let evidence = SignedEvidence {
                public_key,
                key_id: case["key_id"].as_str().filter(|k| !k.is_empty()).map(str::to_string),
                settle_signature,
                receipts,
                trusted,
                allow_untrusted: case["allow_untrusted"].as_bool().unwrap_or(false),
            };
            match Verification::check(text, &Expectations::default(), Some(&evidence)) {
                Err(_) => "malformed",
                Ok(v) if v.verified() => "verified",
                Ok(_) => "not_verified",
            }
        }
    };
    if case["verdict"] == verdict { Ok(()) } else { Err(format!("{verdict}, the vector says {}", case["verdict"])) }
}

/// The receipt file's CommitSeed vector: the message built from its fields (version 1 or 2,
/// as the file's `receipt_version` says) is the vector's bytes, and its signature verifies
/// with the file's public key.
fn commit_receipt(doc: &Value) -> Result<(), String> {
    let c = &doc["commit"];
    let s = |k: &str| c[k].as_str().ok_or_else(|| format!("commit.{k} missing"));
    let n = |k: &str| c[k].as_i64().ok_or_else(|| format!("commit.{k} is not an integer"));
    let raw32 = |v: &str| -> Result<[u8; 32], String> {
        hex::decode(v).ok().and_then(|b| b.try_into().ok()).ok_or_else(|| format!("{v:?} is not 64 hex digits"))
    };
    let (commitment, rules_digest, key) = (
        raw32(s("commitment")?)?,
        raw32(s("rules_digest")?)?,
        raw32(doc["public_key"].as_str().ok_or("no public_key")?)?,
    );
    let signature: [u8; 64] = hex::decode(s("signature")?)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("commit.signature: not 128 hex digits")?;
    let r = receipt::CommitReceipt {
        key_id: doc["key_id"].as_str().ok_or("no key_id")?,
        commitment: &commitment,
        round_id: s("round_id")?,
        nonce: u64::try_from(n("nonce")?).map_err(|e| e.to_string())?,
        table_id: s("table_id")?,
        decks: u8::try_from(n("decks")?).map_err(|e| e.to_string())?,
        rules_digest: &rules_digest,
        expires_at_unix_ms: n("expires_at_unix_ms")?,
        algorithm: s("algorithm")?,
        sandbox: c["sandbox"].as_bool().ok_or("commit.sandbox is not a boolean")?,
    };
    let message = if doc["receipt_version"] == 1 { r.message_v1() } else { r.message() };
    if hex::encode(&message) != s("message_hex")? {
        return Err("the CommitSeed message differs from the vector's bytes".into());
    }
    if !receipt::verify_message(&key, &signature, &message) {
        return Err("the CommitSeed signature does not verify".into());
    }
    Ok(())
}

/// A receipt vector file: its cases, and its CommitSeed message counted as one more case.
fn receipt_file(file: &str, text: &str) -> VectorFile {
    let mut receipts = file_result(file, text, receipt_case);
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    receipts.cases += 1;
    match commit_receipt(&doc) {
        Ok(()) => receipts.passed += 1,
        Err(why) => receipts.failures.push(format!("commit: {why}")),
    }
    receipts
}

/// Runs the embedded vectors through the built-in verifier.
pub fn vectors() -> Vec<VectorFile> {
    vec![
        file_result("tests/vectors/deal-v1.json", DEAL_VECTORS, deal_case),
        file_result("tests/vectors/reveal-v2.json", REVEAL_VECTORS, reveal_case),
        file_result("tests/vectors/reveal-v3.json", REVEAL_V3_VECTORS, reveal_case),
        file_result("tests/vectors/reveal-negative.json", NEGATIVE_VECTORS, reveal_case),
        receipt_file("tests/vectors/receipt-v1.json", RECEIPT_VECTORS),
        receipt_file("tests/vectors/receipt-v2.json", RECEIPT_V2_VECTORS),
    ]
}

/// How the self-test plays, as stated in the report.
pub const SELF_TEST_METHOD: &str = "The gRPC service built by Application::build (as `reddog serve` builds it) with \
these tables and a fresh development key ring, on 127.0.0.1:0, in this process; a tonic client plays each round: \
CommitSeed, StartRound (1 to 3 seats at the table minimum), Decide by the optimal raise rule when the hand is \
non-consecutive, Settle. Each reveal must verify with the built-in verifier and match what the client was shown: \
the commitment, client seed, nonce, round id, table, deck count, the first two cards and each seat's returned amount. \
At a sandbox table (served with --allow-sandbox, as only a test engine is) every round must instead show itself a \
sandbox round and its reveal must be refused by the verifier as one: a sandbox table is certified as a sandbox, \
never as fair.";

/// Plays `rounds_per_table` rounds at every table through the in-process service.
pub fn self_test(tables: &Tables, rounds_per_table: u64, progress: &(dyn Fn(u64) + Sync)) -> SelfTest {
    let mut out = SelfTest {
        rounds: 0,
        verified: 0,
        per_table: Vec::new(),
        failures: Vec::new(),
        method: SELF_TEST_METHOD.to_string(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            out.failures.push(format!("cannot start a runtime: {e}"));
            return out;
        }
    };
    runtime.block_on(async {
        let mut settings = Settings::local(KeyRingSource::Development);
        settings.tables = Some(tables.clone());
        settings.allow_sandbox = tables.iter().any(|t| t.sandbox);
        let app = match Application::build(settings).await {
            Ok(a) => a,
            Err(e) => {
                out.failures.push(format!("the service did not start: {e}"));
                return;
            }
        };
        let addr = app.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run(async {
            let _ = stopped.await;
        }));
        match RedDogClient::connect(format!("http://{addr}")).await {
            Ok(mut client) => {
                for named in tables.iter() {
                    let mut played = 0;
                    for i in 0..rounds_per_table {
                        out.rounds += 1;
                        played += 1;
                        match play(&mut client, named, i).await {
                            Ok(()) => out.verified += 1,
                            Err(why) => out.failures.push(format!("table {} round {i}: {why}", named.id)),
                        }
                        progress(1);
                    }
                    out.per_table.push((named.id.clone(), played));
                }
            }
            Err(e) => out.failures.push(format!("cannot connect to {addr}: {e}")),
        }
        let _ = stop.send(());
        match tokio::time::timeout(std::time::Duration::from_secs(30), server).await {
            Ok(Ok(Ok(()))) => {}
            other => out.failures.push(format!("the service did not stop cleanly: {other:?}")),
        }
    });
    out
}

/// A round at a sandbox table: shown as a sandbox round, its reveal in the sandbox format and
/// refused by the verifier.
fn sandbox_round(view: &proto::RoundView, reveal_json: &str) -> Result<(), String> {
    if !view.sandbox {
        return Err("a round at a sandbox table is not marked sandbox".into());
    }
    let format = serde_json::from_str::<Value>(reveal_json).ok().and_then(|v| v["format"].as_str().map(String::from));
    if format.as_deref() != Some(crate::fairness::SANDBOX_REVEAL_FORMAT) {
        return Err(format!("a sandbox round's reveal has format {format:?}"));
    }
    match parse_reveal(reveal_json) {
        Err(e) if e.to_string().contains(crate::fairness::SANDBOX_REVEAL_FORMAT) => Ok(()),
        Err(e) => Err(format!("a sandbox reveal refused for another reason: {e}")),
        Ok(_) => Err("the verifier accepted a sandbox round's reveal as a fair round".into()),
    }
}

async fn play(
    client: &mut RedDogClient<tonic::transport::Channel>,
    named: &crate::service::rules::tables::NamedTable,
    i: u64,
) -> Result<(), String> {
    let err = |what: &str, s: tonic::Status| format!("{what}: {} {}", s.code(), s.message());
    let round_id = format!("certify-{}-{i}", named.id);
    let nonce = 1_000 + i;
    let client_seed = format!("certify self-test {i}");
    let commit = client
        .commit_seed(proto::CommitSeedRequest { round_id: round_id.clone(), nonce, table_id: named.id.clone() })
        .await
        .map_err(|s| err("CommitSeed", s))?
        .into_inner();
    let limits = named.table.limits();
    let seats = 1 + (i % 3) as usize;
    let started = client
        .start_round(proto::StartRoundRequest {
            sandbox_cards: vec![],
            commitment_token: commit.commitment_token,
            client_seed: client_seed.clone(),
            nonce,
            round_id: round_id.clone(),
            seats: vec![SeatBet { bet: limits.min().minor() }; seats],
            player_limits: Some(Limits { min_bet: limits.min().minor(), max_bet: limits.max().minor() }),
            table_id: named.id.clone(),
        })
        .await
        .map_err(|s| err("StartRound", s))?
        .into_inner();
    let view = started.round.ok_or("StartRound returned no round")?;
    let shown: Vec<String> =
        [&view.first_card, &view.second_card].iter().filter_map(|c| c.as_ref().map(|c| c.code.clone())).collect();
    let mut token = started.round_token;
    let mut last_transcript = started.transcript;
    if view.awaiting_decisions {
        let raise = Policy::Optimal.raise_set(named.table.decks(), named.table.paytable());
        let spread = u8::try_from(view.spread)
            .ok()
            .and_then(Spread::new)
            .ok_or("StartRound returned a spread outside 1..=11")?;
        let action = if raise.raises(spread) { Action::Raise } else { Action::Stand };
        let decided = client
            .decide(proto::DecideRequest {
                round_token: token,
                decisions: (0..seats as u32).map(|seat| proto::SeatDecision { seat, action: action as i32 }).collect(),
                round_id: round_id.clone(),
            })
            .await
            .map_err(|s| err("Decide", s))?
            .into_inner();
        token = decided.round_token;
        last_transcript = decided.transcript;
    }
    let settled = client
        .settle(proto::SettleRequest { round_token: token, round_id: round_id.clone() })
        .await
        .map_err(|s| err("Settle", s))?
        .into_inner();
    if named.sandbox {
        return sandbox_round(&view, &settled.reveal_json);
    }
    let reveal = parse_reveal(&settled.reveal_json).map_err(|e| format!("reveal is malformed: {e}"))?;
    let verdict = reveal.verify().map_err(|e| format!("reveal does not verify: {e}"))?;
    if !verdict.ok() {
        return Err(format!("reveal does not verify: {verdict:?}"));
    }
    let expect = Expectations {
        commitment: Some(commit.commitment),
        client_seed: Some(client_seed),
        nonce: Some(nonce),
        round_id: Some(round_id),
        table_id: Some(named.id.clone()),
        decks: Some(named.table.decks().get()),
        transcript: Some(last_transcript),
        rules_digest: Some(commit.rules_digest),
        bets: Some(vec![limits.min().minor(); seats]),
        returned: Some(settled.results.iter().map(|s| s.returned).collect()),
        decisions: None,
    };
    let mismatches = expect.check(&reveal);
    if !mismatches.is_empty() {
        return Err(format!("reveal differs from what was shown: {mismatches:?}"));
    }
    let crate::fairness::AnyReveal::V2(r) = reveal else { return Err("Settle returned a version-1 reveal".into()) };
    if r.cards.get(..2) != Some(&shown[..]) {
        return Err(format!("revealed cards {:?}, shown {shown:?}", r.cards));
    }
    let returned: Vec<u64> = settled.results.iter().map(|s| s.returned).collect();
    let revealed: Vec<u64> = r.seats.iter().map(|s| s.returned).collect();
    if returned != revealed {
        return Err(format!("Settle credited {returned:?}, the reveal says {revealed:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signed-receipt vectors — settle, step and CommitSeed cases, trusted keys, leaked
    /// cards, sandbox rounds, small-order keys — run through the one verdict and are counted.
    #[test]
    fn certification_runs_and_counts_every_signed_receipt_vector() {
        let files = vectors();
        for name in ["tests/vectors/receipt-v1.json", "tests/vectors/receipt-v2.json"] {
            let f = files.iter().find(|f| f.file == name).expect(name);
            assert!(f.failures.is_empty(), "{name}: {:?}", f.failures);
            assert_eq!(f.passed, f.cases, "{name}");
        }
        let v2 = files.iter().find(|f| f.file.ends_with("receipt-v2.json")).unwrap();
        let doc: Value = serde_json::from_str(RECEIPT_V2_VECTORS).unwrap();
        let steps = doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"].as_str().unwrap().starts_with("step/"))
            .count();
        assert!(steps >= 10, "{steps} step-receipt cases");
        assert_eq!(v2.cases, doc["cases"].as_array().unwrap().len() + 1, "every case and the CommitSeed message");
    }
}
