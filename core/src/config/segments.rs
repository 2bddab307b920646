//! `[segments]`: where collections' segments are kept besides the data directory,
//! checked here so a bad setting stops start-up naming it. Credentials are best given
//! through the environment (QUARRY_SEGMENTS__SECRET_ACCESS_KEY, or AWS's own
//! variables), and the secret is never printed.

use std::time::Duration;

use serde::Deserialize;

use super::{invalid, ConfigError};
use crate::segments::{S3Settings, SegmentSettings};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSegments {
    pub store: String,
    pub bucket: String,
    pub prefix: String,
    pub endpoint: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub timeout: String,
    pub cache: String,
}

pub fn resolve(raw: RawSegments) -> Result<SegmentSettings, ConfigError> {
    match raw.store.as_str() {
        "local" => Ok(SegmentSettings::Local),
        "s3" => {
            let bucket = raw.bucket.trim();
            // S3's bucket naming rules (3 to 63 of a-z 0-9 . -).
            let bucket_ok =
                (3..=63).contains(&bucket.len()) && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
            if !bucket_ok {
                return Err(invalid("segments.bucket", "store \"s3\" needs a bucket name: 3 to 63 of a-z, 0-9, '.' and '-'"));
            }
            let prefix = raw.prefix.trim().trim_matches('/');
            if prefix.split('/').any(|p| p == "." || p == "..") || prefix.contains("//") {
                return Err(invalid("segments.prefix", "must be a key prefix such as \"quarry/prod\" (no empty, '.' or '..' parts)"));
            }
            let endpoint = match raw.endpoint.trim() {
                "" => None,
                e if e.starts_with("https://") || e.starts_with("http://") => Some(e.trim_end_matches('/').to_owned()),
                _ => return Err(invalid("segments.endpoint", "must be a URL such as https://s3.example.internal:9000, or \"\" for AWS S3")),
            };
            let region = match raw.region.trim() {
                "" => "us-east-1".to_owned(),
                r => r.to_owned(),
            };
            let (id, secret) = (raw.access_key_id.trim(), raw.secret_access_key.trim());
            if id.is_empty() != secret.is_empty() {
                return Err(invalid(
                    "segments.access_key_id",
                    "give both access_key_id and secret_access_key, or neither (then AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are read)",
                ));
            }
            let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            let timeout = humantime::parse_duration(&raw.timeout)
                .ok()
                .filter(|d| *d >= Duration::from_secs(1))
                .ok_or_else(|| invalid("segments.timeout", "must be a duration of at least 1s, such as \"30s\""))?;
            let cache_bytes = parse_bytes(&raw.cache).ok_or_else(|| {
                invalid("segments.cache", "must be a size such as \"20GiB\" or \"500MiB\" (B, KiB, MiB, GiB, TiB), or \"0\" for no bound")
            })?;
            Ok(SegmentSettings::S3(S3Settings {
                bucket: bucket.to_owned(),
                prefix: prefix.to_owned(),
                endpoint,
                region,
                access_key_id: some(id),
                secret_access_key: some(secret),
                timeout,
                cache_bytes,
            }))
        }
        other => Err(invalid("segments.store", &format!("is \"{other}\"; it must be \"local\" (the data directory, the default) or \"s3\""))),
    }
}

/// "20GiB", "512 MiB", "1B", "0": a count of bytes with a binary unit.
fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..split].parse().ok()?;
    let unit: u64 = match s[split..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(store: &str, bucket: &str) -> RawSegments {
        RawSegments {
            store: store.into(),
            bucket: bucket.into(),
            prefix: "/prod/".into(),
            endpoint: "http://127.0.0.1:9000/".into(),
            region: String::new(),
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI-secret".into(),
            timeout: "30s".into(),
            cache: "20GiB".into(),
        }
    }

    fn key_of(e: ConfigError) -> String {
        match e {
            ConfigError::Invalid { key, .. } => key,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn s3_settings_are_checked_and_tidied_and_the_secret_is_never_printed() {
        let SegmentSettings::S3(s) = resolve(raw("s3", "quarry-segments")).unwrap() else { panic!("s3") };
        assert_eq!((s.prefix.as_str(), s.endpoint.as_deref(), s.region.as_str()), ("prod", Some("http://127.0.0.1:9000"), "us-east-1"));
        assert!(!format!("{s:?}").contains("wJalr"), "{s:?}");
        assert_eq!(resolve(raw("local", "")).unwrap(), SegmentSettings::Local);
        assert_eq!(key_of(resolve(raw("gcs", "b")).unwrap_err()), "segments.store");
        assert_eq!(key_of(resolve(raw("s3", "")).unwrap_err()), "segments.bucket");
        assert_eq!(key_of(resolve(raw("s3", "Upper_Case")).unwrap_err()), "segments.bucket");
        let half = RawSegments { secret_access_key: String::new(), ..raw("s3", "quarry") };
        assert_eq!(key_of(resolve(half).unwrap_err()), "segments.access_key_id");
        let endpoint = RawSegments { endpoint: "minio:9000".into(), ..raw("s3", "quarry") };
        assert_eq!(key_of(resolve(endpoint).unwrap_err()), "segments.endpoint");
        let prefix = RawSegments { prefix: "a/../b".into(), ..raw("s3", "quarry") };
        assert_eq!(key_of(resolve(prefix).unwrap_err()), "segments.prefix");
        assert_eq!(s.cache_bytes, 20 << 30);
        for (size, bytes) in
            [("0", Some(0)), ("1B", Some(1)), ("512 MiB", Some(512 << 20)), ("2TiB", Some(2 << 40)), ("20GB", None), ("GiB", None), ("-1", None)]
        {
            assert_eq!(parse_bytes(size), bytes, "{size}");
        }
        let bad = RawSegments { cache: "lots".into(), ..raw("s3", "quarry") };
        assert_eq!(key_of(resolve(bad).unwrap_err()), "segments.cache");
    }
}
