use serde_json::json;

use super::*;

fn policy(id: &str, document: Value) -> PolicyRecord {
    validate(&document).unwrap();
    PolicyRecord { id: id.into(), account_id: "acct".into(), name: None, description: None, document, created_at: "t".into(), updated_at: "t".into() }
}

fn none() -> Context {
    Context::default()
}

fn target(project: Option<&str>, kind: &str, id: Option<&str>) -> Target {
    Target { project: project.map(Into::into), kind: kind.into(), id: id.map(Into::into) }
}

#[test]
fn row_names_become_soat_actions() {
    assert_eq!(action_of("soat_list_secrets", "/api/v1/secrets"), "secrets:ListSecrets");
    assert_eq!(action_of("soat_list_files", "/api/v1/files"), "files:GetFile", "SOAT's catalog names listing files so");
    assert_eq!(action_of("soat_patch_agent", "/api/v1/agents/{agent_id}"), "agents:UpdateAgent", "the catalog's, not the name's");
    assert_eq!(action_of("soat_create_session", "/api/v1/sessions"), "agents:CreateSession");
    assert_eq!(action_of("soat_purge_generation", "/api/v1/generations/{generation_id}/content"), "generations:PurgeGeneration");
    assert_eq!(action_of("soat_list_audit_entries", "/api/v1/audit-log"), "audit:ListAuditEntries");
    assert_eq!(action_of("create_key", "/v1/keys"), "keys:CreateKey");
}

#[test]
fn a_deny_wins_an_allow_is_needed_and_none_attached_allows() {
    let t = target(Some("proj_a"), "secret", Some("sec_1"));
    assert_eq!(evaluate(&[], "secrets:GetSecret", &t, &none()), None);
    let nothing = policy("pol_none", json!({"statement": []}));
    let d = evaluate(std::slice::from_ref(&nothing), "secrets:GetSecret", &t, &none()).unwrap();
    assert_eq!((d.policy_ids, d.explicit), (vec!["pol_none".to_owned()], false));
    let read = policy("pol_read", json!({"statement": [{"effect": "Allow", "action": ["secrets:GetSecret", "secrets:ListSecrets"]}]}));
    assert_eq!(evaluate(std::slice::from_ref(&read), "secrets:GetSecret", &t, &none()), None);
    assert!(evaluate(std::slice::from_ref(&read), "secrets:DeleteSecret", &t, &none()).is_some());
    let deny = policy("pol_deny", json!({"statement": [{"effect": "Deny", "action": ["*"], "resource": ["srn:proj_a:secret:*"]}]}));
    let d = evaluate(&[read.clone(), deny.clone()], "secrets:GetSecret", &t, &none()).unwrap();
    assert_eq!((d.policy_ids, d.explicit), (vec!["pol_deny".to_owned()], true));
    assert_eq!(evaluate(&[read.clone(), deny.clone()], "secrets:GetSecret", &target(Some("proj_b"), "secret", Some("sec_1")), &none()), None);
    // The project unknown (a body may name it): a Deny of any project applies, and an
    // Allow of one project does not.
    assert!(evaluate(&[read.clone(), deny], "secrets:GetSecret", &target(None, "secret", Some("sec_1")), &none()).is_some());
    let one = policy("pol_one", json!({"statement": [{"effect": "Allow", "action": ["*"], "resource": ["srn:proj_a:*:*"]}]}));
    assert!(evaluate(std::slice::from_ref(&one), "secrets:CreateSecret", &target(None, "secret", None), &none()).is_some());
    assert_eq!(evaluate(&[one], "secrets:CreateSecret", &target(Some("proj_a"), "secret", None), &none()), None);
}

#[test]
fn documents_are_checked_as_soat_checks_them() {
    for bad in [
        json!([]),
        json!({}),
        json!({"statement": [{"effect": "Maybe", "action": ["*"]}]}),
        json!({"statement": [{"effect": "Allow", "action": []}]}),
        json!({"statement": [{"effect": "Allow", "action": ["nosuchmodule:Get"]}]}),
        json!({"statement": [{"effect": "Allow", "action": ["files"]}]}),
        json!({"statement": [{"effect": "Allow", "action": ["*"], "resource": ["proj_a"]}]}),
        json!({"statement": [{"effect": "Allow", "action": ["*"], "condition": {"Equals": {}}}]}),
        json!({"statement": [{"effect": "Allow", "action": ["*"], "extra": 1}]}),
    ] {
        assert!(validate(&bad).is_err(), "{bad}");
    }
    validate(&json!({"statement": [{"effect": "Deny", "action": ["files:*"], "resource": ["srn:*:file:*"], "condition": {"StringEquals": {"soat:ResourceTag/env": "prod"}}}]})).unwrap();
}

#[test]
fn conditions_read_the_request_context() {
    let t = target(Some("proj_a"), "secret", Some("sec_1"));
    let when = |cond: Value| policy("pol_c", json!({"statement": [{"effect": "Allow", "action": ["*"], "condition": cond}]}));
    let ctx = |pairs: &[(&str, &str)]| Context(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect());
    let night = ctx(&[("soat:CurrentHour", "03"), ("soat:PrincipalId", "key_a")]);
    let allows = |cond: Value, c: &Context| evaluate(&[when(cond)], "secrets:GetSecret", &t, c).is_none();
    assert!(allows(json!({"StringLike": {"soat:CurrentHour": "0?"}}), &night));
    assert!(!allows(json!({"StringLike": {"soat:CurrentHour": "1?"}}), &night));
    assert!(allows(json!({"StringEquals": {"soat:PrincipalId": "key_a"}}), &night));
    assert!(!allows(json!({"StringEquals": {"soat:PrincipalId": "key_b"}}), &night));
    // An absent key: StringEquals fails, StringNotEquals holds, StringLike sees "".
    assert!(!allows(json!({"StringEquals": {"soat:ResourceTag/env": "prod"}}), &night));
    assert!(allows(json!({"StringNotEquals": {"soat:ResourceTag/env": "prod"}}), &night));
    assert!(allows(json!({"StringLike": {"soat:ResourceTag/env": "*"}}), &night));
    // Every key of every operator must hold.
    assert!(!allows(json!({"StringLike": {"soat:CurrentHour": "0?"}, "StringEquals": {"soat:PrincipalId": "key_b"}}), &night));
}

#[test]
fn the_context_names_the_request_and_the_time() {
    let t = target(Some("proj_a"), "secret", Some("sec_1"));
    let facts = RequestFacts { method: "DELETE", ip: Some("10.0.0.1"), user_agent: None };
    // 2026-12-05T03:04:05Z, a Saturday.
    let c = Context::request("secrets:DeleteSecret", &t, &facts, 1_796_439_845);
    let get = |k: &str| c.0.get(k).map(String::as_str);
    assert_eq!(get("soat:CurrentTime"), Some("2026-12-05T03:04:05Z"));
    assert_eq!((get("soat:CurrentDate"), get("soat:CurrentHour"), get("soat:CurrentWeekday")), (Some("2026-12-05"), Some("03"), Some("Sat")));
    assert_eq!((get("soat:ResourceType"), get("soat:ResourceId"), get("soat:ProjectId")), (Some("secret"), Some("sec_1"), Some("proj_a")));
    assert_eq!((get("soat:Method"), get("soat:SourceIp"), get("soat:UserAgent")), (Some("DELETE"), Some("10.0.0.1"), None));
}
