//! The engine's log writer (`src/service/ops/log_writer.rs`, [`reddog::testing::BatchWriter`])
//! against tracing-appender's non-blocking writer in lossless mode
//! (`NonBlockingBuilder::default().lossy(false)`), in one run, alternating, into the same
//! sinks: docs/BENCHMARKS.md, "The log writer".
//!
//! ```text
//! cargo run --release --example log_writer_vs_appender -- [--lines 100000] [--rounds 3] [--rate 20000]
//! ```
//!
//! Both writers get the same lines: 1,024 distinct audit-record-like JSON lines of 1,024
//! bytes (newline included), written in turn from this thread with one `write_all` each, as
//! tracing-subscriber's fmt layer and the audit sink write a record. For every sink (a new
//! file in the temporary directory, `/dev/null`, a pipe drained by a thread) and both loads
//! (`burst`: back to back; `paced`: `--rate` lines a second, the calling thread sleeping
//! between lines, as a server under steady load logs), each round runs both writers, the
//! first in turn alternating. A run ends when the sink has received every byte (counted by
//! a wrapper around it; nothing lost is checked, not assumed). Reported per run, the medians
//! over the rounds:
//! - lines/s from the first write to the last byte in the sink;
//! - the calling thread's CPU per line (`/proc/thread-self/schedstat`) and the latency of
//!   one `write_all` (p50, p99, p99.9, max), which is what a handler pays;
//! - the other threads' CPU per line (the writer's thread; the pipe's drain thread is left
//!   out), how often they were scheduled and how many `write`s reached the sink, per 1,000
//!   lines.
//!
//! Then the stuck-output checks: with an output whose `write` never returns, whether a
//! logger is refused or blocked once the backlog is full; and, in a child process whose
//! stdout is a pipe nobody reads, how long the writer's shutdown (`BatchWriter::close(1 s)`,
//! dropping the `WorkerGuard`) takes to let the process exit.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reddog::testing::BatchWriter;
use tracing_appender::non_blocking::NonBlockingBuilder;

const LINE_BYTES: usize = 1024;
const DISTINCT_LINES: usize = 1024;

/// The sink every run writes into, wrapped so the run knows when every byte arrived.
struct Counting<W> {
    inner: W,
    bytes: Arc<AtomicU64>,
    writes: Arc<AtomicU64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(n as u64, Ordering::Release);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sink {
    File,
    DevNull,
    Pipe,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Which {
    LogWriter,
    Appender,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::LogWriter => "log_writer",
            Which::Appender => "tracing-appender",
        }
    }
}

/// One thread's CPU time (ns) and how many times it was scheduled.
fn schedstat(path: &str) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut f = text.split_whitespace();
    let ns = f.next()?.parse().ok()?;
    let _wait = f.next()?;
    let slices = f.next()?.parse().ok()?;
    Some((ns, slices))
}

fn this_tid() -> u64 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().and_then(|s| s.to_str()).and_then(|s| s.parse().ok()).expect("a thread id")
}

/// CPU ns and schedule counts of every thread of the process but `skip`, summed.
fn other_threads(skip: &[u64]) -> (u64, u64) {
    let mut sum = (0, 0);
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) else { continue };
        if skip.contains(&tid) {
            continue;
        }
        if let Some((ns, slices)) = schedstat(&format!("/proc/self/task/{tid}/schedstat")) {
            sum.0 += ns;
            sum.1 += slices;
        }
    }
    sum
}

/// Audit-record-like JSON lines, `LINE_BYTES` long with the newline, each different.
fn lines() -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hex = |n: usize| {
        let mut s = String::with_capacity(n);
        while s.len() < n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push_str(&format!("{x:016x}"));
        }
        s.truncate(n);
        s
    };
    (0..DISTINCT_LINES)
        .map(|k| {
            let mut line = format!(
                concat!(
                    r#"{{"v":1,"ts":"2026-12-05T08:00:00.{k:09}Z","replica":"engine-0","seq":{k},"event":"round_settled","#,
                    r#""table_id":"default","round_id":"p{k}-n{k}-{id}","nonce":"{k}","commitment":"{c}","#,
                    r#""cards":["7H","QS","9D"],"hand_class":"non_consecutive","spread":4,"spread_odds":1,"#,
                    r#""seats":[{{"seat":0,"bet":"1000","action":"raise","stake":"2000","outcome":"win","#,
                    r#""rule":"third_card_between","odds":1,"returned":"4000"}}],"transcript":"{t}","prev":"{p}","#,
                    r#""hash":"{h}","pad":""#
                ),
                k = k,
                id = hex(8),
                c = hex(64),
                t = hex(64),
                p = hex(64),
                h = hex(64),
            );
            let pad = LINE_BYTES.saturating_sub(line.len() + 3);
            line.push_str(&"x".repeat(pad));
            line.push_str("\"}\n");
            assert_eq!(line.len(), LINE_BYTES, "line {k}");
            line.into_bytes()
        })
        .collect()
}

struct Run {
    lines_per_s: f64,
    caller_ns_per_line: f64,
    others_ns_per_line: f64,
    others_scheduled_per_1k: f64,
    sink_writes_per_1k: f64,
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
}

fn percentile(sorted: &[u64], q: f64) -> u64 {
    let k = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

fn run(which: Which, sink: Sink, all: &[Vec<u8>], n: usize, rate: Option<u64>) -> Run {
    let bytes = Arc::new(AtomicU64::new(0));
    let writes = Arc::new(AtomicU64::new(0));
    let mut drain_tid = None;
    let mut drain = None;
    let inner: Box<dyn Write + Send> = match sink {
        Sink::File => Box::new(tempfile::tempfile().expect("a temporary file")),
        Sink::DevNull => Box::new(std::fs::OpenOptions::new().write(true).open("/dev/null").expect("/dev/null")),
        Sink::Pipe => {
            let (mut reader, writer) = std::io::pipe().expect("a pipe");
            let (tx, rx) = std::sync::mpsc::channel();
            drain = Some(std::thread::spawn(move || {
                tx.send(this_tid()).expect("the tid");
                let mut buf = vec![0u8; 1 << 20];
                while let Ok(k) = std::io::Read::read(&mut reader, &mut buf) {
                    if k == 0 {
                        break;
                    }
                }
            }));
            drain_tid = Some(rx.recv().expect("the drain thread's tid"));
            Box::new(writer)
        }
    };
    let out = Counting { inner, bytes: bytes.clone(), writes: writes.clone() };
    let me = this_tid();
    let skip: Vec<u64> = [Some(me), drain_tid].into_iter().flatten().collect();
    let mut latencies: Vec<u64> = Vec::with_capacity(n);
    let expected = (n * LINE_BYTES) as u64;
    let interval = rate.map(|r| Duration::from_nanos(1_000_000_000 / r.max(1)));

    // The writer and its thread first, then the clocks.
    enum W {
        Ours(BatchWriter),
        Theirs(tracing_appender::non_blocking::NonBlocking, tracing_appender::non_blocking::WorkerGuard),
    }
    let mut w = match which {
        Which::LogWriter => W::Ours(BatchWriter::start(out)),
        Which::Appender => {
            let (nb, guard) = NonBlockingBuilder::default().lossy(false).finish(out);
            W::Theirs(nb, guard)
        }
    };
    std::thread::sleep(Duration::from_millis(20));
    let others_before = other_threads(&skip);
    let caller_before = schedstat("/proc/thread-self/schedstat").expect("schedstat").0;
    let started = Instant::now();
    for i in 0..n {
        if let Some(step) = interval {
            let due = started + step * u32::try_from(i).unwrap_or(u32::MAX);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let line = &all[i % all.len()];
        let t = Instant::now();
        match &mut w {
            // Lossless for the comparison (the engine drops a line on a full batch instead).
            W::Ours(b) => {
                while b.try_append(line).is_err() {
                    std::thread::yield_now();
                }
            }
            W::Theirs(nb, _) => nb.write_all(line).expect("appender write"),
        }
        latencies.push(t.elapsed().as_nanos() as u64);
    }
    let caller_ns = schedstat("/proc/thread-self/schedstat").expect("schedstat").0 - caller_before;
    let deadline = Instant::now() + Duration::from_secs(120);
    while bytes.load(Ordering::Acquire) < expected {
        assert!(Instant::now() < deadline, "{which:?}/{sink:?}: the sink never got every byte");
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = started.elapsed();
    let others_after = other_threads(&skip);
    match w {
        W::Ours(b) => b.close(Duration::from_secs(10)).expect("close"),
        W::Theirs(nb, guard) => {
            drop(nb);
            drop(guard);
        }
    }
    if let Some(d) = drain {
        d.join().expect("the drain thread");
    }
    assert_eq!(bytes.load(Ordering::Acquire), expected, "{which:?}/{sink:?}: every byte, once");
    latencies.sort_unstable();
    let per_line = |v: u64| v as f64 / n as f64;
    Run {
        lines_per_s: n as f64 / elapsed.as_secs_f64(),
        caller_ns_per_line: per_line(caller_ns),
        others_ns_per_line: per_line(others_after.0.saturating_sub(others_before.0)),
        others_scheduled_per_1k: 1000.0 * per_line(others_after.1.saturating_sub(others_before.1)),
        sink_writes_per_1k: 1000.0 * per_line(writes.load(Ordering::Relaxed)),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        p999: percentile(&latencies, 0.999),
        max: *latencies.last().unwrap_or(&0),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn median_u(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// An output whose first `write` never returns: an unread pipe.
struct Stuck;
impl Write for Stuck {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        loop {
            std::thread::park();
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What each writer does with a stuck output: whether a logger is refused instead of
/// blocked when the backlog is full.
fn stuck_output(all: &[Vec<u8>]) {
    println!("\n## Stuck output (a `write` that never returns)\n");
    // log_writer: try_append is refused once the backlog is full.
    let ours = BatchWriter::start(Stuck);
    let started = Instant::now();
    let mut taken = 0usize;
    let refused = loop {
        match ours.try_append(&all[taken % all.len()]) {
            Ok(()) => taken += 1,
            Err(_) => break true,
        }
        if started.elapsed() > Duration::from_secs(5) {
            break false;
        }
    };
    println!(
        "- log_writer: try_append refused after {taken} lines ({} KiB backlog) in {:?}: {}",
        taken * LINE_BYTES / 1024,
        started.elapsed(),
        if refused { "the audit sink can answer AUDIT_UNAVAILABLE" } else { "NOT refused within 5 s" }
    );
    let t = Instant::now();
    let closed = ours.close(Duration::from_secs(1));
    println!("- log_writer: close(1 s) returned in {:?}: {closed:?} (Err = bytes left unwritten)", t.elapsed());

    // tracing-appender, lossless: a logger blocks once the channel is full; nothing refuses.
    let (nb, guard) = NonBlockingBuilder::default().lossy(false).finish(Stuck);
    let sent = Arc::new(AtomicU64::new(0));
    let logger = {
        let (mut nb, sent, all) = (nb.clone(), sent.clone(), all.to_vec());
        std::thread::spawn(move || {
            for k in 0.. {
                if nb.write_all(&all[k % all.len()]).is_err() {
                    return;
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    std::thread::sleep(Duration::from_secs(3));
    let blocked_at = sent.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "- tracing-appender (lossless): the logger took {blocked_at} lines, then {} in the next second: {}",
        sent.load(Ordering::Relaxed) - blocked_at,
        if logger.is_finished() { "it returned" } else { "blocked in write_all (no error, no refusal)" }
    );
    // Dropping the guard here would print to this program's stdout (the table); the exit
    // with a stuck stdout is measured in a child process instead.
    std::mem::forget(guard);
    drop(nb);
}

/// The child of [`exit_with_unread_stdout`]: logs to its stdout (a pipe nobody reads) from
/// a thread for 2 s, then shuts its writer down the way the engine does at SIGTERM and
/// exits.
fn child(which: &str, all: Vec<Vec<u8>>) -> ! {
    enum Guard {
        Ours(BatchWriter),
        Theirs(tracing_appender::non_blocking::WorkerGuard),
    }
    let (mut out, guard): (Box<dyn Write + Send>, Guard) = match which {
        "log_writer" => {
            let w = BatchWriter::start(std::io::stdout());
            (Box::new(w.clone()), Guard::Ours(w))
        }
        _ => {
            let (nb, guard) = NonBlockingBuilder::default().lossy(false).finish(std::io::stdout());
            (Box::new(nb), Guard::Theirs(guard))
        }
    };
    std::thread::spawn(move || {
        for k in 0.. {
            if out.write_all(&all[k % all.len()]).is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    eprintln!("shutdown");
    match guard {
        Guard::Ours(w) => {
            let closed = w.close(Duration::from_secs(1));
            eprintln!("closed {closed:?}");
        }
        Guard::Theirs(g) => {
            drop(g);
            eprintln!("guard dropped");
        }
    }
    std::process::exit(0);
}

/// The SIGTERM requirement: with stdout an unread pipe, how long from the start of the
/// shutdown to the process's exit (killed after 10 s).
fn exit_with_unread_stdout() {
    println!("\n## Exit with stdout an unread pipe (the engine's drain on SIGTERM)\n");
    for which in ["log_writer", "tracing-appender"] {
        let exe = std::env::current_exe().expect("this program");
        let mut c = std::process::Command::new(exe)
            .args(["--child", which])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the child");
        let _unread = c.stdout.take();
        let stderr = c.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        let (shutdown_at, _) = rx.recv_timeout(Duration::from_secs(30)).expect("the child starts its shutdown");
        let mut said = vec![];
        let exited = loop {
            while let Ok((_, line)) = rx.try_recv() {
                said.push(line);
            }
            if let Some(status) = c.try_wait().expect("wait") {
                break Some((shutdown_at.elapsed(), status));
            }
            if shutdown_at.elapsed() > Duration::from_secs(10) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        match exited {
            Some((took, status)) => {
                println!("- {which}: exited {took:.2?} after the shutdown began ({status}); said {said:?}")
            }
            None => {
                let _ = c.kill();
                let _ = c.wait();
                println!("- {which}: still running 10 s after the shutdown began (killed); said {said:?}");
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("--child") {
        child(&std::env::args().nth(2).unwrap_or_default(), lines());
    }
    let (mut n, mut rounds, mut rate) = (100_000usize, 3usize, 20_000u64);
    let mut stuck = true;
    while let Some(a) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse::<u64>().ok()).expect("a number after the flag");
        match a.as_str() {
            "--lines" => n = value() as usize,
            "--rounds" => rounds = value() as usize,
            "--rate" => rate = value(),
            "--no-stuck" => stuck = false,
            other => panic!("unknown argument {other}: --lines N --rounds R --rate LINES_PER_S --no-stuck"),
        }
    }
    let all = lines();
    println!(
        "# log_writer vs tracing-appender (lossless), {n} lines of {LINE_BYTES} B per run, {rounds} rounds, \
         paced at {rate} lines/s; medians over the rounds\n"
    );
    println!(
        "| load | sink | writer | lines/s (to the sink) | caller CPU ns/line | write_all p50 / p99 / p99.9 / max ns | \
         other threads' CPU ns/line | their wake-ups /1k lines | sink writes /1k lines |"
    );
    println!("|---|---|---|---:|---:|---|---:|---:|---:|");
    for (load, r) in [("burst", None), ("paced", Some(rate))] {
        for sink in [Sink::File, Sink::DevNull, Sink::Pipe] {
            let mut results: Vec<(Which, Run)> = vec![];
            for round in 0..rounds {
                let order = if round % 2 == 0 {
                    [Which::LogWriter, Which::Appender]
                } else {
                    [Which::Appender, Which::LogWriter]
                };
                for which in order {
                    results.push((which, run(which, sink, &all, n, r)));
                }
            }
            for which in [Which::LogWriter, Which::Appender] {
                let mine: Vec<&Run> = results.iter().filter(|(w, _)| *w == which).map(|(_, r)| r).collect();
                let f = |g: fn(&Run) -> f64| median(mine.iter().map(|r| g(r)).collect());
                let u = |g: fn(&Run) -> u64| median_u(mine.iter().map(|r| g(r)).collect());
                println!(
                    "| {load} | {sink:?} | {} | {:.0} | {:.0} | {} / {} / {} / {} | {:.0} | {:.1} | {:.1} |",
                    which.name(),
                    f(|r| r.lines_per_s),
                    f(|r| r.caller_ns_per_line),
                    u(|r| r.p50),
                    u(|r| r.p99),
                    u(|r| r.p999),
                    u(|r| r.max),
                    f(|r| r.others_ns_per_line),
                    f(|r| r.others_scheduled_per_1k),
                    f(|r| r.sink_writes_per_1k),
                );
            }
        }
    }
    if stuck {
        stuck_output(&all);
        exit_with_unread_stdout();
    }
    // The stuck threads never return: leave without joining them.
    std::process::exit(0);
}
