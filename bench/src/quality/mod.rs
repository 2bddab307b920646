//! The quality harness: nDCG@10 and recall of Quarry's search measured through its HTTP API on
//! BEIR-layout data sets (the full ones in [`crate::eval::eval_dir`]), printed beside published
//! references.
//!
//! `beir` loads a data set (and cuts a fixed subset), `client` speaks the AgentLex endpoints,
//! `run` indexes a corpus once and evaluates it per search mode through the evaluate endpoint
//! (`questions` is the gold it sends, `answers` reads the ranks back), `metrics` scores the
//! rankings as pytrec_eval does, `report` and `reference` turn it into Markdown.
//! `expand` compares runs with query expansion off and on. `quarry-quality` drives it
//! from the command line.
pub mod answers;
pub mod beir;
pub mod client;
pub mod expand;
pub mod metrics;
mod pool;
pub mod questions;
pub mod reference;
pub mod report;
pub mod run;

#[cfg(test)]
mod fake_server;
#[cfg(test)]
mod tests;
