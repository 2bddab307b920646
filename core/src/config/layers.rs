//! Merging the layers: compiled defaults → TOML file → `QUARRY_*` environment → flags.
//! Every layer is a TOML table; later tables overwrite earlier ones key by key.

use toml::{Table, Value};

/// The environment variables that belong to Quarry's tooling rather than to the
/// server's configuration; the server passes them over. `ops/setup` reads
/// `QUARRY_CACHE`; `quarry ingest` reads its key from `QUARRY_API_KEY` ([`INGEST_KEY_ENV`]).
pub const RESERVED_ENV: &[&str] = &["QUARRY_CACHE", INGEST_KEY_ENV];

/// The variable `quarry ingest` takes its key from (`cli` names its flag's `env` by it).
pub const INGEST_KEY_ENV: &str = "QUARRY_API_KEY";

/// Deep-merges `top` into `base`: tables merge, anything else is replaced.
pub fn merge(base: &mut Table, top: Table) {
    for (key, value) in top {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(t)) => merge(b, t),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

/// Builds a table from `QUARRY_*` variables: `QUARRY_HTTP__MAX_BODY_BYTES=1`
/// becomes `http.max_body_bytes = 1`. A value that parses as a TOML scalar or array
/// (`QUARRY_EMBEDDERS='["a", "b"]'`) keeps its type; anything else is a string.
pub fn env_table(vars: impl IntoIterator<Item = (String, String)>) -> Table {
    let mut table = Table::new();
    for (name, value) in vars {
        let Some(rest) = name.strip_prefix("QUARRY_") else { continue };
        if RESERVED_ENV.contains(&name.as_str()) || rest.is_empty() {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
        insert_path(&mut table, &path, scalar(&value));
    }
    table
}

/// Inserts `value` at a dotted `path`, creating tables on the way.
pub fn insert_path(table: &mut Table, path: &[String], value: Value) {
    let (last, parents) = path.split_last().expect("a key path is never empty");
    let mut at = table;
    for key in parents {
        let entry = at.entry(key.clone()).or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        at = entry.as_table_mut().expect("just made a table");
    }
    at.insert(last.clone(), value);
}

fn scalar(text: &str) -> Value {
    match format!("v = {text}").parse::<Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(v @ (Value::Integer(_) | Value::Float(_) | Value::Boolean(_) | Value::Array(_))) => v,
            _ => Value::String(text.to_owned()),
        },
        Err(_) => Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_become_nested_keys_with_types() {
        let t = env_table([
            ("QUARRY_LISTEN".into(), "127.0.0.1:9".into()),
            ("QUARRY_HTTP__MAX_BODY_BYTES".into(), "10".into()),
            ("QUARRY_CACHE".into(), "/tmp/x".into()),
            ("QUARRY_API_KEY".into(), "al_x".into()),
            ("HOME".into(), "/root".into()),
        ]);
        assert_eq!(t["listen"].as_str(), Some("127.0.0.1:9"));
        assert_eq!(t["http"]["max_body_bytes"].as_integer(), Some(10));
        assert!(!t.contains_key("cache") && !t.contains_key("api_key"));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn merge_is_deep() {
        let mut base: Table = "a = 1\n[s]\nx = 1\ny = 2".parse().unwrap();
        merge(&mut base, "[s]\ny = 3".parse().unwrap());
        assert_eq!(base["s"]["x"].as_integer(), Some(1));
        assert_eq!(base["s"]["y"].as_integer(), Some(3));
        assert_eq!(base["a"].as_integer(), Some(1));
    }
}
