//! The double-entry ledger: every movement of money is one transaction whose entries sum to
//! zero, posted under a unique idempotency key (per seat `<round_id>:seat<k>:bet`, `…:raise`,
//! `…:payout`, `…:refund`; `deposit:<player>`), so a retried wallet write
//! is a no-op. Player accounts can never go negative (checked here and by a table CHECK);
//! the `house` and `cashier` accounts can. Arithmetic is checked `i64`; nothing is summed in
//! SQL.

use crate::db::Cached;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

/// Ledger failures.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A player account would go below zero.
    #[error("insufficient balance: {balance} available, {needed} needed")]
    InsufficientFunds { balance: i64, needed: i64 },
    /// A sum left the range of `i64`.
    #[error("amount overflow")]
    Overflow,
    /// The legs of a transaction do not sum to zero, or an amount is zero.
    #[error("unbalanced transaction")]
    Unbalanced,
    /// The idempotency key was already used for different legs: a bug in the caller.
    #[error("idempotency key {0} reused with different entries")]
    KeyReused(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] rusqlite::Error),
}

/// Whether a post wrote something or found the same transaction already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// Written now.
    New,
    /// The key was already posted with the same legs; nothing changed.
    AlreadyPosted,
}

/// The id of a named system account (`cashier`, `house`).
pub fn system_account(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.query_row_cached("SELECT id FROM accounts WHERE name = ?1 AND player_id IS NULL", [name], |r| r.get(0))
}

/// The id of a player's wallet account.
pub fn player_account(conn: &Connection, player_id: i64) -> rusqlite::Result<i64> {
    conn.query_row_cached("SELECT id FROM accounts WHERE player_id = ?1", [player_id], |r| r.get(0))
}

/// An account's balance (the cached column; [`check`] proves it equals the entries' sum).
pub fn balance(conn: &Connection, account_id: i64) -> rusqlite::Result<i64> {
    conn.query_row_cached("SELECT balance FROM accounts WHERE id = ?1", [account_id], |r| r.get(0))
}

/// Posts one transaction: `legs` are `(account id, signed amount)`, summing to zero, no
/// zero amounts, each account at most once. Idempotent on `key`: a second post of the same
/// key with the same legs returns [`Posted::AlreadyPosted`] and changes nothing; with
/// different legs it is refused ([`LedgerError::KeyReused`]). Runs inside the caller's
/// transaction, so the wallet write commits atomically with the round's state change.
pub fn post(
    tx: &Connection,
    key: &str,
    kind: &str,
    round_id: Option<&str>,
    legs: &[(i64, i64)],
    now_ms: i64,
) -> Result<Posted, LedgerError> {
    let mut sum: i64 = 0;
    for &(_, amount) in legs {
        if amount == 0 {
            return Err(LedgerError::Unbalanced);
        }
        sum = sum.checked_add(amount).ok_or(LedgerError::Overflow)?;
    }
    if sum != 0 || legs.is_empty() {
        return Err(LedgerError::Unbalanced);
    }
    let existing: Option<i64> =
        tx.query_row_cached("SELECT id FROM transactions WHERE idem_key = ?1", [key], |r| r.get(0)).optional()?;
    if let Some(txn_id) = existing {
        let mut stmt = tx.prepare("SELECT account_id, amount FROM entries WHERE txn_id = ?1 ORDER BY account_id")?;
        let mut have: Vec<(i64, i64)> =
            stmt.query_map([txn_id], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
        let mut want = legs.to_vec();
        have.sort_unstable();
        want.sort_unstable();
        return if have == want { Ok(Posted::AlreadyPosted) } else { Err(LedgerError::KeyReused(key.to_string())) };
    }
    tx.execute_cached(
        "INSERT INTO transactions (idem_key, kind, round_id, created_ms) VALUES (?1, ?2, ?3, ?4)",
        params![key, kind, round_id, now_ms],
    )?;
    let txn_id = tx.last_insert_rowid();
    for &(account, amount) in legs {
        let (current, allow_negative): (i64, bool) =
            tx.query_row_cached("SELECT balance, allow_negative FROM accounts WHERE id = ?1", [account], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        let next = current.checked_add(amount).ok_or(LedgerError::Overflow)?;
        if next < 0 && !allow_negative {
            return Err(LedgerError::InsufficientFunds { balance: current, needed: amount.checked_neg().unwrap_or(0) });
        }
        tx.execute_cached(
            "INSERT INTO entries (txn_id, account_id, amount) VALUES (?1, ?2, ?3)",
            params![txn_id, account, amount],
        )?;
        tx.execute_cached("UPDATE accounts SET balance = ?1 WHERE id = ?2", params![next, account])?;
    }
    Ok(Posted::New)
}

/// One account in a ledger report.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AccountReport {
    /// `cashier`, `house` or `player:<name>`.
    pub name: String,
    /// The cached balance.
    pub balance: i64,
    /// The sum of the account's entries, computed here with checked arithmetic.
    pub entries_sum: i64,
    /// Number of entries.
    pub entries: i64,
}

/// The whole ledger, checked.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every account.
    pub accounts: Vec<AccountReport>,
    /// Number of transactions.
    pub transactions: i64,
    /// Problems found; empty when the ledger is consistent.
    pub problems: Vec<String>,
}

/// Recomputes every balance from the entries and checks the invariants: each transaction
/// sums to zero, each cached balance equals its entries' sum, no player account is
/// negative, and all balances together sum to zero.
pub fn check(conn: &Connection) -> Result<Report, LedgerError> {
    let mut problems = Vec::new();
    let mut by_txn: std::collections::BTreeMap<i64, i64> = std::collections::BTreeMap::new();
    let mut by_account: std::collections::BTreeMap<i64, (i64, i64)> = std::collections::BTreeMap::new();
    {
        let mut stmt = conn.prepare("SELECT txn_id, account_id, amount FROM entries")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
        for row in rows {
            let (txn, account, amount) = row?;
            let t = by_txn.entry(txn).or_insert(0);
            *t = t.checked_add(amount).ok_or(LedgerError::Overflow)?;
            let a = by_account.entry(account).or_insert((0, 0));
            a.0 = a.0.checked_add(amount).ok_or(LedgerError::Overflow)?;
            a.1 += 1;
        }
    }
    for (txn, sum) in &by_txn {
        if *sum != 0 {
            problems.push(format!("transaction {txn} sums to {sum}"));
        }
    }
    let transactions: i64 = conn.query_row_cached("SELECT count(*) FROM transactions", [], |r| r.get(0))?;
    let mut accounts = Vec::new();
    let mut total: i64 = 0;
    let mut stmt = conn.prepare(
        "SELECT a.id, a.balance, a.allow_negative, coalesce('player:' || p.name, a.name)
         FROM accounts a LEFT JOIN players p ON p.id = a.player_id ORDER BY a.id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, bool>(2)?, r.get::<_, String>(3)?))
    })?;
    for row in rows {
        let (id, balance, allow_negative, name) = row?;
        let (entries_sum, entries) = by_account.get(&id).copied().unwrap_or((0, 0));
        if entries_sum != balance {
            problems.push(format!("{name}: balance {balance} but entries sum to {entries_sum}"));
        }
        if !allow_negative && balance < 0 {
            problems.push(format!("{name}: negative balance {balance}"));
        }
        total = total.checked_add(balance).ok_or(LedgerError::Overflow)?;
        accounts.push(AccountReport { name, balance, entries_sum, entries });
    }
    if total != 0 {
        problems.push(format!("balances sum to {total}, not 0"));
    }
    Ok(Report { accounts, transactions, problems })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db;

    fn setup() -> (Connection, i64, i64, i64) {
        let conn = db::open_in_memory().unwrap();
        conn.execute("INSERT INTO players (name, pin_hash, created_ms) VALUES ('p', 'x', 0)", []).unwrap();
        conn.execute("INSERT INTO accounts (name, player_id, allow_negative) VALUES ('player:1', 1, 0)", []).unwrap();
        let cashier = system_account(&conn, "cashier").unwrap();
        let house = system_account(&conn, "house").unwrap();
        let player = player_account(&conn, 1).unwrap();
        (conn, cashier, house, player)
    }

    #[test]
    fn posts_are_idempotent_on_their_key() {
        let (mut conn, cashier, house, player) = setup();
        let tx = conn.transaction().unwrap();
        assert_eq!(
            post(&tx, "deposit:1", "deposit", None, &[(cashier, -10_000), (player, 10_000)], 1).unwrap(),
            Posted::New
        );
        assert_eq!(post(&tx, "r1:bet", "bet", Some("r1"), &[(player, -500), (house, 500)], 2).unwrap(), Posted::New);
        // The retry of the same bet changes nothing.
        assert_eq!(
            post(&tx, "r1:bet", "bet", Some("r1"), &[(house, 500), (player, -500)], 3).unwrap(),
            Posted::AlreadyPosted
        );
        // The same key with another amount is a caller bug, refused.
        assert!(matches!(
            post(&tx, "r1:bet", "bet", Some("r1"), &[(player, -600), (house, 600)], 4),
            Err(LedgerError::KeyReused(_))
        ));
        tx.commit().unwrap();
        assert_eq!(balance(&conn, player).unwrap(), 9_500);
        assert_eq!(balance(&conn, house).unwrap(), 500);
        let report = check(&conn).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.transactions, 2);
    }

    #[test]
    fn a_player_account_never_goes_negative() {
        let (mut conn, cashier, house, player) = setup();
        let tx = conn.transaction().unwrap();
        post(&tx, "deposit:1", "deposit", None, &[(cashier, -400), (player, 400)], 1).unwrap();
        let err = post(&tx, "r1:bet", "bet", Some("r1"), &[(player, -500), (house, 500)], 2).unwrap_err();
        assert!(matches!(err, LedgerError::InsufficientFunds { balance: 400, needed: 500 }), "{err:?}");
        drop(tx); // rolled back
        assert_eq!(balance(&conn, player).unwrap(), 0);
        assert!(check(&conn).unwrap().problems.is_empty());
    }

    #[test]
    fn unbalanced_zero_and_overflowing_posts_are_refused() {
        let (mut conn, cashier, house, player) = setup();
        let tx = conn.transaction().unwrap();
        assert!(matches!(post(&tx, "a", "bet", None, &[(player, -5), (house, 4)], 1), Err(LedgerError::Unbalanced)));
        assert!(matches!(post(&tx, "b", "bet", None, &[(player, 0), (house, 0)], 1), Err(LedgerError::Unbalanced)));
        assert!(matches!(post(&tx, "c", "bet", None, &[], 1), Err(LedgerError::Unbalanced)));
        assert!(matches!(
            post(&tx, "d", "deposit", None, &[(cashier, i64::MAX), (house, i64::MAX), (player, 2)], 1),
            Err(LedgerError::Overflow)
        ));
    }

    #[test]
    fn check_finds_a_tampered_balance() {
        let (mut conn, cashier, _house, player) = setup();
        let tx = conn.transaction().unwrap();
        post(&tx, "deposit:1", "deposit", None, &[(cashier, -400), (player, 400)], 1).unwrap();
        tx.commit().unwrap();
        conn.execute("UPDATE accounts SET balance = 401 WHERE id = ?1", [player]).unwrap();
        let report = check(&conn).unwrap();
        assert!(
            report.problems.iter().any(|p| p.contains("balance 401 but entries sum to 400")),
            "{:?}",
            report.problems
        );
    }
}
