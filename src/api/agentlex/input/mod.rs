//! Request bodies of the collection, document, search, evaluate and scan endpoints: typed
//! serde structs at the edge, parsed by [`crate::http::body::json`] like every other
//! body, with the checks in the field types ([`field`]). Each error names the field by
//! its path and uses the spec's code.

pub mod document;
pub mod evaluate;
pub mod extract;
pub mod field;
pub mod research;
pub mod scan;
pub mod search;
pub mod settings;
