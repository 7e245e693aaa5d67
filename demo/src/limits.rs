//! Bet limits, as the casino's rule sheets state them (`RULES.md`, "Limits"):
//!
//! - the table's limits (from the engine's `GetRules`; 5.00–300.00 by default) bound every
//!   original bet;
//! - a player may set their own maximum, never above the table's maximum nor below its
//!   minimum, **at most once per week**, confirming with their PIN (checked by
//!   [`crate::players::set_max_bet`] before these rules); the week turns at **Friday
//!   12:00 AM US Eastern** (`America/New_York`, from the tz database bundled into the binary,
//!   so the daylight-saving changes in March and November move the turn in UTC);
//! - the player's limit applies to all of that player's games: it is stored on the player
//!   and sent with every `StartRound` as `player_limits`.

use jiff::{Timestamp, ToSpan, civil::Weekday, tz::TimeZone};
use serde::Serialize;

/// The time zone whose Friday midnight turns the limit week.
pub const WEEK_ZONE: &str = "America/New_York";

/// The table's limits on an original bet, in minor units, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TableLimits {
    /// Smallest original bet.
    pub min_bet: u64,
    /// Largest original bet.
    pub max_bet: u64,
}

/// A player's own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlayerLimit {
    /// The player's maximum bet; `None` = the table's.
    pub max_bet: Option<u64>,
    /// When the player last changed it.
    pub changed_at: Option<Timestamp>,
}

impl PlayerLimit {
    /// The limits in force for this player at `table`: `(min, max)` with
    /// `min = table.min_bet` and `max = min(player max, table max)` (never below `min`).
    pub fn effective(&self, table: TableLimits) -> (u64, u64) {
        let max = self.max_bet.map_or(table.max_bet, |m| m.min(table.max_bet)).max(table.min_bet);
        (table.min_bet, max)
    }
}

/// Why a limit change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// Above the table's maximum: a player can only lower their maximum.
    #[error("max_bet: {requested} is above the table maximum {table_max}")]
    AboveTable { requested: u64, table_max: u64 },
    /// Below the table's minimum: no bet could be placed.
    #[error("max_bet: {requested} is below the table minimum {table_min}")]
    BelowTableMinimum { requested: u64, table_min: u64 },
    /// The same value as now: refused, so it does not use up the week's change.
    #[error("max_bet: {0} is already your maximum")]
    Unchanged(u64),
    /// Already changed since the last Friday 12:00 AM Eastern.
    #[error("your limit was already changed this week; the next change is possible from {next_allowed}")]
    TooSoon { next_allowed: Timestamp },
    /// The PIN did not match.
    #[error("pin: wrong PIN")]
    WrongPin,
    /// The time-zone database failed (cannot happen with the bundled database).
    #[error("time zone: {0}")]
    TimeZone(String),
}

fn eastern() -> Result<TimeZone, LimitError> {
    TimeZone::get(WEEK_ZONE).map_err(|e| LimitError::TimeZone(e.to_string()))
}

/// The start of the limit week containing `now`: the latest Friday 00:00 `America/New_York`
/// at or before `now`.
pub fn week_start(now: Timestamp) -> Result<Timestamp, LimitError> {
    let tz = eastern()?;
    let date = now.to_zoned_datetime(tz.clone()).date();
    let back =
        i64::from(date.weekday().to_monday_zero_offset() - Weekday::Friday.to_monday_zero_offset()).rem_euclid(7);
    let friday = date.checked_sub(back.days()).map_err(|e| LimitError::TimeZone(e.to_string()))?;
    Ok(friday.to_zoned_datetime(tz).map_err(|e| LimitError::TimeZone(e.to_string()))?.timestamp())
}

/// The start of the next limit week after the one containing `now` (the next Friday
/// 00:00 Eastern, which is 167, 168 or 169 hours after [`week_start`]).
pub fn next_week_start(now: Timestamp) -> Result<Timestamp, LimitError> {
    let tz = eastern()?;
    let start = week_start(now)?.to_zoned_datetime(tz.clone()).date();
    let next = start.checked_add(7.days()).map_err(|e| LimitError::TimeZone(e.to_string()))?;
    Ok(next.to_zoned_datetime(tz).map_err(|e| LimitError::TimeZone(e.to_string()))?.timestamp())
}

/// When this player may next change their limit: `None` = now.
pub fn next_change_allowed(current: &PlayerLimit, now: Timestamp) -> Result<Option<Timestamp>, LimitError> {
    match current.changed_at {
        Some(changed) if changed >= week_start(now)? => Ok(Some(next_week_start(now)?)),
        _ => Ok(None),
    }
}

/// Checks a request to set the player's maximum to `requested` at `now` (the PIN has been
/// checked before). On success the caller stores `requested` and `now`.
pub fn check_change(
    table: TableLimits,
    current: &PlayerLimit,
    requested: u64,
    now: Timestamp,
) -> Result<(), LimitError> {
    if requested > table.max_bet {
        return Err(LimitError::AboveTable { requested, table_max: table.max_bet });
    }
    if requested < table.min_bet {
        return Err(LimitError::BelowTableMinimum { requested, table_min: table.min_bet });
    }
    if current.effective(table).1 == requested {
        return Err(LimitError::Unchanged(requested));
    }
    if let Some(next_allowed) = next_change_allowed(current, now)? {
        return Err(LimitError::TooSoon { next_allowed });
    }
    Ok(())
}

/// Checks an original bet against the player's limits at `table`.
pub fn check_bet(table: TableLimits, player: &PlayerLimit, bet: u64) -> Result<(), (u64, u64)> {
    let (min, max) = player.effective(table);
    if bet < min || bet > max { Err((min, max)) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: TableLimits = TableLimits { min_bet: 500, max_bet: 30_000 };

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn changed(at: &str, max: u64) -> PlayerLimit {
        PlayerLimit { max_bet: Some(max), changed_at: Some(ts(at)) }
    }

    #[test]
    fn the_week_turns_at_friday_midnight_eastern_standard_time() {
        // Friday 2026-01-09 00:00 EST = 05:00 UTC.
        assert_eq!(week_start(ts("2026-01-09T05:00:00Z")).unwrap(), ts("2026-01-09T05:00:00Z"));
        assert_eq!(week_start(ts("2026-01-09T04:59:59Z")).unwrap(), ts("2026-01-02T05:00:00Z"));
        // Any day of the week maps back to its Friday.
        assert_eq!(week_start(ts("2026-01-14T12:00:00Z")).unwrap(), ts("2026-01-09T05:00:00Z"));
        assert_eq!(next_week_start(ts("2026-01-14T12:00:00Z")).unwrap(), ts("2026-01-16T05:00:00Z"));
    }

    #[test]
    fn march_transition_the_first_friday_after_dst_starts_turns_at_04_utc() {
        // DST starts Sunday 2026-03-08. Friday 03-06 00:00 is EST (05:00 UTC); Friday 03-13
        // 00:00 is EDT (04:00 UTC): that week is 167 hours long.
        let start = week_start(ts("2026-03-10T12:00:00Z")).unwrap();
        assert_eq!(start, ts("2026-03-06T05:00:00Z"));
        let next = next_week_start(ts("2026-03-10T12:00:00Z")).unwrap();
        assert_eq!(next, ts("2026-03-13T04:00:00Z"));
        assert_eq!(next.duration_since(start).as_secs(), 167 * 3600);
        // 04:30 UTC on Friday 03-13 is 00:30 EDT: already the new week (a fixed UTC-5 would
        // still say Thursday).
        assert_eq!(week_start(ts("2026-03-13T04:30:00Z")).unwrap(), ts("2026-03-13T04:00:00Z"));
        // One second before: Thursday 23:59:59 EDT, the old week.
        assert_eq!(week_start(ts("2026-03-13T03:59:59Z")).unwrap(), ts("2026-03-06T05:00:00Z"));
    }

    #[test]
    fn november_transition_the_first_friday_after_dst_ends_turns_at_05_utc() {
        // DST ends Sunday 2026-11-01. Friday 10-30 00:00 is EDT (04:00 UTC); Friday 11-06
        // 00:00 is EST (05:00 UTC): that week is 169 hours long.
        let start = week_start(ts("2026-11-02T12:00:00Z")).unwrap();
        assert_eq!(start, ts("2026-10-30T04:00:00Z"));
        let next = next_week_start(ts("2026-11-02T12:00:00Z")).unwrap();
        assert_eq!(next, ts("2026-11-06T05:00:00Z"));
        assert_eq!(next.duration_since(start).as_secs(), 169 * 3600);
        // 04:30 UTC on Friday 11-06 is Thursday 23:30 EST: still the old week (a fixed UTC-4
        // would already say Friday).
        assert_eq!(week_start(ts("2026-11-06T04:30:00Z")).unwrap(), ts("2026-10-30T04:00:00Z"));
        assert_eq!(week_start(ts("2026-11-06T05:00:00Z")).unwrap(), ts("2026-11-06T05:00:00Z"));
        // The repeated hour on the Sunday itself belongs to that week.
        assert_eq!(week_start(ts("2026-11-01T05:30:00Z")).unwrap(), ts("2026-10-30T04:00:00Z"));
        assert_eq!(week_start(ts("2026-11-01T06:30:00Z")).unwrap(), ts("2026-10-30T04:00:00Z"));
    }

    #[test]
    fn a_player_may_change_once_per_week() {
        let never = PlayerLimit::default();
        assert_eq!(check_change(TABLE, &never, 10_000, ts("2026-03-12T12:00:00Z")), Ok(()));
        // Changed on Thursday 2026-03-12; a second change that Thursday night is refused
        // until Friday 00:00 EDT = 04:00 UTC.
        let cur = changed("2026-03-12T12:00:00Z", 10_000);
        assert_eq!(
            check_change(TABLE, &cur, 5_000, ts("2026-03-13T03:59:59Z")),
            Err(LimitError::TooSoon { next_allowed: ts("2026-03-13T04:00:00Z") })
        );
        assert_eq!(check_change(TABLE, &cur, 5_000, ts("2026-03-13T04:00:00Z")), Ok(()));
        // Changed on a Friday morning: refused all week, allowed from the next Friday.
        let cur = changed("2026-10-30T15:00:00Z", 10_000);
        assert_eq!(
            check_change(TABLE, &cur, 5_000, ts("2026-11-06T04:59:59Z")),
            Err(LimitError::TooSoon { next_allowed: ts("2026-11-06T05:00:00Z") })
        );
        assert_eq!(check_change(TABLE, &cur, 5_000, ts("2026-11-06T05:00:00Z")), Ok(()));
        assert_eq!(next_change_allowed(&cur, ts("2026-11-03T00:00:00Z")), Ok(Some(ts("2026-11-06T05:00:00Z"))));
        assert_eq!(next_change_allowed(&cur, ts("2026-11-06T05:00:00Z")), Ok(None));
    }

    #[test]
    fn never_above_the_table_maximum_nor_below_its_minimum() {
        let never = PlayerLimit::default();
        let now = ts("2026-06-01T00:00:00Z");
        assert_eq!(
            check_change(TABLE, &never, 30_001, now),
            Err(LimitError::AboveTable { requested: 30_001, table_max: 30_000 })
        );
        assert_eq!(
            check_change(TABLE, &never, 499, now),
            Err(LimitError::BelowTableMinimum { requested: 499, table_min: 500 })
        );
        assert_eq!(check_change(TABLE, &never, 30_000, now), Err(LimitError::Unchanged(30_000)));
        assert_eq!(check_change(TABLE, &never, 500, now), Ok(()));
    }

    #[test]
    fn the_effective_limit_bounds_every_bet() {
        let p = PlayerLimit { max_bet: Some(2_000), changed_at: None };
        assert_eq!(p.effective(TABLE), (500, 2_000));
        assert_eq!(check_bet(TABLE, &p, 2_000), Ok(()));
        assert_eq!(check_bet(TABLE, &p, 2_001), Err((500, 2_000)));
        assert_eq!(check_bet(TABLE, &p, 499), Err((500, 2_000)));
        // A stored player maximum above a (later lowered) table maximum never widens it.
        let p = PlayerLimit { max_bet: Some(50_000), changed_at: None };
        assert_eq!(p.effective(TABLE), (500, 30_000));
    }
}
