//! `[store]`: where the records live: redb in the data directory (the default), or a
//! PostgreSQL database (`kind = "postgres"`, `url`), checked here so a bad setting stops
//! start-up naming it. The URL may carry a password: give it through the environment
//! (`QUARRY_STORE__URL`) rather than the file, and it is never printed.

use std::time::Duration;

use serde::Deserialize;

use super::{invalid, ConfigError};
use crate::store::{PostgresSettings, StoreSettings};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    pub kind: String,
    pub url: String,
    pub pool: u32,
    pub connect_timeout: String,
    pub ca_file: String,
}

pub fn resolve(raw: RawStore) -> Result<StoreSettings, ConfigError> {
    match raw.kind.as_str() {
        "redb" => Ok(StoreSettings::Embedded),
        "postgres" => {
            let url = raw.url.trim();
            if url.is_empty() {
                return Err(invalid(
                    "store.url",
                    "kind \"postgres\" needs the database's URL (postgres://user@host:5432/db), best given as QUARRY_STORE__URL",
                ));
            }
            if let Err(e) = url.parse::<postgres::Config>() {
                // The parser's words, never the URL: it may hold a password.
                return Err(invalid("store.url", &format!("is not a PostgreSQL connection URL: {e}")));
            }
            if !(1..=1024).contains(&raw.pool) {
                return Err(invalid("store.pool", "must be 1 to 1024 connections"));
            }
            let connect_timeout = humantime::parse_duration(&raw.connect_timeout)
                .ok()
                .filter(|d| *d >= Duration::from_millis(100))
                .ok_or_else(|| invalid("store.connect_timeout", "must be a duration of at least 100ms, such as \"5s\""))?;
            let ca_pem = match raw.ca_file.trim() {
                "" => None,
                path => Some(std::fs::read(path).map_err(|e| invalid("store.ca_file", &format!("cannot read {path}: {e}")))?),
            };
            Ok(StoreSettings::Postgres(PostgresSettings { url: url.to_owned(), pool: raw.pool, connect_timeout, ca_pem }))
        }
        other => Err(invalid("store.kind", &format!("is \"{other}\"; it must be \"redb\" (the data directory, the default) or \"postgres\""))),
    }
}
