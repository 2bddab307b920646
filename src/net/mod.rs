//! Byte streams under hyper: the glommio TCP adapter that served connections and the
//! provider layer's outbound ones share.

pub mod io;
