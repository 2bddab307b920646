//! glommio's io_uring rings go through `shard::uring` (see there why): every binary
//! and test of this crate links with liburing's ring set-up wrapped.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--wrap=io_uring_queue_init_params");
    println!("cargo:rerun-if-changed=build.rs");
}
