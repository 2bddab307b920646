//! What the quarry test binaries share (`tests/it`, `tests/llm`, `tests/crash`,
//! `tests/crash_generations`, and the server library's unit tests): one crate, so each
//! piece exists once and a binary names what it uses.
//!
//! - [`server`]: `TestServer`, the real `quarry` binary on a free loopback port with a
//!   temporary data directory;
//! - [`client`]: a raw-socket HTTP/1.1 client that sends exactly the bytes a test writes;
//! - [`loopback`]: the fake upstreams' listener, request reader and JSON answer;
//! - [`scripted_llm`]: the scripted OpenAI-compatible upstream;
//! - [`plans`]: the plan configurations tests start servers with;
//! - [`prerequisite`]: the one check for what a test needs from outside the repository;
//! - [`store`]: which records store a test server runs on (redb, or the test PostgreSQL).

pub mod client;
pub mod loopback;
pub mod plans;
pub mod prerequisite;
pub mod scripted_llm;
pub mod server;
pub mod store;
