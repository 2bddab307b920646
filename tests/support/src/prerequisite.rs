//! Shared by the test binaries: the one check for what a test needs from outside the repository.
//!
//! Every test binary and the server library's unit tests use it. A test that needs a prerequisite the repository cannot hold (the local model's
//! weights, the test venv with schemathesis or selenium, chromium, root) asks
//! [`prerequisite`] first. Present, the test runs as written. Absent, it never passes
//! silently: under CI it fails, naming what is missing and what installs it; anywhere
//! else it prints `SKIPPED: <test>: <what is missing>` on stderr and returns.

/// Whether the test may go on. `what` says what is missing and what installs it, e.g.
/// "no schemathesis in the test venv (ops/setup-llm-tests installs it)". Without it,
/// under CI (`CI` set, and not to "", "0" or "false": CI systems set `CI=true`) this
/// panics; elsewhere it prints `SKIPPED: <test>: <what>` and returns false.
#[track_caller]
pub fn prerequisite(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    let test = match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => std::panic::Location::caller().to_string(),
    };
    assert!(!under_ci(), "{test}: {what}; under CI every test runs, so this is a failure");
    eprintln!("SKIPPED: {test}: {what}");
    false
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}
