//! The OpenAI-compatible gateway: `POST /v1/chat/completions` (whole or streamed as
//! server-sent events) and `GET /v1/models`, so any OpenAI SDK can use Quarry with a
//! Quarry key. Requests are parsed here into the provider layer's normalised
//! request; answers are written as canonical OpenAI bodies and chunks whatever the
//! provider sent; errors use OpenAI's error envelope.

pub mod chat;
mod chunk;
mod envelope;
pub mod models;
mod request;
mod response;
