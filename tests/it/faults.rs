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
//! the longer runs of docs/RELIABILITY.md ("Faults") use `REDDOG_FAULT_ROUNDS=20000` with
//! `REDDOG_TEST_BIN=target/release/reddog` and `-- --test-threads 1 --nocapture`.
//! `the_drain_goaway_names_the_last_stream_served` checks the drain's two GOAWAYs frame by
//! frame, in process.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reddog::service::proto::GetRulesRequest;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::common::{held_call, ring_json};
use crate::fleet::*;

const KEY_A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const KEY_B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

fn size() -> Load {
    let get = |n: &str, d: u64| std::env::var(n).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
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
    // Each distinct (replica, code, message) with its count: which answers a platform saw.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for (r, c, m) in retries.iter() {
        let m: String = m.chars().take(72).collect();
        *seen.entry(format!("{r} {c:?} {m:?}")).or_default() += 1;
    }
    let codes: Vec<String> = seen.iter().map(|(k, n)| format!("{n} × {k}")).collect();
    eprintln!(
        "{name}: {} rounds settled of {} started, {} players, {:.1} s; {} round(s) hopped replicas between \
         StartRound and Settle; {} call(s) failed over ({}); {extra}",
        settled(ledger),
        ledger.started.load(Ordering::Relaxed),
        load.players,
        wall.as_secs_f64(),
        ledger.hopped.load(Ordering::Relaxed),
        retries.len(),
        codes.join("; "),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_load_loses_no_round() {
    let load = size();
    let ring = RingFile::new(&ring_json("a", &[("a", KEY_A)]));
    let mut victim = Replica::spawn("victim", &ring.path, &[], Logs::Keep);
    let survivor = Replica::spawn("survivor", &ring.path, &[], Logs::Keep);
    let pool = Pool::new();
    pool.add(&victim);
    pool.add(&survivor);
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    wait_until("a third of the rounds are settled", Duration::from_secs(120), || settled(&ledger) >= load.rounds / 3)
        .await;
    let in_flight_at_kill = ledger.rounds_opened() - settled(&ledger);
    victim.sigkill();
    let killed_at = settled(&ledger);
    // The platform keeps calling the dead replica until it notices (here: until a call failed
    // over), then drops it from its pool.
    wait_until("a call to the killed replica failed over", Duration::from_secs(30), || {
        pool.retries.lock().unwrap().iter().any(|(r, _, _)| r == "victim")
    })
    .await;
    pool.remove("victim");
    run.await.expect("the load finished");
    let wall = t0.elapsed();

    ledger.assert_balanced();
    assert_eq!(settled(&ledger), load.rounds);
    assert!(killed_at < load.rounds, "the kill happened during the load");
    let retries = pool.retries.lock().unwrap().clone();
    assert!(retries.iter().all(|(r, _, _)| r == "victim"), "only calls to the killed replica failed: {retries:?}");
    let resettled = resettle_all(&pool, &ledger).await;
    assert_eq!(resettled as u64, load.rounds);
    let c = survivor.scrape().await;
    assert_eq!((c.rpc_errors, c.token_rejections), (0, 0), "the survivor refused nothing");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_drains() {
    const HELD: usize = 4;
    let load = size();
    let ring = RingFile::new(&ring_json("a", &[("a", KEY_A)]));
    let mut draining = Replica::spawn("draining", &ring.path, &["--drain-timeout-secs", "20"], Logs::Keep);
    let other = Replica::spawn("other", &ring.path, &[], Logs::Keep);
    let pool = Pool::new();
    pool.add(&draining);
    pool.add(&other);
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    wait_until("a third of the rounds are settled", Duration::from_secs(120), || settled(&ledger) >= load.rounds / 3)
        .await;
    // Calls in flight on the replica about to drain, and a health watch on it.
    let ch = Endpoint::from_shared(format!("http://{}", draining.addr)).unwrap().connect().await.unwrap();
    let mut watch =
        HealthClient::new(ch.clone()).watch(HealthCheckRequest { service: String::new() }).await.unwrap().into_inner();
    assert_eq!(watch.message().await.unwrap().unwrap().status(), ServingStatus::Serving);
    // The held calls have reached the server when it counts exactly HELD calls in progress
    // (a fixed sleep raced with a loaded machine). So the load is taken off the replica for a
    // moment: first its own calls end (the gauge reads 0), then the held calls are opened and
    // the gauge must read HELD on three scrapes in a row (a late load call would show as a
    // count that moves). Then the load comes back, so SIGTERM lands on a replica busy with both.
    pool.remove("draining");
    let in_flight_is = |want: u64, what: &'static str| {
        let draining = &draining;
        async move {
            let streak = &std::cell::Cell::new(0);
            let what = format!("{want} call(s) in progress on three scrapes in a row ({what})");
            wait_until_async(&what, Duration::from_secs(30), || async move {
                let now = draining.scrape().await.in_flight;
                streak.set(if now == want { streak.get() + 1 } else { 0 });
                streak.get() >= 3
            })
            .await;
        }
    };
    in_flight_is(0, "the load's calls ended").await;
    let held: Vec<_> = (0..HELD).map(|_| held_call(ch.clone())).collect();
    in_flight_is(HELD as u64, "the held calls alone").await;
    assert!(held.iter().all(|(_, t)| !t.is_finished()), "a held call ended early");
    pool.add(&draining);
    let ok_before = draining.scrape().await.rpc_ok;
    wait_until_async("the load reaches the replica again", Duration::from_secs(30), || async {
        draining.scrape().await.rpc_ok >= ok_before + 20
    })
    .await;

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
    wait_until("more rounds settled after SIGTERM", Duration::from_secs(60), || {
        settled(&ledger) >= (settled_at_term + 100).min(load.rounds)
    })
    .await;
    assert!(!draining.has_exited(), "exited with calls in flight");
    for (tx, task) in &held {
        assert!(!task.is_finished(), "an in-flight call was cut off by SIGTERM");
        tx.send(GetRulesRequest::default()).await.expect("the held stream is still open");
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
        assert!(draining.log_contains(line), "drain log line {line:?} missing: {:?}", draining.log_lines());
    }
    run.await.expect("the load finished");
    let wall = t0.elapsed();

    ledger.assert_balanced();
    assert_eq!(settled(&ledger), load.rounds);
    let retries = pool.retries.lock().unwrap().clone();
    assert!(retries.iter().all(|(r, _, _)| r == "draining"), "only calls to the draining replica failed: {retries:?}");
    resettle_all(&pool, &ledger).await;
    let c = other.scrape().await;
    assert_eq!((c.rpc_errors, c.token_rejections), (0, 0), "the other replica refused nothing");
    report(
        "sigterm",
        &load,
        &ledger,
        &pool,
        wall,
        &format!("{ok} held call(s) completed OK during the drain; exit 0 {drained_in:.2?} after SIGTERM"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_under_load_loses_no_round() {
    // Re-settling at the end is impossible here: tokens sealed with `a` no longer open once
    // `a` is retired, which is the point of step 3.
    let load = Load { keep_finals: false, ..size() };
    let steps = [
        ring_json("a", &[("a", KEY_A)]),
        ring_json("a", &[("a", KEY_A), ("b", KEY_B)]),
        ring_json("b", &[("b", KEY_B), ("a", KEY_A)]),
        ring_json("b", &[("b", KEY_B)]),
    ];
    let files: Vec<RingFile> = steps.iter().map(|r| RingFile::new(r)).collect();
    let args = ["--drain-timeout-secs", "5"];
    let mut replicas: Vec<Replica> =
        (0..2).map(|slot| Replica::spawn(&format!("r{slot}-step0"), &files[0].path, &args, Logs::Keep)).collect();
    let pool = Pool::new();
    replicas.iter().for_each(|r| pool.add(r));
    let ledger = Ledger::new();
    let t0 = Instant::now();
    let run = tokio::spawn(run_load(pool.clone(), ledger.clone(), load.clone()));

    let mut retired = Vec::new();
    let mut last_step_at = 0;
    for (step, file) in files.iter().enumerate().skip(1) {
        wait_until(&format!("{step}/5 of the rounds are settled"), Duration::from_secs(120), || {
            settled(&ledger) >= step as u64 * load.rounds / 5
        })
        .await;
        if step == 3 {
            // Retire `a` only when no round in flight can hold a token sealed with it: every
            // round opened from now on is sealed with `b` by every replica.
            let boundary = ledger.rounds_opened();
            wait_until("every round opened under an `a` primary has settled", Duration::from_secs(120), || {
                ledger.oldest_in_flight().is_none_or(|oldest| oldest >= boundary)
            })
            .await;
            last_step_at = settled(&ledger);
        }
        // Roll the step to the replicas one at a time: start the new one, take the old one out
        // of the pool (the Service endpoints), then SIGTERM it and let it drain.
        for (slot, current) in replicas.iter_mut().enumerate() {
            let new = Replica::spawn(&format!("r{slot}-step{step}"), &file.path, &args, Logs::Keep);
            pool.add(&new);
            let mut old = std::mem::replace(current, new);
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
    assert!(last_step_at < load.rounds, "the last step began before the load ended");
    for r in &replicas {
        retired.push((r.name.clone(), r.scrape().await));
    }
    for (name, c) in &retired {
        assert_eq!((c.rpc_errors, c.token_rejections), (0, 0), "{name} refused a call or a token");
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

// ---- the drain's GOAWAY, frame by frame -------------------------------------------------------

/// HTTP/2 frame types and flags used below (RFC 9113 §6).
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// The request HEADERS of a GetRules call, HPACK without Huffman or dynamic table.
fn get_rules_headers(stream: u32) -> Vec<u8> {
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http (static table)
    let lit = |block: &mut Vec<u8>, name_index: &[u8], value: &str| {
        block.extend_from_slice(name_index);
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    };
    lit(&mut block, &[0x04], "/reddog.v1.RedDog/GetRules"); // :path
    lit(&mut block, &[0x01], "localhost"); // :authority
    lit(&mut block, &[0x0f, 0x10], "application/grpc"); // content-type (index 31)
    lit(&mut block, &[0x00, 0x02, b't', b'e'], "trailers");
    frame(HEADERS, END_HEADERS, stream, &block)
}

/// An empty GetRulesRequest as a gRPC message, ending the request.
fn empty_message(stream: u32) -> Vec<u8> {
    frame(DATA, END_STREAM, stream, &[0, 0, 0, 0, 0])
}

#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// The next frame from the server; `None` at end of stream. Bounded: 10 s.
async fn next_frame(tcp: &mut tokio::net::TcpStream) -> Option<Frame> {
    use tokio::io::AsyncReadExt;
    let read = async {
        let mut head = [0u8; 9];
        if tcp.read_exact(&mut head).await.is_err() {
            return None;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        tcp.read_exact(&mut payload).await.ok()?;
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        Some(Frame { kind: head[3], flags: head[4], stream, payload })
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.expect("a frame or the end of the connection within 10 s")
}

/// Reads frames until `want` matches one (returned), answering SETTINGS and PINGs other than
/// the ones in `hold` (their payloads are collected there instead) and keeping every frame in
/// `seen`.
async fn read_until(
    tcp: &mut tokio::net::TcpStream,
    seen: &mut Vec<Frame>,
    hold: &mut Vec<Vec<u8>>,
    mut want: impl FnMut(&Frame) -> bool,
) -> Option<usize> {
    use tokio::io::AsyncWriteExt;
    loop {
        let f = next_frame(tcp).await?;
        if f.kind == SETTINGS && f.flags & ACK == 0 {
            tcp.write_all(&frame(SETTINGS, ACK, 0, &[])).await.unwrap();
        }
        if f.kind == PING && f.flags & ACK == 0 {
            hold.push(f.payload.clone());
        }
        let hit = want(&f);
        seen.push(f);
        if hit {
            return Some(seen.len() - 1);
        }
    }
}

fn goaway(f: &Frame) -> (u32, u32) {
    let p = &f.payload;
    (u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff, u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
}

/// What a client racing a drain can rely on, on the wire: the server's GOAWAY comes in two
/// steps (RFC 9113 §6.8). First GOAWAY(2^31−1, NO_ERROR) and a PING: a stream the client
/// opens before it has read that GOAWAY is still served in full. Once the PING is answered,
/// GOAWAY(last stream id, NO_ERROR): a stream above that id is never processed (no answer,
/// no reset — the client may send it elsewhere), and the connection closes when the streams
/// at or below it are answered. (tonic's client reports its own refusal of such calls as
/// INTERNAL "h2 protocol error" or CANCELLED: docs/RELIABILITY.md, "Faults".)
#[tokio::test]
async fn the_drain_goaway_names_the_last_stream_served() {
    use tokio::io::AsyncWriteExt;
    let server = crate::common::TestServer::spawn(crate::common::settings(&crate::common::ring_a())).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out.extend(get_rules_headers(1)); // a call in flight: its message is withheld
    out.extend(frame(PING, 0, 0, b"ordered!"));
    tcp.write_all(&out).await.unwrap();
    let (mut seen, mut pings) = (Vec::new(), Vec::new());
    // Frames are handled in order: the answer to our PING means stream 1 has been received.
    read_until(&mut tcp, &mut seen, &mut pings, |f| f.kind == PING && f.flags & ACK != 0).await.expect("PING answered");
    pings.clear();

    let stopping = tokio::spawn(server.stop());
    let first = read_until(&mut tcp, &mut seen, &mut pings, |f| f.kind == GOAWAY)
        .await
        .expect("a GOAWAY once the drain starts");
    assert_eq!(goaway(&seen[first]), (0x7fff_ffff, 0), "first GOAWAY: last stream id 2^31-1, NO_ERROR");
    if pings.is_empty() {
        read_until(&mut tcp, &mut seen, &mut pings, |f| f.kind == PING && f.flags & ACK == 0)
            .await
            .expect("a PING after the first GOAWAY");
    }
    // A call racing the first GOAWAY (sent before the client read it), then the PING answer.
    let mut out = get_rules_headers(3);
    out.extend(empty_message(3));
    for p in pings.drain(..) {
        out.extend(frame(PING, ACK, 0, &p));
    }
    tcp.write_all(&out).await.unwrap();
    let second = read_until(&mut tcp, &mut seen, &mut pings, |f| f.kind == GOAWAY)
        .await
        .expect("a second GOAWAY after the PING is answered");
    assert_eq!(goaway(&seen[second]), (3, 0), "second GOAWAY: the last stream id the server took, NO_ERROR");
    // A call after the second GOAWAY; then the held call's message.
    let mut out = get_rules_headers(5);
    out.extend(empty_message(5));
    out.extend(empty_message(1));
    tcp.write_all(&out).await.unwrap();
    while read_until(&mut tcp, &mut seen, &mut pings, |_| false).await.is_some() {}
    let ended = |id: u32| seen.iter().any(|f| f.stream == id && f.kind == HEADERS && f.flags & END_STREAM != 0);
    let data = |id: u32| seen.iter().any(|f| f.stream == id && f.kind == DATA);
    assert!(ended(3) && data(3), "the call racing the first GOAWAY was answered");
    assert!(ended(1) && data(1), "the call in flight was answered");
    let about_5: Vec<_> = seen.iter().filter(|f| f.stream == 5).collect();
    assert!(about_5.is_empty(), "the call above the last stream id got an answer or a reset: {about_5:?}");
    assert!(!seen.iter().any(|f| f.kind == RST_STREAM), "no stream was reset");
    tokio::time::timeout(Duration::from_secs(10), stopping).await.expect("the server stopped").unwrap();
}
