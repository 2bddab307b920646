//! Plans: what an account may spend each month and how fast each of its keys may
//! call. Defined in configuration (`[plans.*]`), served by `GET /v1/plans`.

use std::collections::BTreeMap;

use serde::Serialize;

/// The sustained rate and burst of a key's token bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rate {
    #[serde(rename = "perMinute")]
    pub per_minute: u64,
    pub burst: u64,
}

/// One plan, serialized as the AgentLex `Plan` schema (`null` = unlimited / quoted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub name: String,
    #[serde(serialize_with = "whole_when_possible")]
    pub price: Option<f64>,
    #[serde(rename = "storedChars")]
    pub stored_chars: Option<u64>,
    pub search: Option<u64>,
    pub extract: Option<u64>,
    pub research: Option<u64>,
    pub rate: Rate,
    /// The most active (unrevoked) keys an account on this plan may hold; `None` =
    /// no cap. Every key spends from the account's one bucket, so keys add no rate.
    /// Not part of the spec's `Plan`, so not serialized.
    #[serde(skip)]
    pub max_keys: Option<u64>,
}

/// Every configured plan by id ("scribe", "scholar", "library", and any an operator adds).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Plans(pub BTreeMap<String, Plan>);

impl Plans {
    pub fn get(&self, id: &str) -> Option<&Plan> {
        self.0.get(id)
    }

    /// The plan `id`, or `default` for an account on a plan since removed from the
    /// configuration.
    pub fn get_or(&self, id: &str, default: &str) -> &Plan {
        self.get(id).or_else(|| self.get(default)).expect("the default plan exists (checked when the config resolved)")
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// Writes 49.0 as 49 (the spec's examples are whole numbers), 9.5 as 9.5.
fn whole_when_possible<S: serde::Serializer>(price: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match price {
        Some(p) if p.fract() == 0.0 && *p >= 0.0 && *p < 9.0e15 => s.serialize_u64(*p as u64),
        Some(p) => s.serialize_f64(*p),
        None => s.serialize_none(),
    }
}
