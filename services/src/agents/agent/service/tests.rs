use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::agents::agent::related::NewGuardrail;
use crate::agents::agent::rollout::{serve, Caller, Served};
use crate::agents::agent::{config, record};
use crate::agents::evals::defs::NewEval;
use crate::agents::KeyRef;
use crate::error::{Code, ErrorCode};
use crate::store::agents::Write;
use crate::store::AiProviderRecord;

fn scope(account: &str, project: &str) -> Scope {
    Scope { account_id: account.into(), project_id: project.into(), key: KeyRef::Project { id: "key_1".into() } }
}

fn provider(records: &Records, p: &Scope, id: &str) {
    let r = AiProviderRecord {
        id: id.into(),
        account_id: p.account_id.clone(),
        project_id: p.project_id.clone(),
        name: "p".into(),
        provider: "openai".into(),
        default_model: "gpt-4o".into(),
        secret_id: None,
        base_url: None,
        config: Default::default(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
    };
    records.insert(&r).unwrap();
}

fn setup() -> (tempfile::TempDir, Agents, Scope) {
    let dir = tempfile::tempdir().unwrap();
    let records = Arc::new(Records::open(dir.path()).unwrap());
    let p = scope("acct_a", "proj_a");
    provider(&records, &p, "aip_1");
    (dir, Agents::new(records), p)
}

fn create(a: &Agents, p: &Scope, v: Value) -> AgentRecord {
    a.create(p, serde_json::from_value(v).unwrap()).unwrap()
}

fn patch(a: &Agents, p: &Scope, id: &str, v: Value, if_match: Option<&str>) -> Result<AgentRecord, AgentError> {
    a.update(p, id, serde_json::from_value(v).unwrap(), if_match)
}

fn code<T: std::fmt::Debug>(r: Result<T, AgentError>) -> Code {
    r.unwrap_err().code()
}

#[test]
fn versions_count_changes_only() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1", "name": "one", "version_label": "initial"}));
    assert_eq!(agent.version, 1);
    let same = patch(&a, &p, &agent.id, json!({"name": "one", "version_label": "ignored"}), None).unwrap();
    assert_eq!(same.version, 1, "a write that changes nothing makes no version");
    let two = patch(&a, &p, &agent.id, json!({"name": "two", "version_label": "renamed"}), Some("1")).unwrap();
    assert_eq!(two.version, 2);
    let settings = patch(&a, &p, &agent.id, json!({"prompt_caching": {"enabled": true}}), None).unwrap();
    assert_eq!(settings.version, 2, "prompt_caching is not part of the versioned config");
    assert_eq!(settings.config.prompt_caching, Some(config::PromptCaching { enabled: true }));
    let versions = a.versions(&p, &agent.id).unwrap();
    let seen: Vec<(u64, Option<&str>)> = versions.iter().map(|v| (v.version, v.label.as_deref())).collect();
    assert_eq!(seen, [(2, Some("renamed")), (1, Some("initial"))], "newest first");
    assert_eq!(versions[0].config["name"], "two");
    assert_eq!(code(a.version(&p, &agent.id, 3)), Code::SoatNotFound);
}

#[test]
fn a_stale_precondition_is_a_conflict_that_writes_nothing() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1"}));
    patch(&a, &p, &agent.id, json!({"name": "b"}), Some("\"1\"")).unwrap();
    let e = patch(&a, &p, &agent.id, json!({"name": "c"}), Some("1")).unwrap_err();
    assert!(matches!(e, AgentError::VersionConflict { current: 2, expected: 1 }), "{e}");
    assert_eq!(e.meta_value(), Some(json!({"current_version": 2})));
    assert_eq!(code(patch(&a, &p, &agent.id, json!({"name": "c", "expected_version": 1}), None)), Code::VersionConflict);
    assert_eq!(
        code(patch(&a, &p, &agent.id, json!({"name": "c", "expected_version": 2}), Some("3"))),
        Code::SoatValidation,
        "header and body differ"
    );
    assert_eq!(code(patch(&a, &p, &agent.id, json!({"name": "c"}), Some("v2"))), Code::SoatValidation);
    assert_eq!(a.get(&p, &agent.id).unwrap().config.name.as_deref(), Some("b"));
    patch(&a, &p, &agent.id, json!({"name": "c"}), Some("*")).unwrap();
}

#[test]
fn of_two_concurrent_writes_on_one_version_exactly_one_lands() {
    let (_d, a, p) = setup();
    let a = Arc::new(a);
    for round in 0..100 {
        let agent = create(&a, &p, json!({"ai_provider_id": "aip_1"}));
        let tag = agent.version.to_string();
        let writers: Vec<_> = ["left", "right"]
            .into_iter()
            .map(|name| {
                let (a, p, id, tag) = (a.clone(), p.clone(), agent.id.clone(), tag.clone());
                std::thread::spawn(move || patch(&a, &p, &id, json!({"name": name}), Some(&tag)).map(|r| (name, r.version)))
            })
            .collect();
        let results: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(matches!(lost, AgentError::VersionConflict { current: 2, .. }), "{lost}");
        let now = a.get(&p, &agent.id).unwrap();
        assert_eq!((now.version, now.config.name.as_deref()), (2, Some(won[0].0)), "round {round}");
        assert_eq!(a.versions(&p, &agent.id).unwrap().len(), 2);
    }
}

#[test]
fn restore_writes_a_new_version_that_replaces_the_config_fully() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1", "name": "one"}));
    patch(&a, &p, &agent.id, json!({"instructions": "be brief", "max_steps": 4}), None).unwrap();
    let restored = a.restore(&p, &agent.id, 1, config::Restore::default(), None).unwrap();
    assert_eq!(restored.version, 3);
    assert_eq!((restored.config.instructions.as_deref(), restored.config.max_steps), (None, None), "cleared, not merged");
    assert_eq!(a.version(&p, &agent.id, 3).unwrap().label.as_deref(), Some("restored from v1"));
    let again = a.restore(&p, &agent.id, 1, config::Restore { label: Some("x".into()) }, None).unwrap();
    assert_eq!(again.version, 3, "restoring the config the agent holds is a no-op");
    assert_eq!(code(a.restore(&p, &agent.id, 9, config::Restore::default(), None)), Code::SoatNotFound);
    assert_eq!(code(a.restore(&p, &agent.id, 2, config::Restore::default(), Some("1"))), Code::VersionConflict);
    let four = a.restore(&p, &agent.id, 2, config::Restore { label: Some("back".into()) }, Some("3")).unwrap();
    assert_eq!((four.version, four.config.max_steps), (4, Some(4)));
}

#[test]
fn restore_revalidates_what_the_archive_names() {
    let (_d, a, p) = setup();
    let g = a.create_guardrail(&p, NewGuardrail::named("pii")).unwrap();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1", "guardrail_ids": [g.id]}));
    patch(&a, &p, &agent.id, json!({"guardrail_ids": null}), None).unwrap();
    a.delete_related::<record::GuardrailRecord>(&p, &g.id, Some(RefKind::Guardrail)).unwrap();
    assert_eq!(code(a.restore(&p, &agent.id, 1, config::Restore::default(), None)), Code::GuardrailNotFound);
    assert_eq!(code(patch(&a, &p, &agent.id, json!({"guardrail_ids": ["guardrail_nope"]}), None)), Code::GuardrailNotFound);
}

#[test]
fn a_gated_rollout_promotes_the_pinned_canary_not_the_draft() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1", "name": "stable"}));
    patch(&a, &p, &agent.id, json!({"name": "canary"}), None).unwrap();
    let new = NewEval { project_id: None, name: "quality".into(), agent_id: agent.id.clone(), dataset_id: None, scorers: None, pass_threshold: None };
    let eval = crate::agents::evals::defs::create(a.records(), &p, new).unwrap();
    let release = |s, c, pct, gate: Option<&str>| config::SetRelease {
        stable_version: s,
        canary_version: c,
        canary_percent: pct,
        promotion_gate: gate.map(str::to_owned),
    };
    assert_eq!(code(a.set_release(&p, &agent.id, release(1, 1, 10, None))), Code::SoatValidation, "canary = stable");
    assert_eq!(code(a.set_release(&p, &agent.id, release(1, 7, 10, None))), Code::SoatValidation, "no version 7");
    assert_eq!(code(a.set_release(&p, &agent.id, release(1, 2, 101, None))), Code::SoatValidation);
    assert_eq!(code(a.set_release(&p, &agent.id, release(0, 2, 10, None))), Code::SoatValidation);
    assert_eq!(code(a.set_release(&p, &agent.id, release(1, 2, 10, Some("eval_other")))), Code::SoatValidation);
    assert_eq!(code(a.promote(&p, &agent.id)), Code::NoActiveRelease);
    let live = a.set_release(&p, &agent.id, release(1, 2, 25, Some(&eval.id))).unwrap();
    assert_eq!(live.active_release.as_ref().map(|r| r.canary_percent), Some(25));
    // An edit mid-rollout is a draft: a version, and the split is untouched.
    let draft = patch(&a, &p, &agent.id, json!({"name": "draft"}), None).unwrap();
    assert_eq!((draft.version, draft.active_release.as_ref()), (3, live.active_release.as_ref()));
    assert!(matches!(serve(&draft, Caller::Actor("someone")), Served::Stable(1) | Served::Canary(2)));
    // The gate: a run against the wrong version, not passed, unfinished, or not
    // executed by this server (a run a client recorded before evaluations ran), does
    // not clear it. Runs are written as the runner (`agents::evals::run`) writes them.
    let run = |v: u64, status, passed, executed| {
        let r = record::EvalRunRecord {
            id: format!("evrun_{}", crate::ids::random_base62(8)),
            account_id: p.account_id.clone(),
            project_id: p.project_id.clone(),
            eval_id: eval.id.clone(),
            agent_version: v,
            status,
            passed,
            created_at: crate::clock::now_rfc3339(),
            executed,
            agent_id: agent.id.clone(),
            baseline_run_id: None,
            aggregate_scores: None,
            item_count: 1,
            completed_count: 1,
            errored_count: 0,
            started_at: None,
            finished_at: None,
            item_ids: Vec::new(),
            scorers: Vec::new(),
            pass_threshold: Some(1.0),
            started_by: None,
            lease: None,
            error: None,
        };
        a.records().insert(&r).unwrap();
        r
    };
    run(1, record::RunStatus::Completed, Some(true), true);
    run(2, record::RunStatus::Completed, Some(false), true);
    run(2, record::RunStatus::Running, None, true);
    run(2, record::RunStatus::Completed, Some(true), false);
    let e = a.promote(&p, &agent.id).unwrap_err();
    assert_eq!(e.code(), Code::PromotionGateUnmet);
    assert_eq!(a.get(&p, &agent.id).unwrap(), draft, "the rollout is left untouched");
    let passing = run(2, record::RunStatus::Completed, Some(true), true);
    let promoted = a.promote(&p, &agent.id).unwrap();
    assert_eq!((promoted.version, promoted.config.name.as_deref(), promoted.active_release.as_ref()), (4, Some("canary"), None));
    let v4 = a.version(&p, &agent.id, 4).unwrap();
    assert_eq!((v4.label.as_deref(), v4.eval_run_id.as_deref()), (Some("promoted canary v2"), Some(passing.id.as_str())));
    assert_eq!(serve(&promoted, Caller::Anonymous), Served::Live(4));
}

#[test]
fn abort_goes_back_to_stable() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1", "name": "stable"}));
    patch(&a, &p, &agent.id, json!({"name": "canary"}), None).unwrap();
    let set = config::SetRelease { stable_version: 1, canary_version: 2, canary_percent: 100, promotion_gate: None };
    let during = a.set_release(&p, &agent.id, set).unwrap();
    assert_eq!(serve(&during, Caller::Session("s")), Served::Canary(2));
    let back = a.abort(&p, &agent.id).unwrap();
    assert_eq!((back.version, back.config.name.as_deref(), back.active_release), (3, Some("stable"), None));
    assert_eq!(code(a.abort(&p, &agent.id)), Code::NoActiveRelease);
    assert!(a.version(&p, &agent.id, 3).unwrap().label.unwrap().contains("v1"));
}

#[test]
fn delete_refuses_while_dependents_exist_unless_forced() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1"}));
    a.records().link_agent_dependent(&agent.id, "generation:gen_1").unwrap();
    a.records().link_agent_dependent(&agent.id, "trace:trace_1").unwrap();
    a.records().link_agent_dependent(&agent.id, "ingestion_rule:rule_1").unwrap();
    let e = a.delete(&p, &agent.id, false).unwrap_err();
    assert_eq!(e.code(), Code::AgentHasDependents);
    assert_eq!(e.meta_value(), Some(json!({"generation_count": 1, "trace_count": 1, "accepted_share_count": 0, "ingestion_rule_count": 1})));
    a.delete(&p, &agent.id, true).unwrap();
    assert_eq!(code(a.get(&p, &agent.id)), Code::SoatNotFound);
    assert!(a.records().agent_versions::<VersionRecord>(&agent.id).unwrap().is_empty());
    assert_eq!(a.records().agent_dependents(&agent.id).unwrap().ingestion_rules, 1, "ingestion rules keep naming it");
    assert_eq!(code(a.delete(&p, &agent.id, false)), Code::SoatNotFound);
}

#[test]
fn another_project_sees_nothing() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1"}));
    let other = scope("acct_a", "proj_b");
    let stranger = scope("acct_b", "proj_a");
    for q in [&other, &stranger] {
        assert_eq!(code(a.get(q, &agent.id)), Code::SoatNotFound);
        assert!(a.list(q).unwrap().is_empty());
        assert_eq!(code(patch(&a, q, &agent.id, json!({"name": "x"}), None)), Code::SoatNotFound);
        assert_eq!(code(a.delete(q, &agent.id, true)), Code::SoatNotFound);
    }
    assert_eq!(Agents::agents_using_provider(a.records(), "acct_a", "aip_1").unwrap(), std::slice::from_ref(&agent.id));
    assert!(Agents::agents_using_provider(a.records(), "acct_b", "aip_1").unwrap().is_empty());
    assert_eq!(code(a.create(&p, serde_json::from_value(json!({"ai_provider_id": "aip_2"})).unwrap())), Code::AgentAiProviderNotFound);
    assert_eq!(
        code(a.create(&other, serde_json::from_value(json!({"ai_provider_id": "aip_1"})).unwrap())),
        Code::AgentAiProviderNotFound,
        "the provider is in another project"
    );
}

/// An archive of an older release may hold an inline tool with a literal credential
/// (writes refuse them now): restoring or releasing that version is refused.
#[test]
fn an_archived_literal_credential_cannot_be_restored_or_released() {
    let (_d, a, p) = setup();
    let agent = create(&a, &p, json!({"ai_provider_id": "aip_1"}));
    let mut config = a.version(&p, &agent.id, 1).unwrap().config;
    config.insert(
        "tool_bindings".into(),
        json!([{"tool": {"name": "t", "execute": {"url": "https://h", "headers": {"Authorization": "Bearer live-123"}}}}]),
    );
    let old = VersionRecord { id: "agver_old".into(), version: 2, config, ..a.version(&p, &agent.id, 1).unwrap() };
    a.records()
        .write_agent::<AgentRecord, VersionRecord, (), AgentError>(&p.account_id, &agent.id, |mut current| {
            current.version = 2;
            Ok(Write::Put { agent: current, version: Some(old), out: () })
        })
        .unwrap();
    assert_eq!(code(a.restore(&p, &agent.id, 2, config::Restore::default(), None)), Code::LiteralCredential);
    let release = config::SetRelease { stable_version: 1, canary_version: 2, canary_percent: 10, promotion_gate: None };
    assert_eq!(code(a.set_release(&p, &agent.id, release)), Code::LiteralCredential);
    assert_eq!(a.get(&p, &agent.id).unwrap().active_release, None);
}
