//! The audit trail's output, write-ahead: a record's call is answered only after the
//! output has taken the record's bytes (`write(2)` returned; with `--audit-sync`, `fsync`
//! returned too) — docs/AUDIT.md, "The sink".
//!
//! **Group commit.** [`AuditWriter::append`] copies a record's line into the shared batch
//! under the sink's chain lock and gives it its number (the record's `seq`: one record per
//! append, in chain order). A call waiting in [`AuditWriter::committed`] first yields once to
//! its runtime, so the other calls ready at that moment append theirs too, then wakes the
//! writer thread, which takes the whole batch, writes it with as few `write(2)` as the output
//! allows (then `fsync`s it when synced), publishes how many records are written and wakes the
//! waiting calls (without blocking a runtime thread); the next batch gathers meanwhile. So
//! under load many calls share one write and one wake-up; an idle engine writes each record
//! at once. A batch over [`HIGH_WATER`] wakes the writer at once, and the watchdog thread
//! wakes it within 100 ms for records no call waits for.
//!
//! **Faults.** A write that fails (a full disk: `no_space`; `io_error`; a closed pipe:
//! `closed`; any other error: `write_error`) or one that has not returned for
//! [`STALL_AFTER`] (an unread pipe, a frozen disk: `stalled`) starts a [`Fault`]: every call
//! still waiting for its record and every new record is refused (the call answered
//! `AUDIT_UNAVAILABLE`), each refusal counted in the fault; the health watch
//! ([`AuditWriter::health`]) says why. The bytes not written are kept and written again every
//! [`RETRY_EVERY`] (a stalled write simply returns later), from the exact byte where the
//! output stopped, so the file never holds a record twice or half of one once the output
//! takes writes again. When everything appended is written, the fault is *cleared*; the sink
//! then writes its `audit_resumed` record with [`AuditWriter::resume`] and records are taken
//! again.
//!
//! A refused record takes no number (so no `seq`); a record whose caller stopped waiting is
//! still written, late, once the output recovers: the trail may hold records of refused
//! calls, never lack a record of an answered one.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use metrics::Gauge;

use crate::service::ops::metrics::MetricsRegistry;

/// A batch this large wakes the writer thread without waiting for a call to.
pub(crate) const HIGH_WATER: usize = 64 * 1024;
/// A write (or `fsync`) that has not returned for this long is a stalled output.
pub(crate) const STALL_AFTER: Duration = Duration::from_millis(500);
/// How often a failed output is tried again (from where it stopped).
pub(crate) const RETRY_EVERY: Duration = Duration::from_millis(250);
/// Bytes appended and not yet taken by the writer thread beyond which records are refused
/// (`backlog`): the output is slower than the calls.
pub(crate) const CAPACITY: usize = 4 << 20;
/// How often the watchdog thread checks for a stalled write.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// What the writer thread writes to.
pub(crate) trait Output: Send {
    /// One `write(2)`: how many bytes the output took.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// After each batch: `fsync` for a synced file; a no-op otherwise.
    fn sync(&mut self) -> io::Result<()>;
}

/// Any writer, never synced: each batch is done when `write` has taken it (and `flush`
/// returned).
pub(crate) struct Plain<W>(pub W);

impl<W: io::Write + Send> Output for Plain<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A file whose data is `fsync`ed (`fdatasync`) after each batch (`--audit-sync`).
pub(crate) struct Synced(pub std::fs::File);

impl Output for Synced {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::Write::write(&mut self.0, buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

/// Why the output is failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// `ENOSPC` (or a quota): a full disk.
    NoSpace,
    /// `EIO`.
    Io,
    /// The reader of the pipe is gone (`EPIPE`), or the output took 0 bytes.
    Closed,
    /// Any other write error.
    WriteError,
    /// A write or `fsync` has not returned for [`STALL_AFTER`].
    Stalled,
}

impl Cause {
    /// Every cause, for metrics registered at 0.
    pub const ALL: [Cause; 5] = [Cause::NoSpace, Cause::Io, Cause::Closed, Cause::WriteError, Cause::Stalled];

    /// The label in metrics, logs, `ErrorInfo` metadata and the `audit_resumed` record.
    pub fn label(self) -> &'static str {
        match self {
            Cause::NoSpace => "no_space",
            Cause::Io => "io_error",
            Cause::Closed => "closed",
            Cause::WriteError => "write_error",
            Cause::Stalled => "stalled",
        }
    }

    fn of(e: &io::Error) -> Cause {
        // EIO is 5 on every Unix the engine builds for.
        const EIO: i32 = 5;
        match e.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Cause::NoSpace,
            io::ErrorKind::BrokenPipe | io::ErrorKind::WriteZero => Cause::Closed,
            _ if e.raw_os_error() == Some(EIO) => Cause::Io,
            _ => Cause::WriteError,
        }
    }
}

/// A period in which the output did not take the records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) cause: Cause,
    /// The error (`No space left on device (os error 28)`), or how long a write had hung.
    pub(crate) error: String,
    /// When it began (wall clock, for the record).
    pub(crate) since: jiff::Timestamp,
    /// When it began (monotonic, for durations).
    pub(crate) began: Instant,
    /// Calls refused since it began: records refused, and waits given up.
    pub(crate) refused: u64,
    /// The first record not written when it began; it and the records after it, up to the
    /// `audit_resumed` record, were written after it cleared.
    pub(crate) first_delayed: u64,
    /// Everything appended is written again: the sink may resume.
    pub(crate) cleared: bool,
}

/// Why a record was refused, or a wait for one ended without it being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// More than [`CAPACITY`] bytes wait for the writer thread.
    Backlog,
    /// The output is failing.
    Fault(Cause),
    /// The writer is closed (shutting down).
    Closed,
}

/// The health the sink reports: `None` while the output takes records, else why not.
pub(crate) type Health = Option<Cause>;

struct State {
    /// Lines appended and not yet taken by the writer thread.
    buf: Vec<u8>,
    /// Records appended: the next record's number.
    appended: u64,
    /// When the write (or `fsync`) in progress began.
    writing_since: Option<Instant>,
    fault: Option<Fault>,
    /// Asked to close: write what is left, then stop.
    closing: bool,
    /// Closed before everything was written: the writer thread stops at its next chance.
    abandoned: bool,
    /// The writer thread has stopped (or never started).
    ended: bool,
    /// The last time a fault's ERROR line was logged (rate limit).
    last_error_log: Option<Instant>,
    /// Bytes of the writer thread's batch not yet taken by the output.
    unwritten_taken: usize,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer thread: a record in an empty batch, a close.
    work: Condvar,
    /// Wakes [`AuditWriter::close`] and [`AuditWriter::flush`].
    done: Condvar,
    /// Records the output has taken (and synced): every record numbered below it.
    written: AtomicU64,
    /// Set while a fault exists (the fast path of [`AuditWriter::append`] checks only this).
    faulted: AtomicBool,
    /// Wakes the calls waiting in [`AuditWriter::committed`].
    notify: tokio::sync::Notify,
    health: tokio::sync::watch::Sender<Health>,
    /// The application's registry: `reddog_audit_sink_up`, `reddog_audit_sink_faults_total`.
    metrics: MetricsRegistry,
    up: Gauge,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock leaves the state whole (every update is one assignment).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The write-ahead writer (see the module docs). Cheap to clone; clones share one output.
#[derive(Clone)]
pub(crate) struct AuditWriter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter").field("written", &self.shared.written.load(Ordering::Relaxed)).finish()
    }
}

/// Whether the poll found a wait over.
enum Poll {
    Written,
    Refused(Refusal),
    Waiting,
}

impl AuditWriter {
    /// Starts the writer thread on `out`, its health counted in `metrics`.
    pub(crate) fn start(out: Box<dyn Output>, metrics: MetricsRegistry) -> AuditWriter {
        let (health, _) = tokio::sync::watch::channel(None);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                buf: Vec::with_capacity(64 * 1024),
                appended: 0,
                writing_since: None,
                fault: None,
                closing: false,
                abandoned: false,
                ended: false,
                last_error_log: None,
                unwritten_taken: 0,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            written: AtomicU64::new(0),
            faulted: AtomicBool::new(false),
            notify: tokio::sync::Notify::new(),
            health,
            up: metrics.audit_sink_up(),
            metrics,
        });
        shared.up.set(1.0);
        let worker = shared.clone();
        let started = std::thread::Builder::new().name("reddog-audit".into()).spawn(move || run(&worker, out));
        // The watchdog: notices a write that hangs (the writer thread is inside it) and wakes
        // the waiting calls, whatever runtime they wait on (none needs a timer).
        let watched = Arc::downgrade(&shared);
        let _ = std::thread::Builder::new().name("reddog-audit-watch".into()).spawn(move || {
            loop {
                std::thread::sleep(WATCH_EVERY);
                let Some(s) = watched.upgrade() else { return };
                let mut st = lock(&s.state);
                if st.ended {
                    return;
                }
                detect_stall(&s, &mut st);
                if !st.buf.is_empty() {
                    s.work.notify_one();
                }
            }
        });
        if let Err(e) = started {
            let mut st = lock(&shared.state);
            st.ended = true;
            begin_fault(&shared, &mut st, Cause::WriteError, format!("the writer thread could not start: {e}"));
        }
        AuditWriter { shared }
    }

    /// Appends one record's line (with its `\n`); its number, or why it was refused (the
    /// refusal counted in the fault). Called under the sink's chain lock, so numbers follow
    /// the chain.
    pub(crate) fn append(&self, line: &[u8]) -> Result<u64, Refusal> {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        if let Some(f) = &mut st.fault {
            f.refused += 1;
            return Err(Refusal::Fault(f.cause));
        }
        if st.closing || st.ended {
            return Err(Refusal::Closed);
        }
        if st.buf.len() >= CAPACITY {
            return Err(Refusal::Backlog);
        }
        Ok(push(s, st, line))
    }

    /// The fault, if everything appended is written again (the sink writes its
    /// `audit_resumed` record, then [`AuditWriter::resume`]s).
    pub(crate) fn cleared(&self) -> Option<Fault> {
        if !self.shared.faulted.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.shared.state).fault.clone().filter(|f| f.cleared)
    }

    /// Appends the `audit_resumed` record's line and takes records again; its number. Called
    /// under the sink's chain lock, after [`AuditWriter::cleared`] returned the fault the
    /// line describes (nothing is appended in between: the lock is held).
    pub(crate) fn resume(&self, line: &[u8]) -> u64 {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        st.fault = None;
        s.faulted.store(false, Ordering::Release);
        let n = push(s, st, line);
        s.health.send_replace(None);
        s.up.set(1.0);
        n
    }

    /// Waits until record `n` is written (`Ok`), or the output fails or stalls first, or
    /// the writer closes without it (`Err`, the refusal counted in the fault). Never blocks
    /// a thread: the writer thread wakes the waiters after each batch and each error, the
    /// watchdog thread when a write hangs.
    pub(crate) async fn committed(&self, n: u64) -> Result<(), Refusal> {
        if self.shared.written.load(Ordering::Acquire) > n {
            return Ok(());
        }
        // One batch for every call ready now: they append while this one yields.
        tokio::task::yield_now().await;
        self.kick();
        loop {
            let notified = self.shared.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.poll(n) {
                Poll::Written => return Ok(()),
                Poll::Refused(why) => return Err(why),
                Poll::Waiting => {}
            }
            notified.await;
        }
    }

    fn poll(&self, n: u64) -> Poll {
        let s = &*self.shared;
        if s.written.load(Ordering::Acquire) > n {
            return Poll::Written;
        }
        let mut st = lock(&s.state);
        detect_stall(s, &mut st);
        if s.written.load(Ordering::Acquire) > n {
            return Poll::Written;
        }
        if let Some(f) = &mut st.fault {
            f.refused += 1;
            return Poll::Refused(Refusal::Fault(f.cause));
        }
        if st.ended || st.abandoned {
            return Poll::Refused(Refusal::Closed);
        }
        Poll::Waiting
    }

    /// Wakes the writer thread to take the batch (the first call of a batch to wait does).
    pub(crate) fn kick(&self) {
        let st = lock(&self.shared.state);
        if !st.buf.is_empty() {
            self.shared.work.notify_one();
        }
    }

    /// Checks for a stalled write (starting a fault when one has hung for [`STALL_AFTER`])
    /// and returns the current fault. The sink's upkeep task calls it every 100 ms.
    pub(crate) fn check(&self) -> Option<Fault> {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        detect_stall(s, &mut st);
        st.fault.clone()
    }

    /// The output's health, as it changes (the readiness probe follows it).
    pub(crate) fn health(&self) -> tokio::sync::watch::Receiver<Health> {
        self.shared.health.subscribe()
    }

    /// Waits (at most `timeout`) until every record appended so far is written; whether it was.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        let s = &*self.shared;
        let st = lock(&s.state);
        let target = st.appended;
        if !st.buf.is_empty() {
            s.work.notify_one();
        }
        let (_st, _) = s
            .done
            .wait_timeout_while(st, timeout, |st| s.written.load(Ordering::Acquire) < target && !st.ended)
            .unwrap_or_else(PoisonError::into_inner);
        s.written.load(Ordering::Acquire) >= target
    }

    /// Closes: refuses new records, lets the writer thread write what is left and stop,
    /// waiting at most `timeout`. When the output did not take everything in time (it fails
    /// or hangs), returns the bytes left unwritten and leaves the thread to stop at its next
    /// chance: the process can exit.
    pub(crate) fn close(&self, timeout: Duration) -> Result<(), usize> {
        let s = &*self.shared;
        let mut st = lock(&s.state);
        st.closing = true;
        s.work.notify_all();
        let (mut st, _) =
            s.done.wait_timeout_while(st, timeout, |st| !st.ended).unwrap_or_else(PoisonError::into_inner);
        let target = st.appended;
        let written = s.written.load(Ordering::Acquire);
        if st.ended && written >= target {
            return Ok(());
        }
        st.abandoned = true;
        let unwritten = st.buf.len() + st.unwritten_taken;
        drop(st);
        s.work.notify_all();
        s.notify.notify_waiters();
        Err(unwritten)
    }
}

/// Appends under the state lock; wakes the writer only for a batch over [`HIGH_WATER`] (a
/// waiting call wakes it: [`AuditWriter::committed`]).
fn push(s: &Shared, mut st: MutexGuard<'_, State>, line: &[u8]) -> u64 {
    let n = st.appended;
    st.appended += 1;
    st.buf.extend_from_slice(line);
    let full = st.buf.len() >= HIGH_WATER;
    drop(st);
    if full {
        s.work.notify_one();
    }
    n
}

/// Starts a fault (or, when one exists, records the later error's cause: a stall that turned
/// into an error), wakes the waiters and logs one ERROR line (at most one per 10 s).
fn begin_fault(s: &Shared, st: &mut State, cause: Cause, error: String) {
    match &mut st.fault {
        Some(f) => {
            if f.cause == Cause::Stalled && cause != Cause::Stalled {
                f.cause = cause;
                f.error = error;
                s.health.send_replace(Some(cause));
            }
            f.cleared = false;
        }
        None => {
            st.fault = Some(Fault {
                cause,
                error: error.clone(),
                since: jiff::Timestamp::now(),
                began: Instant::now(),
                refused: 0,
                first_delayed: s.written.load(Ordering::Acquire),
                cleared: false,
            });
            s.faulted.store(true, Ordering::Release);
            s.health.send_replace(Some(cause));
            s.up.set(0.0);
            s.metrics.audit_sink_fault(cause.label());
            if st.last_error_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                st.last_error_log = Some(Instant::now());
                tracing::error!(
                    cause = cause.label(),
                    error = %error,
                    "the audit trail cannot be written: calls are refused (AUDIT_UNAVAILABLE) and readiness is \
                     NOT_SERVING until it can; records not yet written are kept and retried"
                );
            }
        }
    }
    s.notify.notify_waiters();
}

fn detect_stall(s: &Shared, st: &mut State) {
    if st.fault.is_some() {
        return;
    }
    if let Some(since) = st.writing_since {
        let hung = since.elapsed();
        if hung >= STALL_AFTER {
            begin_fault(
                s,
                st,
                Cause::Stalled,
                format!("a write to the trail has not returned for {} ms", hung.as_millis()),
            );
        }
    }
}

/// Writes `batch[*off..]` with as many `write(2)` as the output needs, advancing `off` past
/// every byte taken, so a retry after an error starts exactly where the output stopped.
fn write_from(out: &mut dyn Output, batch: &[u8], off: &mut usize) -> io::Result<()> {
    while *off < batch.len() {
        match out.write(&batch[*off..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the output took 0 bytes")),
            Ok(n) => *off += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The writer thread: takes the batch, writes and syncs it, publishes the records written;
/// on an error keeps the rest and tries again every [`RETRY_EVERY`].
fn run(s: &Shared, mut out: Box<dyn Output>) {
    let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut off = 0usize;
    // The batch holds the records numbered below `upto`.
    let mut upto = 0u64;
    loop {
        {
            let mut st = lock(&s.state);
            if off == batch.len() {
                while st.buf.is_empty() && !st.closing && !st.abandoned {
                    st = s.work.wait(st).unwrap_or_else(PoisonError::into_inner);
                }
                if st.buf.is_empty() || st.abandoned {
                    st.ended = true;
                    drop(st);
                    s.done.notify_all();
                    s.notify.notify_waiters();
                    return;
                }
                batch.clear();
                if batch.capacity() > CAPACITY {
                    batch = Vec::with_capacity(64 * 1024);
                }
                std::mem::swap(&mut st.buf, &mut batch);
                upto = st.appended;
                off = 0;
            }
            st.unwritten_taken = batch.len() - off;
            st.writing_since = Some(Instant::now());
        }
        let result = write_from(&mut *out, &batch, &mut off).and_then(|()| out.sync());
        let mut st = lock(&s.state);
        st.writing_since = None;
        st.unwritten_taken = batch.len() - off;
        match result {
            Ok(()) => {
                s.written.store(upto, Ordering::Release);
                let all_written = st.buf.is_empty();
                if let Some(f) = st.fault.as_mut().filter(|_| all_written) {
                    f.cleared = true;
                }
                drop(st);
                s.notify.notify_waiters();
                s.done.notify_all();
            }
            Err(e) => {
                begin_fault(s, &mut st, Cause::of(&e), e.to_string());
                s.done.notify_all();
                let (st, _) = s
                    .work
                    .wait_timeout_while(st, RETRY_EVERY, |st| !st.abandoned)
                    .unwrap_or_else(PoisonError::into_inner);
                if st.abandoned {
                    let mut st = st;
                    st.ended = true;
                    drop(st);
                    s.done.notify_all();
                    s.notify.notify_waiters();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reddog_audit_sink_faults_total` is registered at 0 for exactly the causes a fault counts.
    #[test]
    fn the_metrics_register_every_fault_cause_and_no_other() {
        let labels: Vec<&str> = Cause::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(labels, crate::service::ops::metrics::AUDIT_SINK_FAULT_CAUSES.to_vec());
    }
}
