//! Soak: many concurrent players play complete rounds (CommitSeed → StartRound → Decide in
//! one or two calls when asked → Settle) against one real `reddog serve` process, with a
//! ledger kept by the test (tests/it/fleet.rs): every round started is settled exactly once,
//! debits (bets + raises) equal the stakes settled, every return follows the rules, every
//! reveal verifies, and the server's own Prometheus counters (rounds, seats, stakes, returns,
//! errors, token rejections) equal the ledger's. The server's RSS is sampled (every 20 ms in
//! the short run, 250 ms in the long one) and must stay flat.
//!
//! - `soak_short` (part of `cargo test`): 300 rounds, 32 players, against the binary Cargo
//!   built; `scripts/ci.d/70-soak-faults.sh` runs it with 5 000 rounds against the release
//!   binary (`REDDOG_SOAK_SHORT_ROUNDS`, `REDDOG_TEST_BIN`).
//! - `soak_long` (ignored): the real release binary, 1 000 000 rounds by default, 64 players:
//!   `nice -n 19 cargo test --release --test it soak::soak_long -- --ignored --nocapture`
//!   (`REDDOG_SOAK_ROUNDS`, `REDDOG_SOAK_PLAYERS` change the size). Figures: RELIABILITY.md.

use std::time::Duration;

use crate::fleet::*;

struct Soak {
    rounds: u64,
    players: usize,
    /// How often the server's RSS is read: often enough for ≥ 8 samples in a short run.
    sample_every: Duration,
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn soak(cfg: Soak) {
    let ring = RingFile::new(
        r#"{"primary":"s1","keys":{"s1":"7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e"}}"#,
    );
    let replica = Replica::spawn("soak", &ring.path, &[], Logs::Discard);
    let pool = Pool::new();
    pool.add(&replica);
    pool.connect_all().await;
    let ledger = Ledger::new();
    let rss = RssSampler::start(replica.pid(), cfg.sample_every);
    let wall =
        run_load(pool.clone(), ledger.clone(), Load { players: cfg.players, rounds: cfg.rounds, keep_finals: false })
            .await;
    let peak = replica.peak_rss_kib().unwrap();
    let samples = rss.samples();
    drop(rss);

    // The ledger balances and the server's counters agree with it exactly.
    ledger.assert_balanced();
    let settled = ledger.settled.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(settled, cfg.rounds);
    let c = replica.scrape().await;
    let l = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(c.rounds_started, l(&ledger.started), "reddog_rounds_started_total");
    assert_eq!(c.seats_settled, l(&ledger.seats), "reddog_seats_settled_total");
    assert_eq!(c.staked, l(&ledger.staked), "reddog_staked_minor_units_total");
    assert_eq!(c.returned, l(&ledger.credited), "reddog_returned_minor_units_total");
    assert_eq!((c.rpc_errors, c.token_rejections), (0, 0), "no call failed, no token refused");
    assert_eq!(pool.retry_count(), 0, "no transport failure: {:?}", pool.retries.lock().unwrap());

    // RSS: flat after warm-up. Start = median of the samples in the 2nd tenth of the run,
    // end = median of the last tenth; the end may exceed the start by 10 % + 4 MiB at most.
    assert!(samples.len() >= 8, "too few RSS samples ({})", samples.len());
    let median = |from: f64, to: f64| {
        let n = samples.len() as f64;
        let mut v: Vec<u64> = samples[(n * from) as usize..((n * to) as usize).max((n * from) as usize + 1)]
            .iter()
            .map(|s| s.1)
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (first, start, end) = (samples[0].1, median(0.1, 0.2), median(0.9, 1.0));
    let secs = wall.as_secs_f64();
    eprintln!(
        "soak: {settled} rounds, {} players, {secs:.1} s, {:.0} rounds/s; seats {}, staked {}, returned {} \
         (RTP {:.4}); server RSS first {first} KiB, start {start} KiB, end {end} KiB, peak (VmHWM) {peak} KiB; \
         errors 0, retries 0; binary {}",
        cfg.players,
        settled as f64 / secs,
        c.seats_settled,
        c.staked,
        c.returned,
        c.returned as f64 / c.staked as f64,
        binary().display(),
    );
    assert!(end <= start + start / 10 + 4096, "RSS grew from {start} KiB to {end} KiB");
    drop(pool);
    let status = {
        let mut replica = replica;
        replica.sigterm();
        replica.wait_exit(Duration::from_secs(30)).await
    };
    assert!(status.success(), "exit after the soak: {status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_short() {
    soak(Soak {
        rounds: env_or("REDDOG_SOAK_SHORT_ROUNDS", 300),
        players: 32,
        sample_every: Duration::from_millis(20),
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 1 000 000 rounds; run with --ignored and REDDOG_TEST_BIN=target/release/reddog (docs/RELIABILITY.md, Soak)"]
async fn soak_long() {
    soak(Soak {
        rounds: env_or("REDDOG_SOAK_ROUNDS", 1_000_000),
        players: env_or("REDDOG_SOAK_PLAYERS", 64) as usize,
        sample_every: Duration::from_millis(250),
    })
    .await;
}
