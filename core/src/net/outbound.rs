//! The process's one tokio runtime for outbound HTTPS: a thread running a current-thread
//! runtime, started on first use, on which every `https://` client runs (the provider
//! layer's hosted model calls, the agents' `https://` tools). glommio's streams are
//! `!Send` and TLS stays off the shards, so a shard spawns its exchange here and waits on
//! a tokio channel (which wakes any executor). One thread is enough: a hosted call costs
//! tens of milliseconds of network, the hop to this thread microseconds.

use std::sync::OnceLock;

use tokio::runtime::Handle;

static RUNTIME: OnceLock<Result<Handle, String>> = OnceLock::new();

/// The outbound runtime, started on the first call; why it could not start (said to every
/// caller after the first) otherwise. A task spawned on it after its thread ended is
/// dropped at once, so whoever waits on its answer sees the channel closed.
pub fn runtime() -> std::io::Result<&'static Handle> {
    RUNTIME.get_or_init(start).as_ref().map_err(|e| std::io::Error::other(e.clone()))
}

fn start() -> Result<Handle, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let handle = rt.handle().clone();
    std::thread::Builder::new().name("quarry-outbound".into()).spawn(move || rt.block_on(std::future::pending::<()>())).map_err(|e| e.to_string())?;
    Ok(handle)
}
