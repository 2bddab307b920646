//! The server's version, a leaf every layer may name (the health answer, the start-up
//! line, the MCP client's `clientInfo`) without importing the app that serves it.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
