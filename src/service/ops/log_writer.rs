//! The log writer: log lines are appended to a shared in-memory batch by the thread that
//! logs them, and one background thread writes each batch with a single `write(2)`.
//!
//! Why not a channel of lines (such as `tracing-appender`'s non-blocking writer): it copies
//! each line into a fresh `Vec`, makes one `write(2)` per line and, whenever its thread has
//! caught up and sleeps, wakes it again, and with stdout an unread pipe its shutdown hangs
//! (docs/BENCHMARKS.md, "The log writer against tracing-appender": measured there, 3.9 to 12
//! times this writer's thread CPU per line). Here a line costs a mutex and a `memcpy` into
//! a buffer whose capacity is kept across batches; the writer thread is woken once per batch
//! and lets a batch gather for up to [`FLUSH_EVERY`] (or until it holds [`HIGH_WATER`] bytes).
//!
//! Never blocking: when the batch holds [`CAPACITY`] bytes (the output is slower than the
//! logging — an unread stderr pipe, say, at any log level), a new line is dropped, counted in
//! `reddog_log_lines_dropped_total`, instead of making its thread (a call, the health
//! service, the shutdown) wait for the output. A line is never split between batches. After
//! [`BatchWriter::close`] (at exit), or if the writer thread could not be started, lines go
//! straight to the output under the lock.
//!
//! What can be lost is what any user-space buffer loses: up to [`FLUSH_EVERY`] of lines if
//! the process is killed with SIGKILL. A normal exit flushes ([`BatchWriter::close`]), within
//! a bound: an output that takes nothing (an unread pipe) cannot hold the exit, and what it
//! did not take is reported.
//!
//! The writer is format-agnostic; the diagnostic logs (tracing-subscriber's fmt layer) use
//! it. (The audit trail has its own, write-ahead writer: [`crate::service::evidence::audit_writer`].)
//! [`BatchWriter::try_append`] refuses instead of dropping when the batch is full, and
//! [`BatchWriter::failed`] says whether a write failed (`examples/log_writer_vs_appender.rs`
//! measures both).

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use metrics::Counter;
use tracing_subscriber::fmt::MakeWriter;

/// Longest a line waits in memory before the writer thread writes its batch.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(10);
/// A batch this large is written at once, without waiting for [`FLUSH_EVERY`].
pub(crate) const HIGH_WATER: usize = 64 * 1024;
/// A batch this large makes the next line be dropped (counted), never waited for.
pub(crate) const CAPACITY: usize = 4 * 1024 * 1024;

struct State {
    buf: Vec<u8>,
    /// Flush requests made / completed (generation counters).
    flush_requested: u64,
    flushed: u64,
    /// No writer thread (closed, or it could not start): write directly.
    direct: bool,
    /// A write to the output failed (sticky).
    failed: bool,
    /// Closed while the writer thread was stuck in a write (an unread pipe, a stuck disk):
    /// later lines are refused rather than wait for it.
    abandoned: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Counts each line dropped for want of room (`reddog_log_lines_dropped_total`).
    dropped: Counter,
    /// Wakes the writer thread: data in an empty batch, a full batch, a flush, a close.
    work: Condvar,
    /// Wakes loggers waiting for room, and flushers waiting for their flush.
    done: Condvar,
    out: Mutex<Box<dyn Write + Send>>,
}

/// The batch already holds [`CAPACITY`] bytes, or the output failed: the line was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// A batched writer for the `tracing` fmt layer that never blocks its caller (see the module
/// docs). Cheap to clone; all clones share one batch and one writer thread.
#[derive(Clone)]
pub struct BatchWriter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BatchWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BatchWriter")
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the buffer consistent (appends are whole).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl BatchWriter {
    /// Starts the writer thread over `out`, counting no dropped line (tests and benchmarks;
    /// [`BatchWriter::try_append`] refuses instead of dropping).
    pub fn start(out: impl Write + Send + 'static) -> BatchWriter {
        BatchWriter::start_counting_drops(out, Counter::noop())
    }

    /// Starts the writer thread over `out` (stderr in the server), counting in `dropped` each
    /// line dropped because the batch was full.
    pub fn start_counting_drops(out: impl Write + Send + 'static, dropped: Counter) -> BatchWriter {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(HIGH_WATER * 2),
                flush_requested: 0,
                flushed: 0,
                direct: false,
                failed: false,
                abandoned: false,
            }),
            dropped,
            work: Condvar::new(),
            done: Condvar::new(),
            out: Mutex::new(Box::new(out)),
        });
        let worker = shared.clone();
        let started = std::thread::Builder::new().name("reddog-log".into()).spawn(move || run(&worker));
        if started.is_err() {
            lock(&shared.state).direct = true;
        }
        BatchWriter { shared }
    }

    /// Appends one whole line (or several) to the batch; drops it (counted) when the batch
    /// is full.
    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        if st.direct {
            return Self::write_direct(s, &mut st, line);
        }
        if st.buf.len() >= CAPACITY {
            drop(st);
            s.work.notify_one();
            s.dropped.increment(1);
            return Ok(());
        }
        let was_empty = st.buf.is_empty();
        st.buf.extend_from_slice(line);
        let full = st.buf.len() >= HIGH_WATER;
        drop(st);
        if was_empty || full {
            s.work.notify_one();
        }
        Ok(())
    }

    /// Writes directly (no writer thread), holding the batch lock so direct lines never
    /// interleave; a failed write is remembered.
    fn write_direct(s: &Shared, st: &mut State, line: &[u8]) -> std::io::Result<()> {
        if st.abandoned {
            return Err(std::io::Error::other("the output stalled and was abandoned at close"));
        }
        let mut out = lock(&s.out);
        let written = out.write_all(line).and_then(|()| out.flush());
        if written.is_err() {
            st.failed = true;
        }
        written
    }

    /// Appends whole lines to the batch without ever waiting: `Err(Full)` when the batch
    /// already holds [`CAPACITY`] bytes (the output is slower than the records).
    pub fn try_append(&self, line: &[u8]) -> Result<(), Full> {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        if st.direct {
            return Self::write_direct(s, &mut st, line).map_err(|_| Full);
        }
        if st.buf.len() >= CAPACITY {
            s.work.notify_one();
            return Err(Full);
        }
        let was_empty = st.buf.is_empty();
        st.buf.extend_from_slice(line);
        let full = st.buf.len() >= HIGH_WATER;
        drop(st);
        if was_empty || full {
            s.work.notify_one();
        }
        Ok(())
    }

    /// Whether a write to the output has failed (a full disk, a closed pipe): the lines of
    /// that batch may be lost, so the audit sink stops accepting records.
    pub fn failed(&self) -> bool {
        lock(&self.shared.state).failed
    }

    /// Writes everything logged so far and waits (at most `timeout`) until it is written;
    /// whether it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        if st.direct {
            return !st.abandoned;
        }
        st.flush_requested += 1;
        let target = st.flush_requested;
        s.work.notify_one();
        let (st, _) = s
            .done
            .wait_timeout_while(st, timeout, |st| st.flushed < target && !st.direct)
            .unwrap_or_else(PoisonError::into_inner);
        st.flushed >= target
    }

    /// Flushes (waiting at most `timeout`), stops the writer thread and writes any later
    /// line directly. When the flush did not complete in time (the writer thread is stuck in
    /// a write: an unread pipe, a stuck disk), returns the bytes left unwritten instead of
    /// waiting for it, and refuses every later line: the process can exit.
    pub fn close(&self, timeout: Duration) -> Result<(), usize> {
        let flushed = self.flush(timeout);
        let s = &*self.shared;
        let mut st = lock(&s.state);
        st.direct = true;
        if !flushed {
            st.abandoned = true;
            st.failed = true;
            let unwritten = st.buf.len();
            drop(st);
            s.work.notify_one();
            s.done.notify_all();
            return Err(unwritten);
        }
        // Whatever was logged since the flush goes out now, before any direct line.
        let rest = std::mem::take(&mut st.buf);
        let mut out = lock(&s.out);
        if out.write_all(&rest).and_then(|()| out.flush()).is_err() {
            st.failed = true;
        }
        drop(st);
        drop(out);
        s.work.notify_one();
        s.done.notify_all();
        Ok(())
    }
}

/// The writer thread: waits for a batch, lets it gather, swaps it out and writes it.
fn run(s: &Shared) {
    let mut spare: Vec<u8> = Vec::with_capacity(HIGH_WATER * 2);
    loop {
        let mut st = lock(&s.state);
        let urgent = |st: &State| st.direct || st.flush_requested > st.flushed || st.buf.len() >= HIGH_WATER;
        while st.buf.is_empty() && !urgent(&st) {
            st = s.work.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        if !urgent(&st) {
            st = s.work.wait_timeout_while(st, FLUSH_EVERY, |st| !urgent(st)).unwrap_or_else(PoisonError::into_inner).0;
        }
        std::mem::swap(&mut st.buf, &mut spare);
        let (target, stop) = (st.flush_requested, st.direct);
        // Hold `out` before releasing the batch so a direct write cannot overtake it.
        let mut out = lock(&s.out);
        drop(st);
        s.done.notify_all();
        let written = out.write_all(&spare).and_then(|()| out.flush());
        drop(out);
        // Keep a large buffer from pinning memory after a burst.
        if spare.capacity() > CAPACITY {
            spare = Vec::with_capacity(HIGH_WATER * 2);
        }
        spare.clear();
        let mut st = lock(&s.state);
        st.flushed = st.flushed.max(target);
        st.failed |= written.is_err();
        drop(st);
        s.done.notify_all();
        if stop {
            return;
        }
    }
}

impl Write for BatchWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The fmt layer writes each event with one `write_all` of the whole formatted line.
        self.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The per-event handle the fmt layer writes through: a borrow, no reference counting.
pub struct BatchLine<'a>(&'a BatchWriter);

impl Write for BatchLine<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchWriter {
    type Writer = BatchLine<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        BatchLine(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output that records what it was given, in order, and how many writes.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut r = self.0.lock().unwrap();
            r.0.extend_from_slice(buf);
            r.1 += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_arrives_whole_and_in_order_from_many_threads_in_few_writes() {
        let rec = Recorder::default();
        let w = BatchWriter::start(rec.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut w = w.clone();
                std::thread::spawn(move || {
                    for i in 0..5000 {
                        w.write_all(format!("thread {t} line {i}\n").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        w.flush(Duration::from_secs(10));
        let (bytes, writes) = rec.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20_000, "no line lost");
        for t in 0..4 {
            let mine: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with(&format!("thread {t} "))).collect();
            let want: Vec<String> = (0..5000).map(|i| format!("thread {t} line {i}")).collect();
            assert_eq!(mine, want, "thread {t}'s lines whole and in order");
        }
        assert!(writes < 20_000 / 10, "lines are batched: {writes} writes for 20000 lines");
    }

    /// A stalled output (an unread pipe): once the batch is full, lines are dropped at
    /// once (the logger never waits), and after the output resumes later lines arrive whole.
    #[test]
    fn a_stalled_output_drops_lines_instead_of_blocking_the_logger() {
        /// Accepts writes only while the gate is open.
        struct Gated(Arc<(Mutex<bool>, Condvar)>, Recorder);
        impl Write for Gated {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let (open, cv) = &*self.0;
                let mut g = open.lock().unwrap();
                while !*g {
                    g = cv.wait(g).unwrap();
                }
                self.1.write(buf)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let rec = Recorder::default();
        let metrics = crate::service::ops::metrics::MetricsRegistry::new();
        let w = BatchWriter::start_counting_drops(Gated(gate.clone(), rec.clone()), metrics.log_lines_dropped());
        let line = vec![b'x'; 1023].into_iter().chain([b'\n']).collect::<Vec<u8>>();
        // Three times the capacity: the writer holds one batch, the buffer fills, the rest is
        // dropped — all without waiting for the gate.
        let total = 3 * CAPACITY / line.len();
        let logger = {
            let mut w = w.clone();
            let line = line.clone();
            std::thread::spawn(move || {
                for _ in 0..total {
                    w.write_all(&line).unwrap();
                }
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !logger.is_finished() {
            assert!(std::time::Instant::now() < deadline, "the logger waited for a stalled output");
            std::thread::sleep(Duration::from_millis(1));
        }
        logger.join().unwrap();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        // Once the writer has taken the full batch, a line has room again.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while lock(&w.shared.state).buf.len() >= CAPACITY {
            assert!(std::time::Instant::now() < deadline, "the writer never took the batch after the stall");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut w2 = w.clone();
        w2.write_all(b"after\n").unwrap();
        w.close(Duration::from_secs(10)).unwrap();
        let got = rec.0.lock().unwrap().0.clone();
        assert!(got.len() < total * line.len(), "lines were dropped, not queued without bound");
        assert!(got.len() >= CAPACITY, "a full batch was kept: {}", got.len());
        let text = String::from_utf8(got).unwrap();
        assert!(text.lines().all(|l| l == "after" || l.len() == 1023), "only whole lines");
        assert!(text.ends_with("after\n"), "a line after the stall arrives");
        let dropped = metrics.value("reddog_log_lines_dropped_total").unwrap();
        assert!(dropped >= 1.0, "the drops are counted in the writer's registry: {dropped}");
    }

    #[test]
    fn after_close_lines_are_written_directly() {
        let rec = Recorder::default();
        let mut w = BatchWriter::start(rec.clone());
        w.write_all(b"before\n").unwrap();
        w.close(Duration::from_secs(10)).unwrap();
        w.write_all(b"after\n").unwrap();
        assert_eq!(rec.0.lock().unwrap().0, b"before\nafter\n");
    }
}

#[cfg(test)]
mod stalled_close {
    use super::*;

    /// An output whose first write never returns (an unread pipe).
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

    #[test]
    fn close_on_a_stuck_output_returns_in_time_and_later_lines_are_refused() {
        let w = BatchWriter::start(Stuck);
        w.try_append(b"first\n").unwrap();
        // The writer thread takes the first batch and blocks in its write.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !lock(&w.shared.state).buf.is_empty() {
            assert!(std::time::Instant::now() < deadline, "the writer never took the batch");
            std::thread::sleep(Duration::from_millis(1));
        }
        w.try_append(b"second\n").unwrap();
        let started = std::time::Instant::now();
        assert_eq!(w.close(Duration::from_millis(200)), Err(7), "the second line was never written");
        assert!(started.elapsed() < Duration::from_secs(2), "close waited {:?}", started.elapsed());
        assert_eq!(w.try_append(b"third\n"), Err(Full));
        assert!(w.failed());
    }
}
