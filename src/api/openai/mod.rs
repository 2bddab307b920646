//! The OpenAI-compatible gateway: `POST /v1/chat/completions` (whole or streamed as
//! server-sent events) and `GET /v1/models`, so any OpenAI SDK can use Quarry with a
//! Quarry key. Requests are parsed here into the provider layer's normalised
//! request; answers are written as canonical OpenAI bodies and chunks whatever the
//! provider sent; errors use OpenAI's error envelope.

// `LlmError` carries the provider's classified error inline: it is the cold path, and
// boxing it would allocate on every failure for a smaller `Result` on the happy one.
#![allow(clippy::result_large_err)]

pub mod chat;
mod chunk;
mod envelope;
pub mod models;
mod request;
// Its ids, finish reasons and usage are SOAT's chat completions' too (api/soat/chats.rs).
pub(in crate::api) mod response;
