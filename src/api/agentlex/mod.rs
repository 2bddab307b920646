//! AgentLex (`/v1/...`): one file per resource.

pub mod account;
pub mod collections;
pub mod documents;
pub mod evaluate;
pub mod health;
pub mod input;
pub mod keys;
pub mod search;
pub mod signup;
