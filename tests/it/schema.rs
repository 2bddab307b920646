//! Schemathesis over the AgentLex spec's implemented operations against the real binary.
//!
//! Schemathesis against the real binary: `tests/schemathesis/run.sh` fuzzes the AgentLex
//! spec's implemented operations and fails on a 5xx or a response outside its schema.
//! Schemathesis lives in the venv `ops/setup-llm-tests` installs (`ops/setup` runs it,
//! so CI has it); without it this test says it skipped, or fails under CI.

use std::path::PathBuf;
use std::process::Command;

/// The test venv's schemathesis, or `None` (the test skips, or fails under CI: CI runs
/// ops/setup, which installs it; see `prerequisite`).
#[track_caller]
pub(super) fn schemathesis() -> Option<PathBuf> {
    let cache = std::env::var_os("QUARRY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/quarry"));
    let st = cache.join("venv-sdk/bin/schemathesis");
    super::prerequisite::prerequisite("no schemathesis in the test venv (ops/setup-llm-tests installs it)", st.exists()).then_some(st)
}

/// "Test cases:\n  1120 generated, 1120 passed" → 1120 generated, all passed.
pub(super) fn generated_and_passed(out: &str) -> Option<(u64, bool)> {
    let line = out.lines().skip_while(|l| !l.starts_with("Test cases:")).nth(1)?;
    let generated: u64 = line.split_whitespace().next()?.parse().ok()?;
    Some((generated, line.trim() == format!("{generated} generated, {generated} passed")))
}

#[test]
fn the_spec_holds_under_schemathesis() {
    let Some(st) = schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/run.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("ST_BIN", super::server::bin())
        // Under nextest's kill at 5 minutes in CI, with the server's start around it.
        .env("ST_TIME_LIMIT", "200")
        .output()
        .expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let (generated, all_passed) = generated_and_passed(&stdout).unwrap_or_else(|| panic!("no test-case count in:\n{stdout}"));
    assert!(generated > 200 && all_passed, "{generated} cases:\n{stdout}");
}

#[test]
fn the_count_is_read_from_schemathesis_summary() {
    let out = "Warnings:\n  x\n\nTest cases:\n  1120 generated, 1120 passed\n\nSeed: 1\n";
    assert_eq!(generated_and_passed(out), Some((1120, true)));
    let failed = "Test cases:\n  1252 generated, 6 found 6 unique failures, 26 skipped\n";
    assert_eq!(generated_and_passed(failed), Some((1252, false)));
}
