//! How long a task woken now waits before a worker thread runs it: the signal the engine sheds
//! calls by (`super::guard`) and the reason it does not blame a peer for answers the server
//! itself has not yet got round to sending (`super::transport`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::service::ops::metrics::MetricsRegistry;

/// How often [`WorkerWait`]'s probe measures.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(5);

/// How many of the probe's latest measurements [`WorkerWait::now`] looks at.
const SUSTAINED: usize = 4;

/// How long a task woken now waits before a worker thread runs it — what a call arriving now
/// would wait for a thread at each step (its connection's task reading it, its own task, the
/// connection writing its answer). A probe task sleeps [`PROBE_EVERY`] and measures how late it
/// wakes: every task made runnable before it runs first, so its lateness is the queue's length
/// in time. [`Self::now`] is the wait that has lasted: the least of the last [`SUSTAINED`]
/// measurements (the latest one counted as what the probe is overdue now, if more), so a queue
/// that stays long shows within a few probes, while one stall of the whole process (the
/// machine busy with something else) does not make the engine shed. The probe ends with the
/// last handle.
#[derive(Debug)]
pub(crate) struct WorkerWait {
    base: Instant,
    /// When the probe is due to wake, in µs since `base`.
    due_us: AtomicU64,
    /// The probe's last [`SUSTAINED`] measurements of how late it woke, in µs, the latest at
    /// `next - 1`.
    recent_us: [AtomicU64; SUSTAINED],
    next: AtomicUsize,
    /// The most it was late since [`Self::take_peak`] last read it, in µs.
    peak_us: AtomicU64,
}

impl WorkerWait {
    fn with(base: Instant, late_us: u64) -> WorkerWait {
        WorkerWait {
            base,
            due_us: AtomicU64::new(u64::MAX),
            recent_us: std::array::from_fn(|_| AtomicU64::new(late_us)),
            next: AtomicUsize::new(0),
            peak_us: AtomicU64::new(late_us),
        }
    }

    /// Starts the probe on the current runtime, its wait shown in `metrics`.
    pub(crate) fn spawn(metrics: &MetricsRegistry) -> Arc<WorkerWait> {
        let wait = Arc::new(WorkerWait::with(Instant::now(), 0));
        let weak = Arc::downgrade(&wait);
        let gauge = metrics.worker_wait_gauge();
        tokio::spawn(async move {
            loop {
                let due = Instant::now() + PROBE_EVERY;
                {
                    let Some(wait) = weak.upgrade() else { return };
                    wait.due_us.store(wait.us(due), Ordering::Release);
                }
                tokio::time::sleep_until(due).await;
                let Some(wait) = weak.upgrade() else { return };
                let late = Instant::now().saturating_duration_since(due);
                let late_us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
                let slot = wait.next.fetch_add(1, Ordering::AcqRel) % SUSTAINED;
                wait.recent_us[slot].store(late_us, Ordering::Release);
                wait.peak_us.fetch_max(late_us, Ordering::AcqRel);
                gauge.set(wait.now().as_secs_f64());
            }
        });
        wait
    }

    /// A wait that stays `wait` (no probe), for tests.
    #[cfg(test)]
    pub(crate) fn fixed(wait: Duration) -> Arc<WorkerWait> {
        Arc::new(WorkerWait::with(Instant::now(), u64::try_from(wait.as_micros()).unwrap_or(u64::MAX)))
    }

    fn us(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.base).as_micros()).unwrap_or(u64::MAX)
    }

    fn overdue_us(&self) -> u64 {
        self.us(Instant::now()).saturating_sub(self.due_us.load(Ordering::Acquire))
    }

    /// The wait for a worker that has lasted (see the type's docs).
    pub(crate) fn now(&self) -> Duration {
        let latest = self.next.load(Ordering::Acquire).wrapping_sub(1) % SUSTAINED;
        let mut sustained = u64::MAX;
        for (i, recent) in self.recent_us.iter().enumerate() {
            let mut us = recent.load(Ordering::Acquire);
            if i == latest {
                us = us.max(self.overdue_us());
            }
            sustained = sustained.min(us);
        }
        Duration::from_micros(sustained)
    }

    /// The longest wait since the last call (or since the probe started), the wait now
    /// included; starts the next period.
    pub(crate) fn take_peak(&self) -> Duration {
        Duration::from_micros(self.peak_us.swap(0, Ordering::AcqRel).max(self.overdue_us()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe measures how late a task woken now runs. One stall of the only worker (60
    /// ms) shows in the peak, not as a wait that lasted; a worker kept busy for 60 ms at a time
    /// over several probes shows as one.
    #[tokio::test(flavor = "current_thread")]
    async fn the_wait_for_a_worker_is_how_late_a_woken_task_runs_for_a_while() {
        let wait = WorkerWait::spawn(&MetricsRegistry::new());
        tokio::time::sleep(PROBE_EVERY * 8).await;
        let _ = wait.take_peak();
        // One stall: this task does not yield for 60 ms.
        std::thread::sleep(Duration::from_millis(60));
        tokio::time::sleep(PROBE_EVERY * 2).await;
        assert!(wait.now() < Duration::from_millis(50), "one stall counted as a wait: {:?}", wait.now());
        let peak = wait.take_peak();
        assert!(peak >= Duration::from_millis(50), "{peak:?}");
        // A queue that lasts: every time the probe is due, 60 ms of work is ahead of it.
        for _ in 0..SUSTAINED + 1 {
            std::thread::sleep(Duration::from_millis(60));
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(wait.now() >= Duration::from_millis(40), "{:?}", wait.now());
        let started = std::time::Instant::now();
        while wait.now() > Duration::from_millis(20) {
            assert!(started.elapsed() < Duration::from_secs(5), "the wait stayed at {:?}", wait.now());
            tokio::time::sleep(PROBE_EVERY).await;
        }
    }
}
