//! Faults under load, against real `reddog serve` processes sharing a key ring
//! (tests/it/fleet.rs: many players, failover to the next replica on a transport failure, a
//! ledger that books every round once and checks every settlement and reveal):
//!
//! - `sigkill_during_load_loses_no_round`: two replicas; one is SIGKILLed a third of the
//!   way through; the players fail over; every round started is settled exactly once, rounds
//!   started on the killed replica finish on the survivor, and re-settling every round on the
//!   survivor gives the same amounts as the one settlement booked.
//! - `sigterm_under_load_drains`: two replicas; calls held in flight on one, then SIGTERM:
//!   it turns NOT_SERVING, the held calls complete OK after the signal, new calls go to the
//!   other replica, it exits 0 with the drain's log lines, and no round is lost.
//! - `key_rotation_under_load_loses_no_round`: the three-step rotation of
//!   docs/OPERATIONS.md rolled to two replicas one at a time while rounds are in flight —
//!   [a] → [a, b] → [b primary, a] → (once no round holds an `a` token) [b]; no call is
//!   refused, no token rejected, no round lost.
//!
//! Sizes: `REDDOG_FAULT_ROUNDS` (default 300 per test) and `REDDOG_FAULT_PLAYERS`
//! (default 16); the binary is `REDDOG_TEST_BIN` or the one Cargo built.
//! `scripts/ci.d/70-soak-faults.sh` runs them with 3 000 rounds against the release binary;
//! the longer runs of docs/RELIABILITY.md ("Faults") use
//! `REDDOG_FAULT_ROUNDS=30000 cargo test --release --test it faults:: -- --nocapture`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reddog::service::proto::{GetRulesRequest, GetRulesResponse};
use tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::fleet::*;

const KEY_A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const KEY_B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

fn ring(primary: &str, keys: &[(&str, &str)]) -> String {
    let keys: Vec<String> = keys
        .iter()
        .map(|(id, k)| format!("\"{id}\":\"{k}\""))
        .collect();
    format!(
        "{{\"primary\":\"{primary}\",\"keys\":{{{}}}}}",
        keys.join(",")
    )
}

fn size() -> Load {
    let get = |n: &str, d: u64| {
        std::env::var(n)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    Load {
        players: get("REDDOG_FAULT_PLAYERS", 16) as usize,
        rounds: get("REDDOG_FAULT_ROUNDS", 300),
        keep_finals: true,
    }
}

fn settled(ledger: &Ledger) -> u64 {
    ledger.settled.load(Ordering::Relaxed)
}

fn report(name: &str, load: &Load, ledger: &Ledger, pool: &Pool, wall: Duration, extra: &str) {
    let retries = pool.retries.lock().unwrap();
    let mut codes: Vec<String> = retries
        .iter()
        .map(|(r, c, _)| format!("{r}:{c:?}"))
        .collect();
    codes.sort();
    codes.dedup_by(|a, b| a == b);
    eprintln!(
        "{name}: {} rounds settled of {} started, {} players, {:.1} s; {} round(s) hopped replicas between \
         StartRound and Settle; {} call(s) failed over ({}); {extra}",
        settled(ledger),
        ledger.started.load(Ordering::Relaxed),
        load.players,
        wall.as_secs_f64(),
        ledger.hopped.load(Ordering::Relaxed),
        retries.len(),
        codes.join(" "),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_load_loses_no_round() {
    let load = size();
    let ring = RingFile::new(&ring("a", &[("a", KEY_A)]));
    let mut victim = Replica::spawn("victim", &ring.path, &[], Logs::Keep);
    let survivor = Replica::spawn("survivor", &ring.path, &[], Logs::Keep);
    let pool = Pool::new();
    pool.add(&victim);
    pool.add(&survivor);
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    wait_until(
        "a third of the rounds are settled",
        Duration::from_secs(120),
        || settled(&ledger) >= load.rounds / 3,
    )
    .await;
    let in_flight_at_kill = ledger.rounds_opened() - settled(&ledger);
    victim.sigkill();
    let killed_at = settled(&ledger);
    // The platform keeps calling the dead replica until it notices (here: until a call failed
    // over), then drops it from its pool.
    wait_until(
        "a call to the killed replica failed over",
        Duration::from_secs(30),
        || {
            pool.retries
                .lock()
                .unwrap()
                .iter()
                .any(|(r, _, _)| r == "victim")
        },
    )
    .await;
    pool.remove("victim");
    run.await.expect("the load finished");
    let wall = t0.elapsed();

    ledger.assert_balanced();
    assert_eq!(settled(&ledger), load.rounds);
    assert!(killed_at < load.rounds, "the kill happened during the load");
    let retries = pool.retries.lock().unwrap().clone();
    assert!(
        retries.iter().all(|(r, _, _)| r == "victim"),
        "only calls to the killed replica failed: {retries:?}"
    );
    let resettled = resettle_all(&pool, &ledger).await;
    assert_eq!(resettled as u64, load.rounds);
    let c = survivor.scrape().await;
    assert_eq!(
        (c.rpc_errors, c.token_rejections),
        (0, 0),
        "the survivor refused nothing"
    );
    report(
        "sigkill",
        &load,
        &ledger,
        &pool,
        wall,
        &format!(
            "killed with {in_flight_at_kill} round(s) in flight after {killed_at} settled; all {resettled} re-settled \
             identically on the survivor; survivor peak RSS {} KiB",
            survivor.peak_rss_kib().unwrap_or(0)
        ),
    );
}

/// A GetRules call whose request message is withheld until `release` sends it: the server
/// has accepted the stream and its handler waits.
fn held_call(
    ch: tonic::transport::Channel,
) -> (
    tokio::sync::mpsc::Sender<GetRulesRequest>,
    tokio::task::JoinHandle<Result<GetRulesResponse, tonic::Status>>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel::<GetRulesRequest>(1);
    let task = tokio::spawn(async move {
        let mut grpc = tonic::client::Grpc::new(ch);
        grpc.ready()
            .await
            .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
        let codec = tonic_prost::ProstCodec::<GetRulesRequest, GetRulesResponse>::default();
        let path = PathAndQuery::from_static("/reddog.v1.RedDog/GetRules");
        grpc.client_streaming(tonic::Request::new(ReceiverStream::new(rx)), path, codec)
            .await
            .map(tonic::Response::into_inner)
    });
    (tx, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_drains() {
    const HELD: usize = 4;
    let load = size();
    let ring = RingFile::new(&ring("a", &[("a", KEY_A)]));
    let mut draining = Replica::spawn(
        "draining",
        &ring.path,
        &["--drain-timeout-secs", "20"],
        Logs::Keep,
    );
    let other = Replica::spawn("other", &ring.path, &[], Logs::Keep);
    let pool = Pool::new();
    pool.add(&draining);
    pool.add(&other);
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    wait_until(
        "a third of the rounds are settled",
        Duration::from_secs(120),
        || settled(&ledger) >= load.rounds / 3,
    )
    .await;
    // Calls in flight on the replica about to drain, and a health watch on it.
    let ch = Endpoint::from_shared(format!("http://{}", draining.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut watch = HealthClient::new(ch.clone())
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::Serving
    );
    let held: Vec<_> = (0..HELD).map(|_| held_call(ch.clone())).collect();
    tokio::time::sleep(Duration::from_millis(300)).await; // the HEADERS reach the server
    assert!(
        held.iter().all(|(_, t)| !t.is_finished()),
        "a held call ended early"
    );

    draining.sigterm();
    let terminated = Instant::now();
    let settled_at_term = settled(&ledger);
    let update = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("NOT_SERVING within 5 s")
        .unwrap()
        .unwrap();
    assert_eq!(update.status(), ServingStatus::NotServing);
    drop(watch);
    // The load goes on meanwhile: new calls fail over to the other replica.
    wait_until(
        "more rounds settled after SIGTERM",
        Duration::from_secs(60),
        || settled(&ledger) >= (settled_at_term + 100).min(load.rounds),
    )
    .await;
    assert!(!draining.has_exited(), "exited with calls in flight");
    for (tx, task) in &held {
        assert!(
            !task.is_finished(),
            "an in-flight call was cut off by SIGTERM"
        );
        tx.send(GetRulesRequest::default())
            .await
            .expect("the held stream is still open");
    }
    let mut ok = 0;
    for (tx, task) in held {
        drop(tx);
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("held call done")
            .unwrap()
            .expect("an in-flight call failed during the drain");
        ok += 1;
    }
    drop(ch);
    pool.remove("draining");
    let status = draining.wait_exit(Duration::from_secs(25)).await;
    let drained_in = terminated.elapsed();
    assert!(status.success(), "exit after the drain: {status:?}");
    for line in ["SIGTERM received", "shutting down", "drained; stopped"] {
        assert!(
            draining.log_contains(line),
            "drain log line {line:?} missing: {:?}",
            draining.log.lock().unwrap()
        );
    }
    run.await.expect("the load finished");
    let wall = t0.elapsed();

    ledger.assert_balanced();
    assert_eq!(settled(&ledger), load.rounds);
    let retries = pool.retries.lock().unwrap().clone();
    assert!(
        retries.iter().all(|(r, _, _)| r == "draining"),
        "only calls to the draining replica failed: {retries:?}"
    );
    resettle_all(&pool, &ledger).await;
    let c = other.scrape().await;
    assert_eq!(
        (c.rpc_errors, c.token_rejections),
        (0, 0),
        "the other replica refused nothing"
    );
    report(
        "sigterm",
        &load,
        &ledger,
        &pool,
        wall,
        &format!(
            "{ok} held call(s) completed OK during the drain; exit 0 {drained_in:.2?} after SIGTERM"
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_under_load_loses_no_round() {
    // Re-settling at the end is impossible here: tokens sealed with `a` no longer open once
    // `a` is retired, which is the point of step 3.
    let load = Load {
        keep_finals: false,
        ..size()
    };
    let steps = [
        ring("a", &[("a", KEY_A)]),
        ring("a", &[("a", KEY_A), ("b", KEY_B)]),
        ring("b", &[("b", KEY_B), ("a", KEY_A)]),
        ring("b", &[("b", KEY_B)]),
    ];
    let files: Vec<RingFile> = steps.iter().map(|r| RingFile::new(r)).collect();
    let args = ["--drain-timeout-secs", "5"];
    let mut replicas: Vec<Replica> = (0..2)
        .map(|slot| Replica::spawn(&format!("r{slot}-step0"), &files[0].path, &args, Logs::Keep))
        .collect();
    let pool = Pool::new();
    replicas.iter().for_each(|r| pool.add(r));
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    let mut retired = Vec::new();
    let mut last_step_at = 0;
    for (step, file) in files.iter().enumerate().skip(1) {
        wait_until(
            &format!("{step}/5 of the rounds are settled"),
            Duration::from_secs(120),
            || settled(&ledger) >= step as u64 * load.rounds / 5,
        )
        .await;
        if step == 3 {
            // Retire `a` only when no round in flight can hold a token sealed with it: every
            // round opened from now on is sealed with `b` by every replica.
            let boundary = ledger.rounds_opened();
            wait_until(
                "every round opened under an `a` primary has settled",
                Duration::from_secs(120),
                || {
                    ledger
                        .oldest_in_flight()
                        .is_none_or(|oldest| oldest >= boundary)
                },
            )
            .await;
            last_step_at = settled(&ledger);
        }
        // Roll the step to the replicas one at a time: start the new one, take the old one out
        // of the pool (the Service endpoints), then SIGTERM it and let it drain.
        for slot in 0..replicas.len() {
            let new = Replica::spawn(
                &format!("r{slot}-step{step}"),
                &file.path,
                &args,
                Logs::Keep,
            );
            pool.add(&new);
            let mut old = std::mem::replace(&mut replicas[slot], new);
            pool.remove(&old.name);
            let counters = old.scrape().await;
            old.sigterm();
            let status = old.wait_exit(Duration::from_secs(30)).await;
            assert!(status.success(), "{} exit: {status:?}", old.name);
            retired.push((old.name.clone(), counters));
        }
    }
    run.await.expect("the load finished");
    let wall = t0.elapsed();

    ledger.assert_balanced();
    assert_eq!(settled(&ledger), load.rounds);
    assert!(
        last_step_at < load.rounds,
        "the last step began before the load ended"
    );
    for r in &replicas {
        retired.push((r.name.clone(), r.scrape().await));
    }
    for (name, c) in &retired {
        assert_eq!(
            (c.rpc_errors, c.token_rejections),
            (0, 0),
            "{name} refused a call or a token"
        );
    }
    let retries = pool.retries.lock().unwrap().clone();
    assert!(
        retries.iter().all(|(r, _, _)| !r.ends_with("step3")),
        "only calls racing a replica's shutdown failed over: {retries:?}"
    );
    report(
        "rotation",
        &load,
        &ledger,
        &pool,
        wall,
        &format!(
            "{} replica restarts over 3 steps, 0 calls refused, 0 tokens rejected on any replica",
            retired.len() - 2
        ),
    );
}
