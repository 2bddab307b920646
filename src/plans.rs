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
    pub price: Option<f64>,
    #[serde(rename = "storedChars")]
    pub stored_chars: Option<u64>,
    pub search: Option<u64>,
    pub extract: Option<u64>,
    pub research: Option<u64>,
    pub rate: Rate,
}

/// Every configured plan by id ("scribe", "scholar", "library", and any an operator adds).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Plans(pub BTreeMap<String, Plan>);

impl Plans {
    pub fn get(&self, id: &str) -> Option<&Plan> {
        self.0.get(id)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}
