//! The provider layer: every model call leaves through here, driven by AI-Protocol
//! manifests so that a provider is data, not a client. [`Llm`] is the service the
//! gateway, research and agents call: route a model name to a configured provider,
//! build the provider's request from one normalised [`ChatRequest`], send it with
//! retries through [`transport`] (from the calling shard itself for `http://`
//! upstreams, through one outbound thread for `https://`), and hand back a
//! [`Completion`] or a [`ChatStream`] of deltas. Its futures are `!Send`: they run on a
//! shard. Nothing here knows HTTP routes.

// `LlmError` carries the provider's classified error inline: it is the cold path, and
// boxing it would allocate on every failure for a smaller `Result` on the happy one.
#![allow(clippy::result_large_err)]

pub mod classify;
pub mod cloud;
pub mod config;
pub mod error;
pub mod expr;
pub mod ids;
pub mod local;
pub mod manifest;
pub mod path;
pub mod request;
pub mod retry;
pub mod secret;
mod service;
pub mod stream;
pub mod termination;
pub mod text_tools;
pub mod transport;
pub mod usage;
pub mod wire;

pub use config::{LlmConfig, LocalConfig, ProviderConfig, TlsRoots};
pub use error::{ErrorClass, LlmError, ProviderError};
pub use request::ChatRequest;
pub use service::{AdHoc, ChatStream, Completion, Direct, ListedModel, Llm, ModelInfo};
pub use stream::assemble::{Delta, Output, ToolCall};
pub use termination::{Reason, Termination};
pub use usage::Usage;

#[cfg(test)]
mod compliance;
