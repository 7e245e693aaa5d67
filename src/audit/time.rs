//! RFC 3339 timestamps, with jiff: parsing the records' `at` (for `--open-rounds --older-than`
//! only — the checks never order records by time) and formatting it (for the generator).

/// Parses an RFC 3339 timestamp (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`) with jiff into
/// (Unix seconds, nanos); an impossible date or time (`2026-02-31`, month 13, hour 99) is
/// refused, not wrapped into another day.
pub fn parse_timestamp(ts: &str) -> Option<(i64, u32)> {
    let t: jiff::Timestamp = ts.parse().ok()?;
    Some((t.as_second(), u32::try_from(t.subsec_nanosecond()).ok()?))
}

/// Formats (Unix seconds, nanoseconds) as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, the records' `at`
/// (`None` outside jiff's range, years -9999 to 9999).
pub fn format_timestamp(secs: i64, nanos: u32) -> Option<String> {
    let t = jiff::Timestamp::new(secs, i32::try_from(nanos).ok()?).ok()?;
    Some(format!("{t:.9}"))
}

/// Parses a duration: a whole number and a unit, `ms`, `s`, `m`, `h` or `d` (`90s`, `15m`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("{text:?}: expected a number and a unit (ms, s, m, h, d)"))?;
    let secs = |k: u64| n.checked_mul(k).map(std::time::Duration::from_secs);
    let d = match unit {
        "ms" => Some(std::time::Duration::from_millis(n)),
        "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "d" => secs(86_400),
        _ => None,
    };
    d.ok_or_else(|| format!("{text:?}: expected a number and a unit (ms, s, m, h, d)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_a_total_order() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse_timestamp("2026-12-01T12:34:56.5Z"), Some((1_796_128_496, 500_000_000)));
        assert_eq!(parse_timestamp("2026-12-01T13:34:56.000000500+01:00"), Some((1_796_128_496, 500)));
        assert!(parse_timestamp("2026-12-01 12:34").is_none());
        assert!(parse_timestamp("yesterday").is_none());
    }

    #[test]
    fn impossible_dates_and_times_are_refused() {
        for bad in [
            "2026-13-45T99:99:99Z",
            "2026-02-31T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T12:00:00Z",
            "2026-12-01T24:00:01Z",
            "2026-12-01T12:60:00Z",
            "2026-00-10T12:00:00Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
        assert!(parse_timestamp("2028-02-29T00:00:00Z").is_some(), "a leap day");
    }

    #[test]
    fn durations_take_a_number_and_a_unit() {
        use std::time::Duration;
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        for bad in ["", "15", "m", "1.5h", "-3s", "3 weeks"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formatted_timestamps_parse_back() {
        for (s, n) in [(0, 0), (1_796_128_496, 500), (951_782_400, 999_999_999), (4_107_542_400, 1)] {
            let text = format_timestamp(s, n).unwrap();
            assert_eq!(text.len(), 30, "{text}");
            assert_eq!(parse_timestamp(&text), Some((s, n)), "{text}");
        }
        assert_eq!(format_timestamp(1_796_128_496, 500).unwrap(), "2026-12-01T12:34:56.000000500Z");
        assert_eq!(format_timestamp(i64::MAX, 0), None);
    }
}
