//! The agents product (SOAT Agents API): one module per resource.

pub mod agents;
