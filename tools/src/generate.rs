//! A generator of audit trails (the developer tool `audit-gen`; the engine's tests and
//! benchmarks): valid
//! `reddog-audit-v1` records for any number of rounds across any number of replica chains,
//! without running the engine — for tests, the SQL cross-check and the memory benchmarks of
//! `reddog audit-log`.
//!
//! Every round is real: its server seed gives the commitment, the deal comes from
//! [`FairShoe`], the money from [`Round::settle`], the transcripts from
//! [`StartInputs::transcript`] and [`Transcript::decide`], and each replica's records form
//! a SHA-256 chain. Honest rounds hop between replicas, with calls retried on another
//! replica; planted misuse ([`Plant`]) adds each pattern `audit-log` reports, and
//! [`Summary::expected`] lists the findings they must produce.

use std::borrow::Cow;
use std::io::{self, Write};

use sha2::{Digest, Sha256};

use reddog::audit::Kind;
use reddog::audit::record::{
    Amounts, At, AuditStarted, AuditStopped, Cards, Checkpoint, DealClass, Decisions, Envelope, Event, Hex32, Odds,
    Record, RoundSettled, RoundStarted, SCHEMA, SeatMoney, SeatsDecided, SeedCommitted, Steps, TableDigest,
};
use reddog::fairness::{
    Commitment, DealInputs, FairShoe, RevealV2, RulesDigest, ServerSeed, SettledRound, StartInputs, TableRules,
    Transcript,
};
use reddog::game::{BetLimits, Decision, Decks, Money, Paytable, Round, Table};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Honest rounds.
    pub rounds: u64,
    /// Replica chains (at least 1).
    pub replicas: usize,
    /// Instances of each misuse pattern ([`Plant`]).
    pub misuse: u32,
    /// Seeds every choice: the same options write the same bytes.
    pub seed: u64,
    /// Milliseconds added to each replica's clock (`at`), by replica index; missing = 0.
    pub skew_ms: Vec<i64>,
    /// The first record's time, Unix milliseconds.
    pub start_unix_ms: i64,
    /// A checkpoint after every this many records of a chain (0: none).
    pub checkpoint_every: u64,
    /// Keep the reveals of the first honest round and of each one-seat peek
    /// ([`Summary::reveals`]).
    pub reveals: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rounds: 100,
            replicas: 2,
            misuse: 0,
            seed: 1,
            skew_ms: Vec::new(),
            start_unix_ms: 1_796_083_200_000, // 2026-12-01T00:00:00Z
            checkpoint_every: 1000,
            reveals: false,
        }
    }
}

/// The misuse patterns the generator plants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plant {
    /// One commitment started with two client seeds (two `t_0`); one settled.
    CommitmentReuse,
    /// Raise on one replica and stand on another from the same token.
    ForkTwoDecides,
    /// Decide, settle the result and also the pre-decision token.
    ForkTwoSettles,
    /// One seat: Decide raise, then Settle the pre-decision token, on one replica.
    PeekOneSeat,
    /// Two seats decided in one call, then the pre-decision token settled.
    PeekTwoSeats,
    /// One seat: Decide on one replica, Settle the pre-decision token on another whose clock
    /// says the Settle came first.
    PeekAcrossReplicas,
    /// One round id dealt under two commitments, both settled.
    RoundRedealt,
    /// Started and never settled.
    OpenRound,
}

impl Plant {
    /// Every pattern.
    pub const ALL: [Plant; 8] = [
        Plant::CommitmentReuse,
        Plant::ForkTwoDecides,
        Plant::ForkTwoSettles,
        Plant::PeekOneSeat,
        Plant::PeekTwoSeats,
        Plant::PeekAcrossReplicas,
        Plant::RoundRedealt,
        Plant::OpenRound,
    ];

    fn tag(self) -> &'static str {
        match self {
            Plant::CommitmentReuse => "reuse",
            Plant::ForkTwoDecides => "fork-decides",
            Plant::ForkTwoSettles => "fork-settles",
            Plant::PeekOneSeat => "peek-one",
            Plant::PeekTwoSeats => "peek-two",
            Plant::PeekAcrossReplicas => "peek-across",
            Plant::RoundRedealt => "redeal",
            Plant::OpenRound => "open",
        }
    }
}

/// A finding the generated trail must produce.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Expected {
    pub kind: Kind,
    pub table_id: String,
    pub round_id: String,
    /// `None` for a re-deal (several commitments).
    pub commitment: Option<String>,
}

/// What was written.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Rounds started (honest and planted).
    pub rounds: u64,
    pub records: u64,
    /// Every finding the trail must produce (`open_round` ones only with `--open-rounds`),
    /// sorted.
    pub expected: Vec<Expected>,
    /// With [`Options::reveals`]: (round id, the reveal of the token settled in the log).
    #[serde(skip)]
    pub reveals: Vec<(String, String)>,
}

/// One table the generator deals at.
struct GenTable {
    id: &'static str,
    table: Table,
    currency: &'static str,
    exponent: u8,
    digest: [u8; 32],
}

/// The generated tables' rules, as the engine hashes them (never sandbox tables).
fn table_rules<'a>(table: &'a Table, currency: &'a str, exponent: u8) -> TableRules<'a> {
    TableRules::of(table, currency, exponent, false)
}

fn tables() -> Vec<GenTable> {
    let specs: [(&'static str, u32, &'static str, u8, u64, u64); 2] =
        [("default", 1, "EUR", 2, 500, 30_000), ("vip", 6, "JPY", 0, 1_000, 100_000)];
    specs
        .into_iter()
        .filter_map(|(id, decks, currency, exponent, min, max)| {
            let limits = BetLimits::new(Money(min), Money(max)).ok()?;
            let table = Table::new(Decks::new(decks).ok()?, Paytable::STANDARD, limits).ok()?;
            // The engine's own digest of the table's rules (core's one definition).
            let digest = table_rules(&table, currency, exponent).digest().0;
            Some(GenTable { id, table, currency, exponent, digest })
        })
        .collect()
}

/// A deterministic stream of choices (SplitMix64): not for anything secret.
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough below `n` (> 0) for test data.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// One replica's chain.
struct Chain {
    replica: String,
    run: String,
    seq: u64,
    /// SHA-256 of the last line.
    prev: [u8; 32],
    skew_ns: i64,
    line: Vec<u8>,
}

/// The replicas' chains, the shared clock and the output.
struct Writer<'a, W: Write> {
    chains: Vec<Chain>,
    outs: &'a mut [W],
    clock_ns: i64,
    records: u64,
    checkpoint_every: u64,
}

impl<W: Write> Writer<'_, W> {
    /// Writes `event` on replica `r` (its output is `outs[r % outs.len()]`) at the shared
    /// clock plus `r`'s skew, then advances the clock.
    fn write(&mut self, r: usize, event: Event<'_>) -> io::Result<()> {
        self.write_at(r, event, 0)?;
        if self.checkpoint_every > 0 && self.chains[r].seq.is_multiple_of(self.checkpoint_every) {
            let c = &self.chains[r];
            let event =
                Event::Checkpoint(Checkpoint { records: c.seq, head: Hex32(c.prev), key_id: None, signature: None });
            self.write_at(r, event, 0)?;
        }
        Ok(())
    }

    fn write_at(&mut self, r: usize, event: Event<'_>, offset_ns: i64) -> io::Result<()> {
        self.clock_ns += 1_000_000 + (self.records % 7) as i64 * 13_000;
        let at_ns = self.clock_ns + self.chains[r].skew_ns + offset_ns;
        let at = jiff::Timestamp::from_nanosecond(i128::from(at_ns))
            .map_err(|_| io::Error::other("the generator's clock left jiff's range"))?;
        let c = &mut self.chains[r];
        let record = Record {
            envelope: Envelope {
                schema: Cow::Borrowed(SCHEMA),
                replica: Cow::Borrowed(&c.replica),
                run: Cow::Borrowed(&c.run),
                seq: c.seq,
                prev: Hex32(c.prev),
                at: At(at),
            },
            event,
        };
        c.line.clear();
        serde_json::to_writer(&mut c.line, &record)?;
        c.prev = Sha256::digest(&c.line).into();
        c.seq += 1;
        c.line.push(b'\n');
        let n = self.outs.len();
        self.outs[r % n].write_all(&c.line)?;
        self.records += 1;
        Ok(())
    }
}

/// A round being played: its inputs, deal and transcript so far.
struct Play<'t> {
    t: &'t GenTable,
    seed: ServerSeed,
    commitment: Commitment,
    round_id: String,
    nonce: u64,
    client_seed: String,
    bets: Vec<Money>,
    round: Round,
    steps: Vec<Vec<(usize, Decision)>>,
    transcripts: Vec<Transcript>,
}

impl<'t> Play<'t> {
    fn new(
        t: &'t GenTable,
        seed: ServerSeed,
        round_id: String,
        nonce: u64,
        client_seed: String,
        bets: Vec<Money>,
    ) -> io::Result<Self> {
        let deal =
            DealInputs { server_seed: &seed, client_seed: client_seed.as_bytes(), nonce, decks: t.table.decks() };
        let round = Round::start(&t.table, &bets, &mut FairShoe::new(&deal)).map_err(invalid)?;
        let commitment = seed.commitment();
        let t0 = StartInputs {
            commitment: &commitment.0,
            table_id: t.id,
            round_id: &round_id,
            nonce,
            decks: t.table.decks(),
            client_seed: client_seed.as_bytes(),
            paytable: t.table.paytable(),
            bets: &bets,
            rules_digest: Some(&RulesDigest(t.digest)),
        }
        .transcript();
        Ok(Play {
            t,
            commitment,
            seed,
            round_id,
            nonce,
            client_seed,
            bets,
            round,
            steps: Vec::new(),
            transcripts: vec![t0],
        })
    }

    fn awaiting(&self) -> bool {
        matches!(self.round, Round::AwaitingDecisions(_))
    }

    fn committed(&self) -> Event<'static> {
        Event::SeedCommitted(SeedCommitted {
            round_id: self.round_id.clone().into(),
            table_id: self.t.id.into(),
            nonce: self.nonce,
            decks: self.t.table.decks().get(),
            commitment: self.commitment.into(),
            rules_digest: Hex32(self.t.digest),
            expires_at_unix_ms: 0,
            sandbox: false,
        })
    }

    fn started(&self) -> Event<'static> {
        let (hand_class, spread) = DealClass::of(self.round.class());
        Event::RoundStarted(RoundStarted {
            round_id: self.round_id.clone().into(),
            table_id: self.t.id.into(),
            currency: self.t.currency.into(),
            exponent: self.t.exponent,
            commitment: self.commitment.into(),
            rules_digest: Hex32(self.t.digest),
            nonce: self.nonce,
            decks: self.t.table.decks().get(),
            step: 0,
            transcript: self.transcripts[0].into(),
            bets: Amounts(Cow::Owned(self.bets.clone())),
            cards: Cards(Cow::Owned(self.round.cards().to_vec())),
            hand_class,
            spread,
            sandbox: false,
        })
    }

    /// Applies a Decide from the latest token; returns its record.
    fn decide(&mut self, decisions: &[(usize, Decision)]) -> io::Result<Event<'static>> {
        let mut sorted = decisions.to_vec();
        sorted.sort_by_key(|d| d.0);
        let raised =
            sorted.iter().filter(|d| d.1 == Decision::Raise).map(|d| self.bets[d.0].0).fold(0u64, u64::saturating_add);
        self.round.decide_all(&sorted).map_err(invalid)?;
        let parent = *self.transcripts.last().unwrap_or(&Transcript([0; 32]));
        let next = parent.decide(&sorted);
        self.steps.push(sorted.clone());
        self.transcripts.push(next);
        let step = u32::try_from(self.steps.len()).unwrap_or(u32::MAX);
        Ok(Event::SeatsDecided(SeatsDecided {
            round_id: self.round_id.clone().into(),
            table_id: self.t.id.into(),
            commitment: self.commitment.into(),
            parent_step: step - 1,
            parent_transcript: parent.into(),
            step,
            transcript: next.into(),
            decisions: Decisions(Cow::Owned(sorted)),
            raised_amount: raised,
            complete: !self.awaiting(),
        }))
    }

    /// The record of settling the token after `steps` Decide calls (an older token settles
    /// the round as it stood then: undecided seats stand).
    fn settled(&self, steps: usize) -> io::Result<Event<'static>> {
        let mut round = self.replay(steps)?;
        round.close();
        let settlement = round.settle(self.t.table.paytable()).map_err(invalid)?;
        let (hand_class, spread) = DealClass::of(settlement.class);
        let mut cards = settlement.cards.to_vec();
        cards.extend(settlement.third);
        Ok(Event::RoundSettled(RoundSettled {
            round_id: self.round_id.clone().into(),
            table_id: self.t.id.into(),
            currency: self.t.currency.into(),
            exponent: self.t.exponent,
            commitment: self.commitment.into(),
            rules_digest: Hex32(self.t.digest),
            decks: self.t.table.decks().get(),
            paytable: Odds(Cow::Owned(self.t.table.paytable().clone())),
            step: u32::try_from(steps).unwrap_or(u32::MAX),
            transcript: self.transcripts[steps].into(),
            cards: Cards(Cow::Owned(cards)),
            hand_class,
            spread,
            decisions: Steps(Cow::Owned(self.steps[..steps].to_vec())),
            seats: Cow::Owned(settlement.seats.iter().map(SeatMoney::of).collect()),
            total_staked: settlement.total_staked.0,
            total_returned: settlement.total_returned.0,
            sandbox: false,
        }))
    }

    /// The reveal of the token after `steps` Decide calls, as Settle would give it.
    fn reveal(&self, steps: usize) -> io::Result<(String, String)> {
        let mut round = self.replay(steps)?;
        round.close();
        let settlement = round.settle(self.t.table.paytable()).map_err(invalid)?;
        let mut cards = settlement.cards.to_vec();
        cards.extend(settlement.third);
        let reveal = RevealV2::new(&SettledRound {
            seed: &self.seed,
            table_id: self.t.id,
            round_id: &self.round_id,
            client_seed: &self.client_seed,
            nonce: self.nonce,
            decks: self.t.table.decks(),
            cards: &cards,
            paytable: self.t.table.paytable(),
            steps: &self.steps[..steps],
            settlement: &settlement,
            transcript: self.transcripts[steps],
            rules: Some(table_rules(&self.t.table, self.t.currency, self.t.exponent)),
        });
        Ok((self.round_id.clone(), reveal.to_json()))
    }

    /// The round after its first `steps` Decide calls, dealt again from the seed.
    fn replay(&self, steps: usize) -> io::Result<Round> {
        let deal = DealInputs {
            server_seed: &self.seed,
            client_seed: self.client_seed.as_bytes(),
            nonce: self.nonce,
            decks: self.t.table.decks(),
        };
        let mut round = Round::start(&self.t.table, &self.bets, &mut FairShoe::new(&deal)).map_err(invalid)?;
        for step in &self.steps[..steps] {
            round.decide_all(step).map_err(invalid)?;
        }
        Ok(round)
    }

    fn expect(&self, kind: Kind) -> Expected {
        Expected {
            kind,
            table_id: self.t.id.into(),
            round_id: self.round_id.clone(),
            commitment: Some(self.commitment.to_hex()),
        }
    }
}

/// The bets are within limits and 1–3 seats, so the rules never refuse the generator's
/// rounds; if they did, its own arithmetic would be wrong, reported as an error.
fn invalid(e: reddog::game::GameError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the generator built a round the rules refuse: {e}"))
}

/// A 32-byte value derived from the generator's seed and a label.
fn derive(seed: u64, label: &str, n: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"reddog/audit-gen");
    h.update(seed.to_be_bytes());
    h.update(label.as_bytes());
    h.update(n.to_be_bytes());
    h.finalize().into()
}

/// Writes the trail: replica `r`'s records go to `outs[r % outs.len()]` (one output per
/// replica, or one for all).
pub fn generate<W: Write>(opts: &Options, outs: &mut [W]) -> io::Result<Summary> {
    if outs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no output"));
    }
    let replicas = opts.replicas.max(1);
    let tables = tables();
    let chains = (0..replicas)
        .map(|r| Chain {
            replica: format!("replica-{r}"),
            run: hex::encode(&derive(opts.seed, "run", r as u64)[..16]),
            seq: 0,
            prev: [0; 32],
            skew_ns: opts.skew_ms.get(r).copied().unwrap_or(0).saturating_mul(1_000_000),
            line: Vec::with_capacity(2048),
        })
        .collect();
    let mut w = Writer {
        chains,
        outs,
        clock_ns: opts.start_unix_ms.saturating_mul(1_000_000),
        records: 0,
        checkpoint_every: opts.checkpoint_every,
    };
    for r in 0..replicas {
        let event = Event::AuditStarted(AuditStarted {
            engine_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: "generated".into(),
            tables: tables
                .iter()
                .map(|t| TableDigest {
                    table_id: t.id.into(),
                    rules_digest: Hex32(t.digest),
                    decks: t.table.decks().get(),
                    paytable: Odds(Cow::Borrowed(t.table.paytable())),
                    min_bet: t.table.limits().min().0,
                    max_bet: t.table.limits().max().0,
                    currency: t.currency.into(),
                    minor_unit_exponent: t.exponent,
                    sandbox: false,
                })
                .collect(),
            checkpoint_interval_secs: 60,
            revision: reddog::audit::record::REVISION,
            checkpoint_records: 0,
            sync: false,
            previous: None,
            torn_tail_bytes: None,
        });
        w.write(r, event)?;
    }
    let mut rng = Choices(opts.seed);
    let mut summary = Summary::default();
    // The plants sit among the honest rounds, the k-th halfway through the k-th share.
    let misuse_every = if opts.misuse == 0 { u64::MAX } else { (opts.rounds / u64::from(opts.misuse)).max(1) };
    let mut planted = 0u32;
    for i in 0..opts.rounds {
        let keep = (opts.reveals && i == 0).then_some(&mut summary.reveals);
        honest_round(&mut w, &tables, &mut rng, opts.seed, i, keep)?;
        summary.rounds += 1;
        if planted < opts.misuse && i % misuse_every == misuse_every / 2 {
            for plant in Plant::ALL {
                let started = plant_misuse(&mut w, &tables, &mut rng, opts, plant, planted, &mut summary)?;
                summary.rounds += started;
            }
            planted += 1;
        }
    }
    while planted < opts.misuse {
        for plant in Plant::ALL {
            let started = plant_misuse(&mut w, &tables, &mut rng, opts, plant, planted, &mut summary)?;
            summary.rounds += started;
        }
        planted += 1;
    }
    for r in 0..replicas {
        let (records, head) = (w.chains[r].seq, Hex32(w.chains[r].prev));
        let stopped = AuditStopped { records, head: Some(head), key_id: None, signature: None };
        w.write_at(r, Event::AuditStopped(stopped), 0)?;
    }
    for out in w.outs.iter_mut() {
        out.flush()?;
    }
    summary.records = w.records;
    summary.expected.sort();
    Ok(summary)
}

fn random_bets(t: &GenTable, rng: &mut Choices, seats: usize) -> Vec<Money> {
    let (min, max) = (t.table.limits().min().0, t.table.limits().max().0);
    (0..seats).map(|_| Money(min + rng.below((max - min) / min + 1) * min).min(Money(max))).collect()
}

/// A replica other than `r` when there are several.
fn other(r: usize, n: usize) -> usize {
    (r + 1) % n
}

/// One honest round: committed, started, decided, settled, each call on a random replica
/// and sometimes retried on another.
fn honest_round<W: Write>(
    w: &mut Writer<'_, W>,
    tables: &[GenTable],
    rng: &mut Choices,
    seed: u64,
    i: u64,
    reveals: Option<&mut Vec<(String, String)>>,
) -> io::Result<()> {
    let n = w.chains.len();
    let t = &tables[(i % tables.len() as u64) as usize];
    let seats = 1 + rng.below(3) as usize;
    let bets = random_bets(t, rng, seats);
    let mut play = Play::new(
        t,
        ServerSeed::from_bytes(derive(seed, "honest", i)),
        format!("r-{i:09}"),
        i,
        format!("player-{}", rng.below(10_000)),
        bets,
    )?;
    let call = |w: &mut Writer<'_, W>, event: Event, rng: &mut Choices| -> io::Result<()> {
        let r = rng.below(n as u64) as usize;
        if rng.chance(4) {
            w.write(r, event.clone())?;
            w.write(other(r, n), event)
        } else {
            w.write(r, event)
        }
    };
    call(w, play.committed(), rng)?;
    call(w, play.started(), rng)?;
    if play.awaiting() {
        if rng.chance(2) {
            let all: Vec<(usize, Decision)> =
                (0..seats).map(|s| (s, if rng.chance(2) { Decision::Raise } else { Decision::Stand })).collect();
            let e = play.decide(&all)?;
            call(w, e, rng)?;
        } else {
            for s in 0..seats {
                let e = play.decide(&[(s, if rng.chance(3) { Decision::Raise } else { Decision::Stand })])?;
                call(w, e, rng)?;
            }
        }
    }
    let e = play.settled(play.steps.len())?;
    if let Some(reveals) = reveals {
        reveals.push(play.reveal(play.steps.len())?);
    }
    call(w, e, rng)
}

/// Plants one instance of `plant`; returns the rounds it started.
fn plant_misuse<W: Write>(
    w: &mut Writer<'_, W>,
    tables: &[GenTable],
    rng: &mut Choices,
    opts: &Options,
    plant: Plant,
    k: u32,
    summary: &mut Summary,
) -> io::Result<u64> {
    let seed = opts.seed;
    let expected = &mut summary.expected;
    let n = w.chains.len();
    let t = &tables[k as usize % tables.len()];
    let round_id = format!("m-{}-{k}", plant.tag());
    let seats = if plant == Plant::PeekTwoSeats { 2 } else { 1 };
    // A deal that awaits decisions (the patterns that need one), found by trying seeds.
    let mut attempt = 0u64;
    let mut fresh = |rng: &mut Choices, label: &str, client_seed: &str| loop {
        attempt += 1;
        let label = format!("{}/{label}/{k}", plant.tag());
        let s = ServerSeed::from_bytes(derive(seed, &label, attempt));
        let play = Play::new(t, s, round_id.clone(), u64::from(k), client_seed.into(), random_bets(t, rng, seats))?;
        if play.awaiting() || matches!(plant, Plant::CommitmentReuse | Plant::RoundRedealt | Plant::OpenRound) {
            return Ok::<_, io::Error>(play);
        }
    };
    let r = rng.below(n as u64) as usize;
    match plant {
        Plant::CommitmentReuse => {
            let a = fresh(rng, "a", "first")?;
            let b = Play::new(t, a.seed.clone(), round_id.clone(), u64::from(k), "second".into(), a.bets.clone())?;
            w.write(r, a.committed())?;
            w.write(r, a.started())?;
            w.write(other(r, n), b.started())?;
            w.write(r, a.settled(0)?)?;
            expected.push(a.expect(Kind::CommitmentReuse));
            Ok(2)
        }
        Plant::ForkTwoDecides => {
            let mut a = fresh(rng, "a", "player")?;
            let mut b = Play::new(t, a.seed.clone(), round_id.clone(), u64::from(k), "player".into(), a.bets.clone())?;
            w.write(r, a.committed())?;
            w.write(r, a.started())?;
            let raise = a.decide(&[(0, Decision::Raise)])?;
            let stand = b.decide(&[(0, Decision::Stand)])?;
            w.write(r, raise)?;
            w.write(other(r, n), stand)?;
            w.write(r, a.settled(1)?)?;
            expected.push(a.expect(Kind::Fork));
            Ok(1)
        }
        Plant::ForkTwoSettles => {
            let mut a = fresh(rng, "a", "player")?;
            w.write(r, a.committed())?;
            w.write(r, a.started())?;
            let e = a.decide(&[(0, Decision::Raise)])?;
            w.write(r, e)?;
            w.write(r, a.settled(1)?)?;
            w.write(other(r, n), a.settled(0)?)?;
            expected.push(a.expect(Kind::Fork));
            expected.push(a.expect(Kind::PeekThenPlay));
            Ok(1)
        }
        Plant::PeekOneSeat | Plant::PeekTwoSeats => {
            let mut a = fresh(rng, "a", "player")?;
            w.write(r, a.committed())?;
            w.write(r, a.started())?;
            let decisions: Vec<(usize, Decision)> = (0..seats).map(|s| (s, Decision::Raise)).collect();
            let e = a.decide(&decisions)?;
            w.write(r, e)?;
            w.write(r, a.settled(0)?)?;
            expected.push(a.expect(Kind::PeekThenPlay));
            if opts.reveals && plant == Plant::PeekOneSeat {
                summary.reveals.push(a.reveal(0)?);
            }
            Ok(1)
        }
        Plant::PeekAcrossReplicas => {
            let mut a = fresh(rng, "a", "player")?;
            let s = other(r, n);
            w.write(r, a.committed())?;
            w.write(s, a.started())?;
            // The Settle's replica clock reads 30 ms earlier than the Decide's: by clocks the
            // pre-decision token was settled first; by the transcript chain it is a peek.
            w.write_at(s, a.settled(0)?, -30_000_000)?;
            let e = a.decide(&[(0, Decision::Raise)])?;
            w.write(r, e)?;
            expected.push(a.expect(Kind::PeekThenPlay));
            Ok(1)
        }
        Plant::RoundRedealt => {
            let a = fresh(rng, "a", "player")?;
            let b = fresh(rng, "b", "player")?;
            for p in [&a, &b] {
                w.write(r, p.committed())?;
                w.write(other(r, n), p.started())?;
                w.write(r, p.settled(0)?)?;
            }
            expected.push(Expected { commitment: None, ..a.expect(Kind::RoundRedealt) });
            Ok(2)
        }
        Plant::OpenRound => {
            let a = fresh(rng, "a", "player")?;
            w.write(r, a.committed())?;
            w.write(r, a.started())?;
            expected.push(a.expect(Kind::OpenRound));
            Ok(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reddog::audit::record::{Record, ZERO_HASH, line_hash};

    #[test]
    fn every_generated_line_is_a_typed_record_written_in_the_contract_order_and_chained() {
        let opts = Options { rounds: 60, replicas: 2, misuse: 1, checkpoint_every: 25, ..Options::default() };
        let mut outs = vec![Vec::new(), Vec::new()];
        let summary = generate(&opts, &mut outs).unwrap();
        let mut total = 0;
        for out in &outs {
            let mut prev = ZERO_HASH.to_string();
            for (seq, line) in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
                let record: Record = serde_json::from_slice(line).unwrap();
                // Serialising the typed record again gives the very same bytes: field order
                // and format are the types'.
                assert_eq!(serde_json::to_vec(&record).unwrap(), line);
                assert!(line.starts_with(b"{\"schema\":\"reddog-audit-v1\",\"replica\":"));
                assert_eq!((record.envelope.seq, record.envelope.prev.to_hex()), (seq as u64, prev.clone()));
                prev = line_hash(line);
                total += 1;
            }
        }
        assert_eq!(total, summary.records);
        // The same options write the same bytes.
        let mut again = vec![Vec::new(), Vec::new()];
        generate(&opts, &mut again).unwrap();
        assert_eq!(again, outs);
    }

    #[test]
    fn the_rules_digest_changes_with_every_rule() {
        let t = tables();
        let base = &t[0].table;
        let other_odds =
            Table::new(base.decks(), Paytable::new([5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 2], 11).unwrap(), base.limits())
                .unwrap();
        let d = table_rules(base, "EUR", 2).digest();
        assert_ne!(table_rules(&other_odds, "EUR", 2).digest(), d);
        assert_ne!(table_rules(base, "USD", 2).digest(), d);
        assert_ne!(table_rules(base, "EUR", 3).digest(), d);
    }
}
