//! Agent generations (`POST /api/v1/agents/{id}/generate`): a persisted state
//! machine. See `record` for what is kept and the runner for the turn loop.

pub mod reads;
pub mod record;

pub use record::{GenerationRecord, Status, TraceRecord};
