//! The checks, over the compact facts the reader extracts from each record
//! (`docs/AUDIT.md`, "Analysis"; `docs/audit/checks.sql` is the same checks in SQL).
//!
//! Every check looks at the records of one key only: a commitment (commitment reuse, fork,
//! peek then play, open rounds), a (table, round id) (round re-dealt) or a block of one
//! chain's sequence numbers (gaps and edits; the blocks are joined by their summaries). So
//! the facts can be split into partitions by those keys and checked one partition at a time,
//! with the same findings whatever the number of partitions. Nothing here orders records of
//! different replicas by time: a round's order is its transcript chain.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};

use super::record::ZERO_HASH;
use super::spill::Partitioned;
use super::time::parse_timestamp;

/// Sequence numbers per chain block (2^12 = 4096): the unit the chain checks are partitioned
/// by. Small enough that blocks spread evenly over the partitions (a block of 2^16 records was
/// ~16 MB of facts, and a partition drawing three of them held 30 MB more than its share);
/// large enough that the block summaries kept for [`join_blocks`] stay small (one per 4096
/// records: ~3 MB for 10⁷ rounds).
pub const BLOCK_BITS: u32 = 12;

/// What a finding reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A chain's `seq` skips numbers: records were removed.
    ChainGap,
    /// A record's `prev` is not the hash of the record before it, two different records
    /// share one `seq`, a first record's `prev` is not zeros, or a checkpoint's `head` is not
    /// its `prev`: a record was changed.
    ChainEdit,
    /// In one file, a chain's record comes after one with a higher `seq`.
    ChainOrder,
    /// One commitment started rounds with two or more different `t_0`.
    CommitmentReuse,
    /// One commitment's transcripts do not form one line.
    Fork,
    /// A settled transcript is the parent of a logged Decide.
    PeekThenPlay,
    /// One (table, round id) started under two or more commitments.
    RoundRedealt,
    /// A round started and never settled (only when asked for).
    OpenRound,
    /// A checkpoint (or a revision-2 `audit_stopped`) whose signature does not verify with
    /// the public key given, or that carries none (only with a public key).
    CheckpointSignature,
    /// A line naming the audit schema that is not whole JSON: a record cut off mid-line (a
    /// crash or a full disk), or glued to the next.
    TornRecord,
    /// A later run found this run's last record at a `seq` the input does not reach (or at
    /// that `seq` another record): the run's end was cut off.
    ChainTailMissing,
    /// An `audit_resumed` record: the trail's output failed for a while and calls were
    /// refused meanwhile (none answered without its record).
    SinkOutage,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 12] = [
        Kind::ChainGap,
        Kind::ChainEdit,
        Kind::ChainOrder,
        Kind::ChainTailMissing,
        Kind::TornRecord,
        Kind::SinkOutage,
        Kind::CommitmentReuse,
        Kind::Fork,
        Kind::PeekThenPlay,
        Kind::RoundRedealt,
        Kind::OpenRound,
        Kind::CheckpointSignature,
    ];

    /// The name in reports, JSON and SQL: `chain_gap`, `peek_then_play`, ….
    pub const fn name(self) -> &'static str {
        match self {
            Kind::ChainGap => "chain_gap",
            Kind::ChainEdit => "chain_edit",
            Kind::ChainOrder => "chain_order",
            Kind::CommitmentReuse => "commitment_reuse",
            Kind::Fork => "fork",
            Kind::PeekThenPlay => "peek_then_play",
            Kind::RoundRedealt => "round_redealt",
            Kind::OpenRound => "open_round",
            Kind::CheckpointSignature => "checkpoint_signature",
            Kind::TornRecord => "torn_record",
            Kind::ChainTailMissing => "chain_tail_missing",
            Kind::SinkOutage => "sink_outage",
        }
    }
}

/// One finding. Round findings name the table, round and (except a re-deal, which spans
/// several) the commitment; chain findings name the chain and the `seq` concerned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    pub table_id: Option<String>,
    pub round_id: Option<String>,
    pub commitment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// An open round's first `round_started` time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    pub detail: String,
}

impl Finding {
    fn round(kind: Kind, table_id: &str, round_id: &str, commitment: Option<&str>, detail: String) -> Finding {
        Finding {
            kind,
            table_id: Some(table_id.to_owned()),
            round_id: Some(round_id.to_owned()),
            commitment: commitment.map(str::to_owned),
            replica: None,
            run: None,
            seq: None,
            started_at: None,
            detail,
        }
    }

    /// A finding about a line of a file, not of a chain (a torn record).
    pub(crate) fn line(kind: Kind, detail: String) -> Finding {
        Finding {
            kind,
            table_id: None,
            round_id: None,
            commitment: None,
            replica: None,
            run: None,
            seq: None,
            started_at: None,
            detail,
        }
    }

    pub(crate) fn chain(kind: Kind, replica: &str, run: &str, seq: u64, detail: String) -> Finding {
        Finding {
            kind,
            table_id: None,
            round_id: None,
            commitment: None,
            replica: Some(replica.to_owned()),
            run: Some(run.to_owned()),
            seq: Some(seq),
            started_at: None,
            detail,
        }
    }
}

/// Which round step a record logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    Started,
    Decided,
    Settled,
}

/// A round record: `round_started`, `seats_decided` or `round_settled`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundFact {
    pub step: Step,
    pub commitment: String,
    pub table_id: String,
    pub round_id: String,
    pub transcript: String,
    /// A Decide's `parent_transcript`.
    pub parent: Option<String>,
    pub at: String,
    pub replica: String,
}

/// A `round_started`'s deal: which commitment dealt this (table, round id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealFact {
    pub table_id: String,
    pub round_id: String,
    pub commitment: String,
}

/// A record's place in its chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainFact {
    pub replica: String,
    pub run: String,
    pub seq: u64,
    pub prev: String,
    /// SHA-256 of the record's line.
    pub hash: String,
    /// False for a checkpoint whose `head` is not its `prev`.
    pub head_ok: bool,
}

/// What the reader extracts from records, each checked with the others of its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fact {
    Round(RoundFact),
    Deal(DealFact),
    Chain(ChainFact),
}

impl Partitioned for Fact {
    /// The key a fact is checked under: its commitment, its (table, round id), or its
    /// (chain, block of `seq`).
    fn key<H: Hasher>(&self, h: &mut H) {
        match self {
            Fact::Round(r) => (0u8, &r.commitment).hash(h),
            Fact::Deal(d) => (1u8, &d.table_id, &d.round_id).hash(h),
            Fact::Chain(c) => (2u8, &c.replica, &c.run, c.seq >> BLOCK_BITS).hash(h),
        }
    }
}

/// Options of the round checks.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundOptions {
    /// List rounds started and not settled.
    pub open_rounds: bool,
    /// Only those started before this (Unix seconds, nanoseconds).
    pub open_before: Option<(i64, u32)>,
}

/// The ends of one block of one chain, to join with the neighbouring blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockSummary {
    pub replica: String,
    pub run: String,
    pub block: u64,
    pub min_seq: u64,
    /// The `prev` of each distinct record at `min_seq`.
    pub min_prevs: Vec<String>,
    pub max_seq: u64,
    /// The hash of each distinct record at `max_seq`.
    pub max_hashes: Vec<String>,
}

/// Checks one partition: every fact of each key it holds. Returns its findings and the
/// summaries of its chain blocks (for [`join_blocks`]).
pub fn check_partition(facts: impl IntoIterator<Item = Fact>, opts: RoundOptions) -> (Vec<Finding>, Vec<BlockSummary>) {
    let mut rounds: HashMap<String, Vec<RoundFact>> = HashMap::new();
    let mut deals: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
    let mut chains: HashMap<(String, String, u64), Vec<ChainFact>> = HashMap::new();
    for f in facts {
        match f {
            Fact::Round(r) => rounds.entry(r.commitment.clone()).or_default().push(r),
            Fact::Deal(d) => {
                deals.entry((d.table_id, d.round_id)).or_default().insert(d.commitment);
            }
            Fact::Chain(c) => {
                chains.entry((c.replica.clone(), c.run.clone(), c.seq >> BLOCK_BITS)).or_default().push(c)
            }
        }
    }
    let mut findings = Vec::new();
    for (commitment, facts) in &rounds {
        check_commitment(commitment, facts, opts, &mut findings);
    }
    for ((table_id, round_id), commitments) in deals {
        if commitments.len() > 1 {
            let list: Vec<&str> = commitments.iter().map(String::as_str).collect();
            findings.push(Finding::round(
                Kind::RoundRedealt,
                &table_id,
                &round_id,
                None,
                format!("started under {} commitments: {}", list.len(), list.join(", ")),
            ));
        }
    }
    let mut summaries = Vec::with_capacity(chains.len());
    for ((replica, run, block), facts) in chains {
        summaries.push(check_block(&replica, &run, block, facts, &mut findings));
    }
    (findings, summaries)
}

/// The round checks of one commitment's records.
fn check_commitment(commitment: &str, facts: &[RoundFact], opts: RoundOptions, out: &mut Vec<Finding>) {
    // The round a finding names: the least table and round id among the commitment's records
    // (they are one round's unless the commitment was reused under another round id).
    let table_id = facts.iter().map(|f| f.table_id.as_str()).min().unwrap_or_default();
    let round_id = facts.iter().map(|f| f.round_id.as_str()).min().unwrap_or_default();
    let finding = |kind, detail| Finding::round(kind, table_id, round_id, Some(commitment), detail);

    let starts: BTreeSet<&str> =
        facts.iter().filter(|f| f.step == Step::Started).map(|f| f.transcript.as_str()).collect();
    if starts.len() > 1 {
        let ids: BTreeSet<&str> =
            facts.iter().filter(|f| f.step == Step::Started).map(|f| f.round_id.as_str()).collect();
        out.push(finding(
            Kind::CommitmentReuse,
            format!(
                "{} different t_0 under one commitment (round ids {}): {}",
                starts.len(),
                ids.into_iter().collect::<Vec<_>>().join(", "),
                starts.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let mut children: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for f in facts.iter().filter(|f| f.step == Step::Decided) {
        if let Some(parent) = &f.parent {
            children.entry(parent.as_str()).or_default().insert(f.transcript.as_str());
        }
    }
    for (parent, kids) in children.iter().filter(|(_, k)| k.len() > 1) {
        out.push(finding(
            Kind::Fork,
            format!(
                "transcript {parent} has {} different Decides: {}",
                kids.len(),
                kids.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let settled: BTreeSet<&str> =
        facts.iter().filter(|f| f.step == Step::Settled).map(|f| f.transcript.as_str()).collect();
    if settled.len() > 1 {
        out.push(finding(
            Kind::Fork,
            format!(
                "settled with {} different transcripts: {}",
                settled.len(),
                settled.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for t in &settled {
        if let Some(kids) = children.get(t) {
            out.push(finding(
                Kind::PeekThenPlay,
                format!(
                    "settled transcript {t} is the parent of a logged Decide (to {}): a token \
                     older than a Decide's answer was settled, or a settled token decided on",
                    kids.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    if opts.open_rounds && settled.is_empty() {
        let first = facts
            .iter()
            .filter(|f| f.step == Step::Started)
            .min_by(|a, b| (&a.at, &a.replica).cmp(&(&b.at, &b.replica)));
        if let Some(first) = first {
            let old_enough = match (opts.open_before, parse_timestamp(&first.at)) {
                (Some(cutoff), Some(at)) => at < cutoff,
                _ => true,
            };
            if old_enough {
                let mut f = finding(
                    Kind::OpenRound,
                    format!("started at {} on replica {} and never settled", first.at, first.replica),
                );
                f.replica = Some(first.replica.clone());
                f.started_at = Some(first.at.clone());
                out.push(f);
            }
        }
    }
}

/// The chain checks inside one block of one chain; returns the block's ends.
fn check_block(
    replica: &str,
    run: &str,
    block: u64,
    mut facts: Vec<ChainFact>,
    out: &mut Vec<Finding>,
) -> BlockSummary {
    // Identical records (the same line read twice, e.g. overlapping files) count once.
    facts.sort_by(|a, b| (a.seq, &a.hash).cmp(&(b.seq, &b.hash)));
    facts.dedup_by(|a, b| a.seq == b.seq && a.hash == b.hash);
    let edit = |seq, detail| Finding::chain(Kind::ChainEdit, replica, run, seq, detail);
    let mut by_seq: BTreeMap<u64, Vec<&ChainFact>> = BTreeMap::new();
    for f in &facts {
        by_seq.entry(f.seq).or_default().push(f);
    }
    for (&seq, records) in &by_seq {
        if records.len() > 1 {
            out.push(edit(seq, format!("{} different records with seq {seq}", records.len())));
        }
        for r in records {
            if seq == 0 && r.prev != ZERO_HASH {
                out.push(edit(seq, "the run's first record has a prev that is not 64 zeros".into()));
            }
            if !r.head_ok {
                out.push(edit(seq, "a checkpoint whose head is not its prev".into()));
            }
            let before = seq.checked_sub(1).and_then(|s| by_seq.get(&s));
            if before.is_some_and(|before| !before.iter().any(|b| b.hash == r.prev)) {
                out.push(edit(seq, format!("prev {} is not the hash of the record with seq {}", r.prev, seq - 1)));
            }
        }
    }
    let seqs: Vec<u64> = by_seq.keys().copied().collect();
    for w in seqs.windows(2) {
        if w[1] > w[0] + 1 {
            out.push(gap(replica, run, w[0], w[1]));
        }
    }
    let (min_seq, max_seq) = (seqs.first().copied().unwrap_or(0), seqs.last().copied().unwrap_or(0));
    BlockSummary {
        replica: replica.to_owned(),
        run: run.to_owned(),
        block,
        min_seq,
        min_prevs: by_seq.get(&min_seq).map(|v| v.iter().map(|r| r.prev.clone()).collect()).unwrap_or_default(),
        max_seq,
        max_hashes: by_seq.get(&max_seq).map(|v| v.iter().map(|r| r.hash.clone()).collect()).unwrap_or_default(),
    }
}

fn gap(replica: &str, run: &str, have: u64, next: u64) -> Finding {
    Finding::chain(
        Kind::ChainGap,
        replica,
        run,
        have + 1,
        format!("records with seq {} to {} are missing ({} records)", have + 1, next - 1, next - have - 1),
    )
}

/// A run's end as the next run found it (`audit_started.previous`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TailClaim {
    pub replica: String,
    pub run: String,
    pub seq: u64,
    pub event: String,
    pub hash: String,
    /// The run that found it, and where (`FILE:LINE`).
    pub by_run: String,
    pub at: String,
}

/// The chain checks across blocks: a gap or an edit where one block ends and the next
/// present block of the same chain begins, and a run whose first record present is not
/// `seq` 0 (its start removed).
pub fn join_blocks(mut blocks: Vec<BlockSummary>) -> Vec<Finding> {
    blocks.sort_by(|a, b| (&a.replica, &a.run, a.block).cmp(&(&b.replica, &b.run, b.block)));
    let mut out = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let first = i == 0 || (&blocks[i - 1].replica, &blocks[i - 1].run) != (&b.replica, &b.run);
        if first && b.min_seq > 0 {
            out.push(Finding::chain(
                Kind::ChainGap,
                &b.replica,
                &b.run,
                0,
                format!(
                    "records with seq 0 to {} are missing ({} records): the run's start, audit_started, is not in \
                     the input",
                    b.min_seq - 1,
                    b.min_seq
                ),
            ));
        }
    }
    for w in blocks.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if (&a.replica, &a.run) != (&b.replica, &b.run) {
            continue;
        }
        if b.min_seq > a.max_seq + 1 {
            out.push(gap(&a.replica, &a.run, a.max_seq, b.min_seq));
        } else {
            for prev in b.min_prevs.iter().filter(|p| !a.max_hashes.contains(p)) {
                out.push(Finding::chain(
                    Kind::ChainEdit,
                    &b.replica,
                    &b.run,
                    b.min_seq,
                    format!("prev {prev} is not the hash of the record with seq {}", a.max_seq),
                ));
            }
        }
    }
    out
}

/// Each run's end, as the run after it found it, against the input: a run that ends before
/// the `seq` found, or holds another record there, lost its end. Runs not in the input are
/// not judged (their files were not given).
pub fn check_tails(blocks: &[BlockSummary], claims: &[TailClaim]) -> Vec<Finding> {
    let mut ends: HashMap<(&str, &str), &BlockSummary> = HashMap::new();
    for b in blocks {
        let end = ends.entry((b.replica.as_str(), b.run.as_str())).or_insert(b);
        if b.max_seq > end.max_seq {
            *end = b;
        }
    }
    let mut out = Vec::new();
    for c in claims {
        let Some(end) = ends.get(&(c.replica.as_str(), c.run.as_str())) else { continue };
        let detail = if end.max_seq < c.seq {
            format!(
                "run {} found this run's last record at seq {} ({}); the input ends it at seq {}: records {} to {} \
                 are missing ({})",
                c.by_run,
                c.seq,
                c.event,
                end.max_seq,
                end.max_seq + 1,
                c.seq,
                c.at
            )
        } else if end.max_seq == c.seq && !end.max_hashes.contains(&c.hash) {
            format!("run {} found another record at seq {} ({}, {})", c.by_run, c.seq, c.event, c.at)
        } else {
            continue;
        };
        out.push(Finding::chain(Kind::ChainTailMissing, &c.replica, &c.run, end.max_seq + 1, detail));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(step: Step, c: &str, parent: Option<&str>, t: &str, replica: &str) -> Fact {
        Fact::Round(RoundFact {
            step,
            commitment: c.into(),
            table_id: "default".into(),
            round_id: format!("r-{c}"),
            transcript: t.into(),
            parent: parent.map(str::to_owned),
            at: "2026-12-01T00:00:00.000000000Z".into(),
            replica: replica.into(),
        })
    }

    fn kinds(facts: Vec<Fact>) -> Vec<Kind> {
        let (mut f, blocks) = check_partition(facts, RoundOptions { open_rounds: true, open_before: None });
        f.extend(join_blocks(blocks));
        f.sort();
        f.into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn retries_on_any_replica_in_any_order_are_not_findings() {
        use Step::*;
        let facts = vec![
            fact(Settled, "c", None, "t2", "b"),
            fact(Decided, "c", Some("t1"), "t2", "a"),
            fact(Settled, "c", None, "t2", "a"),
            fact(Decided, "c", Some("t0"), "t1", "b"),
            // a Decide retried on a slow replica, logged after the settlement
            fact(Decided, "c", Some("t0"), "t1", "a"),
            fact(Started, "c", None, "t0", "a"),
            fact(Started, "c", None, "t0", "b"),
        ];
        assert_eq!(kinds(facts), vec![]);
    }

    #[test]
    fn a_settled_transcript_with_a_logged_decide_is_peek_then_play_whatever_the_order() {
        use Step::*;
        let mut facts = vec![
            fact(Started, "c", None, "t0", "a"),
            fact(Decided, "c", Some("t0"), "t1", "a"),
            fact(Settled, "c", None, "t0", "b"),
        ];
        assert_eq!(kinds(facts.clone()), vec![Kind::PeekThenPlay]);
        facts.reverse();
        assert_eq!(kinds(facts.clone()), vec![Kind::PeekThenPlay]);
        // Settling the Decide's answer as well: two settled transcripts, a fork too.
        facts.push(fact(Settled, "c", None, "t1", "a"));
        assert_eq!(kinds(facts), vec![Kind::Fork, Kind::PeekThenPlay]);
    }

    #[test]
    fn reuse_forks_re_deals_and_open_rounds_are_told_apart() {
        use Step::*;
        let mut facts = vec![
            fact(Started, "reuse", None, "a0", "a"),
            fact(Started, "reuse", None, "b0", "b"),
            fact(Settled, "reuse", None, "a0", "a"),
            fact(Started, "fork", None, "f0", "a"),
            fact(Decided, "fork", Some("f0"), "raise", "a"),
            fact(Decided, "fork", Some("f0"), "stand", "b"),
            fact(Settled, "fork", None, "raise", "a"),
            fact(Started, "open", None, "o0", "a"),
        ];
        for c in ["d1", "d2"] {
            facts.push(Fact::Deal(DealFact {
                table_id: "default".into(),
                round_id: "same".into(),
                commitment: c.into(),
            }));
        }
        facts.push(Fact::Deal(DealFact { table_id: "vip".into(), round_id: "same".into(), commitment: "d3".into() }));
        assert_eq!(kinds(facts), vec![Kind::CommitmentReuse, Kind::Fork, Kind::RoundRedealt, Kind::OpenRound]);
    }

    fn link(replica: &str, seq: u64, prev: &str, hash: &str) -> Fact {
        Fact::Chain(ChainFact {
            replica: replica.into(),
            run: "r".into(),
            seq,
            prev: prev.into(),
            hash: hash.into(),
            head_ok: true,
        })
    }

    #[test]
    fn a_run_whose_start_is_missing_is_a_gap_from_seq_0_and_a_cut_end_is_found_by_the_next_run() {
        let b = 1u64 << BLOCK_BITS;
        let facts = vec![link("x", 100, "p", "h100"), link("x", 101, "h100", "h101"), link("y", 2 * b + 3, "q", "hy")];
        let (found, blocks) = check_partition(facts, RoundOptions::default());
        assert!(found.is_empty(), "{found:?}");
        let mut starts: Vec<(String, u64, String)> =
            join_blocks(blocks.clone()).into_iter().map(|f| (f.replica.unwrap(), f.seq.unwrap(), f.detail)).collect();
        starts.sort();
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!((starts[0].0.as_str(), starts[0].1), ("x", 0));
        assert!(starts[0].2.contains("seq 0 to 99 are missing (100 records)"), "{}", starts[0].2);
        assert_eq!((starts[1].0.as_str(), starts[1].1), ("y", 0));
        let claim = |seq: u64, hash: &str| TailClaim {
            replica: "x".into(),
            run: "r".into(),
            seq,
            event: "audit_stopped".into(),
            hash: hash.into(),
            by_run: "next".into(),
            at: "f:1".into(),
        };
        assert!(check_tails(&blocks, &[claim(101, "h101")]).is_empty(), "the end as found");
        assert!(check_tails(&blocks, &[claim(7, "h7")]).is_empty(), "an older claim than the input's end");
        let cut = check_tails(&blocks, &[claim(105, "h105")]);
        assert_eq!(cut.len(), 1);
        assert_eq!((cut[0].kind, cut[0].seq), (Kind::ChainTailMissing, Some(102)));
        assert!(cut[0].detail.contains("records 102 to 105 are missing"), "{}", cut[0].detail);
        assert_eq!(check_tails(&blocks, &[claim(101, "other")]).len(), 1, "another record at the end");
        let elsewhere = TailClaim { run: "absent".into(), ..claim(105, "h") };
        assert!(check_tails(&blocks, &[elsewhere]).is_empty(), "a run not in the input is not judged");
    }

    #[test]
    fn chains_are_checked_across_block_boundaries_and_partitions() {
        let b = 1u64 << BLOCK_BITS;
        let mut facts = vec![link("x", 0, ZERO_HASH, "h0"), link("x", 1, "h0", "h1")];
        // a chain crossing a block boundary, intact
        facts.push(link("y", b - 1, "p", "hy1"));
        facts.push(link("y", b, "hy1", "hy2"));
        // a chain broken at a block boundary, and with a gap across the next one
        facts.push(link("z", b - 1, "p", "hz1"));
        facts.push(link("z", b, "EDITED", "hz2"));
        facts.push(link("z", 2 * b + 5, "q", "hz3"));
        // two different records with one seq, the first with a wrong prev
        facts.push(link("w", 0, "not-zeros", "a"));
        facts.push(link("w", 0, ZERO_HASH, "b"));
        let want = vec![
            (Kind::ChainGap, "y", 0),
            (Kind::ChainGap, "z", 0),
            (Kind::ChainGap, "z", b + 1),
            (Kind::ChainEdit, "w", 0),
            (Kind::ChainEdit, "w", 0),
            (Kind::ChainEdit, "z", b),
        ];
        for n in [1, 3, 16] {
            let mut parts: Vec<Vec<Fact>> = vec![Vec::new(); n];
            for f in &facts {
                parts[super::super::spill::partition_of(f, n, 0)].push(f.clone());
            }
            let (mut found, mut blocks) = (Vec::new(), Vec::new());
            for p in parts {
                let (f, b) = check_partition(p, RoundOptions::default());
                found.extend(f);
                blocks.extend(b);
            }
            found.extend(join_blocks(blocks));
            found.sort();
            let mut got: Vec<(Kind, &str, u64)> =
                found.iter().map(|f| (f.kind, f.replica.as_deref().unwrap_or(""), f.seq.unwrap_or(0))).collect();
            got.sort();
            let mut want = want.clone();
            want.sort();
            assert_eq!(got, want, "{n} partitions: {found:?}");
        }
    }
}
