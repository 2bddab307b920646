//! Wall-clock time as the API writes it: RFC 3339, UTC, milliseconds.

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// `now + d`, as [`now_rfc3339`] writes it.
pub fn rfc3339_after(d: std::time::Duration) -> String {
    humantime::format_rfc3339_millis(SystemTime::now() + d).to_string()
}

/// Whether an RFC 3339 time is past (an unreadable one counts as past).
pub fn is_past(t: &str) -> bool {
    humantime::parse_rfc3339(t).map_or(true, |at| at <= SystemTime::now())
}

/// Seconds until the next calendar month begins (UTC), when monthly allowances reset:
/// the `retry-after` of a 429 `allowance_exceeded`.
pub fn seconds_to_next_month() -> u64 {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m) = year_month(now / 86_400);
    let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    (days_from_civil(y, m) * 86_400).saturating_sub(now).max(1)
}

/// The year and month of day `days` since 1970-01-01 (Howard Hinnant's civil_from_days).
fn year_month(days: u64) -> (u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(m <= 2), m)
}

/// Days since 1970-01-01 of the first of month `m` of year `y`.
fn days_from_civil(y: u64, m: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_found_from_days_and_back() {
        assert_eq!(year_month(0), (1970, 1));
        assert_eq!(days_from_civil(2024, 3), 19_783); // 2024-03-01, after a leap February
        assert_eq!(year_month(19_782), (2024, 2));
        assert_eq!(year_month(days_from_civil(2026, 12)), (2026, 12));
        assert!(seconds_to_next_month() <= 31 * 86_400);
    }
}
