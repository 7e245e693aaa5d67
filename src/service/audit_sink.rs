//! The audit sink: the engine's own trail of every round step, apart from the diagnostic
//! logs (docs/AUDIT.md, "The sink"). No log level, filter or subscriber decides whether a
//! record is written.
//!
//! Each record ([`crate::audit::record::Record`]: its envelope, then the handler's
//! [`Event`]) is serialised by serde
//! into one buffer the sink keeps, under the sink's lock: the lock gives the record its `seq`,
//! its `prev` (the SHA-256 of the previous line) and its place in the output, so the chain in
//! the file is the chain in memory. The line is then appended to a [`BatchWriter`] batch that
//! a dedicated thread writes (one `write(2)` per batch, at most
//! [`super::log_writer::FLUSH_EVERY`] later). The handler never waits for the output.
//!
//! When the output cannot keep up (the batch holds [`super::log_writer::CAPACITY`] bytes) or
//! has failed, or the sink has stopped, the record is refused and so is the call that wanted
//! it: `UNAVAILABLE` with reason `AUDIT_UNAVAILABLE` (the platform retries, on this replica or
//! another), counted in `reddog_audit_refused_total{reason}`. A call is never answered without
//! its record; a refused record takes no `seq`, so the chain has no gap.
//!
//! [`AuditSink::checkpoint`] writes a `checkpoint` record when records were written since
//! the last one ([`AuditSink::spawn_checkpoints`] calls it every interval); with a
//! [`CheckpointSigner`] it carries `key_id` and `signature`. [`AuditSink::stop`] writes
//! `audit_stopped` and flushes.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use metrics::Counter;
use sha2::{Digest, Sha256};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use std::borrow::Cow;

use super::audit_record::checkpoint_message;
use super::build_info;
use super::error::{ERROR_DOMAIN, ErrorReason};
use super::log_writer::BatchWriter;
use super::metrics::MetricsRegistry;
use super::tables::Tables;
use crate::audit::record::{
    At, AuditStarted, AuditStopped, Checkpoint, Envelope, Event, Hex32, HexBytes, Odds, Record, SCHEMA, TableDigest,
};

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
    /// A write to the output failed: records may be missing from it.
    #[error("the audit trail's output failed")]
    OutputFailed,
    /// The sink has written `audit_stopped` (the server is shutting down).
    #[error("the audit trail has stopped (shutting down)")]
    Stopped,
    /// `audit_started` is not written yet (the server is not serving yet).
    #[error("the audit trail has not started")]
    NotStarted,
}

impl AuditRefused {
    /// The `reason` label of `reddog_audit_refused_total`.
    pub fn label(self) -> &'static str {
        match self {
            AuditRefused::Backlog => "backlog",
            AuditRefused::OutputFailed => "output_failed",
            AuditRefused::Stopped => "stopped",
            AuditRefused::NotStarted => "not_started",
        }
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
    /// Signs checkpoints, when a signing key exists.
    pub signer: Option<Arc<dyn CheckpointSigner>>,
    /// Where records written and refused are counted: the application's registry.
    pub metrics: MetricsRegistry,
}

impl AuditOptions {
    /// Replica `local`, checkpoints every 60 s, unsigned, counted in a registry of its own
    /// (tests, benchmarks, embedding).
    pub fn local() -> AuditOptions {
        AuditOptions {
            replica: "local".to_string(),
            checkpoint_interval: Duration::from_secs(60),
            signer: None,
            metrics: MetricsRegistry::new(),
        }
    }
}

impl std::fmt::Debug for AuditOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditOptions")
            .field("replica", &self.replica)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("signed", &self.signer.is_some())
            .finish()
    }
}

/// The chain's state, and the buffer each record is serialised into.
struct Chain {
    /// The next record's `seq`.
    seq: u64,
    /// SHA-256 of the last record's line.
    prev: [u8; 32],
    /// Round records since the last checkpoint.
    since_checkpoint: u64,
    stopped: bool,
    /// The line being written (capacity kept across records).
    line: Vec<u8>,
}

struct Inner {
    replica: String,
    run: String,
    checkpoint_interval: Duration,
    signer: Option<Arc<dyn CheckpointSigner>>,
    out: BatchWriter,
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
        AuditSink {
            inner: Arc::new(Inner {
                replica: options.replica,
                run: new_run_id(),
                checkpoint_interval: options.checkpoint_interval,
                signer: options.signer,
                out: BatchWriter::start(out),
                chain: Mutex::new(Chain {
                    seq: 0,
                    prev: [0; 32],
                    since_checkpoint: 0,
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
    pub fn begin(&self, tables: &Tables) -> Result<(), AuditRefused> {
        if lock(&self.inner.chain).seq > 0 {
            return Ok(());
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
        }))
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

    /// Writes one record, or refuses it (see the module docs); refusals are counted.
    pub fn record(&self, event: Event<'_>) -> Result<(), AuditRefused> {
        let mut chain = lock(&self.inner.chain);
        let written = self.write(&mut chain, event);
        drop(chain);
        if let Err(why) = written {
            self.inner.metrics.audit_refused(why.label());
        }
        written
    }

    /// Serialises, hashes and appends one record under the chain lock.
    fn write(&self, chain: &mut Chain, event: Event<'_>) -> Result<(), AuditRefused> {
        if chain.stopped {
            return Err(AuditRefused::Stopped);
        }
        if self.inner.out.failed() {
            return Err(AuditRefused::OutputFailed);
        }
        if chain.seq == 0 && !matches!(event, Event::AuditStarted(_)) {
            return Err(AuditRefused::NotStarted);
        }
        let round_record = !matches!(event, Event::Checkpoint(_) | Event::AuditStarted(_));
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
        serde_json::to_writer(&mut *line, &record).map_err(|_| AuditRefused::OutputFailed)?;
        let hash: [u8; 32] = Sha256::digest(line.as_slice()).into();
        line.push(b'\n');
        self.inner
            .out
            .try_append(line)
            .map_err(|_| if self.inner.out.failed() { AuditRefused::OutputFailed } else { AuditRefused::Backlog })?;
        chain.seq += 1;
        chain.prev = hash;
        if round_record {
            chain.since_checkpoint += 1;
        }
        self.inner.written.increment(1);
        Ok(())
    }

    /// Writes a `checkpoint` record if round records were written since the last one;
    /// returns whether it did.
    pub fn checkpoint(&self) -> Result<bool, AuditRefused> {
        let mut chain = lock(&self.inner.chain);
        if chain.since_checkpoint == 0 || chain.stopped {
            return Ok(false);
        }
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
        let written = self.write(&mut chain, event);
        if written.is_ok() {
            chain.since_checkpoint = 0;
        }
        drop(chain);
        if let Err(why) = written {
            self.inner.metrics.audit_refused(why.label());
        }
        written.map(|()| true)
    }

    /// Writes `checkpoint` every interval while records are written, until the sink stops
    /// (a tokio task; [`super::Application`] starts it).
    pub fn spawn_checkpoints(&self) -> tokio::task::JoinHandle<()> {
        let sink = Arc::downgrade(&self.inner);
        let period = self.inner.checkpoint_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = sink.upgrade() else { return };
                let sink = AuditSink { inner };
                if lock(&sink.inner.chain).stopped {
                    return;
                }
                // A refusal is counted; the next tick tries again.
                let _ = sink.checkpoint();
            }
        })
    }

    /// Writes out every record so far and waits (at most `timeout`) until it is written.
    pub fn flush(&self, timeout: Duration) {
        self.inner.out.flush(timeout);
    }

    /// Writes `audit_stopped` (once), flushes (at most `timeout`: an output that takes
    /// nothing cannot hold the exit; what it did not take is logged as an error), and refuses
    /// records from then on.
    pub fn stop(&self, timeout: Duration) {
        let mut chain = lock(&self.inner.chain);
        if !chain.stopped {
            let records = chain.seq;
            if self.write(&mut chain, Event::AuditStopped(AuditStopped { records })).is_err() {
                self.inner.metrics.audit_refused("stop");
            }
            chain.stopped = true;
        }
        drop(chain);
        if let Err(unwritten) = self.inner.out.close(timeout) {
            tracing::error!(
                unwritten_bytes = unwritten,
                timeout_ms = timeout.as_millis(),
                "the audit trail's output took nothing for the whole flush timeout; exiting without the last \
                 records (their calls were answered; they are not in the trail)"
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
mod tests {
    use super::*;
    use crate::game::Table;
    use crate::service::log_writer::CAPACITY;

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
            signer: None,
            metrics: MetricsRegistry::new(),
        }
    }

    fn lines(rec: &Recorder) -> Vec<String> {
        String::from_utf8(rec.0.lock().unwrap().clone()).unwrap().lines().map(str::to_string).collect()
    }

    fn stop_event() -> Event<'static> {
        Event::AuditStopped(AuditStopped { records: 0 })
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
        let unspecified = super::super::tables::Currency::unspecified();
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
        sink.record(stop_event()).unwrap();
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
        sink.record(stop_event()).unwrap();
        sink.checkpoint().unwrap();
        sink.flush(Duration::from_secs(5));
        let cp: serde_json::Value = serde_json::from_str(&lines(&rec)[2]).unwrap();
        let head: [u8; 32] = hex::decode(cp["head"].as_str().unwrap()).unwrap().try_into().unwrap();
        let message = checkpoint_message("replica-a", sink.run(), 2, &head);
        assert_eq!(cp["key_id"], "k9");
        assert_eq!(cp["signature"].as_str().unwrap(), hex::encode(Sha256::digest(&message)));
    }

    #[test]
    fn a_stalled_output_refuses_records_without_a_gap_in_the_chain() {
        /// Accepts nothing until opened.
        struct Gate(Arc<(Mutex<bool>, std::sync::Condvar)>, Recorder);
        impl Write for Gate {
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
        let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let rec = Recorder::default();
        let sink =
            AuditSink::start(Gate(gate.clone(), rec.clone()), options(), &Tables::single(Table::default())).unwrap();
        // The writer thread holds one batch at the gate; the next fills to CAPACITY.
        let mut refused = 0;
        for _ in 0..(2 * CAPACITY / 100) {
            match sink.record(stop_event()) {
                Ok(()) => {}
                Err(AuditRefused::Backlog) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(refused > 0, "a full batch refuses records");
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        sink.stop(Duration::from_secs(10));
        let lines = lines(&rec);
        for (seq, line) in lines.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["seq"], seq as u64, "no seq skipped for a refused record");
        }
        assert_eq!(sink.record(stop_event()), Err(AuditRefused::Stopped), "nothing after audit_stopped");
    }

    #[test]
    fn a_failed_output_refuses_every_later_record() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = AuditSink::start(Broken, options(), &Tables::single(Table::default())).unwrap();
        sink.flush(Duration::from_secs(5));
        assert_eq!(sink.record(stop_event()), Err(AuditRefused::OutputFailed));
        let status = Status::from(AuditRefused::OutputFailed);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.get_details_error_info().unwrap().reason, "AUDIT_UNAVAILABLE");
    }
}
