//! Players: names, PINs (argon2id PHC strings, never stored or logged in clear), sessions
//! (which expire: [`crate::accounts`]), the starting deposit, and the player's own maximum
//! bet.

use crate::accounts::AccountPolicy;
use crate::db::Cached;
use crate::ledger;
use crate::limits::{self, LimitError, PlayerLimit, TableLimits};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// Player failures.
#[derive(Debug, thiserror::Error)]
pub enum PlayerError {
    /// The name is not 1–32 characters of `[A-Za-z0-9_.-]`.
    #[error("name: use 1-32 letters, digits, '_', '.' or '-'")]
    BadName,
    /// The PIN is not 4–12 digits.
    #[error("pin: use 4-12 digits")]
    BadPin,
    /// The name is taken.
    #[error("name: already taken")]
    NameTaken,
    /// Unknown name or wrong PIN (one answer for both).
    #[error("name or PIN is wrong")]
    BadLogin,
    /// Hashing failed.
    #[error("pin hashing failed")]
    Hash,
    /// The ledger refused the deposit.
    #[error(transparent)]
    Ledger(#[from] ledger::LedgerError),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] rusqlite::Error),
}

/// Wrong PINs in a row, when changing a limit, that lock the limit form's PIN checks (only
/// the signed-in player can make them; sign-in failures are throttled per client and account instead,
/// [`crate::accounts`]).
pub const MAX_PIN_FAILURES: i64 = 5;
/// How long PIN checks stay locked after [`MAX_PIN_FAILURES`] wrong PINs.
pub const PIN_LOCK_MS: i64 = 15 * 60 * 1000;

/// When the player's PIN checks unlock, if they are locked at `now_ms`.
pub fn pin_locked_until(conn: &Connection, player: i64, now_ms: i64) -> rusqlite::Result<Option<i64>> {
    let until: Option<i64> =
        conn.query_row_cached("SELECT pin_locked_until_ms FROM players WHERE id = ?1", [player], |r| r.get(0))?;
    Ok(until.filter(|&u| u > now_ms))
}

/// Records a PIN check: a wrong PIN counts, and the [`MAX_PIN_FAILURES`]th in a row locks
/// PIN checks for [`PIN_LOCK_MS`]; a right PIN resets the count.
pub fn record_pin_check(conn: &Connection, player: i64, ok: bool, now_ms: i64) -> rusqlite::Result<()> {
    if ok {
        conn.execute_cached("UPDATE players SET pin_failures = 0, pin_locked_until_ms = NULL WHERE id = ?1", [player])?;
        return Ok(());
    }
    let failures: i64 =
        conn.query_row_cached("SELECT pin_failures + 1 FROM players WHERE id = ?1", [player], |r| r.get(0))?;
    if failures >= MAX_PIN_FAILURES {
        conn.execute_cached(
            "UPDATE players SET pin_failures = 0, pin_locked_until_ms = ?2 WHERE id = ?1",
            params![player, now_ms.saturating_add(PIN_LOCK_MS)],
        )?;
    } else {
        conn.execute_cached("UPDATE players SET pin_failures = ?2 WHERE id = ?1", params![player, failures])?;
    }
    Ok(())
}

/// Checks a player name.
pub fn validate_name(name: &str) -> Result<(), PlayerError> {
    let ok = (1..=32).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok { Ok(()) } else { Err(PlayerError::BadName) }
}

/// Checks a PIN's form.
pub fn validate_pin(pin: &str) -> Result<(), PlayerError> {
    if (4..=12).contains(&pin.len()) && pin.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(PlayerError::BadPin)
    }
}

/// Hashes a PIN with argon2id (default parameters, random salt). CPU-heavy: call it off
/// the async runtime.
pub fn hash_pin(pin: &str) -> Result<String, PlayerError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|_| PlayerError::Hash)?;
    let salt = SaltString::encode_b64(&bytes).map_err(|_| PlayerError::Hash)?;
    Argon2::default().hash_password(pin.as_bytes(), &salt).map(|h| h.to_string()).map_err(|_| PlayerError::Hash)
}

/// Whether `pin` matches the stored hash. CPU-heavy.
pub fn verify_pin(hash: &str, pin: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| Argon2::default().verify_password(pin.as_bytes(), &parsed).is_ok())
}

/// Creates a player with a wallet account and a starting deposit from the cashier
/// (idempotency key `deposit:<player id>`). Returns the player id.
pub fn create(
    conn: &mut Connection,
    name: &str,
    pin_hash: &str,
    starting_balance: i64,
    now_ms: i64,
) -> Result<i64, PlayerError> {
    validate_name(name)?;
    let tx = conn.savepoint()?;
    let taken: Option<i64> =
        tx.query_row_cached("SELECT id FROM players WHERE name = ?1", [name], |r| r.get(0)).optional()?;
    if taken.is_some() {
        return Err(PlayerError::NameTaken);
    }
    tx.execute_cached(
        "INSERT INTO players (name, pin_hash, created_ms) VALUES (?1, ?2, ?3)",
        params![name, pin_hash, now_ms],
    )?;
    let id = tx.last_insert_rowid();
    tx.execute_cached(
        "INSERT INTO accounts (name, player_id, allow_negative) VALUES (?1, ?2, 0)",
        params![format!("player:{id}"), id],
    )?;
    if starting_balance > 0 {
        let cashier = ledger::system_account(&tx, "cashier")?;
        let wallet = ledger::player_account(&tx, id)?;
        let neg = starting_balance.checked_neg().ok_or(ledger::LedgerError::Overflow)?;
        ledger::post(
            &tx,
            &format!("deposit:{id}"),
            "deposit",
            None,
            &[(cashier, neg), (wallet, starting_balance)],
            now_ms,
        )?;
    }
    tx.commit()?;
    Ok(id)
}

/// The id and PIN hash of the player called `name`.
pub fn find(conn: &Connection, name: &str) -> rusqlite::Result<Option<(i64, String)>> {
    conn.query_row_cached("SELECT id, pin_hash FROM players WHERE name = ?1", [name], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// The player's name.
pub fn name(conn: &Connection, player: i64) -> rusqlite::Result<String> {
    conn.query_row_cached("SELECT name FROM players WHERE id = ?1", [player], |r| r.get(0))
}

/// The player's PIN hash.
pub fn pin_hash(conn: &Connection, player: i64) -> rusqlite::Result<String> {
    conn.query_row_cached("SELECT pin_hash FROM players WHERE id = ?1", [player], |r| r.get(0))
}

/// How a session or device token is kept in the database: its SHA-256, hex. The token is 32
/// random bytes, so a plain hash is enough (no salt or slow hash): a database copy gives no
/// cookie.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new session token (32 random bytes, hex) for the player; only its hash is stored.
pub fn new_session(conn: &Connection, player: i64, now_ms: i64) -> rusqlite::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let token = hex::encode(bytes);
    conn.execute_cached(
        "INSERT INTO sessions (token_sha256, player_id, created_ms, last_seen_ms) VALUES (?1, ?2, ?3, ?3)",
        params![token_hash(&token), player, now_ms],
    )?;
    Ok(token)
}

/// A session's last use is written at most this often (ms), so that a busy player's
/// requests do not each cost a database write — and at most a sixtieth of the idle limit
/// apart ([`touch_ms`]), so every use counts towards the idle expiry to within that.
pub const SESSION_TOUCH_MS: i64 = 60_000;

/// How stale a session's stored last use may be before a use writes it again.
pub fn touch_ms(policy: &AccountPolicy) -> i64 {
    SESSION_TOUCH_MS.min(policy.session_idle_ms / 60).max(0)
}

/// The player a session token belongs to, if the session is still alive at `now_ms`: used
/// within `policy.session_idle_ms` and begun within `policy.session_max_ms`. An expired
/// session is deleted; a live one has its last use refreshed (when older than
/// [`touch_ms`]).
pub fn session_player(
    conn: &Connection,
    token: &str,
    now_ms: i64,
    policy: &AccountPolicy,
) -> rusqlite::Result<Option<i64>> {
    let check = check_session(conn, token, now_ms, policy)?;
    apply_session_check(conn, token, now_ms, check)
}

/// What a session token is worth at a moment, read without writing (so that it can run on
/// a read-only connection); [`apply_session_check`] does the write it may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionCheck {
    /// No such session.
    Unknown,
    /// Alive; its last use is recent enough.
    Alive(i64),
    /// Alive; its last use should be refreshed.
    AliveStale(i64),
    /// Idle too long or too old: to be deleted.
    Expired,
}

/// Reads the session and judges it at `now_ms` (no write).
pub fn check_session(
    conn: &Connection,
    token: &str,
    now_ms: i64,
    policy: &AccountPolicy,
) -> rusqlite::Result<SessionCheck> {
    let found: Option<(i64, i64, i64)> = conn
        .query_row_cached(
            "SELECT player_id, created_ms, last_seen_ms FROM sessions WHERE token_sha256 = ?1",
            [token_hash(token)],
            |r| Ok((r.get("player_id")?, r.get("created_ms")?, r.get("last_seen_ms")?)),
        )
        .optional()?;
    let Some((player, created, last_seen)) = found else { return Ok(SessionCheck::Unknown) };
    let idle = now_ms.saturating_sub(last_seen) >= policy.session_idle_ms;
    let too_old = now_ms.saturating_sub(created) >= policy.session_max_ms;
    Ok(if idle || too_old {
        SessionCheck::Expired
    } else if now_ms.saturating_sub(last_seen) >= touch_ms(policy) {
        SessionCheck::AliveStale(player)
    } else {
        SessionCheck::Alive(player)
    })
}

/// The write a [`SessionCheck`] calls for (delete an expired session, refresh a stale one),
/// and the player when the session is alive.
pub fn apply_session_check(
    conn: &Connection,
    token: &str,
    now_ms: i64,
    check: SessionCheck,
) -> rusqlite::Result<Option<i64>> {
    match check {
        SessionCheck::Unknown => Ok(None),
        SessionCheck::Alive(player) => Ok(Some(player)),
        SessionCheck::AliveStale(player) => {
            conn.execute_cached(
                "UPDATE sessions SET last_seen_ms = ?2 WHERE token_sha256 = ?1",
                params![token_hash(token), now_ms],
            )?;
            Ok(Some(player))
        }
        SessionCheck::Expired => {
            end_session(conn, token)?;
            Ok(None)
        }
    }
}

/// Ends a session.
pub fn end_session(conn: &Connection, token: &str) -> rusqlite::Result<()> {
    conn.execute_cached("DELETE FROM sessions WHERE token_sha256 = ?1", [token_hash(token)]).map(|_| ())
}

/// Ends every session of the player ("sign out everywhere"); returns how many there were.
pub fn end_all_sessions(conn: &Connection, player: i64) -> rusqlite::Result<usize> {
    conn.execute_cached("DELETE FROM sessions WHERE player_id = ?1", [player])
}

/// Deletes every session expired at `now_ms` (a periodic sweep; [`session_player`] ends an
/// expired session it meets anyway). Returns how many.
pub fn sweep_sessions(conn: &Connection, now_ms: i64, policy: &AccountPolicy) -> rusqlite::Result<usize> {
    conn.execute_cached(
        "DELETE FROM sessions WHERE last_seen_ms <= ?1 OR created_ms <= ?2",
        params![now_ms.saturating_sub(policy.session_idle_ms), now_ms.saturating_sub(policy.session_max_ms)],
    )
}

/// What a sign-up did. The web layer answers both the same way, so that sign-up does not
/// tell which names exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignUp {
    /// A new player with this id.
    Created(i64),
    /// The name was taken; nothing was written.
    NameTaken,
}

/// Creates the player, with the SHA-256 of their recovery code ([`recovery_sha256`]), unless
/// the name is taken (see [`SignUp`]).
pub fn sign_up(
    conn: &mut Connection,
    name: &str,
    pin_hash: &str,
    recovery_sha256: &str,
    starting_balance: i64,
    now_ms: i64,
) -> Result<SignUp, PlayerError> {
    match create(conn, name, pin_hash, starting_balance, now_ms) {
        Ok(id) => {
            set_recovery(conn, id, recovery_sha256)?;
            Ok(SignUp::Created(id))
        }
        Err(PlayerError::NameTaken) => Ok(SignUp::NameTaken),
        Err(e) => Err(e),
    }
}

/// The recovery code's symbols: Crockford's base32 (no I, L, O or U), so that a code
/// copied by hand or read aloud survives.
const RECOVERY_ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Symbols in a recovery code: 100 random bits.
pub const RECOVERY_SYMBOLS: usize = 20;

/// A new recovery code: [`RECOVERY_SYMBOLS`] random symbols of Crockford's base32, in
/// groups of four (`7K3M-Q9RD-…`). Shown to the player once; only [`recovery_sha256`] of it
/// is stored.
pub fn new_recovery_code() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; RECOVERY_SYMBOLS];
    getrandom::fill(&mut bytes)?;
    let mut code = String::with_capacity(RECOVERY_SYMBOLS + RECOVERY_SYMBOLS / 4);
    for (k, b) in bytes.iter().enumerate() {
        if k > 0 && k % 4 == 0 {
            code.push('-');
        }
        // The low five bits of a uniform byte are uniform over the 32 symbols.
        code.push(char::from(RECOVERY_ALPHABET[usize::from(b & 31)]));
    }
    Ok(code)
}

/// The stored form of a recovery code as typed: the SHA-256 (hex) of its symbols, with
/// case, spaces and hyphens ignored and O, I, L read as 0, 1, 1 (Crockford's rule); `None`
/// when the text is not [`RECOVERY_SYMBOLS`] symbols.
pub fn recovery_sha256(typed: &str) -> Option<String> {
    let mut symbols = String::with_capacity(RECOVERY_SYMBOLS);
    for c in typed.chars().filter(|c| !matches!(c, ' ' | '-')) {
        let c = match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        };
        if !c.is_ascii() || !RECOVERY_ALPHABET.contains(&(c as u8)) || symbols.len() >= RECOVERY_SYMBOLS {
            return None;
        }
        symbols.push(c);
    }
    (symbols.len() == RECOVERY_SYMBOLS).then(|| hex::encode(Sha256::digest(symbols.as_bytes())))
}

/// Stores the SHA-256 of the player's (new) recovery code; the old code stops working.
pub fn set_recovery(conn: &Connection, player: i64, recovery_sha256: &str) -> rusqlite::Result<()> {
    conn.execute_cached("UPDATE players SET recovery_sha256 = ?2 WHERE id = ?1", params![player, recovery_sha256])
        .map(|_| ())
}

/// What a sign-in needs to know about a name, read at once: the player, the PIN hash, the
/// recovery code's hash (none for a player from before recovery codes) and whether the
/// browser's device token (its SHA-256) is one of the player's trusted devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInFacts {
    /// The player's id.
    pub id: i64,
    /// The argon2id PHC string.
    pub pin_hash: String,
    /// SHA-256 (hex) of the recovery code.
    pub recovery_sha256: Option<String>,
    /// The device token presented is trusted for this player.
    pub device_trusted: bool,
}

/// Reads [`SignInFacts`] for `name` (`None`: no such player).
pub fn sign_in_facts(
    conn: &Connection,
    name: &str,
    device_sha256: Option<&str>,
) -> rusqlite::Result<Option<SignInFacts>> {
    conn.query_row_cached(
        "SELECT p.id, p.pin_hash, p.recovery_sha256,
                EXISTS (SELECT 1 FROM trusted_devices d WHERE d.player_id = p.id AND d.token_sha256 = ?2)
         FROM players p WHERE p.name = ?1",
        params![name, device_sha256.unwrap_or("")],
        |r| {
            Ok(SignInFacts {
                id: r.get(0)?,
                pin_hash: r.get(1)?,
                recovery_sha256: r.get(2)?,
                device_trusted: r.get(3)?,
            })
        },
    )
    .optional()
}

/// How many devices one player's account trusts; signing in from another replaces the one
/// used least recently.
pub const TRUSTED_DEVICES: i64 = 16;

/// Trusts the device whose token has this SHA-256 for the player (after a sign-in with the
/// right PIN), or notes its use again; keeps the [`TRUSTED_DEVICES`] used most recently.
pub fn trust_device(conn: &Connection, player: i64, device_sha256: &str, now_ms: i64) -> rusqlite::Result<()> {
    conn.execute_cached(
        "INSERT INTO trusted_devices (token_sha256, player_id, created_ms, last_used_ms) VALUES (?1, ?2, ?3, ?3)
         ON CONFLICT (token_sha256, player_id) DO UPDATE SET last_used_ms = excluded.last_used_ms",
        params![device_sha256, player, now_ms],
    )?;
    conn.execute_cached(
        "DELETE FROM trusted_devices WHERE player_id = ?1 AND token_sha256 NOT IN
           (SELECT token_sha256 FROM trusted_devices WHERE player_id = ?1
            ORDER BY last_used_ms DESC, created_ms DESC, token_sha256 LIMIT ?2)",
        params![player, TRUSTED_DEVICES],
    )?;
    Ok(())
}

/// The player's own limit.
pub fn limit(conn: &Connection, player: i64) -> rusqlite::Result<PlayerLimit> {
    conn.query_row_cached("SELECT max_bet, limit_changed_ms FROM players WHERE id = ?1", [player], |r| {
        let max: Option<i64> = r.get(0)?;
        let changed: Option<i64> = r.get(1)?;
        Ok(PlayerLimit {
            max_bet: max.and_then(|m| u64::try_from(m).ok()),
            changed_at: changed.and_then(|ms| Timestamp::from_millisecond(ms).ok()),
        })
    })
}

/// Sets the player's maximum bet: the PIN must match (checked first: a wrong PIN changes
/// nothing and does not use up the week's change), then the rules of [`limits::check_change`].
/// `pin_ok` is the result of [`verify_pin`], computed by the caller off the async runtime.
pub fn set_max_bet(
    conn: &Connection,
    player: i64,
    pin_ok: bool,
    requested: u64,
    table: TableLimits,
    now: Timestamp,
) -> Result<PlayerLimit, LimitError> {
    if !pin_ok {
        return Err(LimitError::WrongPin);
    }
    let current = limit(conn, player).map_err(|e| LimitError::TimeZone(e.to_string()))?;
    limits::check_change(table, &current, requested, now)?;
    let stored =
        i64::try_from(requested).map_err(|_| LimitError::AboveTable { requested, table_max: table.max_bet })?;
    conn.execute_cached(
        "UPDATE players SET max_bet = ?1, limit_changed_ms = ?2 WHERE id = ?3",
        params![stored, now.as_millisecond(), player],
    )
    .map_err(|e| LimitError::TimeZone(e.to_string()))?;
    Ok(PlayerLimit { max_bet: Some(requested), changed_at: Some(now) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db;

    const TABLE: TableLimits = TableLimits { min_bet: 500, max_bet: 30_000 };

    #[test]
    fn names_and_pins_are_checked() {
        assert!(validate_name("alice_1").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a b").is_err());
        assert!(validate_name(&"x".repeat(33)).is_err());
        assert!(validate_pin("1234").is_ok());
        assert!(validate_pin("123").is_err());
        assert!(validate_pin("12a4").is_err());
    }

    #[test]
    fn a_pin_is_stored_hashed_and_verified() {
        let hash = hash_pin("2468").unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(!hash.contains("2468"));
        assert!(verify_pin(&hash, "2468"));
        assert!(!verify_pin(&hash, "2469"));
    }

    #[test]
    fn a_new_player_gets_a_wallet_and_a_deposit() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "alice", "hash", 100_000, 1).unwrap();
        let wallet = ledger::player_account(&conn, id).unwrap();
        assert_eq!(ledger::balance(&conn, wallet).unwrap(), 100_000);
        assert!(matches!(create(&mut conn, "alice", "hash", 100_000, 1), Err(PlayerError::NameTaken)));
        assert!(ledger::check(&conn).unwrap().problems.is_empty());
    }

    #[test]
    fn five_wrong_pins_in_a_row_lock_pin_checks_for_15_minutes() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "eve", "h", 0, 1).unwrap();
        let t = 1_000_000;
        for k in 0..4 {
            record_pin_check(&conn, id, false, t + k).unwrap();
            assert_eq!(pin_locked_until(&conn, id, t + k).unwrap(), None);
        }
        // A right PIN resets the count: four more wrong ones do not lock.
        record_pin_check(&conn, id, true, t + 5).unwrap();
        for k in 0..4 {
            record_pin_check(&conn, id, false, t + 10 + k).unwrap();
        }
        assert_eq!(pin_locked_until(&conn, id, t + 20).unwrap(), None);
        record_pin_check(&conn, id, false, t + 20).unwrap();
        assert_eq!(pin_locked_until(&conn, id, t + 21).unwrap(), Some(t + 20 + PIN_LOCK_MS));
        assert_eq!(pin_locked_until(&conn, id, t + 20 + PIN_LOCK_MS).unwrap(), None, "unlocked after 15 minutes");
    }

    #[test]
    fn a_wrong_pin_changes_nothing_and_does_not_use_the_week() {
        let mut conn = db::open_in_memory().unwrap();
        let hash = hash_pin("2468").unwrap();
        let id = create(&mut conn, "bob", &hash, 0, 1).unwrap();
        let now: Timestamp = "2026-03-12T12:00:00Z".parse().unwrap();
        let wrong = verify_pin(&pin_hash(&conn, id).unwrap(), "1111");
        assert_eq!(set_max_bet(&conn, id, wrong, 2_000, TABLE, now), Err(LimitError::WrongPin));
        assert_eq!(limit(&conn, id).unwrap(), PlayerLimit::default());
        // The right PIN then succeeds the same week.
        let right = verify_pin(&pin_hash(&conn, id).unwrap(), "2468");
        let set = set_max_bet(&conn, id, right, 2_000, TABLE, now).unwrap();
        assert_eq!(set.max_bet, Some(2_000));
        assert_eq!(limit(&conn, id).unwrap(), set);
        // A second change before Friday 00:00 Eastern is refused, even with the right PIN.
        let later: Timestamp = "2026-03-13T03:00:00Z".parse().unwrap();
        assert!(matches!(set_max_bet(&conn, id, true, 1_000, TABLE, later), Err(LimitError::TooSoon { .. })));
        assert_eq!(limit(&conn, id).unwrap().max_bet, Some(2_000));
    }

    fn policy() -> AccountPolicy {
        AccountPolicy { session_idle_ms: 120_000, session_max_ms: 1_000_000, ..AccountPolicy::default() }
    }

    #[test]
    fn the_database_keeps_a_sessions_hash_never_its_token() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "hal", "h", 0, 1).unwrap();
        let token = new_session(&conn, id, 0).unwrap();
        let stored: Vec<String> = conn
            .prepare("SELECT token_sha256 FROM sessions")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected = hex::encode(Sha256::digest(token.as_bytes()));
        assert_eq!(stored, vec![expected], "the SHA-256 of the cookie, not the cookie");
        assert_ne!(stored[0], token);
        let p = policy();
        assert_eq!(session_player(&conn, &token, 1, &p).unwrap(), Some(id), "the token still signs in");
        assert_eq!(session_player(&conn, &stored[0], 1, &p).unwrap(), None, "the stored hash does not");
        end_session(&conn, &token).unwrap();
        assert_eq!(session_player(&conn, &token, 2, &p).unwrap(), None, "signed out");
    }

    #[test]
    fn a_session_ends_after_the_idle_time_without_a_request() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "ida", "h", 0, 1).unwrap();
        let p = policy();
        let token = new_session(&conn, id, 0).unwrap();
        assert_eq!(session_player(&conn, &token, 70_000, &p).unwrap(), Some(id), "used at 70 s");
        // 55 s later: alive, and the use counts (the stored one is over 2 s = 120 s / 60 old),
        // so the idle time runs from 125 s.
        assert_eq!(session_player(&conn, &token, 125_000, &p).unwrap(), Some(id));
        assert_eq!(session_player(&conn, &token, 126_000, &p).unwrap(), Some(id), "not written: within 2 s");
        assert_eq!(session_player(&conn, &token, 245_000, &p).unwrap(), None, "idle 120 s since 125 s");
        assert_eq!(session_player(&conn, &token, 245_001, &p).unwrap(), None, "and it stays ended");
    }

    #[test]
    fn with_a_one_minute_idle_limit_a_session_used_every_30_s_stays_alive() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "ivy", "h", 0, 1).unwrap();
        let p = AccountPolicy { session_idle_ms: 60_000, session_max_ms: 3_600_000, ..AccountPolicy::default() };
        let token = new_session(&conn, id, 0).unwrap();
        for k in 1..=10 {
            assert_eq!(session_player(&conn, &token, k * 30_000, &p).unwrap(), Some(id), "used at {} s", k * 30);
        }
        // Idle from the last use at 300 s: alive just before 360 s, ended at it.
        assert_ne!(check_session(&conn, &token, 359_999, &p).unwrap(), SessionCheck::Expired);
        assert_eq!(check_session(&conn, &token, 360_000, &p).unwrap(), SessionCheck::Expired);
    }

    #[test]
    fn a_session_in_use_stays_alive_until_its_absolute_lifetime() {
        let mut conn = db::open_in_memory().unwrap();
        let id = create(&mut conn, "abe", "h", 0, 1).unwrap();
        // Idle limit above the touch interval, so requests every 30 s keep it alive.
        let p = AccountPolicy { session_idle_ms: 90_000, session_max_ms: 300_000, ..AccountPolicy::default() };
        let token = new_session(&conn, id, 0).unwrap();
        let mut now = 0;
        while now < 299_000 {
            assert_eq!(session_player(&conn, &token, now, &p).unwrap(), Some(id), "at {now}");
            now += 30_000;
        }
        assert_eq!(session_player(&conn, &token, 300_000, &p).unwrap(), None, "ended at the absolute lifetime");
        let left: i64 = conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "the expired session is deleted");
    }

    #[test]
    fn signing_out_everywhere_ends_every_session_of_that_player_only() {
        let mut conn = db::open_in_memory().unwrap();
        let a = create(&mut conn, "amy", "h", 0, 1).unwrap();
        let b = create(&mut conn, "ben", "h", 0, 1).unwrap();
        let p = policy();
        let phone = new_session(&conn, a, 0).unwrap();
        let laptop = new_session(&conn, a, 0).unwrap();
        let other = new_session(&conn, b, 0).unwrap();
        assert_eq!(end_all_sessions(&conn, a).unwrap(), 2);
        assert_eq!(session_player(&conn, &phone, 1, &p).unwrap(), None);
        assert_eq!(session_player(&conn, &laptop, 1, &p).unwrap(), None);
        assert_eq!(session_player(&conn, &other, 1, &p).unwrap(), Some(b));
    }

    #[test]
    fn the_sweep_deletes_expired_sessions_only() {
        let mut conn = db::open_in_memory().unwrap();
        let a = create(&mut conn, "sam", "h", 0, 1).unwrap();
        let p = policy();
        new_session(&conn, a, 0).unwrap();
        let fresh = new_session(&conn, a, 95_000).unwrap();
        assert_eq!(sweep_sessions(&conn, 150_000, &p).unwrap(), 1, "the one idle since 0");
        assert_eq!(session_player(&conn, &fresh, 150_001, &p).unwrap(), Some(a));
    }

    #[test]
    fn sign_up_with_a_taken_name_writes_nothing() {
        let mut conn = db::open_in_memory().unwrap();
        assert!(matches!(sign_up(&mut conn, "zoe", "h1", "r1", 100_000, 1).unwrap(), SignUp::Created(_)));
        let before = ledger::check(&conn).unwrap().transactions;
        assert_eq!(sign_up(&mut conn, "zoe", "h2", "r2", 100_000, 2).unwrap(), SignUp::NameTaken);
        assert_eq!(ledger::check(&conn).unwrap().transactions, before, "no second deposit");
        let (_, hash) = find(&conn, "zoe").unwrap().unwrap();
        assert_eq!(hash, "h1", "the existing player's PIN is untouched");
        let facts = sign_in_facts(&conn, "zoe", None).unwrap().unwrap();
        assert_eq!(facts.recovery_sha256.as_deref(), Some("r1"), "nor their recovery code");
    }

    #[test]
    fn a_recovery_code_is_100_random_bits_read_forgivingly() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1_000 {
            let code = new_recovery_code().unwrap();
            assert_eq!(code.len(), RECOVERY_SYMBOLS + RECOVERY_SYMBOLS / 4 - 1, "{code}");
            assert!(code.split('-').all(|g| g.len() == 4), "{code}");
            let hash = recovery_sha256(&code).unwrap();
            assert_eq!(recovery_sha256(&code.to_lowercase().replace('-', " ")), Some(hash.clone()), "case and spaces");
            assert!(seen.insert(hash), "codes repeat");
        }
        let code = "0123-4567-89AB-CDEF-GHJK";
        assert_eq!(recovery_sha256("oi23-4567-89ab-cdef-ghjk"), recovery_sha256(code), "O, I as 0, 1");
        assert_eq!(recovery_sha256("0L23 4567 89AB CDEF GHJK"), recovery_sha256("0123456789ABCDEFGHJK"), "L as 1");
        for bad in [
            "",
            "0123-4567-89AB-CDEF-GHJ",
            "0123-4567-89AB-CDEF-GHJKM",
            "0123-4567-89AB-CDEF-GHJU",
            "0123-4567-89AB-CDEF-GHJ\u{e9}",
        ] {
            assert_eq!(recovery_sha256(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_player_trusts_the_sixteen_devices_used_most_recently() {
        let mut conn = db::open_in_memory().unwrap();
        let a = create(&mut conn, "ivy", "h", 0, 1).unwrap();
        let b = create(&mut conn, "jon", "h", 0, 1).unwrap();
        let dev = |k: i64| token_hash(&format!("device {k}"));
        for k in 0..20 {
            trust_device(&conn, a, &dev(k), 100 + k).unwrap();
        }
        trust_device(&conn, a, &dev(0), 1_000).unwrap();
        let trusted = |p: &str, k: i64| sign_in_facts(&conn, p, Some(&dev(k))).unwrap().unwrap().device_trusted;
        assert!(trusted("ivy", 0), "used again: kept");
        for k in 1..5 {
            assert!(!trusted("ivy", k), "device {k} was used least recently");
        }
        for k in 5..20 {
            assert!(trusted("ivy", k), "device {k}");
        }
        assert!(!trusted("jon", 7), "a device is trusted for the player it signed in to only");
        trust_device(&conn, b, &dev(7), 2_000).unwrap();
        assert!(trusted("jon", 7) && trusted("ivy", 7), "one browser, two players");
        assert!(!sign_in_facts(&conn, "ivy", None).unwrap().unwrap().device_trusted);
        assert_eq!(sign_in_facts(&conn, "nobody", Some(&dev(7))).unwrap(), None);
    }
}
