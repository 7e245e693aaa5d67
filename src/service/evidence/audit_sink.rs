//! The audit sink: the engine's own trail of every round step, apart from the diagnostic
//! logs (docs/AUDIT.md, "The sink"). No log level, filter or subscriber decides whether a
//! record is written.
//!
//! Each record ([`crate::audit::record::Record`]: its envelope, then the handler's
//! [`Event`]) is serialised by serde into one buffer the sink keeps, under the sink's lock:
//! the lock gives the record its `seq`, its `prev` (the SHA-256 of the previous line) and its
//! place in the output, so the chain in the file is the chain in memory. The line is then
//! appended to the write-ahead writer ([`crate::service::evidence::audit_writer`]); [`AuditSink::record`] returns
//! the record's `seq`, and the handler answers only after [`AuditSink::written`] says the
//! output took it (group commit: the calls of one batch share one `write(2)`).
//!
//! When the output cannot take the record (behind by [`crate::service::evidence::audit_writer::CAPACITY`],
//! failing, stalled) or the sink has stopped, the record is refused, or the wait for it ends,
//! and so does the call that wanted it: `UNAVAILABLE` with reason `AUDIT_UNAVAILABLE` (the
//! platform retries, on this replica or another), counted in
//! `reddog_audit_refused_total{reason}`. A call is never answered without its record; a
//! refused record takes no `seq`, so the chain has no gap. When the output takes records
//! again, the first record is `audit_resumed` (when writes failed, why, how many calls were
//! refused); the upkeep task ([`AuditSink::spawn_upkeep`]) writes it within 100 ms.
//!
//! [`AuditSink::checkpoint`] writes a `checkpoint` record when round records were written
//! since the last one: every interval (the upkeep task) and after every
//! [`AuditOptions::checkpoint_records`] round records; with a [`CheckpointSigner`] it carries
//! `key_id` and `signature`. [`AuditSink::stop`] writes `audit_stopped`, signed the same
//! way, and closes the output.
//!
//! A file sink ([`open_file`]) starts each run on a fresh line: a torn last line (a record
//! cut off by a crash or a full disk) is closed off with a line feed and reported (an ERROR
//! line, and `torn_tail_bytes` in `audit_started`), never glued to the next record; the last
//! whole record is named in `audit_started.previous`, so a later cut of that run's end shows.

use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use metrics::Counter;
use sha2::{Digest, Sha256};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use std::borrow::Cow;

use crate::audit::record::{
    At, AuditResumed, AuditStarted, AuditStopped, Checkpoint, Envelope, Event, Hex32, HexBytes, Odds, PreviousRecord,
    REVISION, Record, SCHEMA, TableDigest, stopped_message,
};
use crate::service::build_info;
use crate::service::error::{ERROR_DOMAIN, ErrorReason};
use crate::service::evidence::audit_record::checkpoint_message;
use crate::service::evidence::audit_writer::{AuditWriter, Cause, Health, Output, Plain, Refusal, Synced};
use crate::service::ops::metrics::MetricsRegistry;
use crate::service::rules::tables::Tables;

/// Signs checkpoints: the key ring's signing key, when it has one (Ed25519 over
/// [`checkpoint_message`]; `reddog audit-log --public-key` verifies it); without it
/// checkpoints carry no `key_id` and no `signature`.
pub trait CheckpointSigner: Send + Sync {
    /// The key's id, as listed with its public key.
    fn key_id(&self) -> &str;
    /// The signature over `message`.
    fn sign(&self, message: &[u8]) -> Vec<u8>;
}

/// Why a record was not written (and the call that wanted it is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuditRefused {
    /// The output is behind by a full batch.
    #[error("the audit trail's output is behind; retry")]
    Backlog,
    /// Writes to the output fail (a full disk, an I/O error, a closed pipe).
    #[error("the audit trail's output fails ({}); retry", .0.label())]
    OutputFailed(Cause),
    /// A write to the output has not returned for 500 ms (an unread pipe, a frozen disk).
    #[error("the audit trail's output is stalled; retry")]
    Stalled,
    /// The sink has written `audit_stopped` (the server is shutting down).
    #[error("the audit trail has stopped (shutting down)")]
    Stopped,
    /// `audit_started` is not written yet (the server is not serving yet).
    #[error("the audit trail has not started")]
    NotStarted,
}

impl AuditRefused {
    /// The `reason` label of `reddog_audit_refused_total`, and the `cause` in `ErrorInfo`.
    pub fn label(self) -> &'static str {
        match self {
            AuditRefused::Backlog => "backlog",
            AuditRefused::OutputFailed(_) => "output_failed",
            AuditRefused::Stalled => "stalled",
            AuditRefused::Stopped => "stopped",
            AuditRefused::NotStarted => "not_started",
        }
    }

    fn of(why: Refusal) -> AuditRefused {
        match why {
            Refusal::Backlog => AuditRefused::Backlog,
            Refusal::Fault(Cause::Stalled) => AuditRefused::Stalled,
            Refusal::Fault(cause) => AuditRefused::OutputFailed(cause),
            Refusal::Closed => AuditRefused::Stopped,
        }
    }

    fn count(self, metrics: &MetricsRegistry) -> AuditRefused {
        metrics.audit_refused(self.label());
        self
    }
}

impl From<AuditRefused> for Status {
    /// `UNAVAILABLE` (retryable, with nothing dealt or paid that is not recorded), with an
    /// `ErrorInfo` of reason `AUDIT_UNAVAILABLE` and the cause in its metadata.
    fn from(why: AuditRefused) -> Status {
        let details = ErrorDetails::with_error_info(
            ErrorReason::AuditUnavailable.as_str_name(),
            ERROR_DOMAIN,
            [("cause".to_string(), why.label().to_string())],
        );
        Status::with_error_details(Code::Unavailable, why.to_string(), details)
    }
}

/// How the sink is set up.
pub struct AuditOptions {
    /// The replica's id (`--replica-id`, else `$POD_NAME`, else the host name).
    pub replica: String,
    /// How often a checkpoint is written while records are written.
    pub checkpoint_interval: Duration,
    /// A checkpoint after this many round records (`--audit-checkpoint-records`; 0: by time only).
    pub checkpoint_records: u64,
    /// Signs checkpoints and `audit_stopped`, when a signing key exists.
    pub signer: Option<Arc<dyn CheckpointSigner>>,
    /// Where records written and refused are counted: the application's registry.
    pub metrics: MetricsRegistry,
}

impl AuditOptions {
    /// Replica `local`, checkpoints every 60 s or 1,000 round records, unsigned, counted in a
    /// registry of its own (tests, benchmarks, embedding).
    pub fn local() -> AuditOptions {
        AuditOptions {
            replica: "local".to_string(),
            checkpoint_interval: Duration::from_secs(60),
            checkpoint_records: DEFAULT_CHECKPOINT_RECORDS,
            signer: None,
            metrics: MetricsRegistry::new(),
        }
    }
}

/// `--audit-checkpoint-records`' default.
pub const DEFAULT_CHECKPOINT_RECORDS: u64 = 1000;

impl std::fmt::Debug for AuditOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditOptions")
            .field("replica", &self.replica)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("checkpoint_records", &self.checkpoint_records)
            .field("signed", &self.signer.is_some())
            .finish()
    }
}

/// What a file sink found at the end of the file it appends to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tail {
    /// The last whole record.
    pub previous: Option<PreviousRecord<'static>>,
    /// The bytes of a torn last line, closed off with a line feed.
    pub torn_bytes: Option<u64>,
}

/// The chain's state, and the buffer each record is serialised into.
struct Chain {
    /// The next record's `seq`.
    seq: u64,
    /// SHA-256 of the last record's line.
    prev: [u8; 32],
    /// Round records since the last checkpoint.
    since_checkpoint: u64,
    /// When the last checkpoint was written (or the run began).
    last_checkpoint: Instant,
    stopped: bool,
    /// The line being written (capacity kept across records).
    line: Vec<u8>,
}

struct Inner {
    replica: String,
    run: String,
    checkpoint_interval: Duration,
    checkpoint_records: u64,
    sync: bool,
    tail: Tail,
    signer: Option<Arc<dyn CheckpointSigner>>,
    out: AuditWriter,
    chain: Mutex<Chain>,
    written: Counter,
    metrics: MetricsRegistry,
}

/// The audit sink (see the module docs). Cheap to clone; clones share one chain.
#[derive(Clone)]
pub struct AuditSink {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditSink").field("replica", &self.inner.replica).field("run", &self.inner.run).finish()
    }
}

fn lock(m: &Mutex<Chain>) -> MutexGuard<'_, Chain> {
    // A panic while holding the lock happens before the chain advances: the state is whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh run id: 32 lower-case hex digits from the operating system's random source.
fn new_run_id() -> String {
    use rand::TryRng as _;
    let mut bytes = [0u8; 16];
    if rand::rngs::SysRng.try_fill_bytes(&mut bytes).is_err() {
        // Still distinct per start in practice: the clock's nanoseconds and the process id.
        let now = jiff::Timestamp::now().as_nanosecond();
        bytes[..12].copy_from_slice(&now.to_be_bytes()[4..]);
        bytes[12..].copy_from_slice(&std::process::id().to_be_bytes());
    }
    hex::encode(bytes)
}

/// The longest last line [`open_file`] reads back to find the previous record.
const TAIL_READ: u64 = 1 << 20;

/// Opens `path` for appending (created if missing, with `sync`: each batch `fsync`ed), closes
/// off a torn last line with a line feed, and says what the file ended with.
pub(crate) fn open_file(path: &std::path::Path, sync: bool) -> std::io::Result<(Box<dyn Output>, Tail)> {
    let mut file = std::fs::OpenOptions::new().create(true).read(true).append(true).open(path)?;
    let tail = repair_tail(&mut file)?;
    if sync {
        file.sync_data()?;
    }
    let out: Box<dyn Output> = if sync { Box::new(Synced(file)) } else { Box::new(Plain(file)) };
    Ok((out, tail))
}

/// Reads the end of `file` (at most [`TAIL_READ`] bytes): the last whole record, and a torn
/// last line, which it closes off with `\n`. A last line that is a whole record without its
/// `\n` (cut exactly there) gets its `\n` and is the previous record, not a torn one.
fn repair_tail(file: &mut std::fs::File) -> std::io::Result<Tail> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Tail::default());
    }
    let start = len.saturating_sub(TAIL_READ);
    file.seek(SeekFrom::Start(start))?;
    let mut end = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    Read::by_ref(file).take(len - start).read_to_end(&mut end)?;
    let mut tail = Tail::default();
    let complete = match end.iter().rposition(|&b| b == b'\n') {
        _ if end.last() == Some(&b'\n') => &end[..],
        Some(nl) => {
            let torn = &end[nl + 1..];
            if previous_of(torn).is_some() {
                tail.previous = previous_of(torn);
            } else {
                tail.torn_bytes = Some(torn.len() as u64);
            }
            file.write_all(b"\n")?;
            &end[..=nl]
        }
        None => {
            // One line longer than what was read, or a file of one torn line.
            if previous_of(&end).is_some() || start > 0 {
                tail.previous = previous_of(&end);
            } else {
                tail.torn_bytes = Some(end.len() as u64);
            }
            file.write_all(b"\n")?;
            &[][..]
        }
    };
    if tail.previous.is_none() {
        let body = complete.strip_suffix(b"\n").unwrap_or(complete);
        let last = body.rsplit(|&b| b == b'\n').next().unwrap_or(&[]);
        tail.previous = previous_of(last);
    }
    Ok(tail)
}

/// The record `line` holds, by its place and hash; `None` if it is not a whole record.
fn previous_of(line: &[u8]) -> Option<PreviousRecord<'static>> {
    let scan: crate::audit::record::Scan<'_> = serde_json::from_slice(line).ok()?;
    if scan.schema.as_deref() != Some(SCHEMA) {
        return None;
    }
    Some(PreviousRecord {
        replica: Cow::Owned(scan.replica?.into_owned()),
        run: Cow::Owned(scan.run?.into_owned()),
        seq: scan.seq?,
        event: Cow::Owned(scan.event?.into_owned()),
        hash: Hex32(Sha256::digest(line).into()),
    })
}

impl AuditSink {
    /// Starts the sink on `out` (its writer thread) and writes `audit_started` with each
    /// table's rules digest.
    pub fn start(
        out: impl Write + Send + 'static,
        options: AuditOptions,
        tables: &Tables,
    ) -> Result<AuditSink, AuditRefused> {
        let sink = AuditSink::new(out, options);
        sink.begin(tables)?;
        Ok(sink)
    }

    /// Starts the writer thread on `out` without writing anything yet: every record is
    /// refused until [`AuditSink::begin`] has written `audit_started` (`reddog serve` begins
    /// after printing its `listening on` line, so that line comes first on stdout).
    pub fn new(out: impl Write + Send + 'static, options: AuditOptions) -> AuditSink {
        AuditSink::on_output(Box::new(Plain(out)), options, false, Tail::default())
    }

    /// As [`AuditSink::new`], on an output of [`open_file`] (or any [`Output`]); `sync`
    /// says whether it `fsync`s each batch (recorded in `audit_started`).
    pub(crate) fn on_output(out: Box<dyn Output>, options: AuditOptions, sync: bool, tail: Tail) -> AuditSink {
        AuditSink {
            inner: Arc::new(Inner {
                replica: options.replica,
                run: new_run_id(),
                checkpoint_interval: options.checkpoint_interval,
                checkpoint_records: options.checkpoint_records,
                sync,
                tail,
                signer: options.signer,
                out: AuditWriter::start(out, options.metrics.clone()),
                chain: Mutex::new(Chain {
                    seq: 0,
                    prev: [0; 32],
                    since_checkpoint: 0,
                    last_checkpoint: Instant::now(),
                    stopped: false,
                    line: Vec::with_capacity(2048),
                }),
                written: options.metrics.audit_records(),
                metrics: options.metrics,
            }),
        }
    }

    /// Writes `audit_started` (the run's record 0) with each table's rules and digest; a
    /// no-op once it is written. (Tables change only by a restart, which starts a new run.)
    /// No call waits for it: every later record is written after it.
    pub fn begin(&self, tables: &Tables) -> Result<(), AuditRefused> {
        if lock(&self.inner.chain).seq > 0 {
            return Ok(());
        }
        if let Some(torn) = self.inner.tail.torn_bytes {
            tracing::error!(
                torn_bytes = torn,
                "the audit trail file ended in a torn line (a record cut off by a crash or a full disk): closed it \
                 off with a line feed before this run's first record; `reddog audit-log` reports it"
            );
        }
        let listed: Vec<TableDigest<'_>> = tables
            .iter()
            .map(|t| TableDigest {
                table_id: Cow::Borrowed(&t.id),
                rules_digest: Hex32(t.digest().0),
                decks: t.table.decks().get(),
                paytable: Odds(Cow::Borrowed(t.table.paytable())),
                min_bet: t.table.limits().min().0,
                max_bet: t.table.limits().max().0,
                currency: Cow::Borrowed(t.currency.code()),
                minor_unit_exponent: t.currency.minor_unit_exponent(),
                sandbox: t.sandbox,
            })
            .collect();
        self.record(Event::AuditStarted(AuditStarted {
            engine_version: Cow::Borrowed(build_info::VERSION),
            git_commit: Cow::Borrowed(build_info::GIT_COMMIT),
            tables: listed,
            checkpoint_interval_secs: self.inner.checkpoint_interval.as_secs(),
            revision: REVISION,
            checkpoint_records: self.inner.checkpoint_records,
            sync: self.inner.sync,
            previous: self.inner.tail.previous.clone(),
            torn_tail_bytes: self.inner.tail.torn_bytes,
        }))
        .map(|_| ())
    }

    /// The replica id every record carries.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// This run's id (32 hex digits).
    pub fn run(&self) -> &str {
        &self.inner.run
    }

    /// The checkpoint interval.
    pub fn checkpoint_interval(&self) -> Duration {
        self.inner.checkpoint_interval
    }

    /// The output's health, as it changes: `None` while it takes records, else why not (the
    /// readiness probe follows it).
    pub(crate) fn health(&self) -> tokio::sync::watch::Receiver<Health> {
        self.inner.out.health()
    }

    /// Writes one record, or refuses it (see the module docs); its `seq`, to wait for with
    /// [`AuditSink::written`]. Refusals are counted.
    pub fn record(&self, event: Event<'_>) -> Result<u64, AuditRefused> {
        let mut chain = lock(&self.inner.chain);
        self.resume_if_cleared(&mut chain);
        let written = self.write(&mut chain, event);
        drop(chain);
        written.map_err(|why| why.count(&self.inner.metrics))
    }

    /// Waits until record `seq` is written (write-ahead: its call is answered after this);
    /// `Err` when the output fails or stalls first (counted), or the sink closes without it.
    pub async fn written(&self, seq: u64) -> Result<(), AuditRefused> {
        self.inner.out.committed(seq).await.map_err(|why| AuditRefused::of(why).count(&self.inner.metrics))
    }

    /// Serialises, hashes and appends one record under the chain lock; a checkpoint after
    /// every [`AuditOptions::checkpoint_records`] round records.
    fn write(&self, chain: &mut Chain, event: Event<'_>) -> Result<u64, AuditRefused> {
        if chain.stopped {
            return Err(AuditRefused::Stopped);
        }
        if chain.seq == 0 && !matches!(event, Event::AuditStarted(_)) {
            return Err(AuditRefused::NotStarted);
        }
        let round_record = matches!(
            event,
            Event::SeedCommitted(_) | Event::RoundStarted(_) | Event::SeatsDecided(_) | Event::RoundSettled(_)
        );
        self.serialise(chain, event)?;
        let n = self.inner.out.append(&chain.line).map_err(AuditRefused::of)?;
        let seq = self.advance(chain, n);
        if round_record {
            chain.since_checkpoint += 1;
            if self.inner.checkpoint_records > 0 && chain.since_checkpoint >= self.inner.checkpoint_records {
                // A refusal here is counted; the next round record tries again.
                if let Err(why) = self.write_checkpoint(chain) {
                    why.count(&self.inner.metrics);
                }
            }
        }
        Ok(seq)
    }

    /// The record's line (with its `\n`) in `chain.line`, chained to the head.
    fn serialise(&self, chain: &mut Chain, event: Event<'_>) -> Result<(), AuditRefused> {
        let Chain { seq, prev, line, .. } = chain;
        line.clear();
        let record = Record {
            envelope: Envelope {
                schema: Cow::Borrowed(SCHEMA),
                replica: Cow::Borrowed(&self.inner.replica),
                run: Cow::Borrowed(&self.inner.run),
                seq: *seq,
                prev: Hex32(*prev),
                at: At(jiff::Timestamp::now()),
            },
            event,
        };
        // Serialising strings, integers, booleans and arrays into a Vec cannot fail.
        serde_json::to_writer(&mut *line, &record).map_err(|_| AuditRefused::OutputFailed(Cause::WriteError))?;
        line.push(b'\n');
        Ok(())
    }

    /// Moves the head past the line just appended as record `n`; its `seq`.
    fn advance(&self, chain: &mut Chain, n: u64) -> u64 {
        debug_assert_eq!(n, chain.seq, "the writer numbers records as the chain does");
        let body = &chain.line[..chain.line.len() - 1];
        chain.prev = Sha256::digest(body).into();
        chain.seq += 1;
        self.inner.written.increment(1);
        n
    }

    /// After a fault has cleared: writes `audit_resumed` and takes records again.
    fn resume_if_cleared(&self, chain: &mut Chain) {
        let Some(fault) = self.inner.out.cleared() else { return };
        let event = Event::AuditResumed(AuditResumed {
            failed_at: At(fault.since),
            cause: Cow::Borrowed(fault.cause.label()),
            error: Cow::Borrowed(&fault.error),
            refused_calls: fault.refused,
            first_delayed_seq: fault.first_delayed,
        });
        if self.serialise(chain, event).is_err() {
            return;
        }
        let n = self.inner.out.resume(&chain.line);
        let seq = self.advance(chain, n);
        tracing::warn!(
            cause = fault.cause.label(),
            refused_calls = fault.refused,
            failed_for_ms = fault.began.elapsed().as_millis(),
            seq,
            "the audit trail is written again: calls are answered and readiness is SERVING; the gap is recorded \
             (audit_resumed)"
        );
    }

    /// Writes a `checkpoint` record if round records were written since the last one;
    /// returns whether it did.
    pub fn checkpoint(&self) -> Result<bool, AuditRefused> {
        let mut chain = lock(&self.inner.chain);
        if chain.since_checkpoint == 0 || chain.stopped {
            return Ok(false);
        }
        self.resume_if_cleared(&mut chain);
        let written = self.write_checkpoint(&mut chain);
        drop(chain);
        written.map(|_| true).map_err(|why| why.count(&self.inner.metrics))
    }

    /// A checkpoint record over the head, signed when a signer is configured.
    fn write_checkpoint(&self, chain: &mut Chain) -> Result<u64, AuditRefused> {
        let (seq, head) = (chain.seq, chain.prev);
        let signed = self
            .inner
            .signer
            .as_ref()
            .map(|s| (s.key_id(), s.sign(&checkpoint_message(&self.inner.replica, &self.inner.run, seq, &head))));
        let event = Event::Checkpoint(Checkpoint {
            records: seq,
            head: Hex32(head),
            key_id: signed.as_ref().map(|(id, _)| Cow::Borrowed(*id)),
            signature: signed.as_ref().map(|(_, sig)| HexBytes(Cow::Borrowed(sig))),
        });
        let n = self.write(chain, event)?;
        chain.since_checkpoint = 0;
        chain.last_checkpoint = Instant::now();
        Ok(n)
    }

    /// Every 100 ms until the sink stops (a tokio task; [`crate::service::Application`] starts it):
    /// notices a stalled output, writes `audit_resumed` once a fault has cleared (so
    /// readiness returns without waiting for a call), repeats a fault's ERROR line once a
    /// minute with the calls refused so far, and writes a checkpoint every interval while
    /// round records are written.
    pub fn spawn_upkeep(&self) -> tokio::task::JoinHandle<()> {
        let sink = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut reminded = Instant::now();
            loop {
                tick.tick().await;
                let Some(inner) = sink.upgrade() else { return };
                let sink = AuditSink { inner };
                let mut chain = lock(&sink.inner.chain);
                if chain.stopped {
                    return;
                }
                sink.resume_if_cleared(&mut chain);
                let due = chain.last_checkpoint.elapsed() >= sink.inner.checkpoint_interval;
                if due && chain.since_checkpoint > 0 {
                    // A refusal is counted; the next tick tries again.
                    if let Err(why) = sink.write_checkpoint(&mut chain) {
                        why.count(&sink.inner.metrics);
                    }
                }
                drop(chain);
                if let Some(f) = sink.inner.out.check().filter(|f| !f.cleared)
                    && reminded.elapsed() >= Duration::from_secs(60)
                    && f.began.elapsed() >= Duration::from_secs(60)
                {
                    reminded = Instant::now();
                    tracing::error!(
                        cause = f.cause.label(),
                        error = %f.error,
                        refused_calls = f.refused,
                        failing_for_s = f.began.elapsed().as_secs(),
                        "the audit trail still cannot be written: calls are refused (AUDIT_UNAVAILABLE)"
                    );
                }
            }
        })
    }

    /// The current fault of the output, if any (after checking for a stall).
    #[cfg(test)]
    pub(crate) fn fault(&self) -> Option<super::audit_writer::Fault> {
        self.inner.out.check()
    }

    /// Waits (at most `timeout`) until every record so far is written; whether it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.inner.out.flush(timeout)
    }

    /// Writes `audit_stopped` (once; signed like a checkpoint, over its own message), closes
    /// the output (waiting at most `timeout`: an output that takes nothing cannot hold the
    /// exit; what it did not take is logged as an error), and refuses records from then on.
    pub fn stop(&self, timeout: Duration) {
        let mut chain = lock(&self.inner.chain);
        if !chain.stopped {
            self.resume_if_cleared(&mut chain);
            let (records, head) = (chain.seq, chain.prev);
            let signed =
                self.inner.signer.as_ref().map(|s| {
                    (s.key_id(), s.sign(&stopped_message(&self.inner.replica, &self.inner.run, records, &head)))
                });
            let event = Event::AuditStopped(AuditStopped {
                records,
                head: Some(Hex32(head)),
                key_id: signed.as_ref().map(|(id, _)| Cow::Borrowed(*id)),
                signature: signed.as_ref().map(|(_, sig)| HexBytes(Cow::Borrowed(sig))),
            });
            if let Err(why) = self.write(&mut chain, event) {
                self.inner.metrics.audit_refused(why.label());
            }
            chain.stopped = true;
        }
        drop(chain);
        if let Err(unwritten) = self.inner.out.close(timeout) {
            tracing::error!(
                unwritten_bytes = unwritten,
                timeout_ms = timeout.as_millis(),
                "the audit trail's output did not take the last records within the flush timeout; exiting without \
                 the last records (audit_stopped, checkpoints, records of calls that were refused: every answered \
                 call's record was written before its answer)"
            );
        }
    }
}

/// The replica id when none is configured: `$POD_NAME`, else the host name, else `unknown`.
pub fn default_replica_id() -> String {
    let pod = std::env::var("POD_NAME").ok().filter(|s| !s.trim().is_empty());
    pod.or_else(|| {
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
    })
    .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.trim().is_empty()))
    .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Table;

    /// `reddog_audit_refused_total` is registered at 0 for exactly the labels refusals count.
    #[test]
    fn the_metrics_register_every_refusal_label_and_no_other() {
        let mut labels: Vec<&str> = [
            AuditRefused::Backlog,
            AuditRefused::OutputFailed(Cause::Io),
            AuditRefused::Stalled,
            AuditRefused::Stopped,
            AuditRefused::NotStarted,
        ]
        .iter()
        .map(|r| r.label())
        .collect();
        let mut registered = crate::service::ops::metrics::AUDIT_REFUSED_REASONS.to_vec();
        labels.sort_unstable();
        registered.sort_unstable();
        assert_eq!(labels, registered);
    }

    /// An output that keeps what it was given.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<u8>>>);

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn options() -> AuditOptions {
        AuditOptions {
            replica: "replica-a".into(),
            checkpoint_interval: Duration::from_secs(60),
            checkpoint_records: 0,
            signer: None,
            metrics: MetricsRegistry::new(),
        }
    }

    fn lines(rec: &Recorder) -> Vec<String> {
        String::from_utf8(rec.0.lock().unwrap().clone()).unwrap().lines().map(str::to_string).collect()
    }

    /// A round record (checkpoints count these).
    fn round_event() -> Event<'static> {
        Event::SeedCommitted(crate::audit::record::SeedCommitted {
            round_id: Cow::Borrowed("r"),
            table_id: Cow::Borrowed("default"),
            nonce: 1,
            decks: 1,
            commitment: Hex32([1; 32]),
            rules_digest: Hex32([2; 32]),
            expires_at_unix_ms: 0,
            sandbox: false,
        })
    }

    fn stop_event() -> Event<'static> {
        Event::AuditStopped(AuditStopped { records: 0, head: None, key_id: None, signature: None })
    }

    #[test]
    fn records_chain_by_the_hash_of_each_line_and_parse_with_the_envelope_first() {
        let rec = Recorder::default();
        let sink = AuditSink::start(rec.clone(), options(), &Tables::single(Table::default())).unwrap();
        for _ in 0..3 {
            sink.checkpoint().unwrap();
            sink.record(stop_event()).unwrap();
        }
        sink.stop(Duration::from_secs(5));
        let lines = lines(&rec);
        assert!(lines.len() >= 5, "{lines:?}");
        let mut prev = "0".repeat(64);
        for (seq, line) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let keys = crate::audit::record::keys_in_order(line).unwrap();
            assert_eq!(keys[..7], ["schema", "replica", "run", "seq", "prev", "at", "event"], "{line}");
            assert_eq!(v["schema"], "reddog-audit-v1");
            assert_eq!(v["replica"], "replica-a");
            assert_eq!(v["run"], sink.run());
            assert_eq!(v["seq"], seq as u64);
            assert_eq!(v["prev"], prev.as_str(), "record {seq} chains to the one before");
            let at = v["at"].as_str().unwrap();
            assert!(at.parse::<jiff::Timestamp>().is_ok(), "{at}");
            assert_eq!(at.len(), "2026-12-02T01:02:03.123456789Z".len(), "nanoseconds, UTC: {at}");
            prev = hex::encode(Sha256::digest(line.as_bytes()));
        }
        assert_eq!(sink.run().len(), 32);
        let first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(first["event"], "audit_started");
        assert_eq!(first["tables"][0]["table_id"], "default");
        assert_eq!(first["checkpoint_interval_secs"], 60);
        let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        assert_eq!(last["event"], "audit_stopped");
        assert_eq!(last["records"], lines.len() as u64 - 1, "records written before it");
    }

    /// The one record type, both ways: a record of each kind the handlers write, built from
    /// a real round (two seats, one raise), written by the sink and read back from its line as
    /// a [`Record`], is the value written, with the chained envelope; and a parsed record,
    /// serialised, gives its line's bytes back and parses to the same value again.
    #[test]
    fn each_kind_of_record_the_sink_writes_parses_back_to_the_value_written() {
        use crate::audit::record::{
            Amounts, Cards, DealClass, Decisions, RoundSettled, RoundStarted, SeatMoney, SeatsDecided, SeedCommitted,
            Steps,
        };
        use crate::fairness::{ServerSeed, Transcript};
        use crate::game::{Card, Decision, MAX_SEATS, Money, Round, StackedDeck};

        let table = Table::default();
        let card = |t: &str| Card::from_text(t).unwrap();
        // 4 and 10: spread 5, decided, then the 7 falls between.
        let mut deck = StackedDeck::new([card("4c"), card("Th"), card("7s")]);
        let bets = [Money(500), Money(1_000)];
        let mut round = Round::start(&table, &bets, &mut deck).unwrap();
        let dealt = round.cards();
        let (class, spread) = DealClass::of(round.class());
        assert_eq!((class, spread), (DealClass::Spread, 5));
        let step = vec![(0, Decision::Raise), (1, Decision::Stand)];
        round.decide_all(&step).unwrap();
        round.close();
        let settlement = round.settle(table.paytable()).unwrap();
        let mut cards = settlement.cards.to_vec();
        cards.extend(settlement.third);
        let steps = vec![step.clone()];
        let mut money = [SeatMoney::default(); MAX_SEATS];
        let commitment = ServerSeed::from_bytes([7; 32]).commitment();
        let unspecified = crate::service::rules::tables::Currency::unspecified();
        let digest =
            crate::fairness::TableRules::of(&table, unspecified.code(), unspecified.minor_unit_exponent(), false)
                .digest()
                .0;
        let (t0, t1) = (Transcript([1; 32]), Transcript([2; 32]));
        let written = [
            Event::SeedCommitted(SeedCommitted {
                round_id: Cow::Borrowed("rt-1"),
                table_id: Cow::Borrowed("default"),
                nonce: 9,
                decks: 1,
                commitment: commitment.into(),
                rules_digest: Hex32(digest),
                expires_at_unix_ms: 1_796_083_200_000,
                sandbox: false,
            }),
            Event::RoundStarted(RoundStarted {
                round_id: Cow::Borrowed("rt-1"),
                table_id: Cow::Borrowed("default"),
                currency: Cow::Borrowed("EUR"),
                exponent: 2,
                commitment: commitment.into(),
                rules_digest: Hex32(digest),
                nonce: 9,
                decks: 1,
                step: 0,
                transcript: t0.into(),
                bets: Amounts(Cow::Borrowed(&bets)),
                cards: Cards(Cow::Borrowed(&dealt)),
                hand_class: class,
                spread,
                sandbox: false,
            }),
            Event::SeatsDecided(SeatsDecided {
                round_id: Cow::Borrowed("rt-1"),
                table_id: Cow::Borrowed("default"),
                commitment: commitment.into(),
                parent_step: 0,
                parent_transcript: t0.into(),
                step: 1,
                transcript: t1.into(),
                decisions: Decisions(Cow::Borrowed(&step)),
                raised_amount: 500,
                complete: true,
            }),
            Event::RoundSettled(RoundSettled {
                round_id: Cow::Borrowed("rt-1"),
                table_id: Cow::Borrowed("default"),
                currency: Cow::Borrowed("EUR"),
                exponent: 2,
                commitment: commitment.into(),
                rules_digest: Hex32(digest),
                decks: 1,
                paytable: Odds(Cow::Borrowed(table.paytable())),
                step: 1,
                transcript: t1.into(),
                cards: Cards(Cow::Borrowed(&cards)),
                hand_class: class,
                spread,
                decisions: Steps(Cow::Borrowed(&steps)),
                seats: SeatMoney::all(&settlement.seats, &mut money),
                total_staked: settlement.total_staked.0,
                total_returned: settlement.total_returned.0,
                sandbox: false,
            }),
        ];
        let rec = Recorder::default();
        let sink = AuditSink::start(rec.clone(), options(), &Tables::single(table.clone())).unwrap();
        for e in &written {
            sink.record(e.clone()).unwrap();
        }
        sink.checkpoint().unwrap();
        sink.stop(Duration::from_secs(5));
        let lines = lines(&rec);
        let names: Vec<&str> = lines
            .iter()
            .map(|l| {
                serde_json::from_str::<Record<'_>>(l).map(|r| r.event.name()).unwrap_or_else(|e| panic!("{e}: {l}"))
            })
            .collect();
        assert_eq!(
            names,
            [
                "audit_started",
                "seed_committed",
                "round_started",
                "seats_decided",
                "round_settled",
                "checkpoint",
                "audit_stopped"
            ]
        );
        let mut prev = Hex32([0; 32]);
        for (seq, line) in lines.iter().enumerate() {
            let parsed: Record<'static> = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&parsed).unwrap(), *line, "the type writes the line back");
            let again: Record<'static> = serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
            assert_eq!(again, parsed);
            let e = &parsed.envelope;
            assert_eq!((e.schema.as_ref(), e.replica.as_ref(), e.run.as_ref()), (SCHEMA, "replica-a", sink.run()));
            assert_eq!((e.seq, e.prev), (seq as u64, prev));
            prev = Hex32(Sha256::digest(line.as_bytes()).into());
            match (seq, &parsed.event) {
                (0, Event::AuditStarted(a)) => {
                    let [t] = &a.tables[..] else { panic!("one table: {line}") };
                    assert_eq!((t.table_id.as_ref(), t.rules_digest), ("default", Hex32(digest)));
                    assert_eq!((&*t.paytable.0, t.decks, t.min_bet), (table.paytable(), 1, table.limits().min().0));
                }
                (1..=4, event) => assert_eq!(*event, written[seq - 1], "record {seq} as written"),
                (5, Event::Checkpoint(c)) => assert_eq!((c.records, c.key_id.as_ref()), (5, None)),
                (6, Event::AuditStopped(a)) => assert_eq!(a.records, 6),
                (_, other) => panic!("record {seq}: {other:?}"),
            }
        }
        let Event::RoundSettled(settled) = &written[3] else { unreachable!() };
        assert_eq!(settled.seats.len(), 2);
        assert_eq!(settled.seats[0], SeatMoney { bet: 500, raised: true, stake: 1_000, returned: 2_000 });
    }

    #[test]
    fn a_checkpoint_vouches_for_the_head_and_only_after_new_records() {
        let rec = Recorder::default();
        let sink = AuditSink::start(rec.clone(), options(), &Tables::single(Table::default())).unwrap();
        assert!(!sink.checkpoint().unwrap(), "nothing since start: no checkpoint");
        sink.record(round_event()).unwrap();
        assert!(sink.checkpoint().unwrap());
        assert!(!sink.checkpoint().unwrap(), "nothing new since the last one");
        sink.flush(Duration::from_secs(5));
        let lines = lines(&rec);
        let cp: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
        assert_eq!(cp["event"], "checkpoint");
        assert_eq!(cp["records"], 2);
        assert_eq!(cp["head"], cp["prev"]);
        assert_eq!(cp["head"].as_str().unwrap(), hex::encode(Sha256::digest(lines[1].as_bytes())));
        assert!(cp.get("signature").is_none() && cp.get("key_id").is_none(), "no signer, no signature");
    }

    #[test]
    fn a_configured_signer_signs_the_checkpoint_message() {
        struct Fake;
        impl CheckpointSigner for Fake {
            fn key_id(&self) -> &str {
                "k9"
            }
            fn sign(&self, message: &[u8]) -> Vec<u8> {
                Sha256::digest(message).to_vec()
            }
        }
        let rec = Recorder::default();
        let opts = AuditOptions { signer: Some(Arc::new(Fake)), ..options() };
        let sink = AuditSink::start(rec.clone(), opts, &Tables::single(Table::default())).unwrap();
        sink.record(round_event()).unwrap();
        sink.checkpoint().unwrap();
        sink.flush(Duration::from_secs(5));
        let cp: serde_json::Value = serde_json::from_str(&lines(&rec)[2]).unwrap();
        let head: [u8; 32] = hex::decode(cp["head"].as_str().unwrap()).unwrap().try_into().unwrap();
        let message = checkpoint_message("replica-a", sink.run(), 2, &head);
        assert_eq!(cp["key_id"], "k9");
        assert_eq!(cp["signature"].as_str().unwrap(), hex::encode(Sha256::digest(&message)));
    }

    /// What the test output does with a write.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Take,
        /// Takes `partial` bytes of the next write, then fails every write with this errno.
        Fail(i32),
        /// Every write blocks until the mode changes.
        Block,
    }

    struct FakeState {
        mode: Mode,
        partial: usize,
        taken: Vec<u8>,
        writes: usize,
    }

    /// An output the test drives (a full disk, EIO, a stalled pipe), keeping what it took.
    #[derive(Clone)]
    struct Fake(Arc<(Mutex<FakeState>, std::sync::Condvar)>);

    impl Fake {
        fn new() -> Fake {
            Fake(Arc::new((
                Mutex::new(FakeState { mode: Mode::Take, partial: 0, taken: Vec::new(), writes: 0 }),
                std::sync::Condvar::new(),
            )))
        }
        fn set(&self, mode: Mode, partial: usize) {
            let mut st = self.0.0.lock().unwrap();
            (st.mode, st.partial) = (mode, partial);
            self.0.1.notify_all();
        }
        fn taken(&self) -> Vec<u8> {
            self.0.0.lock().unwrap().taken.clone()
        }
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.taken()).unwrap().lines().map(str::to_string).collect()
        }
        fn sink(&self, opts: AuditOptions) -> AuditSink {
            let sink = AuditSink::on_output(Box::new(self.clone()), opts, false, Tail::default());
            sink.begin(&Tables::single(Table::default())).unwrap();
            sink
        }
    }

    impl Output for Fake {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (m, cv) = &*self.0;
            let mut st = m.lock().unwrap();
            st.writes += 1;
            loop {
                match st.mode {
                    Mode::Take => {
                        st.taken.extend_from_slice(buf);
                        return Ok(buf.len());
                    }
                    Mode::Fail(errno) => {
                        if st.partial > 0 {
                            let n = std::mem::take(&mut st.partial).min(buf.len());
                            st.taken.extend_from_slice(&buf[..n]);
                            return Ok(n);
                        }
                        return Err(std::io::Error::from_raw_os_error(errno));
                    }
                    Mode::Block => st = cv.wait(st).unwrap(),
                }
            }
        }
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Every line parses, chains to the one before it in its run, and the run starts at 0.
    fn assert_whole_chain(lines: &[String]) {
        let mut prev = "0".repeat(64);
        for (seq, line) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
            assert_eq!(v["seq"], seq as u64, "{line}");
            assert_eq!(v["prev"], prev.as_str(), "record {seq} chains to the one before");
            prev = hex::encode(Sha256::digest(line.as_bytes()));
        }
    }

    async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "{what}: not within 10 s");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn a_call_waits_until_the_output_took_its_record() {
        let out = Fake::new();
        let sink = out.sink(options());
        out.set(Mode::Block, 0);
        let seq = sink.record(stop_event()).unwrap();
        let waiting = sink.written(seq);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut waiting).await.is_err(),
            "answered while the output had not taken the record"
        );
        out.set(Mode::Take, 0);
        assert_eq!(waiting.await, Ok(()));
        assert!(String::from_utf8(out.taken()).unwrap().lines().count() > seq as usize, "the record is out first");
    }

    /// A full disk (ENOSPC after half a line) and EIO: the waiting call and every new record
    /// are refused at once, the health says why; once the output takes writes again the rest
    /// of the batch is written from the byte where it stopped, and the next record is
    /// `audit_resumed`, with the cause and the count of refused calls. The trail has no torn
    /// line and no gap.
    #[tokio::test]
    async fn a_failing_output_refuses_calls_then_resumes_and_records_the_gap() {
        for (errno, cause) in [(28, Cause::NoSpace), (5, Cause::Io)] {
            let out = Fake::new();
            let sink = out.sink(options());
            let health = sink.health();
            for _ in 0..3 {
                let seq = sink.record(stop_event()).unwrap();
                sink.written(seq).await.unwrap();
            }
            out.set(Mode::Fail(errno), 40);
            let seq = sink.record(stop_event()).unwrap();
            assert_eq!(sink.written(seq).await, Err(AuditRefused::OutputFailed(cause)), "errno {errno}");
            assert_eq!(*health.borrow(), Some(cause));
            let mut refused = 1;
            for _ in 0..5 {
                assert_eq!(sink.record(stop_event()), Err(AuditRefused::OutputFailed(cause)));
                refused += 1;
            }
            let torn = out.taken();
            assert!(!torn.ends_with(b"\n"), "the failed write left half a line");
            out.set(Mode::Take, 0);
            wait_for("the fault clears", || sink.fault().is_some_and(|f| f.cleared)).await;
            let seq = sink.record(stop_event()).expect("taken again after the gap record");
            sink.written(seq).await.unwrap();
            assert_eq!(*health.borrow(), None, "healthy again");
            let lines = out.lines();
            assert_whole_chain(&lines);
            let resumed: serde_json::Value = serde_json::from_str(&lines[lines.len() - 2]).unwrap();
            assert_eq!(resumed["event"], "audit_resumed", "{lines:?}");
            assert_eq!(resumed["cause"], cause.label());
            assert_eq!(resumed["refused_calls"], refused);
            assert_eq!(resumed["first_delayed_seq"], 4, "record 4 was the one cut off");
            assert!(resumed["error"].as_str().unwrap().contains(&format!("os error {errno}")), "{resumed}");
        }
    }

    /// An output whose write does not return (an unread pipe, a frozen disk): after
    /// `STALL_AFTER` the waiting call is refused `stalled`, new records too; when the write
    /// returns, the sink resumes with `audit_resumed`.
    #[tokio::test]
    async fn a_stalled_output_refuses_calls_after_the_stall_bound_and_resumes() {
        let out = Fake::new();
        let sink = out.sink(options());
        let health = sink.health();
        out.set(Mode::Block, 0);
        let seq = sink.record(stop_event()).unwrap();
        let began = Instant::now();
        assert_eq!(sink.written(seq).await, Err(AuditRefused::Stalled));
        let took = began.elapsed();
        assert!(took >= super::super::audit_writer::STALL_AFTER, "refused after {took:?}");
        assert!(took < Duration::from_secs(5), "refused after {took:?}");
        assert_eq!(*health.borrow(), Some(Cause::Stalled));
        assert_eq!(sink.record(stop_event()), Err(AuditRefused::Stalled));
        out.set(Mode::Take, 0);
        wait_for("the fault clears", || sink.fault().is_some_and(|f| f.cleared)).await;
        sink.written(sink.record(stop_event()).unwrap()).await.unwrap();
        let lines = out.lines();
        assert_whole_chain(&lines);
        let resumed: serde_json::Value = serde_json::from_str(&lines[lines.len() - 2]).unwrap();
        assert_eq!((resumed["event"].as_str(), resumed["cause"].as_str()), (Some("audit_resumed"), Some("stalled")));
        assert_eq!(resumed["refused_calls"], 2);
        assert_eq!(*health.borrow(), None);
    }

    #[test]
    fn stop_on_a_stuck_output_returns_in_time() {
        let out = Fake::new();
        let sink = out.sink(options());
        out.set(Mode::Block, 0);
        sink.record(stop_event()).unwrap();
        let began = Instant::now();
        sink.stop(Duration::from_millis(300));
        assert!(began.elapsed() < Duration::from_secs(3), "stop took {:?}", began.elapsed());
        assert_eq!(sink.record(stop_event()), Err(AuditRefused::Stopped));
        out.set(Mode::Take, 0);
    }

    #[test]
    fn a_checkpoint_follows_every_n_round_records_and_the_stop_record_is_signed() {
        struct Fake9;
        impl CheckpointSigner for Fake9 {
            fn key_id(&self) -> &str {
                "k9"
            }
            fn sign(&self, message: &[u8]) -> Vec<u8> {
                Sha256::digest(message).to_vec()
            }
        }
        let rec = Recorder::default();
        let opts = AuditOptions { checkpoint_records: 3, signer: Some(Arc::new(Fake9)), ..options() };
        let sink = AuditSink::start(rec.clone(), opts, &Tables::single(Table::default())).unwrap();
        for _ in 0..7 {
            sink.record(round_event()).unwrap();
        }
        sink.stop(Duration::from_secs(5));
        let lines = lines(&rec);
        let events: Vec<String> = lines
            .iter()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].as_str().unwrap().to_string())
            .collect();
        let want = ["audit_started", "seed_committed", "seed_committed", "seed_committed", "checkpoint"];
        assert_eq!(events[..5], want);
        assert_eq!(events[5..9], ["seed_committed", "seed_committed", "seed_committed", "checkpoint"]);
        assert_eq!(events[9..], ["seed_committed", "audit_stopped"]);
        let stop: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
        let head: [u8; 32] = hex::decode(stop["head"].as_str().unwrap()).unwrap().try_into().unwrap();
        assert_eq!(stop["head"], stop["prev"]);
        let message = crate::audit::record::stopped_message("replica-a", sink.run(), 10, &head);
        assert_eq!(stop["signature"].as_str().unwrap(), hex::encode(Sha256::digest(&message)));
        assert_ne!(message, checkpoint_message("replica-a", sink.run(), 10, &head), "its own message");
    }

    /// A file that ends in a torn line gets a line feed before the next run's first record,
    /// and the last whole record is named; a last record without its line feed is whole.
    #[test]
    fn a_torn_tail_is_closed_off_and_the_last_whole_record_named() {
        let dir = std::env::temp_dir().join(format!("reddog-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("trail.jsonl");
        let rec = Recorder::default();
        let sink = AuditSink::start(rec.clone(), options(), &Tables::single(Table::default())).unwrap();
        sink.stop(Duration::from_secs(5));
        let whole = rec.0.lock().unwrap().clone();
        let last = lines(&rec).pop().unwrap();
        let torn = b"{\"schema\":\"reddog-audit-v1\",\"replica\":\"x\",\"se";
        let cases: [(Vec<u8>, Option<u64>); 4] = [
            (Vec::new(), None),
            (whole.clone(), None),
            (whole[..whole.len() - 1].to_vec(), None),
            ([&whole[..], torn].concat(), Some(torn.len() as u64)),
        ];
        for (i, (content, torn)) in cases.into_iter().enumerate() {
            std::fs::write(&path, &content).unwrap();
            let (_out, tail) = open_file(&path, i == 3).unwrap();
            assert_eq!(tail.torn_bytes, torn, "case {i}");
            let after = std::fs::read(&path).unwrap();
            if content.is_empty() {
                assert!(after.is_empty() && tail.previous.is_none());
                continue;
            }
            assert!(after.ends_with(b"\n") && after.starts_with(&content), "case {i}: closed off, nothing lost");
            let previous = tail.previous.expect("the last whole record");
            assert_eq!((previous.seq, previous.event.as_ref()), (1, "audit_stopped"), "case {i}");
            assert_eq!(previous.hash, Hex32(Sha256::digest(last.as_bytes()).into()));
            assert_eq!(previous.run, sink.run());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_refusal_is_unavailable_audit_unavailable_with_its_cause() {
        for (why, cause) in [
            (AuditRefused::OutputFailed(Cause::NoSpace), "output_failed"),
            (AuditRefused::Stalled, "stalled"),
            (AuditRefused::Backlog, "backlog"),
        ] {
            let status = Status::from(why);
            assert_eq!(status.code(), Code::Unavailable);
            let info = status.get_details_error_info().unwrap();
            assert_eq!((info.reason.as_str(), info.metadata["cause"].as_str()), ("AUDIT_UNAVAILABLE", cause));
        }
    }
}
