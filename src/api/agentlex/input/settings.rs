//! `Settings`, `CollectionCreate` and `CollectionPatch`.

use std::collections::BTreeMap;

use serde::de::{Deserializer, IgnoredAny, MapAccess};
use serde::Deserialize;
use serde_json::Value;

use super::field::{accept, present, refuse, refuse_as, Accept, DomainIn, Domains, Leaf, Obj, Shape};
use crate::agents::patch::Patch;
use crate::error::{ApiError, Code};
use crate::search::domain::Domain;
use crate::store::CollectionSettings;

const KNOWN: &str = "mask_identifiers, redact_storage, domain, guidance, glossary, embedder, language";

/// The body of a create or a patch: a name and settings, each optional here (create
/// asks for the name through [`CollectionIn::name`]). Other keys are ignored.
#[derive(Deserialize)]
pub struct CollectionIn {
    #[serde(default, deserialize_with = "present")]
    name: Option<Name>,
    #[serde(default, deserialize_with = "present")]
    settings: Option<Obj<SettingsIn>>,
}

pub fn parse(bytes: &[u8]) -> Result<CollectionIn, ApiError> {
    crate::http::body::json(bytes, Code::InvalidSettings)
}

impl CollectionIn {
    /// The name given; absent is refused when `required`.
    pub fn name(&mut self, required: bool) -> Result<Option<String>, ApiError> {
        match self.name.take() {
            None if required => Err(ApiError::new(Code::InvalidName, "name is required.").at("name")),
            name => Ok(name.map(|n| n.0)),
        }
    }

    /// `settings.embedder` as given (ours: which loaded model the collection embeds with;
    /// whether the server loads it is the search service's to say).
    pub fn embedder(&self) -> Option<&str> {
        self.settings.as_ref()?.0.embedder.as_ref().map(|e| e.0.as_str())
    }

    /// `settings.language` as given, normalised to an ISO 639-3 code (ours: which
    /// language the collection holds, so which model embeds it when none is named).
    pub fn language(&self) -> Option<String> {
        self.settings.as_ref()?.0.language.as_ref().map(|l| l.0.clone())
    }

    /// The settings over `base`: a key present replaces (null removes guidance or
    /// glossary). The spec's `Settings` is open, so an unknown key is ignored with a
    /// warning (the second value).
    pub fn merge(&self, base: &CollectionSettings) -> (CollectionSettings, Vec<String>) {
        let mut s = base.clone();
        let Some(Obj(given)) = &self.settings else { return (s, Vec::new()) };
        if let Some(Flag(on)) = given.mask_identifiers {
            s.mask_identifiers = on;
        }
        if let Some(Flag(on)) = given.redact_storage {
            s.redact_storage = on;
        }
        if let Some(d) = &given.domain {
            s.domain = d.0.map_or("auto", Domain::as_str).to_owned();
        }
        given.guidance.as_ref().map(|g| g.0.clone()).apply_to(&mut s.guidance);
        given.glossary.as_ref().map(|g| g.0.clone()).apply_to(&mut s.glossary);
        let warnings = given.other.keys().map(|key| format!("settings.{key} is not a setting and was ignored; the settings are {KNOWN}.")).collect();
        (s, warnings)
    }
}

/// A name: at most 120 characters, by the one rule for names ([`crate::names`]).
struct Name(String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => match crate::names::check(&s, 120) {
                Ok(()) => Ok(Name(s)),
                Err(problem) => Err(refuse_as(Code::InvalidName, problem)),
            },
            other => Err(refuse_as(Code::InvalidName, format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

#[derive(Deserialize)]
struct SettingsIn {
    #[serde(default, deserialize_with = "present")]
    mask_identifiers: Option<Flag>,
    #[serde(default, deserialize_with = "present")]
    redact_storage: Option<Flag>,
    #[serde(default, deserialize_with = "present")]
    domain: Option<DomainIn<SettingsDomains>>,
    #[serde(default)]
    guidance: Patch<Guidance>,
    #[serde(default)]
    glossary: Patch<Glossary>,
    #[serde(default, deserialize_with = "present")]
    embedder: Option<EmbedderId>,
    #[serde(default, deserialize_with = "present")]
    language: Option<Language>,
    /// Keys that are not settings, for the warnings.
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

impl Shape for SettingsIn {}

/// `mask_identifiers`, `redact_storage`: a boolean.
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Bool(on) => Ok(Flag(on)),
            other => Err(refuse(format_args!("must be a boolean, not {}.", other.kind()))),
        }
    }
}

/// `settings.domain`: `auto` or any domain (the spec's Settings); refused as
/// `invalid_settings`, the body's code.
struct SettingsDomains;

impl Domains for SettingsDomains {
    const AUTO: bool = true;
    const MEMBERS: &'static [Domain] = &Domain::ALL;
    const CODE: Option<Code> = None;
}

/// `embedder`: a model id (at most 120 characters).
struct EmbedderId(String);

impl<'de> Deserialize<'de> for EmbedderId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) if !s.is_empty() && s.chars().count() <= 120 => Ok(EmbedderId(s)),
            Leaf::Str(_) => Err(refuse("must name a model (1 to 120 characters).")),
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

/// `language`: a language tag ("en", "en-GB", "eng", "ja", "mul"), kept as its ISO 639-3
/// code.
struct Language(String);

impl<'de> Deserialize<'de> for Language {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(s) => match crate::search::language::parse(&s) {
                Some(code) => Ok(Language(code)),
                None => Err(refuse(format_args!(
                    "must be a language code (ISO 639-1 or 639-3, or a BCP 47 tag such as \"en\", \"en-GB\", \"ja\"; \"mul\" for several), not \"{}\".",
                    s.chars().take(40).collect::<String>()
                ))),
            },
            other => Err(refuse(format_args!("must be a string, not {}.", other.kind()))),
        }
    }
}

struct Guidance(String);

impl<'de> Deserialize<'de> for Guidance {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Leaf::deserialize(d)? {
            Leaf::Str(g) if g.chars().count() <= 2000 => Ok(Guidance(g)),
            Leaf::Str(_) => Err(refuse("must be at most 2000 characters.")),
            other => Err(refuse(format_args!("must be a string or null, not {}.", other.kind()))),
        }
    }
}

/// At most 300 terms, each expanding to a string of at most 120 characters or a list of
/// 1 to 5 of them.
struct Glossary(BTreeMap<String, Value>);

impl<'de> Accept<'de> for Glossary {
    const WANT: &'static str = "an object or null";

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut out = BTreeMap::new();
        let short = |s: &Value| s.as_str().is_some_and(|s| s.chars().count() <= 120);
        while let Some(term) = map.next_key::<String>()? {
            let expansion: Value = map.next_value()?;
            let ok = match &expansion {
                Value::String(_) => short(&expansion),
                Value::Array(a) => (1..=5).contains(&a.len()) && a.iter().all(short),
                _ => false,
            };
            if !ok {
                return Err(refuse(format_args!("[\"{term}\"] must be a string of at most 120 characters or a list of 1 to 5 such strings.")));
            }
            out.insert(term, expansion);
        }
        if out.len() > 300 {
            return Err(refuse(format_args!("holds {} entries; at most 300.", out.len())));
        }
        Ok(Glossary(out))
    }
}

impl<'de> Deserialize<'de> for Glossary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        accept(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merged(base: &CollectionSettings, body: Value) -> Result<(CollectionSettings, Vec<String>), ApiError> {
        parse(body.to_string().as_bytes()).map(|c| c.merge(base))
    }

    fn name(body: Value, required: bool) -> Result<Option<String>, ApiError> {
        parse(body.to_string().as_bytes())?.name(required)
    }

    #[test]
    fn settings_merge_and_refuse_what_is_malformed() {
        let base = CollectionSettings::default();
        let (s, _) = merged(&base, json!({"settings": {"domain": "legal", "glossary": {"SSA": "Software Services Agreement"}}})).unwrap();
        assert_eq!(s.domain, "legal");
        assert!(s.glossary.is_some());
        let (s, _) = merged(&s, json!({"settings": {"glossary": null, "guidance": "Cite the MSA first."}})).unwrap();
        assert_eq!((s.glossary, s.guidance.as_deref()), (None, Some("Cite the MSA first.")));
        let (s, _) = merged(&base, json!({"settings": {"mask_identifiers": true, "redact_storage": true}})).unwrap();
        assert!(s.mask_identifiers && s.redact_storage);
        let (s, _) = merged(&s, json!({"settings": {"redact_storage": false}})).unwrap();
        assert!(s.mask_identifiers && !s.redact_storage, "a key left out keeps its value");
        let e = merged(&base, json!({"settings": {"mask_identifiers": "yes"}})).unwrap_err();
        assert_eq!(e.code, Code::InvalidSettings);
        assert_eq!(e.message, "settings.mask_identifiers must be a boolean, not a string.");
        // The spec's Settings is open: an unknown key is ignored, with a warning naming it.
        let (s, warnings) = merged(&base, json!({"settings": {"colour": 1, "domain": "legal"}})).unwrap();
        assert_eq!(s.domain, "legal");
        assert!(warnings.len() == 1 && warnings[0].contains("settings.colour"), "{warnings:?}");
        let e = merged(&base, json!({"settings": {"domain": "poetry"}})).unwrap_err();
        assert_eq!(e.message, "settings.domain must be one of auto, medical, legal, classical, general.");
        let e = merged(&base, json!({"settings": {"glossary": {"A": ["", "b", "c", "d", "e", "f"]}}})).unwrap_err();
        assert!(e.message.starts_with("settings.glossary[\"A\"] must be a string"), "{}", e.message);
        let e = merged(&base, json!({"settings": {"guidance": 3}})).unwrap_err();
        assert_eq!(e.message, "settings.guidance must be a string or null, not a number.");
        let e = merged(&base, json!({"settings": []})).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidSettings, "settings must be an object, not an array."));
        let many: serde_json::Map<String, Value> = (0..301).map(|i| (format!("t{i}"), json!("x"))).collect();
        let e = merged(&base, json!({"settings": {"glossary": many}})).unwrap_err();
        assert_eq!(e.message, "settings.glossary holds 301 entries; at most 300.");
    }

    #[test]
    fn the_embedder_setting_is_a_model_id() {
        let c = parse(json!({"settings": {"embedder": "all-MiniLM-L6-v2"}}).to_string().as_bytes()).unwrap();
        assert_eq!(c.embedder(), Some("all-MiniLM-L6-v2"));
        let (_, warnings) = c.merge(&CollectionSettings::default());
        assert!(warnings.is_empty(), "embedder is a setting: {warnings:?}");
        assert_eq!(parse(b"{}").unwrap().embedder(), None);
        let e = merged(&CollectionSettings::default(), json!({"settings": {"embedder": 3}})).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidSettings, "settings.embedder must be a string, not a number."));
        let e = merged(&CollectionSettings::default(), json!({"settings": {"embedder": ""}})).unwrap_err();
        assert_eq!(e.message, "settings.embedder must name a model (1 to 120 characters).");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(name(json!({}), true).unwrap_err().message, "name is required.");
        assert_eq!(name(json!({}), false).unwrap(), None);
        let e = name(json!({"name": ""}), true).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::InvalidName, "name must not be blank."));
        assert_eq!(name(json!({"name": "x".repeat(121)}), true).unwrap_err().code, Code::InvalidName);
        assert_eq!(name(json!({"name": null}), false).unwrap_err().message, "name must be a string, not null.");
        assert_eq!(name(json!({"name": "Contracts"}), true).unwrap(), Some("Contracts".into()));
    }
}
