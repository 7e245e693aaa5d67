//! The fuzz targets under stable `cargo test`: every input of the committed corpus
//! (`fuzz/corpus/<target>/`) and of the regression inputs (`fuzz/regressions/<target>/`, inputs
//! that once broke a property) goes through the same target bodies the fuzzer runs
//! (`fuzz/harness.rs`), plus a fixed set of pseudo-random inputs. No nightly needed; the
//! fuzzing itself is `scripts/fuzz.sh`.

#[path = "../../fuzz/harness.rs"]
mod harness;

use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut out = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_file() {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Deterministic pseudo-random inputs (xorshift64*), 1 to 600 bytes.
fn random_inputs(count: usize, salt: u64) -> Vec<Vec<u8>> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ salt;
    let mut next = move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    (0..count).map(|_| (0..1 + next() % 600).map(|_| next() as u8).collect()).collect()
}

fn replay(target: &str, body: fn(&[u8]), min_corpus: usize) {
    let corpus = inputs(target);
    assert!(
        corpus.len() >= min_corpus,
        "fuzz/corpus/{target}/ holds {} inputs, expected at least {min_corpus}",
        corpus.len()
    );
    for (name, data) in &corpus {
        let result = std::panic::catch_unwind(|| body(data));
        assert!(result.is_ok(), "{target}: {name} breaks a property (see the panic above)");
    }
    for data in random_inputs(300, target.len() as u64) {
        body(&data);
    }
    eprintln!("{target}: {} corpus inputs + 300 pseudo-random inputs", corpus.len());
}

#[test]
fn tokens_corpus() {
    replay("tokens", harness::tokens, 3);
}

#[test]
fn requests_corpus() {
    replay("requests", harness::requests, 5);
}

#[test]
fn round_corpus() {
    replay("round", harness::round, 3);
}

/// The harness itself can fail: a token changed after sealing must be caught.
#[test]
fn harness_catches_a_broken_property() {
    let ring = &harness::engines()[0].ring;
    let m = harness::Model {
        seed: [1; 32],
        client_seed: "c".into(),
        nonce: 0,
        round_id: "r".into(),
        bets: vec![500],
        decided: vec![None],
        awaiting: false,
        step: 0,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        harness::assert_round_token_opens(ring, b"\x01r\x02f1 not a token at all, not even close")
    }));
    assert!(result.is_err(), "a forged token passed assert_round_token_opens");
    let forged = reddog::service::proto::SettleResponse { round_id: "r".into(), ..Default::default() };
    assert!(std::panic::catch_unwind(|| harness::assert_settlement(&m, &forged)).is_err());
}
