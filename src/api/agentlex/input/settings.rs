//! `Settings`, `CollectionCreate` and `CollectionPatch`.

use serde_json::{Map, Value};

use super::{err, kind};
use crate::error::{ApiError, Code};
use crate::store::CollectionSettings;

const DOMAINS: &[&str] = &["auto", "medical", "legal", "classical", "general"];

/// A name: a non-empty string of at most 120 characters.
pub fn name(v: Option<&Value>, required: bool) -> Result<Option<String>, ApiError> {
    match v {
        None if required => Err(err(Code::InvalidName, "name is required.")),
        None => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(err(Code::InvalidName, "name must not be empty.")),
        Some(Value::String(s)) if s.chars().count() > 120 => Err(err(Code::InvalidName, "name must be at most 120 characters.")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(err(Code::InvalidName, format!("name must be a string, not {}.", kind(other)))),
    }
}

/// Applies the settings object `v` over `base`: a key present replaces (null removes
/// guidance or glossary); a wrong type is refused, naming the key. The spec's
/// `Settings` is open, so an unknown key is ignored with a warning (the second value).
pub fn merge(base: &CollectionSettings, v: Option<&Value>) -> Result<(CollectionSettings, Vec<String>), ApiError> {
    let mut s = base.clone();
    let mut warnings = Vec::new();
    let Some(v) = v else { return Ok((s, warnings)) };
    let Value::Object(map) = v else {
        return Err(err(Code::InvalidSettings, format!("settings must be an object, not {}.", kind(v))));
    };
    for (key, value) in map {
        let bad = |m: &str| {
            let sep = if m.starts_with('[') { "" } else { " " };
            err(Code::InvalidSettings, format!("settings.{key}{sep}{m}"))
        };
        match key.as_str() {
            "mask_identifiers" | "redact_storage" => {
                let Value::Bool(b) = value else { return Err(bad(&format!("must be a boolean, not {}.", kind(value)))) };
                if *b {
                    return Err(bad("cannot be true yet: identifier masking is not available in this version, and a setting is never accepted and ignored."));
                }
                if key == "mask_identifiers" { s.mask_identifiers = false } else { s.redact_storage = false }
            }
            "domain" => match value.as_str() {
                Some(d) if DOMAINS.contains(&d) => s.domain = d.to_owned(),
                _ => return Err(bad(&format!("must be one of {}.", DOMAINS.join(", ")))),
            },
            "guidance" => match value {
                Value::Null => s.guidance = None,
                Value::String(g) if g.chars().count() <= 2000 => s.guidance = Some(g.clone()),
                Value::String(_) => return Err(bad("must be at most 2000 characters.")),
                other => return Err(bad(&format!("must be a string or null, not {}.", kind(other)))),
            },
            "glossary" => s.glossary = glossary(value).map_err(|m| bad(&m))?,
            _ => {
                let known = "mask_identifiers, redact_storage, domain, guidance, glossary";
                warnings.push(format!("settings.{key} is not a setting and was ignored; the settings are {known}."));
            }
        }
    }
    Ok((s, warnings))
}

type Glossary = Option<std::collections::BTreeMap<String, Value>>;

fn glossary(v: &Value) -> Result<Glossary, String> {
    let map: &Map<String, Value> = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => return Err(format!("must be an object or null, not {}.", kind(other))),
    };
    if map.len() > 300 {
        return Err(format!("holds {} entries; at most 300.", map.len()));
    }
    let short = |s: &Value| s.as_str().is_some_and(|s| s.chars().count() <= 120);
    for (term, expansion) in map {
        let ok = match expansion {
            Value::String(_) => short(expansion),
            Value::Array(a) => (1..=5).contains(&a.len()) && a.iter().all(short),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "[\"{term}\"] must be a string of at most 120 characters or a list of 1 to 5 such strings."
            ));
        }
    }
    Ok(Some(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_merge_and_refuse_what_has_no_behaviour() {
        let base = CollectionSettings::default();
        let (s, _) = merge(&base, Some(&json!({"domain": "legal", "glossary": {"SSA": "Software Services Agreement"}}))).unwrap();
        assert_eq!(s.domain, "legal");
        assert!(s.glossary.is_some());
        let (s, _) = merge(&s, Some(&json!({"glossary": null, "guidance": "Cite the MSA first."}))).unwrap();
        assert_eq!((s.glossary, s.guidance.as_deref()), (None, Some("Cite the MSA first.")));
        let e = merge(&base, Some(&json!({"mask_identifiers": true}))).unwrap_err();
        assert_eq!(e.code, Code::InvalidSettings);
        assert!(e.message.starts_with("settings.mask_identifiers"), "{}", e.message);
        assert!(merge(&base, Some(&json!({"redact_storage": false}))).is_ok());
        // The spec's Settings is open: an unknown key is ignored, with a warning naming it.
        let (s, warnings) = merge(&base, Some(&json!({"colour": 1, "domain": "legal"}))).unwrap();
        assert_eq!(s.domain, "legal");
        assert!(warnings.len() == 1 && warnings[0].contains("settings.colour"), "{warnings:?}");
        let e = merge(&base, Some(&json!({"domain": "poetry"}))).unwrap_err();
        assert!(e.message.contains("settings.domain"), "{}", e.message);
        let e = merge(&base, Some(&json!({"glossary": {"A": ["", "b", "c", "d", "e", "f"]}}))).unwrap_err();
        assert!(e.message.contains("settings.glossary[\"A\"]"), "{}", e.message);
        assert_eq!(merge(&base, Some(&json!([]))).unwrap_err().code, Code::InvalidSettings);
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(name(None, true).unwrap_err().code, Code::InvalidName);
        assert_eq!(name(Some(&json!("")), true).unwrap_err().code, Code::InvalidName);
        assert_eq!(name(Some(&json!("x".repeat(121))), true).unwrap_err().code, Code::InvalidName);
        assert_eq!(name(Some(&json!("Contracts")), true).unwrap(), Some("Contracts".into()));
    }
}
