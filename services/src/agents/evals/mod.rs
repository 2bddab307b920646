//! Evaluations (issue 37; SOAT v0.28's evaluations.yaml): datasets of test cases,
//! evals binding an agent to a dataset and scorers, and runs this server executes
//! (`run`): every item a real generation on the agent version under test, scored and
//! recorded as it happens, resumed after a restart. A release's promotion gate
//! accepts only such runs (`agent::record::EvalRunRecord::clears`).

pub mod datasets;
pub mod defs;
pub mod record;
pub mod run;
pub mod scorers;
