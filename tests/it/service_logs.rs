//! With logs at the most verbose level, no server seed appears in the logs or the audit
//! trail before its reveal (nor after: the engine never logs or records seeds).

use std::time::Duration;

use crate::common::*;
use reddog::fairness::RevealV2;

#[tokio::test]
async fn no_server_seed_appears_in_trace_logs_before_its_reveal() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("reddog.log");
    let trail_path = dir.path().join("audit.jsonl");
    let log = std::fs::File::create(&log_path).unwrap();
    let ring = ring_a();
    for format in ["text", "json"] {
        let log = log.try_clone().unwrap();
        let server = ServerProcess::spawn(
            &[
                ("REDDOG_KEY_RING", ring.as_str()),
                ("RUST_LOG", "trace"),
                ("REDDOG_LOG_FORMAT", format),
                ("REDDOG_AUDIT_LOG", trail_path.to_str().unwrap()),
            ],
            std::process::Stdio::from(log),
        );
        let mut c = connect(server.addr).await;
        let mut seen = Vec::new();
        for i in 0..8u64 {
            let committed = c.commit_seed(req::commit_seed().nonce(i)).await.unwrap();
            let committed_hex = committed.commitment.clone();
            let started =
                c.start_round(req::start_round(committed.commitment_token).nonce(i).bets(&[500, 1000])).await.unwrap();
            let mut token = started.round_token;
            if started.round.unwrap().awaiting_decisions {
                token = c.decide(req::decide(token).raise(0).stand(1)).await.unwrap().round_token;
            }
            // The trail is written in batches (at most `log_writer::FLUSH_EVERY` later):
            // wait, bounded, until this round's `round_started` record is out.
            eventually(Duration::from_secs(10), "the round_started record in the trail", || {
                let trail = std::fs::read(&trail_path).unwrap_or_default();
                String::from_utf8_lossy(&trail)
                    .lines()
                    .any(|l| l.contains(&committed_hex) && l.contains("round_started"))
            })
            .await;
            let mut before_reveal = std::fs::read(&log_path).unwrap();
            before_reveal.extend_from_slice(&std::fs::read(&trail_path).unwrap());
            let settle = c.settle(req::settle(token)).await;
            let reveal: RevealV2 = serde_json::from_str(&settle.unwrap().reveal_json).unwrap();
            let text = String::from_utf8_lossy(&before_reveal).to_lowercase();
            assert!(text.contains(&reveal.commitment), "the audit trail records the round's commitment");
            assert!(!text.contains(&reveal.server_seed), "server seed logged before its reveal");
            seen.push(reveal.server_seed);
        }
        drop(c);
        let status = server.terminate().await;
        assert!(status.success());
        let mut both = std::fs::read(&log_path).unwrap();
        both.extend_from_slice(&std::fs::read(&trail_path).unwrap());
        let all = String::from_utf8_lossy(&both).to_lowercase();
        assert!(all.contains("trace"), "trace-level events were written");
        for seed in &seen {
            assert!(!all.contains(seed.as_str()), "server seed logged at all");
            // Nor as a decimal byte list (a derived Debug of the raw bytes).
            let bytes = hex::decode(seed).unwrap();
            let listed = format!("{}, {}, {}, {}", bytes[0], bytes[1], bytes[2], bytes[3]);
            assert!(!all.contains(&listed) || bytes[..4].iter().all(|&b| b < 10), "seed bytes logged");
        }
    }
}
