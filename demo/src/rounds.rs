//! The round flow, done the way the engine's contract asks (docs/API.md, docs/FAIRNESS.md §7):
//!
//! 1. `CommitSeed` for a new round id and the player's next nonce; the commitment and the
//!    nonce are shown to the player **before** they fix their client seed.
//! 2. Deal: the bet is **debited before `StartRound`** (ledger key `<round>:bet`), in the
//!    same database transaction that records the client seed and the bet.
//! 3. Raise: the raise is **debited before `Decide`** (`<round>:raise`); stand is recorded too.
//! 4. `Settle`; each seat's `returned` is **credited after** it (`<round>:payout`).
//!
//! Every state of a round in the database names the next engine call and holds its exact
//! request, written *before* the call; the engine's calls are deterministic (the same request
//! returns the same token bytes), so after a crash [`Platform::recover`] repeats the call
//! and continues. Wallet writes are idempotent on the round id, so a repeat never pays
//! twice. Tokens stay in the database: no view sent to the browser contains one.

use crate::accounts::{AccountPolicy, SignInThrottle};
use crate::db::Cached;
use crate::engine::{self, Engine, EngineError, Rules};
use crate::ledger::{self, LedgerError};
use crate::limits::{self, TableLimits};
use crate::players;
use crate::round_state::{Decision, RoundState};
use crate::terminal_states_sql;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The per-player lock map is pruned of unused locks once it holds more than this.
const LOCKS_PRUNE_AT: usize = 1024;

/// A commitment closer than this to its expiry is not dealt on (the deal could race it).
const EXPIRY_MARGIN_MS: i64 = 15_000;

/// Round failures, as the web layer reports them.
#[derive(Debug, thiserror::Error)]
pub enum RoundError {
    /// No such round for this player.
    #[error("round_id: no such round")]
    NotFound,
    /// The round is not in a state that allows this.
    #[error("{0}")]
    Conflict(String),
    /// The commitment expired before the deal; a new one must be shown.
    #[error("round_id: the commitment expired; a new one is shown")]
    Expired,
    /// The bet is outside the player's limits.
    #[error("bet: must be between {min} and {max}")]
    BetOutOfRange { min: u64, max: u64 },
    /// Not enough money.
    #[error("balance: {balance} available, {needed} needed")]
    InsufficientFunds { balance: i64, needed: i64 },
    /// No seat, too many seats, or no such seat.
    #[error("{0}")]
    BadSeats(String),
    /// Client seed empty or too long.
    #[error("client_seed: {0}")]
    BadClientSeed(String),
    /// The engine refused (a request the platform should not have made).
    #[error("the engine refused: {0}")]
    EngineRefused(String),
    /// The engine is not reachable; the round is kept and finished later.
    #[error("the engine is unavailable; the round is kept and will be finished: {0}")]
    EngineUnavailable(String),
    /// The ledger failed.
    #[error(transparent)]
    Ledger(LedgerError),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] rusqlite::Error),
}

impl From<LedgerError> for RoundError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::InsufficientFunds { balance, needed } => RoundError::InsufficientFunds { balance, needed },
            LedgerError::Db(db) => RoundError::Db(db),
            other => RoundError::Ledger(other),
        }
    }
}

impl From<EngineError> for RoundError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Refused(s) => RoundError::EngineRefused(s.message().to_string()),
            EngineError::Unavailable(s) => RoundError::EngineUnavailable(s.message().to_string()),
        }
    }
}

/// One round as stored.
#[derive(Debug, Clone)]
struct Row {
    round_id: String,
    player_id: i64,
    state: RoundState,
    nonce: i64,
    table_id: String,
    decks: i64,
    commitment: String,
    commitment_token: Vec<u8>,
    rules_digest: Option<String>,
    commit_expires_ms: i64,
    client_seed: Option<String>,
    bet: Option<i64>,
    limit_min: Option<i64>,
    limit_max: Option<i64>,
    round_token: Option<Vec<u8>>,
    step: Option<i64>,
    transcript: Option<String>,
    cards: Option<String>,
    hand_class: Option<String>,
    spread: Option<i64>,
    spread_odds: Option<i64>,
    stake: Option<i64>,
    returned: Option<i64>,
    reveal_json: Option<String>,
    balance_after: Option<i64>,
    recovered: bool,
    note: Option<String>,
    created_ms: i64,
    updated_ms: i64,
    transcripts: String,
    seats: Vec<Seat>,
    signature: Option<String>,
    signing_key_id: Option<String>,
}

/// One seat of a round: stored as JSON in `rounds.seats` and shown to the browser.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The original bet (minor units).
    pub bet: i64,
    /// `raise`, `stand`, `default` (stood because the round was settled without a decision),
    /// or none yet.
    pub decision: Option<Decision>,
    /// The decision has reached the engine (a `Decide` answered).
    #[serde(default)]
    pub sent: bool,
    /// The whole stake: the bet, or twice the bet once raised.
    pub stake: i64,
    /// `win`, `lose`, `push` once settled.
    pub outcome: Option<String>,
    /// The deciding rule once settled.
    pub rule: Option<String>,
    /// Odds paid on a win.
    pub odds: Option<i64>,
    /// Credited at settlement.
    pub returned: Option<i64>,
}

fn seats_json(seats: &[Seat]) -> String {
    serde_json::to_string(seats).unwrap_or_else(|_| "[]".into())
}

fn total_stake(seats: &[Seat]) -> Result<i64, RoundError> {
    seats.iter().try_fold(0i64, |a, s| a.checked_add(s.stake)).ok_or(RoundError::Ledger(LedgerError::Overflow))
}

/// The columns of a stored round, in the order [`row`] reads them.
macro_rules! round_columns {
    () => {
        "round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token, \
    commit_expires_ms, client_seed, bet, limit_min, limit_max, round_token, step, transcript, cards, hand_class, \
    spread, spread_odds, stake, returned, reveal_json, balance_after, recovered, note, \
    created_ms, updated_ms, transcripts, seats, rules_digest, signature, signing_key_id"
    };
}
const COLUMNS: &str = round_columns!();

/// The position of `name` in [`COLUMNS`], found at compile time (a name that is not there
/// does not build), so that [`row`] reads each column by name without looking the name up
/// in every row: by name, that lookup was a visible part of the platform's CPU under load.
const fn column(name: &str) -> usize {
    let (cols, want) = (COLUMNS.as_bytes(), name.as_bytes());
    let (mut index, mut start) = (0, 0);
    while start < cols.len() {
        let mut end = start;
        while end < cols.len() && cols[end] != b',' {
            end += 1;
        }
        let mut first = start;
        while first < end && cols[first] == b' ' {
            first += 1;
        }
        if end - first == want.len() {
            let mut k = 0;
            while k < want.len() && cols[first + k] == want[k] {
                k += 1;
            }
            if k == want.len() {
                return index;
            }
        }
        index += 1;
        start = end + 1;
    }
    panic!("not a column of COLUMNS");
}

/// [`column`], evaluated at compile time.
macro_rules! at {
    ($name:literal) => {
        const { column($name) }
    };
}

/// The seats of a stored round (`rounds.seats`; migration 0009 moved the one seat of a
/// round from before schema version 4 there). JSON that is not a list of seats is a read
/// error naming the column.
fn seats_from_json(json: &str) -> rusqlite::Result<Vec<Seat>> {
    serde_json::from_str(json).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(
            at!("seats"),
            rusqlite::types::Type::Text,
            format!("rounds.seats: not a list of seats: {e}").into(),
        )
    })
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        round_id: r.get(at!("round_id"))?,
        player_id: r.get(at!("player_id"))?,
        state: r.get(at!("state"))?,
        nonce: r.get(at!("nonce"))?,
        table_id: r.get(at!("table_id"))?,
        decks: r.get(at!("decks"))?,
        commitment: r.get(at!("commitment"))?,
        commitment_token: r.get(at!("commitment_token"))?,
        rules_digest: r.get(at!("rules_digest"))?,
        commit_expires_ms: r.get(at!("commit_expires_ms"))?,
        client_seed: r.get(at!("client_seed"))?,
        bet: r.get(at!("bet"))?,
        limit_min: r.get(at!("limit_min"))?,
        limit_max: r.get(at!("limit_max"))?,
        round_token: r.get(at!("round_token"))?,
        step: r.get(at!("step"))?,
        transcript: r.get(at!("transcript"))?,
        cards: r.get(at!("cards"))?,
        hand_class: r.get(at!("hand_class"))?,
        spread: r.get(at!("spread"))?,
        spread_odds: r.get(at!("spread_odds"))?,
        stake: r.get(at!("stake"))?,
        returned: r.get(at!("returned"))?,
        reveal_json: r.get(at!("reveal_json"))?,
        balance_after: r.get(at!("balance_after"))?,
        recovered: r.get(at!("recovered"))?,
        note: r.get(at!("note"))?,
        created_ms: r.get(at!("created_ms"))?,
        updated_ms: r.get(at!("updated_ms"))?,
        transcripts: r.get(at!("transcripts"))?,
        seats: seats_from_json(&r.get::<_, String>(at!("seats"))?)?,
        signature: r.get(at!("signature"))?,
        signing_key_id: r.get(at!("signing_key_id"))?,
    })
}

fn load(conn: &Connection, round_id: &str) -> rusqlite::Result<Option<Row>> {
    conn.query_row_cached(concat!("SELECT ", round_columns!(), " FROM rounds WHERE round_id = ?1"), [round_id], row)
        .optional()
}

/// A round as the browser sees it: everything but the tokens.
#[derive(Debug, Clone, Serialize)]
pub struct RoundView {
    /// The platform's round id (also bound into the commitment).
    pub round_id: String,
    /// `committed`, `betting`, `dealt`, `deciding`, `settling`, `settled`, `expired`, `voided`.
    pub state: RoundState,
    /// The nonce, as a decimal string (a u64 does not fit a JavaScript number).
    pub nonce: String,
    /// The table id.
    pub table_id: String,
    /// Decks in the shoe.
    pub decks: i64,
    /// The commitment (64 hex).
    pub commitment: String,
    /// The table's rules digest shown with the commitment (64 hex; none for a round
    /// committed before the platform stored it).
    pub rules_digest: Option<String>,
    /// When the commitment expires (Unix ms).
    pub commit_expires_ms: i64,
    /// For an unused commitment: in how many milliseconds (from this answer) the platform
    /// stops dealing on it and shows a new one; the page asks for the new one then, so an
    /// idle player never meets an expired commitment. Relative, so clocks need not agree.
    pub renew_in_ms: Option<i64>,
    /// The player's client seed, once fixed.
    pub client_seed: Option<String>,
    /// The original bets' total.
    pub bet: Option<i64>,
    /// Every seat: bet, decision, stake and, once settled, outcome and amount credited.
    pub seats: Vec<Seat>,
    /// The player's limits sent with StartRound.
    pub limits: Option<(i64, i64)>,
    /// Cards face up, in order.
    pub cards: Vec<String>,
    /// `pair`, `consecutive` or `non_consecutive`.
    pub hand_class: Option<String>,
    /// The spread (the "red dog" marker).
    pub spread: Option<i64>,
    /// The odds the spread pays.
    pub spread_odds: Option<i64>,
    /// Whether Raise and Stand are legal now.
    pub awaiting_decision: bool,
    /// One seat: `raise`, `stand` or `default` (stood because the round was settled without
    /// a decision); several seats: none (see `seats`).
    pub decision: Option<Decision>,
    /// The whole stake, all seats.
    pub stake: Option<i64>,
    /// The first seat's `win`, `lose` or `push` (every seat's in `seats`).
    pub outcome: Option<String>,
    /// The first seat's deciding rule.
    pub rule: Option<String>,
    /// The first seat's odds paid on a win.
    pub odds: Option<i64>,
    /// Credited at settlement, all seats.
    pub returned: Option<i64>,
    /// The reveal JSON, exactly as the engine returned it, to verify in the browser.
    pub reveal_json: Option<String>,
    /// The engine's signature over the reveal (128 hex), when the engine signs receipts.
    pub signature: Option<String>,
    /// Which of the engine's keys (`GetRules` `signing_keys`) made `signature`.
    pub signing_key_id: Option<String>,
    /// The player's balance right after the credit.
    pub balance_after: Option<i64>,
    /// The round was finished by recovery after a platform restart.
    pub recovered: bool,
    /// Decide steps applied (round-integrity API).
    pub step: Option<i64>,
    /// Transcript hash of the engine's latest answer (round-integrity API).
    pub transcript: Option<String>,
    /// The transcript hash of every engine answer of the round, in order (StartRound,
    /// Decide, Settle): the page keeps each one it is shown and compares them with the
    /// reveal's transcript chain.
    pub transcripts: Vec<String>,
    /// What happened, when unusual.
    pub note: Option<String>,
    /// Created (Unix ms).
    pub created_ms: i64,
    /// Last change (Unix ms).
    pub updated_ms: i64,
}

impl From<Row> for RoundView {
    fn from(r: Row) -> Self {
        let cards = r.cards.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
        let transcripts = serde_json::from_str(&r.transcripts).unwrap_or_default();
        let seats = r.seats;
        let first = seats.first().cloned().unwrap_or_default();
        let renew_in_ms = (r.state == RoundState::Committed)
            .then(|| r.commit_expires_ms.saturating_sub(EXPIRY_MARGIN_MS).saturating_sub(now_ms()).max(0));
        RoundView {
            awaiting_decision: r.state == RoundState::Dealt,
            round_id: r.round_id,
            state: r.state,
            nonce: r.nonce.to_string(),
            table_id: r.table_id,
            decks: r.decks,
            commitment: r.commitment,
            rules_digest: r.rules_digest.filter(|d| !d.is_empty()),
            commit_expires_ms: r.commit_expires_ms,
            renew_in_ms,
            client_seed: r.client_seed,
            bet: r.bet,
            decision: if seats.len() == 1 { first.decision } else { None },
            outcome: first.outcome,
            rule: first.rule,
            odds: first.odds,
            seats,
            limits: r.limit_min.zip(r.limit_max),
            cards,
            hand_class: r.hand_class,
            spread: r.spread,
            spread_odds: r.spread_odds,
            stake: r.stake,
            returned: r.returned,
            reveal_json: r.reveal_json,
            signature: r.signature.filter(|s| !s.is_empty()),
            signing_key_id: r.signing_key_id.filter(|s| !s.is_empty()),
            balance_after: r.balance_after,
            recovered: r.recovered,
            step: r.step,
            transcript: r.transcript,
            transcripts,
            note: r.note,
            created_ms: r.created_ms,
            updated_ms: r.updated_ms,
        }
    }
}

/// Which page of a player's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryAt {
    /// The newest rounds.
    Newest,
    /// The rounds just older than this nonce.
    Before(i64),
    /// The rounds just newer than this nonce.
    After(i64),
}

/// One page of a player's history, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryPage {
    /// The rounds.
    pub rounds: Vec<RoundView>,
    /// When older rounds exist: the nonce to ask `before` for them (decimal).
    pub older: Option<String>,
    /// When newer rounds exist: the nonce to ask `after` for them (decimal).
    pub newer: Option<String>,
    /// The balance right after the round just older than this page (none on the oldest
    /// page, or when that round has no balance recorded).
    pub balance_before: Option<i64>,
}

/// An unfinished round as recovery finds it: id, player, state.
type OpenRound = (String, i64, RoundState);

/// What a recovery pass did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RecoveryReport {
    /// Rounds finished (settled or voided).
    pub finished: Vec<String>,
    /// Rounds still open because the engine could not be reached.
    pub pending: Vec<String>,
    /// Unused commitments that had expired.
    pub expired: usize,
}

/// The reference platform: database, engine client, the table's rules.
pub struct Platform {
    db: crate::db::Writer,
    readers: Option<crate::db::Readers>,
    engine: Engine,
    /// The engine's rules, read once at start.
    pub rules: Rules,
    /// The table's limits.
    pub table: TableLimits,
    /// Balance given to a new player (minor units).
    pub new_player_balance: i64,
    /// Session lifetimes, sign-up timing and the sign-in back-off.
    pub accounts: AccountPolicy,
    /// Wrong sign-ins per client address.
    pub sign_in: SignInThrottle,
    locks: tokio::sync::Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    crash_at: Option<String>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

fn u64_of(v: i64) -> Result<u64, RoundError> {
    u64::try_from(v).map_err(|_| RoundError::Ledger(LedgerError::Overflow))
}

fn i64_of(v: u64) -> Result<i64, RoundError> {
    i64::try_from(v).map_err(|_| RoundError::Ledger(LedgerError::Overflow))
}

impl Platform {
    /// A platform over an open database and an engine whose rules are known.
    ///
    /// `crash_at` is a test-only failpoint (`REDDOG_DEMO_CRASH_AT`): the process aborts at
    /// that point of the flow, exactly like a crash, so the recovery test can aim it.
    pub fn new(
        conn: Connection,
        engine: Engine,
        rules: Rules,
        new_player_balance: i64,
        crash_at: Option<String>,
    ) -> std::io::Result<Self> {
        let table = TableLimits { min_bet: rules.min_bet, max_bet: rules.max_bet };
        Ok(Platform {
            db: crate::db::Writer::start(conn)?,
            readers: None,
            engine,
            rules,
            table,
            new_player_balance,
            accounts: AccountPolicy::default(),
            sign_in: SignInThrottle::new(AccountPolicy::default().throttle),
            locks: tokio::sync::Mutex::new(HashMap::new()),
            crash_at,
        })
    }

    /// The same platform reading through these read-only connections ([`Platform::read`]).
    pub fn with_readers(mut self, readers: crate::db::Readers) -> Self {
        self.readers = Some(readers);
        self
    }

    /// Runs a read on a read-only connection (off the async workers, without waiting for
    /// the database thread's next commit); without read connections (an in-memory database
    /// in tests) on the database thread.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<rusqlite::Error> + Send + 'static,
    {
        match &self.readers {
            Some(readers) => readers.run(f).await,
            None => self.db(move |c| f(c)).await,
        }
    }

    /// The same platform with another accounts policy (session lifetimes, sign-up floor,
    /// sign-in back-off).
    pub fn with_accounts(mut self, policy: AccountPolicy) -> Self {
        self.accounts = policy;
        self.sign_in = SignInThrottle::new(policy.throttle);
        self
    }

    /// Runs `f` on the database thread ([`crate::db::Writer`]: never on an async worker,
    /// committed with the other requests' writes of the moment) and returns its result once
    /// committed. Never held across an engine call.
    pub async fn db<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<rusqlite::Error> + Send + 'static,
    {
        self.db.run(f).await
    }

    async fn player_lock(&self, player: i64) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().await;
            // Bounded by the players with a request in flight: a lock nobody holds or waits
            // for (only the map's own reference left) is dropped.
            if locks.len() > LOCKS_PRUNE_AT {
                locks.retain(|_, l| Arc::strong_count(l) > 1);
            }
            locks.entry(player).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// Per-player locks currently in the map (for tests).
    pub async fn lock_count(&self) -> usize {
        self.locks.lock().await.len()
    }

    fn crash_point(&self, name: &str) {
        if self.crash_at.as_deref() == Some(name) {
            eprintln!("REDDOG_DEMO_CRASH_AT={name}: aborting the process here (test failpoint)");
            std::process::abort();
        }
    }

    /// The player's open round, after finishing any step the platform still owes it (e.g.
    /// after an engine outage). `None` when the player has no open round.
    pub async fn open_round(&self, player: i64) -> Result<Option<RoundView>, RoundError> {
        let _guard = self.player_lock(player).await;
        match self.open_row(player).await?.0 {
            Some(r) => self.resume(r).await,
            None => Ok(None),
        }
    }

    /// The player's unfinished round as stored, if any, and their next nonce: one read on a
    /// read-only connection (with the player's lock held, every write of theirs was answered
    /// before, so it is visible there).
    async fn open_row(&self, player: i64) -> Result<(Option<Row>, i64), RoundError> {
        self.read(move |c| -> rusqlite::Result<(Option<Row>, i64)> {
            let open = c
                .query_row_cached(
                    concat!(
                        "SELECT ",
                        round_columns!(),
                        " FROM rounds WHERE player_id = ?1 AND state NOT IN ",
                        terminal_states_sql!()
                    ),
                    [player],
                    row,
                )
                .optional()?;
            let nonce =
                c.query_row_cached("SELECT next_nonce FROM players WHERE id = ?1", [player], |r| r.get("next_nonce"))?;
            Ok((open, nonce))
        })
        .await
        .map_err(RoundError::from)
    }

    /// Finishes any step the platform owes an open round; an unused commitment near its
    /// expiry is expired. The round when it waits for the player (`committed`, `dealt`).
    async fn resume(&self, r: Row) -> Result<Option<RoundView>, RoundError> {
        let r = self.advance_from(r).await?;
        if r.state == RoundState::Committed && r.commit_expires_ms <= now_ms() + EXPIRY_MARGIN_MS {
            let round_id = r.round_id;
            self.db(move |c| {
                c.execute_cached(
                    "UPDATE rounds SET state = ?3, updated_ms = ?2 WHERE round_id = ?1",
                    params![round_id, now_ms(), RoundState::Expired],
                )
            })
            .await?;
            return Ok(None);
        }
        Ok(r.state.waits_for_player().then(|| r.into()))
    }

    /// The open round, or a new one: `CommitSeed` for a fresh round id and the player's next
    /// nonce. The answer (commitment, nonce, table, decks) is what the player sees before
    /// choosing a client seed.
    pub async fn current_or_new(&self, player: i64) -> Result<RoundView, RoundError> {
        let _guard = self.player_lock(player).await;
        let (open, nonce) = self.open_row(player).await?;
        if let Some(r) = open
            && let Some(view) = self.resume(r).await?
        {
            return Ok(view);
        }
        let mut suffix = [0u8; 4];
        getrandom::fill(&mut suffix).map_err(|e| RoundError::EngineUnavailable(e.to_string()))?;
        let round_id = format!("p{player}-n{nonce}-{}", hex::encode(suffix));
        let c = self.engine.commit(&round_id, u64_of(nonce)?).await?;
        let now = now_ms();
        let id = round_id.clone();
        let r = self
            .db(move |conn| -> rusqlite::Result<Option<Row>> {
                let tx = conn.savepoint()?;
                tx.execute_cached(
                "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                     commit_expires_ms, created_ms, updated_ms, rules_digest)
                 VALUES (?1, ?2, ?11, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10)",
                params![
                    round_id,
                    player,
                    nonce,
                    c.table_id,
                    c.decks,
                    c.commitment,
                    c.token,
                    c.expires_ms,
                    now,
                    c.rules_digest,
                    RoundState::Committed
                ],
            )?;
                tx.execute_cached("UPDATE players SET next_nonce = ?2 WHERE id = ?1", params![player, nonce + 1])?;
                tx.commit()?;
                load(conn, &id)
            })
            .await?
            .ok_or(RoundError::NotFound)?;
        Ok(r.into())
    }

    /// Deal: fixes the client seed and one bet per seat (1 to the table's `max_seats`),
    /// debits each seat's bet (`<round>:seat<k>:bet`), then `StartRound`. A pair or a
    /// consecutive hand is settled at once. A retry with the same seed and bets returns the
    /// round as it is.
    pub async fn deal(
        &self,
        player: i64,
        round_id: &str,
        client_seed: &str,
        bets: &[i64],
    ) -> Result<RoundView, RoundError> {
        let _guard = self.player_lock(player).await;
        let now = now_ms();
        let table = self.table;
        let max_seed = usize::try_from(self.rules.max_client_seed_bytes).unwrap_or(1024);
        let max_seats = usize::try_from(self.rules.max_seats).unwrap_or(1);
        let (id, seed, wanted_bets) = (round_id.to_string(), client_seed.to_string(), bets.to_vec());
        let (proceed, row) = self
            .db(move |c| -> Result<(bool, Row), RoundError> {
                let (round_id, client_seed, bets) = (id.as_str(), seed.as_str(), wanted_bets.as_slice());
                let tx = c.savepoint()?;
                let r = load(&tx, round_id)?.filter(|r| r.player_id == player).ok_or(RoundError::NotFound)?;
                if r.state != RoundState::Committed {
                    let same_bets = r.seats.iter().map(|s| s.bet).eq(bets.iter().copied());
                    if r.client_seed.as_deref() == Some(client_seed) && same_bets {
                        return Ok((false, r)); // a retry: report the round as it is
                    }
                    if r.state == RoundState::Expired {
                        // Expired unused (e.g. by a recovery pass while the page sat idle):
                        // nothing was dealt or debited, and the page is shown a new commitment.
                        return Err(RoundError::Expired);
                    }
                    return Err(RoundError::Conflict("round_id: this round was already dealt".into()));
                }
                if r.commit_expires_ms <= now + EXPIRY_MARGIN_MS {
                    tx.execute_cached(
                        "UPDATE rounds SET state = ?3, updated_ms = ?2 WHERE round_id = ?1",
                        params![round_id, now, RoundState::Expired],
                    )?;
                    tx.commit()?;
                    return Err(RoundError::Expired);
                }
                if client_seed.is_empty() || client_seed.len() > max_seed {
                    return Err(RoundError::BadClientSeed(format!("1 to {max_seed} bytes of UTF-8")));
                }
                if bets.is_empty() || bets.len() > max_seats {
                    return Err(RoundError::BadSeats(format!("bets: 1 to {max_seats} seats, one bet each")));
                }
                let limit = players::limit(&tx, player)?;
                let (min, max) = limit.effective(table);
                let mut total: i64 = 0;
                for &bet in bets {
                    let bet_u = u64::try_from(bet).map_err(|_| RoundError::BetOutOfRange { min, max })?;
                    limits::check_bet(table, &limit, bet_u)
                        .map_err(|(min, max)| RoundError::BetOutOfRange { min, max })?;
                    total = total.checked_add(bet).ok_or(RoundError::Ledger(LedgerError::Overflow))?;
                }
                let wallet = ledger::player_account(&tx, player)?;
                let house = ledger::system_account(&tx, "house")?;
                let balance = ledger::balance(&tx, wallet)?;
                if balance < total {
                    return Err(RoundError::InsufficientFunds { balance, needed: total });
                }
                for (k, &bet) in bets.iter().enumerate() {
                    let key = format!("{round_id}:seat{k}:bet");
                    ledger::post(&tx, &key, "bet", Some(round_id), &[(wallet, -bet), (house, bet)], now)?;
                }
                let seats: Vec<Seat> = bets.iter().map(|&bet| Seat { bet, stake: bet, ..Seat::default() }).collect();
                tx.execute_cached(
                "UPDATE rounds SET state = ?8, client_seed = ?2, bet = ?3, stake = ?3, limit_min = ?4, limit_max = ?5,
                                   updated_ms = ?6, seats = ?7 WHERE round_id = ?1",
                params![
                    round_id,
                    client_seed,
                    total,
                    i64_of(min)?,
                    i64_of(max)?,
                    now,
                    seats_json(&seats),
                    RoundState::Betting
                ],
            )?;
                tx.commit()?;
                Ok((true, load(c, round_id)?.ok_or(RoundError::NotFound)?))
            })
            .await?;
        if proceed {
            self.crash_point("after_bet_debit");
        }
        Ok(self.advance_from(row).await?.into())
    }

    /// Raise or stand for one seat: records the decision (debiting the raise,
    /// `<round>:seat<k>:raise`) before `Decide`; once every seat has decided, settles. A
    /// retry of the same decision returns the round as it is.
    pub async fn decide(&self, player: i64, round_id: &str, seat: usize, raise: bool) -> Result<RoundView, RoundError> {
        let _guard = self.player_lock(player).await;
        let now = now_ms();
        let wanted = if raise { Decision::Raise } else { Decision::Stand };
        let id = round_id.to_string();
        let (proceed, row) = self
            .db(move |c| -> Result<(bool, Row), RoundError> {
                let round_id = id.as_str();
                let tx = c.savepoint()?;
                let r = load(&tx, round_id)?.filter(|r| r.player_id == player).ok_or(RoundError::NotFound)?;
                let mut seats = r.seats.clone();
                let Some(this) = seats.get(seat) else {
                    return Err(RoundError::BadSeats(format!(
                        "seat: this round has seats 0 to {}",
                        seats.len().saturating_sub(1)
                    )));
                };
                if this.decision == Some(wanted) {
                    return Ok((false, r)); // a retry
                }
                if r.state != RoundState::Dealt || this.decision.is_some() {
                    return Err(RoundError::Conflict(format!(
                        "action: seat {seat} is not waiting for a decision (the round is {})",
                        r.state
                    )));
                }
                let bet = this.bet;
                let stake = if raise {
                    let wallet = ledger::player_account(&tx, player)?;
                    let house = ledger::system_account(&tx, "house")?;
                    let key = format!("{round_id}:seat{seat}:raise");
                    ledger::post(&tx, &key, "raise", Some(round_id), &[(wallet, -bet), (house, bet)], now)?;
                    bet.checked_mul(2).ok_or(RoundError::Ledger(LedgerError::Overflow))?
                } else {
                    bet
                };
                seats[seat].decision = Some(wanted);
                seats[seat].stake = stake;
                let total = total_stake(&seats)?;
                tx.execute_cached(
                    "UPDATE rounds SET state = ?2, stake = ?3, updated_ms = ?4, seats = ?5 WHERE round_id = ?1",
                    params![round_id, RoundState::Deciding, total, now, seats_json(&seats)],
                )?;
                tx.commit()?;
                Ok((true, load(c, round_id)?.ok_or(RoundError::NotFound)?))
            })
            .await?;
        if proceed && raise {
            self.crash_point("after_raise_debit");
        }
        Ok(self.advance_from(row).await?.into())
    }

    /// Drives a round from its stored state through every engine call the platform owes it,
    /// until it waits for the player (`committed`, `dealt`) or is finished. Each state's
    /// request is repeated exactly (deterministic engine); an engine outage leaves the round
    /// where it is, to be finished later.
    async fn advance(&self, round_id: &str) -> Result<Row, RoundError> {
        // Each pass moves the state forward (betting → dealt|settling → settled,
        // deciding → dealt|settling → settled), so four passes always suffice.
        let r = self.load(round_id).await?;
        self.advance_from(r).await
    }

    /// [`Platform::advance`] from a row just read (each step's write answers with the row
    /// as written, so no step reads it again).
    async fn advance_from(&self, mut r: Row) -> Result<Row, RoundError> {
        for _ in 0..4 {
            r = match r.state {
                RoundState::Betting => self.step_start(&r).await?,
                RoundState::Deciding => self.step_decide(&r).await?,
                RoundState::Settling => self.step_settle(&r).await?,
                RoundState::Committed
                | RoundState::Dealt
                | RoundState::Settled
                | RoundState::Expired
                | RoundState::Voided => return Ok(r),
            };
        }
        Ok(r)
    }

    /// The stored round (read on a read-only connection: every write to it was answered
    /// before, as its player's requests hold the player's lock).
    async fn load(&self, round_id: &str) -> Result<Row, RoundError> {
        let id = round_id.to_string();
        self.read(move |c| load(c, &id)).await?.ok_or(RoundError::NotFound)
    }

    async fn step_start(&self, r: &Row) -> Result<Row, RoundError> {
        let (Some(seed), Some(min), Some(max)) = (&r.client_seed, r.limit_min, r.limit_max) else {
            return Err(RoundError::Conflict("round is missing its deal inputs".into()));
        };
        let bets = r.seats.iter().map(|s| u64_of(s.bet)).collect::<Result<Vec<_>, _>>()?;
        let answer = self
            .engine
            .start(r.commitment_token.clone(), seed, u64_of(r.nonce)?, &r.round_id, &bets, (u64_of(min)?, u64_of(max)?))
            .await;
        let now = now_ms();
        match answer {
            Ok(resp) => {
                // The engine has dealt; a crash here loses its answer, and recovery asks again.
                self.crash_point("after_start_answer");
                let view = resp.round.unwrap_or_default();
                let mut cards = vec![];
                for c in [&view.first_card, &view.second_card, &view.third_card].into_iter().flatten() {
                    cards.push(c.code.clone());
                }
                let state = if view.awaiting_decisions { RoundState::Dealt } else { RoundState::Settling };
                let round_id = r.round_id.clone();
                let cards = serde_json::to_string(&cards).unwrap_or_default();
                self.db(move |c| -> rusqlite::Result<Option<Row>> {
                    c.execute_cached(
                        "UPDATE rounds SET state = ?2, round_token = ?3, cards = ?4, hand_class = ?5, spread = ?6,
                                spread_odds = ?7, step = ?8, transcript = ?9, updated_ms = ?10,
                                transcripts = json_insert(transcripts, '$[#]', ?9) WHERE round_id = ?1",
                        params![
                            round_id,
                            state,
                            resp.round_token,
                            cards,
                            engine::hand_class_name(view.hand_class),
                            view.spread,
                            view.spread_odds,
                            resp.step,
                            resp.transcript,
                            now
                        ],
                    )?;
                    load(c, &round_id)
                })
                .await?
                .ok_or(RoundError::NotFound)
            }
            Err(EngineError::Refused(status)) => {
                // The engine dealt nothing: void the round and refund the bets.
                tracing::warn!(round_id = %r.round_id, code = ?status.code(), "StartRound refused; refunding the bets");
                self.void_and_refund(r, format!("the engine refused to deal ({}); bet refunded", status.message()))
                    .await?;
                Err(RoundError::EngineRefused(status.message().to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn void_and_refund(&self, r: &Row, note: String) -> Result<(), RoundError> {
        let now = now_ms();
        let seats = r.seats.clone();
        let r = r.clone();
        self.db(move |c| -> Result<(), RoundError> {
            let tx = c.savepoint()?;
            let wallet = ledger::player_account(&tx, r.player_id)?;
            let house = ledger::system_account(&tx, "house")?;
            let mut refunded: i64 = 0;
            for (k, s) in seats.iter().enumerate() {
                let key = format!("{}:seat{k}:refund", r.round_id);
                ledger::post(&tx, &key, "refund", Some(&r.round_id), &[(house, -s.bet), (wallet, s.bet)], now)?;
                refunded = refunded.checked_add(s.bet).ok_or(RoundError::Ledger(LedgerError::Overflow))?;
            }
            let balance = ledger::balance(&tx, wallet)?;
            tx.execute_cached(
                "UPDATE rounds SET state = ?6, note = ?2, returned = ?3, balance_after = ?4, updated_ms = ?5 WHERE round_id = ?1",
                params![r.round_id, note, refunded, balance, now, RoundState::Voided],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn step_decide(&self, r: &Row) -> Result<Row, RoundError> {
        let token = r.round_token.clone().ok_or_else(|| RoundError::Conflict("round has no token".into()))?;
        let mut seats = r.seats.clone();
        // The decisions recorded but not yet sent, in ascending seat order.
        let mut pending = vec![];
        for (k, s) in seats.iter().enumerate() {
            if let (Some(d), false) = (s.decision, s.sent) {
                pending.push((u32::try_from(k).unwrap_or(u32::MAX), d == Decision::Raise));
            }
        }
        match self.engine.decide(token, &r.round_id, &pending).await {
            Ok(resp) => {
                self.crash_point("after_decide_answer");
                for &(k, _) in &pending {
                    if let Some(s) = seats.get_mut(k as usize) {
                        s.sent = true;
                    }
                }
                let more = resp.round.as_ref().is_some_and(|v| v.awaiting_decisions);
                let state = if more { RoundState::Dealt } else { RoundState::Settling };
                let now = now_ms();
                let round_id = r.round_id.clone();
                let seats = seats_json(&seats);
                self.db(move |c| -> rusqlite::Result<Option<Row>> {
                    c.execute_cached(
                        "UPDATE rounds SET state = ?6, round_token = ?2, step = ?3, transcript = ?4, updated_ms = ?5,
                                transcripts = json_insert(transcripts, '$[#]', ?4), seats = ?7
                         WHERE round_id = ?1",
                        params![round_id, resp.round_token, resp.step, resp.transcript, now, state, seats],
                    )?;
                    load(c, &round_id)
                })
                .await?
                .ok_or(RoundError::NotFound)
            }
            Err(EngineError::Refused(status)) => {
                // Cannot happen when the protocol is followed; never lose the round: give the
                // raises back and settle the previous token (the seats stand).
                tracing::error!(round_id = %r.round_id, code = ?status.code(), "Decide refused; settling as a stand");
                let now = now_ms();
                let r = r.clone();
                self.db(move |c| -> Result<Row, RoundError> {
                    let tx = c.savepoint()?;
                    let wallet = ledger::player_account(&tx, r.player_id)?;
                    let house = ledger::system_account(&tx, "house")?;
                    for &(k, raised) in &pending {
                        let Some(s) = seats.get_mut(k as usize) else { continue };
                        if raised {
                            let key = format!("{}:seat{k}:refund", r.round_id);
                            ledger::post(
                                &tx,
                                &key,
                                "refund",
                                Some(&r.round_id),
                                &[(house, -s.bet), (wallet, s.bet)],
                                now,
                            )?;
                        }
                        s.decision = Some(Decision::Default);
                        s.stake = s.bet;
                        s.sent = true;
                    }
                    let total = total_stake(&seats)?;
                    tx.execute_cached(
                        "UPDATE rounds SET state = ?4, stake = ?5, note = ?2, updated_ms = ?3, seats = ?6
                         WHERE round_id = ?1",
                        params![
                            r.round_id,
                            format!("the engine refused the decision ({}); settled as a stand", status.message()),
                            now,
                            RoundState::Settling,
                            total,
                            seats_json(&seats)
                        ],
                    )?;
                    tx.commit()?;
                    load(c, &r.round_id)?.ok_or(RoundError::NotFound)
                })
                .await
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn step_settle(&self, r: &Row) -> Result<Row, RoundError> {
        let token = r.round_token.clone().ok_or_else(|| RoundError::Conflict("round has no token".into()))?;
        let resp = match self.engine.settle(token, &r.round_id).await {
            Ok(resp) => resp,
            Err(EngineError::Refused(status)) => {
                tracing::error!(round_id = %r.round_id, code = ?status.code(), "Settle refused; the round stays open for an operator");
                let note = format!("the engine refused to settle ({}); kept for an operator", status.message());
                let round_id = r.round_id.clone();
                self.db(move |c| {
                    c.execute_cached("UPDATE rounds SET note = ?2 WHERE round_id = ?1", params![round_id, note])
                })
                .await?;
                return Err(RoundError::EngineRefused(status.message().to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        self.crash_point("after_settle_answer");
        let view = resp.round.clone().unwrap_or_default();
        let mut cards = vec![];
        for c in [&view.first_card, &view.second_card, &view.third_card].into_iter().flatten() {
            cards.push(c.code.clone());
        }
        let mut seats = r.seats.clone();
        let mut note = r.note.clone();
        for result in &resp.results {
            let k = result.seat as usize;
            let Some(s) = seats.get_mut(k) else {
                tracing::error!(round_id = %r.round_id, seat = k, "Settle answered for a seat the round does not have");
                note = Some(format!("the engine settled seat {k}, which this round does not have"));
                continue;
            };
            let engine_stake = i64_of(result.stake)?;
            if engine_stake != s.stake {
                // The platform debited s.stake; the engine settled engine_stake. Never happens
                // when the protocol is followed; recorded for an operator if it does.
                tracing::error!(round_id = %r.round_id, seat = k, engine_stake, debited = s.stake, "stake mismatch");
                note = Some(format!("stake mismatch on seat {k}: engine {engine_stake}, debited {}", s.stake));
            }
            s.stake = engine_stake;
            if result.stood_by_default {
                s.decision = Some(Decision::Default);
            }
            s.outcome = Some(engine::outcome_name(result.outcome).to_string());
            s.rule = Some(engine::rule_name(result.rule).to_string());
            s.odds = Some(i64::from(result.odds));
            s.returned = Some(i64_of(result.returned)?);
        }
        let returned = seats.iter().try_fold(0i64, |a, s| a.checked_add(s.returned.unwrap_or(0)));
        let returned = returned.ok_or(RoundError::Ledger(LedgerError::Overflow))?;
        let stake = total_stake(&seats)?;
        let now = now_ms();
        let r = r.clone();
        self.db(move |c| -> Result<Row, RoundError> {
            let tx = c.savepoint()?;
            let wallet = ledger::player_account(&tx, r.player_id)?;
            let house = ledger::system_account(&tx, "house")?;
            for (k, s) in seats.iter().enumerate() {
                let amount = s.returned.unwrap_or(0);
                if amount > 0 {
                    let key = format!("{}:seat{k}:payout", r.round_id);
                    ledger::post(&tx, &key, "payout", Some(&r.round_id), &[(house, -amount), (wallet, amount)], now)?;
                }
            }
            let balance = ledger::balance(&tx, wallet)?;
            tx.execute_cached(
                "UPDATE rounds SET state = ?3, cards = ?2, returned = ?4, reveal_json = ?5, balance_after = ?6, note = ?7,
                        stake = ?8, updated_ms = ?9, step = ?10, transcript = ?11,
                        transcripts = json_insert(transcripts, '$[#]', ?11), seats = ?12, signature = ?13,
                        signing_key_id = ?14
                 WHERE round_id = ?1",
                params![
                    r.round_id,
                    serde_json::to_string(&cards).unwrap_or_default(),
                    RoundState::Settled,
                    returned,
                    resp.reveal_json,
                    balance,
                    note,
                    stake,
                    now,
                    resp.step,
                    resp.transcript,
                    seats_json(&seats),
                    Some(resp.signature).filter(|s| !s.is_empty()),
                    Some(resp.signing_key_id).filter(|s| !s.is_empty())
                ],
            )?;
            tx.commit()?;
            load(c, &r.round_id)?.ok_or(RoundError::NotFound)
        })
        .await
    }

    /// Finds every round a crash (or an engine outage) left unfinished and finishes it.
    ///
    /// With `at_startup`, rounds that were waiting for the player's decision when the
    /// platform went down are settled too (the engine stands an undecided seat); otherwise
    /// they are left for the player, who sees them resumed. Unused commitments past their
    /// expiry are marked expired (nothing was debited for them).
    pub async fn recover(&self, at_startup: bool) -> Result<RecoveryReport, RoundError> {
        let mut report = RecoveryReport::default();
        let now = now_ms();
        let (expired, open) = self
            .db(move |c| -> rusqlite::Result<(usize, Vec<OpenRound>)> {
                let expired = c.execute_cached(
                    "UPDATE rounds SET state = ?3, updated_ms = ?1 WHERE state = ?4 AND commit_expires_ms <= ?2",
                    params![now, now + EXPIRY_MARGIN_MS, RoundState::Expired, RoundState::Committed],
                )?;
                // Every round dealt and not finished (an unused commitment owes nothing).
                let mut stmt = c.prepare(concat!(
                    "SELECT round_id, player_id, state FROM rounds WHERE state NOT IN ",
                    terminal_states_sql!(),
                    " AND state <> ?1 ORDER BY created_ms"
                ))?;
                let rows = stmt.query_map([RoundState::Committed], |r| {
                    Ok((r.get("round_id")?, r.get("player_id")?, r.get("state")?))
                })?;
                Ok((expired, rows.collect::<rusqlite::Result<Vec<_>>>()?))
            })
            .await?;
        report.expired = expired;
        for (round_id, player, state) in open {
            if state == RoundState::Dealt && !at_startup {
                continue;
            }
            let _guard = self.player_lock(player).await;
            // The player's own request may have finished the round while this pass waited
            // for the lock: only a round still where it was is recovered.
            let id = round_id.clone();
            let still = self
                .db(move |c| -> rusqlite::Result<bool> {
                    let now: Option<RoundState> = c
                        .query_row_cached("SELECT state FROM rounds WHERE round_id = ?1", [&id], |r| r.get("state"))
                        .optional()?;
                    let still = now == Some(state);
                    if still {
                        c.execute_cached("UPDATE rounds SET recovered = 1 WHERE round_id = ?1", [&id])?;
                    }
                    Ok(still)
                })
                .await?;
            if !still {
                continue;
            }
            let mut result = self.advance(&round_id).await;
            // At start, a round waiting for the player's decision (found so, or dealt just
            // now by recovery) is settled: the engine stands an undecided seat.
            if at_startup && result.as_ref().is_ok_and(|r| r.state == RoundState::Dealt) {
                let id = round_id.clone();
                self.db(move |c| {
                    c.execute_cached(
                        "UPDATE rounds SET state = ?3, updated_ms = ?2,
                                note = 'the platform restarted during the round: settled with no decision (stand)'
                         WHERE round_id = ?1 AND state = ?4",
                        params![id, now_ms(), RoundState::Settling, RoundState::Dealt],
                    )
                })
                .await?;
                result = self.advance(&round_id).await;
            }
            match result {
                Ok(r) => {
                    tracing::info!(round_id = %round_id, from = %state, to = %r.state, "recovered round");
                    report.finished.push(round_id);
                }
                Err(e) => {
                    tracing::warn!(round_id = %round_id, error = %e, "round still unfinished");
                    report.pending.push(round_id);
                }
            }
        }
        Ok(report)
    }

    /// One of the player's rounds as it is now, after finishing any step the platform still
    /// owes it when the engine answers (the page asks after an outage to learn what happened
    /// to its open round). An engine still unreachable leaves the round as stored.
    pub async fn round_status(&self, player: i64, round_id: &str) -> Result<RoundView, RoundError> {
        let _guard = self.player_lock(player).await;
        let r = Some(self.load(round_id).await?).filter(|r| r.player_id == player).ok_or(RoundError::NotFound)?;
        if r.state.owes_engine_call() {
            match self.advance(round_id).await {
                Ok(done) => return Ok(done.into()),
                Err(RoundError::EngineUnavailable(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(r.into())
    }

    /// One page of the player's rounds that were dealt, newest first, with their reveals:
    /// the newest `limit`, or the `limit` just older (`Before`) or just newer (`After`) than
    /// a nonce. The page says whether older and newer rounds exist, and the balance right
    /// after the round just older than the page (so its oldest round's balance change can
    /// be checked too).
    pub async fn history(&self, player: i64, limit: i64, at: HistoryAt) -> Result<HistoryPage, RoundError> {
        let limit = limit.max(1);
        self.read(move |c| {
            // Dealt rounds: not an unused commitment, used or expired.
            let dealt = format!(
                "player_id = ?1 AND state NOT IN ('{}', '{}')",
                RoundState::Committed.as_str(),
                RoundState::Expired.as_str()
            );
            let (bound, order, nonce) = match at {
                HistoryAt::Newest => ("", "DESC", 0),
                HistoryAt::Before(n) => ("AND nonce < ?3", "DESC", n),
                HistoryAt::After(n) => ("AND nonce > ?3", "ASC", n),
            };
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM rounds WHERE {dealt} {bound} ORDER BY nonce {order} LIMIT ?2"
            ))?;
            let rows = if bound.is_empty() {
                stmt.query_map(params![player, limit], row)?.collect::<rusqlite::Result<Vec<_>>>()?
            } else {
                stmt.query_map(params![player, limit, nonce], row)?.collect::<rusqlite::Result<Vec<_>>>()?
            };
            let mut rounds: Vec<Row> = rows;
            if matches!(at, HistoryAt::After(_)) {
                rounds.reverse();
            }
            let (Some(newest), Some(oldest)) = (rounds.first().map(|r| r.nonce), rounds.last().map(|r| r.nonce)) else {
                return Ok(HistoryPage { rounds: vec![], older: None, newer: None, balance_before: None });
            };
            let before: Option<Option<i64>> = c
                .query_row_cached(
                    &format!(
                        "SELECT balance_after FROM rounds WHERE {dealt} AND nonce < ?2 ORDER BY nonce DESC LIMIT 1"
                    ),
                    params![player, oldest],
                    |r| r.get("balance_after"),
                )
                .optional()?;
            let newer: Option<i64> = c
                .query_row_cached(
                    &format!("SELECT nonce FROM rounds WHERE {dealt} AND nonce > ?2 LIMIT 1"),
                    params![player, newest],
                    |r| r.get("nonce"),
                )
                .optional()?;
            Ok(HistoryPage {
                rounds: rounds.into_iter().map(RoundView::from).collect(),
                older: before.is_some().then(|| oldest.to_string()),
                newer: newer.map(|_| newest.to_string()),
                balance_before: before.flatten(),
            })
        })
        .await
    }

    /// The player's last original bet, for the `0` key.
    pub async fn last_bet(&self, player: i64) -> Result<Option<i64>, RoundError> {
        self.read(move |c| {
            c.query_row_cached(
                "SELECT bet FROM rounds WHERE player_id = ?1 AND bet IS NOT NULL ORDER BY created_ms DESC, nonce DESC LIMIT 1",
                [player],
                |r| r.get("bet"),
            )
            .optional()
            .map_err(RoundError::from)
        })
        .await
    }

    /// The player's balance.
    pub async fn balance(&self, player: i64) -> Result<i64, RoundError> {
        self.read(move |c| {
            let wallet = ledger::player_account(c, player)?;
            Ok(ledger::balance(c, wallet)?)
        })
        .await
    }
}

/// The standard one-deck table's rules, as the engine's GetRules gives them (tests only).
#[cfg(test)]
pub(crate) fn test_rules() -> Rules {
    Rules {
        decks: 1,
        min_bet: 500,
        max_bet: 30_000,
        spread_odds: vec![5, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1],
        three_of_a_kind_odds: 11,
        algorithm: "reddog-deal-v1".into(),
        commitment_ttl_secs: 600,
        max_client_seed_bytes: 1024,
        raise_rule: String::new(),
        max_seats: 7,
        currency: "XXX".into(),
        minor_unit_exponent: 2,
        signing_keys: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform() -> Platform {
        let rules = test_rules();
        // The engine is never called here (the channel connects lazily).
        let engine = Engine::new("http://127.0.0.1:9").unwrap();
        Platform::new(crate::db::open_in_memory().unwrap(), engine, rules, 100_000, None).unwrap()
    }

    #[test]
    fn each_column_is_read_at_the_position_sqlite_gives_it() {
        let conn = crate::db::open_in_memory().unwrap();
        let stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM rounds")).unwrap();
        let names = stmt.column_names();
        assert_eq!(names.len(), 33);
        for (position, name) in names.iter().enumerate() {
            assert_eq!(column(name), position, "{name}");
        }
    }

    #[tokio::test]
    async fn the_per_player_lock_map_stays_bounded_over_many_players() {
        let p = platform();
        for player in 0..5_000 {
            let _guard = p.player_lock(player).await;
        }
        let n = p.lock_count().await;
        assert!(n <= LOCKS_PRUNE_AT + 1, "{n} locks kept for 5000 players, none in use");
    }

    /// Stores `n` settled rounds for a new player, nonces 0..n, balance_after 1000 + nonce.
    async fn settled_rounds(p: &Platform, n: i64) -> i64 {
        p.db(move |c| -> Result<i64, RoundError> {
            let id = players::create(c, "hal", "h", 0, 1).map_err(|e| RoundError::Conflict(e.to_string()))?;
            for k in 0..n {
                c.execute(
                    "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                         commit_expires_ms, bet, balance_after, created_ms, updated_ms)
                     VALUES (?1, ?2, 'settled', ?3, 't', 1, 'c', x'00', 0, 500, ?4, ?3, ?3)",
                    params![format!("r{k}"), id, k, 1000 + k],
                )?;
            }
            // An unused commitment is not history.
            c.execute(
                "INSERT INTO rounds (round_id, player_id, state, nonce, table_id, decks, commitment, commitment_token,
                                     commit_expires_ms, created_ms, updated_ms)
                 VALUES ('open', ?1, 'committed', ?2, 't', 1, 'c', x'00', 0, ?2, ?2)",
                params![id, n],
            )?;
            Ok(id)
        })
        .await
        .unwrap()
    }

    fn nonces(page: &HistoryPage) -> Vec<String> {
        page.rounds.iter().map(|r| r.nonce.clone()).collect()
    }

    #[tokio::test]
    async fn history_pages_walk_back_past_the_newest_rounds_and_forward_again() {
        let p = platform();
        let player = settled_rounds(&p, 250).await;
        let first = p.history(player, 100, HistoryAt::Newest).await.unwrap();
        assert_eq!(first.rounds.len(), 100);
        assert_eq!((nonces(&first)[0].as_str(), nonces(&first)[99].as_str()), ("249", "150"));
        assert_eq!((first.older.as_deref(), first.newer.as_deref()), (Some("150"), None));
        assert_eq!(first.balance_before, Some(1149), "the round just older than the page");
        let second = p.history(player, 100, HistoryAt::Before(150)).await.unwrap();
        assert_eq!((nonces(&second)[0].as_str(), nonces(&second)[99].as_str()), ("149", "50"));
        assert_eq!((second.older.as_deref(), second.newer.as_deref()), (Some("50"), Some("149")));
        let last = p.history(player, 100, HistoryAt::Before(50)).await.unwrap();
        assert_eq!(last.rounds.len(), 50, "the oldest rounds, beyond the last 100 and 200");
        assert_eq!((last.older.as_deref(), last.newer.as_deref(), last.balance_before), (None, Some("49"), None));
        let back = p.history(player, 100, HistoryAt::After(49)).await.unwrap();
        assert_eq!(nonces(&back), nonces(&second), "newer from the last page is the second page again");
    }

    #[tokio::test]
    async fn a_lock_in_use_survives_pruning() {
        let p = platform();
        let held = p.player_lock(-1).await;
        for player in 0..3_000 {
            let _guard = p.player_lock(player).await;
        }
        // Player -1's lock is still the one held: a second request for it must wait.
        let again = tokio::time::timeout(std::time::Duration::from_millis(50), p.player_lock(-1)).await;
        assert!(again.is_err(), "the held lock was replaced by a new one");
        drop(held);
    }
}
