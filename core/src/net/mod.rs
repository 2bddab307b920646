//! Byte streams under hyper: the glommio TCP adapter that served connections and the
//! provider layer's outbound ones share; and the one tokio runtime every outbound
//! `https://` client runs on; and the egress policy that judges where a tenant's
//! requests may connect.

pub mod egress;
pub mod io;
pub mod outbound;
