//! Analysis of the engine's audit log (`reddog audit-log`): the JSON log lines of target
//! `reddog::audit` from any number of replicas, merged and ordered by timestamp, checked for
//! the misuse a stateless engine cannot prevent but can expose
//! (`docs/design/round-integrity.md` §5):
//!
//! - **commitment reuse** — one commitment whose `round_started` events have different
//!   transcripts `t_0` (another client seed, bets, …; retries of the same StartRound have the
//!   same `t_0` and are not flagged);
//! - **fork** — one round (commitment) with two different transcripts at the same Decide
//!   step, or settled with two different transcripts;
//! - **peek then play** — after the round was settled, a Decide or Settle on a token older
//!   than the one settled, or a Decide on the very token that was settled (a Decide identical
//!   to one logged before the settlement is a retry logged late, and is not reported);
//! - **round re-dealt** — one round id (per table) with rounds started under two or more
//!   commitments: the trace of "open many commitments for a round, peek each, show one"
//!   (a retried `CommitSeed` whose seed never starts a round is not flagged).
//!
//! The fields read (documented in docs/API.md, "Audit events"): `timestamp`, `target`,
//! `fields.event`, `fields.round_id`, `fields.commitment`, `fields.step`,
//! `fields.transcript`, for `round_started` `fields.table_id`, and for `seats_decided`
//! `fields.parent_step` and `fields.parent_transcript`. Pure: no I/O; the command reads the files.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

/// The log target of audit events.
pub const AUDIT_TARGET: &str = "reddog::audit";

/// What an audit event records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `round_started`: step 0, transcript `t_0`, at this table.
    Started { table_id: String },
    /// `seats_decided`: applied to the token at `parent`.
    Decided { parent_step: u32, parent_transcript: String },
    /// `round_settled`: the settled token's step and transcript.
    Settled,
}

/// One audit event about a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// When, as (seconds since the epoch, nanoseconds): the merge order.
    pub at: (i64, u32),
    /// The timestamp as written.
    pub timestamp: String,
    /// Where it was read: `file:line`.
    pub origin: String,
    pub kind: Kind,
    pub round_id: String,
    pub commitment: String,
    pub step: u32,
    pub transcript: String,
}

/// Why a line is not an event this analysis can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not JSON.
    NotJson,
    /// JSON, but not an audit event about a round step (another target, `seed_committed`).
    Other,
    /// An audit event of a round step without the transcript fields (an engine before
    /// round integrity), or with a field of the wrong type.
    Incomplete(&'static str),
}

/// Parses RFC 3339 `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` into (Unix seconds, nanos).
pub fn parse_timestamp(ts: &str) -> Option<(i64, u32)> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = ts.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = &ts[start..i];
        if digits.is_empty() {
            return None;
        }
        let mut padded = digits.chars().take(9).collect::<String>();
        while padded.len() < 9 {
            padded.push('0');
        }
        nanos = padded.parse().ok()?;
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        b'+' | b'-' if i + 6 == b.len() => {
            let sign = if b[i] == b'-' { -1 } else { 1 };
            sign * (num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60)
        }
        _ => return None,
    };
    // Days from the civil date (proleptic Gregorian), H. Hinnant's algorithm.
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + s - offset, nanos))
}

/// Reads one log line.
pub fn parse_line(line: &str, origin: String) -> Result<Event, Skip> {
    let v: Value = serde_json::from_str(line).map_err(|_| Skip::NotJson)?;
    if v.get("target").and_then(Value::as_str) != Some(AUDIT_TARGET) {
        return Err(Skip::Other);
    }
    let f = v.get("fields").ok_or(Skip::Other)?;
    let event = f.get("event").and_then(Value::as_str).ok_or(Skip::Other)?;
    let text = |k: &'static str| f.get(k).and_then(Value::as_str).map(str::to_owned).ok_or(Skip::Incomplete(k));
    let step = |k: &'static str| {
        f.get(k).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).ok_or(Skip::Incomplete(k))
    };
    let kind = match event {
        // Events of an engine before named tables carry no table id: the default table.
        "round_started" => {
            Kind::Started { table_id: f.get("table_id").and_then(Value::as_str).unwrap_or("default").to_owned() }
        }
        "seats_decided" => {
            Kind::Decided { parent_step: step("parent_step")?, parent_transcript: text("parent_transcript")? }
        }
        "round_settled" => Kind::Settled,
        _ => return Err(Skip::Other),
    };
    let timestamp = v.get("timestamp").and_then(Value::as_str).ok_or(Skip::Incomplete("timestamp"))?.to_owned();
    let at = parse_timestamp(&timestamp).ok_or(Skip::Incomplete("timestamp"))?;
    Ok(Event {
        at,
        timestamp,
        origin,
        kind,
        round_id: text("round_id")?,
        commitment: text("commitment")?,
        step: step("step")?,
        transcript: text("transcript")?,
    })
}

/// A misuse pattern found in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// One commitment started rounds with different inputs.
    CommitmentReuse { commitment: String, round_ids: Vec<String>, transcripts: Vec<String> },
    /// One round with two transcripts at the same step, or settled with two transcripts.
    Fork { commitment: String, round_id: String, what: String, transcripts: Vec<String> },
    /// One round id (at one table) started under two or more commitments.
    RoundReDealt { table_id: String, round_id: String, commitments: Vec<String> },
    /// A Decide or Settle, after the round was settled, on an older token or the settled one.
    PeekThenPlay {
        commitment: String,
        round_id: String,
        /// The settlement: step, transcript, where it was logged.
        settled: (u32, String, String),
        /// What came after: a description and where it was logged.
        then: String,
        origin: String,
    },
}

impl Finding {
    /// Whether the finding is about this commitment.
    pub fn concerns(&self, c: &str) -> bool {
        match self {
            Finding::CommitmentReuse { commitment, .. }
            | Finding::Fork { commitment, .. }
            | Finding::PeekThenPlay { commitment, .. } => commitment == c,
            Finding::RoundReDealt { commitments, .. } => commitments.iter().any(|x| x == c),
        }
    }

    /// A short name: `commitment-reuse`, `fork`, `peek-then-play`, `round-re-dealt`.
    pub fn name(&self) -> &'static str {
        match self {
            Finding::CommitmentReuse { .. } => "commitment-reuse",
            Finding::Fork { .. } => "fork",
            Finding::PeekThenPlay { .. } => "peek-then-play",
            Finding::RoundReDealt { .. } => "round-re-dealt",
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::CommitmentReuse { commitment, round_ids, transcripts } => write!(
                f,
                "commitment-reuse  commitment {commitment} started rounds with {} different inputs (round ids {}; t_0 {})",
                transcripts.len(),
                round_ids.join(", "),
                transcripts.join(", ")
            ),
            Finding::Fork { commitment, round_id, what, transcripts } => write!(
                f,
                "fork              round {round_id:?} (commitment {commitment}): {what}: {}",
                transcripts.join(", ")
            ),
            Finding::RoundReDealt { table_id, round_id, commitments } => write!(
                f,
                "round-re-dealt    round {round_id:?} at table {table_id:?} was started under {} commitments: {}",
                commitments.len(),
                commitments.join(", ")
            ),
            Finding::PeekThenPlay { commitment, round_id, settled, then, origin } => write!(
                f,
                "peek-then-play    round {round_id:?} (commitment {commitment}) was settled at step {} (transcript {}, {}), then {then} ({origin})",
                settled.0, settled.1, settled.2
            ),
        }
    }
}

/// Finds every misuse pattern in `events` (from any files, in any order).
pub fn analyse(mut events: Vec<Event>) -> Vec<Finding> {
    // Stable: events with the same timestamp keep their order of reading.
    events.sort_by_key(|e| e.at);
    let mut findings = Vec::new();
    let mut by_commitment: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    let mut by_round: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for e in &events {
        by_commitment.entry(e.commitment.as_str()).or_default().push(e);
        if let Kind::Started { table_id } = &e.kind {
            by_round.entry((table_id.as_str(), e.round_id.as_str())).or_default().insert(&e.commitment);
        }
    }
    for ((table_id, round_id), commitments) in by_round.into_iter().filter(|(_, c)| c.len() > 1) {
        findings.push(Finding::RoundReDealt {
            table_id: table_id.to_owned(),
            round_id: round_id.to_owned(),
            commitments: commitments.into_iter().map(str::to_owned).collect(),
        });
    }
    for (commitment, events) in by_commitment {
        let round_id = events[0].round_id.clone();
        // Commitment reuse: different t_0.
        let starts: BTreeSet<&str> =
            events.iter().filter(|e| matches!(e.kind, Kind::Started { .. })).map(|e| e.transcript.as_str()).collect();
        if starts.len() > 1 {
            let ids: BTreeSet<&str> =
                events.iter().filter(|e| matches!(e.kind, Kind::Started { .. })).map(|e| e.round_id.as_str()).collect();
            findings.push(Finding::CommitmentReuse {
                commitment: commitment.to_owned(),
                round_ids: ids.into_iter().map(str::to_owned).collect(),
                transcripts: starts.into_iter().map(str::to_owned).collect(),
            });
        }
        // Forks: two transcripts at one Decide step; two settled transcripts.
        let mut at_step: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
        for e in events.iter().filter(|e| matches!(e.kind, Kind::Decided { .. })) {
            at_step.entry(e.step).or_default().insert(&e.transcript);
        }
        for (step, transcripts) in at_step.into_iter().filter(|(_, t)| t.len() > 1) {
            findings.push(Finding::Fork {
                commitment: commitment.to_owned(),
                round_id: round_id.clone(),
                what: format!("{} different transcripts at step {step}", transcripts.len()),
                transcripts: transcripts.into_iter().map(str::to_owned).collect(),
            });
        }
        let settled: BTreeSet<&str> =
            events.iter().filter(|e| e.kind == Kind::Settled).map(|e| e.transcript.as_str()).collect();
        if settled.len() > 1 {
            findings.push(Finding::Fork {
                commitment: commitment.to_owned(),
                round_id: round_id.clone(),
                what: format!("settled with {} different transcripts", settled.len()),
                transcripts: settled.into_iter().map(str::to_owned).collect(),
            });
        }
        // Peek then play: after the first settlement, a step on an older or the settled token.
        let Some(first) = events.iter().position(|e| e.kind == Kind::Settled) else { continue };
        let s = events[first];
        // A Decide logged again after the settlement, identical to one logged before it (the
        // same token in, the same token out), is a retry that reached a slow replica late, or
        // a replica whose clock is a little behind: it plays nothing new.
        let decided_before: BTreeSet<(&str, &str)> = events[..first]
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::Decided { parent_transcript, .. } => Some((parent_transcript.as_str(), e.transcript.as_str())),
                _ => None,
            })
            .collect();
        for e in &events[first + 1..] {
            let then = match &e.kind {
                Kind::Decided { parent_transcript, .. }
                    if decided_before.contains(&(parent_transcript.as_str(), e.transcript.as_str())) =>
                {
                    None
                }
                Kind::Decided { parent_step, parent_transcript } if *parent_transcript == s.transcript => {
                    Some(format!("a Decide on the settled token itself (step {parent_step})"))
                }
                Kind::Decided { parent_step, .. } if *parent_step < s.step => {
                    Some(format!("a Decide on an older token (step {parent_step})"))
                }
                Kind::Settled if e.step < s.step => Some(format!("a Settle of an older token (step {})", e.step)),
                _ => None,
            };
            if let Some(then) = then {
                findings.push(Finding::PeekThenPlay {
                    commitment: commitment.to_owned(),
                    round_id: e.round_id.clone(),
                    settled: (s.step, s.transcript.clone(), s.origin.clone()),
                    then,
                    origin: e.origin.clone(),
                });
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> Kind {
        Kind::Started { table_id: "default".into() }
    }

    fn ev(at: i64, kind: Kind, commitment: &str, step: u32, transcript: &str) -> Event {
        Event {
            at: (at, 0),
            timestamp: at.to_string(),
            origin: format!("log:{at}"),
            kind,
            round_id: format!("round-{commitment}"),
            commitment: commitment.into(),
            step,
            transcript: transcript.into(),
        }
    }

    fn decided(at: i64, c: &str, parent: (u32, &str), step: u32, t: &str) -> Event {
        ev(at, Kind::Decided { parent_step: parent.0, parent_transcript: parent.1.into() }, c, step, t)
    }

    fn names(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(Finding::name).collect()
    }

    #[test]
    fn a_clean_round_with_retries_is_not_flagged() {
        let events = vec![
            ev(1, started(), "c", 0, "t0"),
            ev(2, started(), "c", 0, "t0"), // retried StartRound
            decided(3, "c", (0, "t0"), 1, "t1"),
            decided(4, "c", (0, "t0"), 1, "t1"), // retried Decide
            decided(5, "c", (1, "t1"), 2, "t2"),
            ev(6, Kind::Settled, "c", 2, "t2"),
            ev(7, Kind::Settled, "c", 2, "t2"), // retried Settle
        ];
        assert_eq!(analyse(events), vec![]);
    }

    #[test]
    fn each_pattern_is_found_whatever_the_order_of_reading() {
        let mut events = vec![
            // reuse: two different t_0 under one commitment
            ev(1, started(), "reuse", 0, "a0"),
            ev(2, started(), "reuse", 0, "b0"),
            // fork: two different Decides from t0
            ev(1, started(), "fork", 0, "t0"),
            decided(2, "fork", (0, "t0"), 1, "raise"),
            decided(3, "fork", (0, "t0"), 1, "stand"),
            // peek then play: settle t1, then decide on t1 and settle t0
            ev(1, started(), "peek", 0, "p0"),
            decided(2, "peek", (0, "p0"), 1, "p1"),
            ev(3, Kind::Settled, "peek", 1, "p1"),
            decided(4, "peek", (1, "p1"), 2, "p2"),
            ev(5, Kind::Settled, "peek", 0, "p0"),
        ];
        events.reverse();
        let found = analyse(events);
        let by = |c: &str| names(&found.iter().filter(|f| f.concerns(c)).cloned().collect::<Vec<_>>());
        assert_eq!(by("reuse"), vec!["commitment-reuse"]);
        assert_eq!(by("fork"), vec!["fork"]);
        assert_eq!(by("peek"), vec!["fork", "peek-then-play", "peek-then-play"]);
        assert!(found.iter().all(|f| !f.to_string().is_empty()));
    }

    #[test]
    fn a_round_id_started_under_two_commitments_is_re_dealt() {
        let mut a = ev(1, started(), "c1", 0, "a0");
        let mut b = ev(2, started(), "c2", 0, "b0");
        let mut other_table = ev(3, Kind::Started { table_id: "vip".into() }, "c3", 0, "c0");
        for e in [&mut a, &mut b, &mut other_table] {
            e.round_id = "r-1".into();
        }
        let found = analyse(vec![a.clone(), ev(2, Kind::Settled, "c1", 0, "a0"), b, other_table]);
        assert_eq!(
            found,
            vec![Finding::RoundReDealt {
                table_id: "default".into(),
                round_id: "r-1".into(),
                commitments: vec!["c1".into(), "c2".into()]
            }]
        );
        // A retried StartRound (one commitment) is not a re-deal.
        assert_eq!(analyse(vec![a.clone(), a]), vec![]);
    }

    #[test]
    fn a_settle_before_the_decide_in_time_is_what_counts() {
        // Decide on t0 first, then settle the result: normal. The same two events with the
        // settle of t0 first and the Decide on t0 after it: peek then play.
        let normal = vec![
            ev(1, started(), "c", 0, "t0"),
            decided(2, "c", (0, "t0"), 1, "t1"),
            ev(3, Kind::Settled, "c", 1, "t1"),
        ];
        assert_eq!(analyse(normal), vec![]);
        let peek = vec![
            ev(1, started(), "c", 0, "t0"),
            ev(2, Kind::Settled, "c", 0, "t0"),
            decided(3, "c", (0, "t0"), 1, "t1"),
        ];
        assert_eq!(names(&analyse(peek)), vec!["peek-then-play"]);
    }

    #[test]
    fn a_decide_retried_after_the_settlement_is_not_play_but_a_new_one_is() {
        let mut events = vec![
            ev(1, started(), "c", 0, "t0"),
            decided(2, "c", (0, "t0"), 1, "t1"),
            ev(3, Kind::Settled, "c", 1, "t1"),
            decided(4, "c", (0, "t0"), 1, "t1"), // the same Decide, logged late by a slow replica
        ];
        assert_eq!(analyse(events.clone()), vec![]);
        events.push(decided(5, "c", (0, "t0"), 1, "t1-other")); // another Decide on the old token
        assert_eq!(names(&analyse(events)), vec!["fork", "peek-then-play"]);
    }

    #[test]
    fn timestamps_parse_to_a_total_order() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse_timestamp("2026-12-01T12:34:56.5Z"), Some((1_796_128_496, 500_000_000)));
        assert_eq!(parse_timestamp("2026-12-01T13:34:56.000000500+01:00"), Some((1_796_128_496, 500)));
        assert!(parse_timestamp("2026-12-01 12:34").is_none());
        assert!(parse_timestamp("yesterday").is_none());
    }

    #[test]
    fn lines_are_read_by_target_and_event() {
        let line = r#"{"timestamp":"2026-12-01T12:00:00.000001Z","level":"INFO","fields":{"event":"seats_decided","round_id":"r","commitment":"c","step":1,"transcript":"t1","parent_step":0,"parent_transcript":"t0"},"target":"reddog::audit"}"#;
        let e = parse_line(line, "f:1".into()).unwrap();
        assert_eq!(e.kind, Kind::Decided { parent_step: 0, parent_transcript: "t0".into() });
        assert_eq!((e.step, e.transcript.as_str(), e.at.1), (1, "t1", 1000));
        assert_eq!(parse_line("not json", String::new()), Err(Skip::NotJson));
        let other = r#"{"timestamp":"2026-12-01T12:00:00Z","fields":{"message":"listening"},"target":"reddog::cli"}"#;
        assert_eq!(parse_line(other, String::new()), Err(Skip::Other));
        let old = r#"{"timestamp":"2026-12-01T12:00:00Z","fields":{"event":"round_settled","round_id":"r","commitment":"c"},"target":"reddog::audit"}"#;
        assert_eq!(parse_line(old, String::new()), Err(Skip::Incomplete("step")));
    }
}
