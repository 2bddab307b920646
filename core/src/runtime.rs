//! What services need of the shard's executor without knowing shards.

/// Runs a blocking call (the records store, a WAL sync) off the shard's thread.
pub async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    glommio::executor().spawn_blocking(f).await
}
