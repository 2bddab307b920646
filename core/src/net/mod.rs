//! Byte streams under hyper: the glommio TCP adapter that served connections and the
//! provider layer's outbound ones share; and the one tokio runtime every outbound
//! `https://` client runs on.

pub mod io;
pub mod outbound;
