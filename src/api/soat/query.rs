//! Query parameters of `/api/v1` requests, percent-decoded (`+` is a space).

use crate::agents::SoatError;

/// The last value of parameter `name`, decoded; `None` when absent.
pub fn param(query: Option<&str>, name: &str) -> Option<String> {
    let pairs = query?.split('&').map(|pair| pair.split_once('=').unwrap_or((pair, "")));
    pairs.filter(|(k, _)| decode(k) == name).map(|(_, v)| decode(v)).next_back()
}

/// A boolean parameter (`true`/`false`; absent: `default`); anything else is 400.
pub fn flag(query: Option<&str>, name: &str, default: bool) -> Result<bool, SoatError> {
    match param(query, name).as_deref() {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(SoatError::invalid(name, format!("must be true or false, not \"{other}\"."))),
    }
}

/// `%XX` and `+` decoded; an invalid escape is kept as written.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_decoded_and_the_last_one_wins() {
        let q = Some("project_id=proj_a&limit=5&name=a%20b+c&limit=7&empty");
        assert_eq!(param(q, "project_id").as_deref(), Some("proj_a"));
        assert_eq!(param(q, "limit").as_deref(), Some("7"));
        assert_eq!(param(q, "name").as_deref(), Some("a b c"));
        assert_eq!(param(q, "empty").as_deref(), Some(""));
        assert_eq!(param(q, "nothere"), None);
        assert_eq!(param(None, "limit"), None);
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn flags_are_true_or_false() {
        assert!(flag(Some("force=true"), "force", false).unwrap());
        assert!(!flag(None, "force", false).unwrap());
        assert!(flag(Some("force=yes"), "force", false).is_err());
    }
}
