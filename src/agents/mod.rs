//! The agents server's modules (the SOAT Agents API): each a service the `/api/v1`
//! handlers call, with its records in the store. Handlers parse, call, serialize.

pub mod secrets;
pub mod tools;

/// Where a record lives: one project of one account. A record of another project or
/// account does not exist for the caller.
#[derive(Debug, Clone, Copy)]
pub struct Project<'a> {
    pub account_id: &'a str,
    pub project_id: &'a str,
}
