//! `[segments]`: where collections' segments are kept besides the local disk. The
//! default is the data directory alone; `store = "s3"` publishes every flushed or
//! merged segment in an S3-compatible bucket (AWS S3, MinIO, Ceph, Garage, SeaweedFS)
//! through Apache Arrow's `object_store`, and a node whose disk lacks one fetches it.
//! The engine's side (what is uploaded when, and checked how) is
//! `quarry_index::collection::remote`; this is the bucket it talks to.

use std::sync::Arc;
use std::time::Duration;

use futures_lite::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ClientOptions, ObjectStore, PutPayload, RetryConfig};
use quarry_index::collection::remote::Objects;

/// Where segments are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum SegmentSettings {
    /// The data directory alone (the default).
    #[default]
    Local,
    S3(S3Settings),
}

#[derive(Clone, PartialEq)]
pub struct S3Settings {
    pub bucket: String,
    /// Keys start with this (no leading or trailing '/'); "" = the bucket's root.
    pub prefix: String,
    /// `https://…` or `http://…` for a server other than AWS; `None` = AWS S3.
    pub endpoint: Option<String>,
    pub region: String,
    /// Both or neither; neither = the environment's AWS_ACCESS_KEY_ID and
    /// AWS_SECRET_ACCESS_KEY (or an instance role, as the AWS SDKs find them).
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// One request's limit; a request that fails is retried with backoff within it.
    pub timeout: Duration,
    /// The bound on segment bytes local disk keeps (0: none).
    pub cache_bytes: u64,
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// A bucket on S3 or a compatible server.
pub struct S3Objects {
    store: AmazonS3,
    /// The calls are synchronous (the engine's maintenance thread, start-up); each
    /// runs on this runtime's one thread of I/O.
    rt: tokio::runtime::Runtime,
    prefix: String,
    at: String,
}

impl S3Objects {
    /// Builds the client (no request is made: the first flush or fetch finds out
    /// whether the bucket answers).
    pub fn open(s: &S3Settings) -> Result<Arc<dyn Objects>, String> {
        // Client options first: they replace the builder's whole set, allow_http included.
        let client = ClientOptions::new().with_timeout(s.timeout).with_connect_timeout(Duration::from_secs(5));
        let mut b = AmazonS3Builder::from_env().with_client_options(client).with_bucket_name(&s.bucket).with_region(&s.region);
        if let Some(endpoint) = &s.endpoint {
            b = b.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
        }
        if let (Some(id), Some(secret)) = (&s.access_key_id, &s.secret_access_key) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        let retry = RetryConfig { max_retries: 4, retry_timeout: s.timeout, ..RetryConfig::default() };
        let store = b.with_retry(retry).build().map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let prefix = if s.prefix.is_empty() { String::new() } else { format!("{}/", s.prefix) };
        let at = format!("s3://{}/{}", s.bucket, s.prefix);
        Ok(Arc::new(S3Objects { store, rt, prefix, at: at.trim_end_matches('/').to_owned() }))
    }

    fn path(&self, key: &str) -> Path {
        Path::from(format!("{}{key}", self.prefix))
    }
}

impl Objects for S3Objects {
    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), String> {
        let path = self.path(key);
        self.rt.block_on(self.store.put(&path, PutPayload::from(bytes))).map(|_| ()).map_err(|e| e.to_string())
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        let path = self.path(key);
        self.rt
            .block_on(async {
                match self.store.get(&path).await {
                    Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            })
            .map_err(|e| e.to_string())
    }

    fn delete(&self, key: &str) -> Result<(), String> {
        let path = self.path(key);
        match self.rt.block_on(self.store.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn delete_prefix(&self, prefix: &str) -> Result<(), String> {
        let root = self.path(prefix.trim_end_matches('/'));
        self.rt
            .block_on(async {
                let listed: Vec<_> = self.store.list(Some(&root)).try_collect().await?;
                for o in listed {
                    match self.store.delete(&o.location).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
            .map_err(|e| e.to_string())
    }

    fn describe(&self) -> String {
        self.at.clone()
    }
}
