//! AgentLex (`/v1/...`): one file per resource.

pub mod account;
pub mod health;
pub mod keys;
pub mod signup;
