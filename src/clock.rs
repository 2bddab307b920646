//! Wall-clock time as the API writes it: RFC 3339, UTC, milliseconds.

use std::time::SystemTime;

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
