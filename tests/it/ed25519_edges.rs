//! The Ed25519 edge vectors of C2SP/CCTV (914) and ed25519-speccheck (12) against the one
//! strict rule (`reddog::fairness::receipt::verify_message`, what `reddog verify`, the
//! engine's audit-log checkpoint check and certification call): each vector gets the verdict
//! `tests/vectors/ed25519/README.md` states, and the counts are asserted so a file that
//! shrinks fails too.

use std::path::PathBuf;

use reddog::fairness::receipt::verify_message;

fn vectors(name: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/ed25519").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn bytes<const N: usize>(h: &str) -> Option<[u8; N]> {
    hex::decode(h).ok()?.try_into().ok()
}

/// The strict verdict of a CCTV vector by its flags: only mixed-order points may pass.
fn cctv_strict_verdict(flags: &serde_json::Value) -> bool {
    flags
        .as_array()
        .is_none_or(|f| f.iter().all(|x| matches!(x.as_str(), Some("low_order_component_A" | "low_order_component_R"))))
}

#[test]
fn every_cctv_edge_vector_gets_the_strict_verdict() {
    let doc = vectors("cctv-ed25519vectors.json");
    let (mut accepted, mut refused) = (0, 0);
    for v in doc.as_array().unwrap() {
        let key: [u8; 32] = bytes(v["key"].as_str().unwrap()).unwrap();
        let sig: [u8; 64] = bytes(v["sig"].as_str().unwrap()).unwrap();
        let want = cctv_strict_verdict(&v["flags"]);
        let got = verify_message(&key, &sig, v["msg"].as_str().unwrap().as_bytes());
        assert_eq!(got, want, "vector {} flags {}", v["number"], v["flags"]);
        if got { accepted += 1 } else { refused += 1 }
    }
    assert_eq!(accepted + refused, 914);
    assert!(accepted > 0 && refused > 0, "{accepted} accepted, {refused} refused");
}

#[test]
fn of_the_speccheck_cases_only_case_3_verifies() {
    let doc = vectors("speccheck-cases.json");
    let cases = doc.as_array().unwrap();
    assert_eq!(cases.len(), 12);
    for (i, c) in cases.iter().enumerate() {
        let key: [u8; 32] = bytes(c["pub_key"].as_str().unwrap()).unwrap();
        let sig: [u8; 64] = bytes(c["signature"].as_str().unwrap()).unwrap();
        let message = hex::decode(c["message"].as_str().unwrap()).unwrap();
        assert_eq!(verify_message(&key, &sig, &message), i == 3, "case {i}");
    }
}
