//! Agent generations (`POST /api/v1/agents/{id}/generate`): a persisted state
//! machine. `record` is what is kept, `service` starts and resumes, `run` is the turn
//! loop, `live` and `events` carry the events (`event`) to readers, `recover` takes
//! over after a restart and `expiry` ends pauses nobody answered. Every status change
//! is a `record::Transition`.

pub mod content;
pub mod event;
pub mod events;
pub mod expiry;
// Memory extraction after a turn (issue 36, knowledge).
pub mod extract;
// guardrails (issue 37)
pub mod guard;
pub mod knowledge;
pub mod live;
pub mod nested;
pub mod output;
pub mod prompt;
pub mod reads;
pub mod record;
pub mod recover;
pub mod request;
pub mod run;
pub mod service;
pub mod tools;

pub use record::{GenerationRecord, Status, TraceRecord};
