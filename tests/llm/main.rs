//! The provider-layer binary: the real `quarry` in front of fake model upstreams, and the real local model.
//!
//! The provider layer end to end: the real `quarry` binary in front of a fake
//! upstream on loopback that speaks OpenAI chat completions, Anthropic messages and
//! Gemini generateContent, replays the recorded transcripts in
//! `tests/data/provider-transcripts/` and injects faults. A separate binary
//! from `tests/it`; both use `quarry-test-support`'s server and client.

use quarry_test_support::{client, prerequisite, server};

mod expand;
mod faults;
mod gateway;
mod local;
mod readme_tour;
mod real_agent;
mod real_model;
mod real_research;
mod reference;
mod sdk;
mod sse_client;
mod transcripts;
mod upstream;
