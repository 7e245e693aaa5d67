//! Bounded diagnostic logs for what any client can trigger on every request: a refused
//! token is counted every time (`reddog_token_rejections_total{method,reason}`), but logged
//! at most once per reason per [`REFUSAL_LOG_INTERVAL`], as one WARN line with the number of
//! refusals since the previous line of that reason and the peer address of the latest one.
//! A client sending garbage tokens as fast as it can writes a few lines a minute, not one per
//! call.
//!
//! A refusal after the last line of a burst is logged with the next refusal of its reason
//! (its count includes it); the metric has it at once.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::service::edge::transport::ConnInfo;
use crate::service::ops::metrics::Method;

/// At most one line per refusal reason per this interval.
pub(crate) const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The peer address of a request, when the transport knows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Peer(pub Option<SocketAddr>);

impl Peer {
    /// The request's peer: from the engine's transport ([`ConnInfo`]), else tonic's.
    pub(crate) fn of<T>(request: &tonic::Request<T>) -> Peer {
        Peer(request.extensions().get::<ConnInfo>().and_then(|c| c.remote_addr).or_else(|| request.remote_addr()))
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(addr) => addr.fmt(f),
            None => f.write_str("unknown"),
        }
    }
}

#[derive(Debug, Default)]
struct Slot {
    last_line: Option<Instant>,
    /// Refusals not yet in a line.
    pending: u64,
}

/// The per-reason log bound (see the module docs).
#[derive(Debug)]
pub(crate) struct RefusalLog {
    interval: Duration,
    slots: Mutex<HashMap<&'static str, Slot>>,
}

impl RefusalLog {
    /// A bound of one line per reason per `interval`.
    pub(crate) fn new(interval: Duration) -> RefusalLog {
        RefusalLog { interval, slots: Mutex::new(HashMap::new()) }
    }

    /// Notes one refused token; logs a line if its reason's interval has passed.
    pub(crate) fn refused(&self, method: Method, reason: &'static str, peer: Peer) {
        if let Some(count) = self.note(Instant::now(), reason) {
            tracing::warn!(
                method = method.name(),
                reason,
                count,
                peer = %peer,
                interval_secs = self.interval.as_secs(),
                "tokens refused (count since the previous line of this reason; peer of the latest)"
            );
        }
    }

    /// Counts a refusal at `now`; `Some(count)` when a line is due, with the refusals it
    /// reports.
    fn note(&self, now: Instant, reason: &'static str) -> Option<u64> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = slots.entry(reason).or_default();
        slot.pending += 1;
        if slot.last_line.is_some_and(|t| now.saturating_duration_since(t) < self.interval) {
            return None;
        }
        slot.last_line = Some(now);
        Some(std::mem::take(&mut slot.pending))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_refusals_gives_one_line_per_reason_per_interval_with_every_refusal_counted() {
        let log = RefusalLog::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let mut lines = Vec::new();
        // 10,000 refusals of each of two reasons spread over 25 seconds.
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_micros(i * 2_500);
            for reason in ["malformed", "expired"] {
                if let Some(count) = log.note(now, reason) {
                    lines.push((reason, now - t0, count));
                }
            }
        }
        // Lines at 0 s, 10 s and 20 s for each reason.
        assert_eq!(lines.len(), 6, "{lines:?}");
        for reason in ["malformed", "expired"] {
            let mine: Vec<_> = lines.iter().filter(|l| l.0 == reason).collect();
            assert_eq!(mine[0].2, 1, "the first refusal is logged at once");
            assert_eq!(mine[1].2, 4_000, "the next line counts every refusal since");
            let logged: u64 = mine.iter().map(|l| l.2).sum();
            let pending = log.slots.lock().unwrap()[reason].pending;
            assert_eq!(logged + pending, 10_000, "no refusal uncounted");
        }
    }
}
