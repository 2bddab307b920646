//! The API surfaces. Handlers parse, call a service, serialize; nothing else. The
//! route table (`routes.rs`) names every handler; `http` matches it.

pub mod agentlex;
pub mod openai;
pub mod openapi;
pub mod openindex;
pub mod routes;
pub mod soat;
pub mod web;

pub use crate::http::call::Call;
pub use crate::runtime::blocking;
