//! The benches and tests that link the server crate link its io_uring shim too
//! (`quarry::shard::uring`), which needs liburing's ring set-up wrapped.
fn main() {
    println!("cargo:rustc-link-arg=-Wl,--wrap=io_uring_queue_init_params");
    println!("cargo:rerun-if-changed=build.rs");
}
