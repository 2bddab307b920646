//! Integration tests: the real `quarry` binary over real HTTP on loopback, with a
//! temporary data directory. One binary (quicker to link), one module per concern.

mod client;
mod server;

mod accounts_cli;
mod collections;
mod compat;
mod errors;
mod evaluate;
mod formats;
mod health;
mod identity;
mod install;
mod lifecycle;
mod limits;
mod models;
mod network;
mod plugin;
mod quality;
mod routes;
mod sample;
mod schema;
mod search;
mod spec;
mod vendored;
