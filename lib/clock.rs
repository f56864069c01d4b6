//! Time: unix milliseconds for storage, ISO-8601 UTC for people and NDJSON, and the one
//! grammar for durations people type.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the unix epoch. `AG_FAKE_NOW_MS` pins it (tests and demos that need a
/// stable clock).
pub(crate) fn now_ms() -> i64 {
    if let Some(ms) = std::env::var("AG_FAKE_NOW_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return ms;
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-11-30T02:39:03.123Z`.
pub(crate) fn iso(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => ms.to_string(),
    }
}

/// Parse the ISO-8601 form back to unix milliseconds.
pub(crate) fn parse_iso(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// "3s", "5m", "2h", "4d" ago, for tables.
pub(crate) fn age(ms: i64, now: i64) -> String {
    let s = ((now - ms).max(0)) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A point in time as people type it for `--since`: a duration back from `now` (`2h`,
/// `3 days`), an ISO-8601 time, or a date (its midnight, UTC). Unix milliseconds.
pub(crate) fn parse_since(s: &str, now: i64) -> Result<i64, String> {
    if let Ok(d) = parse_duration(s) {
        return Ok(now - d.as_millis() as i64);
    }
    if let Some(ms) = parse_iso(s.trim()) {
        return Ok(ms);
    }
    if let Ok(date) = s.trim().parse::<jiff::civil::Date>() {
        if let Ok(ts) = date.to_zoned_datetime(jiff::tz::TimeZone::UTC) {
            return Ok(ts.timestamp().as_millisecond());
        }
    }
    Err(format!(
        "{:?} is neither a duration ({DURATION_FORMS}) nor a date or time (2026-11-30, \
         2026-11-30T09:00:00Z)",
        s.trim()
    ))
}

/// The longest duration any flag or setting takes, about 31 years: anything longer is a typo,
/// and adding it to a clock would overflow.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(1_000_000_000);

/// What `parse_duration` accepts, for help texts and errors.
pub(crate) const DURATION_FORMS: &str = "e.g. 90s, 30m, 2h, 1d, 1h30m, 250ms, or plain seconds";

/// A duration as people type it, one grammar for every flag and setting: plain seconds
/// (`30`, `2.5`), or units (`250ms`, `90s`, `30m`, `2h`, `1d`, `1w`, combined as `1h30m` or
/// `2 hours 30 minutes`; a day is 24 hours), or ISO 8601 (`PT1H`). Never negative.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{t:?} is not a duration ({DURATION_FORMS})");
    if t.is_empty() {
        return Err(bad());
    }
    let too_long = || format!("{t:?} is too long a duration (at most about 31 years)");
    let bounded = |d: Duration| {
        if d > MAX_DURATION {
            Err(too_long())
        } else {
            Ok(d)
        }
    };
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| too_long())
            .and_then(bounded);
    }
    let span: jiff::Span = t.parse().map_err(|_| bad())?;
    let secs = span
        .total((
            jiff::Unit::Second,
            jiff::SpanRelativeTo::days_are_24_hours(),
        ))
        .map_err(|_| format!("{t:?} is too long a duration"))?;
    if secs < 0.0 {
        return Err(format!("{t:?} is negative; a duration is a length of time"));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| too_long())
        .and_then(bounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trips() {
        let ms = 1_790_000_000_123;
        let s = iso(ms);
        assert!(s.ends_with('Z'), "{s}");
        assert_eq!(parse_iso(&s), Some(ms));
    }

    #[test]
    fn durations_people_type() {
        let d = |s: &str| parse_duration(s).map(|d| d.as_millis());
        assert_eq!(d("30"), Ok(30_000));
        assert_eq!(d("2.5"), Ok(2_500));
        assert_eq!(d("250ms"), Ok(250));
        assert_eq!(d("90s"), Ok(90_000));
        assert_eq!(d("30m"), Ok(1_800_000));
        assert_eq!(d("2h"), Ok(7_200_000));
        assert_eq!(d("1d"), Ok(86_400_000));
        assert_eq!(d("1w"), Ok(7 * 86_400_000));
        assert_eq!(d("1h30m"), Ok(5_400_000));
        assert_eq!(d("2 hours 30 minutes"), Ok(9_000_000));
        assert_eq!(d("PT1H"), Ok(3_600_000));
        assert_eq!(d(" 5m "), Ok(300_000));
        for bad in [
            "",
            "x",
            "1x",
            "-5m",
            "5m ago",
            "1.2.3",
            "999999999999999999999d",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("duration"), "{bad:?}: {e}");
        }
    }
}
