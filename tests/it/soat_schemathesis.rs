//! Schemathesis over the SOAT module specs Quarry serves under /api/v1.
//!
//! Schemathesis over the SOAT sibling module specs Quarry serves under /api/v1
//! (projects, api-keys, ai-providers, secrets, tools), bundled into
//! `tests/data/specs/soat-*.bundled.openapi.json` by `ops/bundle-soat-module-specs`:
//! `tests/schemathesis/soat_modules.sh` runs each against the real binary with a fixed
//! seed and bounded examples, checking only `not_a_server_error` and
//! `response_schema_conformance` (those specs do not list every 400 Quarry answers).
//! No request leaves the machine: `POST /api/v1/tools/{tool_id}/call` is excluded from
//! fuzzing (the spec's examples name hosts like mcp.example.com), the stateful phase is
//! off, and `/models` reads a seeded provider that fails before any request.
//! Skipped, as `schema.rs`'s run, without the test venv (a failure under CI).

use std::path::PathBuf;
use std::process::Command;

/// Runs `script` against the real binary and checks one summary per spec of
/// `modules`, in its order, each with more than `min_cases` cases and all passed.
fn specs_hold(script: &str, time_limit: &str, modules: &[&str], min_cases: u64) {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(script);
    let out = Command::new("bash")
        .arg(&script)
        .env("ST_BIN", super::server::bin())
        .env("ST_TIME_LIMIT", time_limit)
        .output()
        .expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let runs: Vec<&str> = stdout.split("[schemathesis] spec soat-").skip(1).collect();
    assert_eq!(runs.len(), modules.len(), "{stdout}");
    for (module, run) in modules.iter().zip(&runs) {
        assert!(run.starts_with(module), "expected soat-{module}'s run:\n{run}");
        let (generated, all_passed) =
            super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count for {module} in:\n{run}"));
        assert!(generated > min_cases && all_passed, "{module}: {generated} cases:\n{run}");
    }
}

/// The specs the script runs, in its order: each must print its own summary.
const MODULES: [&str; 5] = ["projects", "api-keys", "ai-providers", "secrets", "tools"];

#[test]
fn the_sibling_module_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_modules.sh", "30", &MODULES, 50);
}

/// The generations and traces module specs, in the script's order.
const GENERATION_MODULES: [&str; 2] = ["generations", "traces"];

/// `tests/schemathesis/soat_generations.sh`: the generations and traces specs over
/// generations seeded through `generate?wait=true` (a loopback upstream), the same
/// checks as the sibling modules'.
#[test]
fn the_generations_and_traces_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_generations.sh", "30", &GENERATION_MODULES, 30);
}

/// `tests/schemathesis/soat_memory.sh`: the memory stores' and entries' specs
/// (memories.yaml, memoryEntries.yaml), each its own run with seeded records.
#[test]
fn the_memory_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_memory.sh", "30", &["memories", "memoryEntries"], 50);
}

/// sessions: `tests/schemathesis/soat_sessions.sh`: SOAT v0.28.0's sessions and
/// conversations specs over an agent on a loopback upstream and seeded sessions,
/// conversations and messages, the same checks as the sibling modules'.
#[test]
fn the_sessions_and_conversations_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_sessions.sh", "60", &["sessions", "conversations"], 50);
}

/// `tests/schemathesis/soat_users_files.sh`: SOAT v0.28's users and files specs (issue
/// 36), each its own run with seeded users and files.
#[test]
fn the_users_and_files_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_users_files.sh", "30", &["users", "files"], 30);
}

/// webhooks (issue 36): `tests/schemathesis/soat_webhooks.sh`, SOAT v0.28.0's webhooks
/// spec over a seeded webhook and a delivery a generation left, the same checks as the
/// sibling modules'.
#[test]
fn the_webhooks_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_webhooks.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "30").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let run = stdout.split("[schemathesis] spec soat-webhooks").nth(1).unwrap_or_else(|| panic!("no webhooks run in:\n{stdout}"));
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 50 && all_passed, "{generated} cases:\n{run}");
}

/// `tests/schemathesis/soat_documents.sh`: SOAT v0.28's documents spec (issue 36,
/// knowledge) over seeded documents, the same checks as the memory specs'.
#[test]
fn the_documents_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_documents.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "30").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let run = stdout.split("[schemathesis] spec soat-").nth(1).unwrap_or_else(|| panic!("no documents run in:\n{stdout}"));
    assert!(run.starts_with("documents"), "expected soat-documents' run:\n{run}");
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 50 && all_passed, "documents: {generated} cases:\n{run}");
}

/// actors (issue 36): `tests/schemathesis/soat_actors.sh`, SOAT v0.28's actors spec over
/// seeded actors, the same checks as the documents spec's.
#[test]
fn the_actors_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_actors.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "30").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let run = stdout.split("[schemathesis] spec soat-actors").nth(1).unwrap_or_else(|| panic!("no actors run in:\n{stdout}"));
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 50 && all_passed, "actors: {generated} cases:\n{run}");
}

/// chats and embeddings (issue 36): `tests/schemathesis/soat_chats.sh`, SOAT v0.28's
/// chats and embeddings specs over a seeded provider on a loopback upstream and seeded
/// chats, with the default embedder loaded, the same checks as the sibling modules'.
#[test]
fn the_chats_and_embeddings_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_chats.sh", "60", &["chats", "embeddings"], 30);
}

/// evaluations (issue 37): `tests/schemathesis/soat_evaluations.sh`, SOAT v0.28's
/// evaluations spec over seeded datasets, items, evals and a run Quarry executed on a
/// loopback upstream, the same checks as the actors spec's.
#[test]
fn the_evaluations_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_evaluations.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "60").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let run = stdout.split("[schemathesis] spec soat-evaluations").nth(1).unwrap_or_else(|| panic!("no evaluations run in:\n{stdout}"));
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 50 && all_passed, "evaluations: {generated} cases:\n{run}");
}

/// guardrails and approvals (issue 37): `tests/schemathesis/soat_guardrails.sh`, SOAT
/// v0.28's guardrails and approvals specs over seeded guardrails, the same checks as the
/// sibling modules'. Each spec's run has 60 s (as the policies specs'): at 30 s the
/// guardrails spec, ~26 s alone, was cut short whenever other schemathesis runs shared
/// the machine, every case passed.
#[test]
fn the_guardrails_and_approvals_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_guardrails.sh", "60", &["guardrails", "approvals"], 20);
}

/// policies (issue 37): `tests/schemathesis/soat_policies.sh`, SOAT v0.28's policies,
/// audit-log, activity and exceptions specs over seeded policies, exceptions (failed
/// generations) and audit entries, the same checks as the sibling modules'.
#[test]
fn the_policies_audit_activity_and_exceptions_specs_hold_under_schemathesis() {
    specs_hold("tests/schemathesis/soat_policies.sh", "60", &["policies", "audit-log", "activity", "exceptions"], 5);
}

/// quotas (issue 37): `tests/schemathesis/soat_quotas.sh`, SOAT v0.28's quotas spec over
/// seeded quotas, then usage.yaml's served operations (receipt, price book, meters,
/// rollup), the same checks as the actors spec's.
#[test]
fn the_quotas_spec_holds_under_schemathesis() {
    let Some(st) = super::schema::schemathesis() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/schemathesis/soat_quotas.sh");
    let out =
        Command::new("bash").arg(&script).env("ST_BIN", super::server::bin()).env("ST_TIME_LIMIT", "30").output().expect("bash runs the script");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", st.display(), out.status);
    let run = stdout.split("[schemathesis] spec soat-quotas").nth(1).unwrap_or_else(|| panic!("no quotas run in:\n{stdout}"));
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 20 && all_passed, "quotas: {generated} cases:\n{run}");
    let run = stdout.split("[schemathesis] spec soat-usage").nth(1).unwrap_or_else(|| panic!("no usage run in:\n{stdout}"));
    let (generated, all_passed) = super::schema::generated_and_passed(run).unwrap_or_else(|| panic!("no test-case count in:\n{run}"));
    assert!(generated > 20 && all_passed, "usage: {generated} cases:\n{run}");
}
