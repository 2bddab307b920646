//! The SOAT Agents API's services (`/api/v1`): who acts where ([`Scope`]), projects,
//! project-scoped keys and AI providers here; agents, versions, secrets and tools in
//! their own files. Services take a [`Scope`] and typed requests, call the store, and
//! answer typed records or their own errors (each with its code); they import neither
//! `api` nor `http`.

pub mod agent;
pub mod api_keys;
pub mod error;
pub mod patch;
pub mod projects;
pub mod providers;
pub mod refs;
pub mod scope;

pub use error::SoatError;
pub use patch::Patch;
pub use scope::{InProject, KeyRef, Scope};
