//! Time: unix milliseconds for storage, ISO-8601 UTC for people and NDJSON.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the unix epoch. `AG_FAKE_NOW_MS` pins it (tests and demos that need a
/// stable clock).
pub fn now_ms() -> i64 {
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
pub fn iso(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => ms.to_string(),
    }
}

/// Parse the ISO-8601 form back to unix milliseconds.
pub fn parse_iso(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// "3s", "5m", "2h", "4d" ago, for tables.
pub fn age(ms: i64, now: i64) -> String {
    let s = ((now - ms).max(0)) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
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
}
