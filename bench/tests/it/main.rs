//! The load generator's binary: the library and `quarry-load` against small in-process loopback servers.
//!
//! End-to-end tests of the load generator: the library and the `quarry-load` binary against
//! small loopback servers started in-process (see `fixture`).

mod cli;
mod fixture;
mod run;
