//! The two clouds whose model APIs take no API key: AWS (Bedrock Runtime, each
//! request signed with SigV4: [`sigv4`]) and Google Cloud (Vertex AI, a bearer token
//! a service-account key is exchanged for: [`google`]). The credentials come from a
//! provider's secret; nothing here reads the environment or the machine's metadata
//! service, so a tenant's call can only use the tenant's own credential.

pub mod google;
pub mod sigv4;
