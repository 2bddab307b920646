//! `ScanRequest`: the text (required, at most [`MAX_SCAN_CHARS`] characters) and the
//! kinds to look for. Unknown kind names are ignored, as the spec says; a kinds value
//! that is not an array of strings is refused.

use serde::de::{Deserializer, SeqAccess};
use serde::Deserialize;

use super::field::{accept, present, refuse, Accept, Leaf};
use crate::error::{ApiError, Code};
use quarry_index::identify::{IdentifierKind, Kinds};

/// The longest text one scan takes: a large document's worth, scanned in well under a
/// second on one core.
pub const MAX_SCAN_CHARS: usize = 1_000_000;

/// A checked scan request.
#[derive(Debug)]
pub struct ScanIn {
    pub text: String,
    /// The kinds named, or `None` for every kind.
    pub kinds: Option<Kinds>,
}

#[derive(Deserialize)]
struct Body {
    #[serde(default, deserialize_with = "present")]
    text: Option<ScanText>,
    #[serde(default, deserialize_with = "present")]
    kinds: Option<KindNames>,
}

pub fn parse(bytes: &[u8]) -> Result<ScanIn, ApiError> {
    let b: Body = crate::http::body::json(bytes, Code::InvalidText)?;
    let text = b.text.ok_or_else(|| ApiError::new(Code::InvalidText, "text is required.").at("text"))?.0;
    Ok(ScanIn { text, kinds: b.kinds.map(|k| k.0) })
}

/// `text`: a string of at most [`MAX_SCAN_CHARS`] characters.
struct ScanText(String);

impl<'de> Deserialize<'de> for ScanText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(t) if t.len() > MAX_SCAN_CHARS && t.chars().count() > MAX_SCAN_CHARS => {
                Err(refuse(format_args!("is {} characters; at most {MAX_SCAN_CHARS}.", t.chars().count())))
            }
            Leaf::Str(t) => Ok(ScanText(t)),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// `kinds`: an array of kind names; the known ones make the set.
struct KindNames(Kinds);

impl<'de> Accept<'de> for KindNames {
    const WANT: &'static str = "an array of strings";

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut kinds = Kinds::NONE;
        while let Some(item) = seq.next_element::<Leaf>()? {
            match item {
                Leaf::Str(name) => {
                    if let Some(k) = IdentifierKind::parse(&name) {
                        kinds = kinds.with(k);
                    }
                }
                other => return Err(refuse(format_args!("must be an array of strings, not an array holding {}.", other.kind()))),
            }
        }
        Ok(KindNames(kinds))
    }
}

impl<'de> Deserialize<'de> for KindNames {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> (Code, String) {
        let e = parse(body.as_bytes()).unwrap_err();
        (e.code, e.message)
    }

    #[test]
    fn text_is_required_and_bounded() {
        assert_eq!(err("{}"), (Code::InvalidText, "text is required.".into()));
        assert_eq!(err(r#"{"text": 3}"#), (Code::InvalidText, "text must be a string, not a number.".into()));
        assert_eq!(err(r#"{"text": null}"#).0, Code::InvalidText);
        let long = format!(r#"{{"text": "{}"}}"#, "a".repeat(MAX_SCAN_CHARS + 1));
        assert_eq!(err(&long), (Code::InvalidText, format!("text is {} characters; at most {MAX_SCAN_CHARS}.", MAX_SCAN_CHARS + 1)));
        let at_max = format!(r#"{{"text": "{}"}}"#, "é".repeat(MAX_SCAN_CHARS));
        assert!(parse(at_max.as_bytes()).is_ok(), "characters, not bytes");
    }

    #[test]
    fn kinds_keep_the_known_names() {
        let s = parse(br#"{"text": "x", "kinds": ["phone", "zip", "ssn"]}"#).unwrap();
        assert_eq!(s.kinds, Some(Kinds::NONE.with(IdentifierKind::Phone).with(IdentifierKind::Ssn)));
        assert_eq!(parse(br#"{"text": "x"}"#).unwrap().kinds, None);
        assert_eq!(err(r#"{"text": "x", "kinds": "phone"}"#), (Code::InvalidText, "kinds must be an array of strings, not a string.".into()));
        assert_eq!(err(r#"{"text": "x", "kinds": [1]}"#).0, Code::InvalidText);
    }
}
