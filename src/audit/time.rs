//! RFC 3339 timestamps: parsing the records' `at` (for `--open-rounds --older-than` only —
//! the checks never order records by time) and formatting it (for the generator).

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

/// Formats (Unix seconds, nanoseconds) as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`, the records' `at`.
pub fn format_timestamp(secs: i64, nanos: u32) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since the epoch, H. Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{nanos:09}Z", rem / 3600, rem % 3600 / 60, rem % 60)
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
            let text = format_timestamp(s, n);
            assert_eq!(text.len(), 30, "{text}");
            assert_eq!(parse_timestamp(&text), Some((s, n)), "{text}");
        }
        assert_eq!(format_timestamp(1_796_128_496, 500), "2026-12-01T12:34:56.000000500Z");
    }
}
