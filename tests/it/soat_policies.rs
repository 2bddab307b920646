//! Policies, the audit log, activity and exceptions (issue 37): the policy check of every /api/v1 row, what is audited, failed runs filed.
//!
//! - A user and an `/api/v1` key whose one policy allows nothing are refused every
//!   `/api/v1` row of the route table, 403 `FORBIDDEN` naming the policy, and nothing
//!   changes; the exempt rows are the keyless ones (bootstrap, login, the presigned
//!   upload: no caller to check) and `GET /users/me` (who the caller is). The walk takes
//!   the rows from `quarry::api::routes::table`, so a route added later is walked too.
//! - A policy's Allow and Deny as SOAT evaluates them, and none attached allows.
//! - Every write is audited with who, what, on what, the status and the outcome (a
//!   denial included), reads are not, no secret's value is written, `/v1`'s key changes
//!   are audited, the filters and the NDJSON export, and no route changes an entry.
//! - A failed generation files a `run_failed` exception and its activity entry;
//!   acknowledge and resolve change it, a resolved one is final (409); all of it
//!   survives kill -9.

use serde_json::{json, Value};

use super::plans::ROOMY;
use super::server::TestServer;
use super::soat::{call, ok, refused};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap_or_else(|| panic!("no id: {v}")).to_owned()
}

/// Rows with no caller to check: bootstrap and login make one, the presigned upload's
/// token is its own credential.
const KEYLESS: [&str; 3] = ["/api/v1/users/bootstrap", "/api/v1/users/login", "/api/v1/files/upload/{token}"];

/// What the account holds, read by its owner: compared before and after the walk.
fn holdings(s: &TestServer, owner: &str) -> Vec<Value> {
    [
        "/api/v1/projects",
        "/api/v1/api-keys",
        "/api/v1/secrets",
        "/api/v1/agents",
        "/api/v1/tools",
        "/api/v1/users",
        "/api/v1/policies",
        "/api/v1/files",
        "/api/v1/webhooks",
        "/api/v1/memories",
        "/api/v1/actors",
        "/api/v1/documents",
        "/api/v1/exceptions",
    ]
    .iter()
    .map(|p| ok(call(s, "GET", p, owner, None), 200))
    .collect()
}

/// A user of the owner's account with `policy_ids`, logged in: its token.
fn user_with(s: &TestServer, owner: &str, name: &str, policy_ids: &[&str]) -> (String, String) {
    let u = id(&ok(call(s, "POST", "/api/v1/users", owner, Some(json!({"username": name, "password": "Policy-123"}))), 201));
    ok(call(s, "PUT", &format!("/api/v1/users/{u}/policies"), owner, Some(json!({"policy_ids": policy_ids}))), 204);
    let login = s.request("POST", "/api/v1/users/login", None, Some(&json!({"username": name, "password": "Policy-123"}).to_string()));
    (u, login.json()["token"].as_str().unwrap().to_owned())
}

#[test]
fn a_policy_that_allows_nothing_refuses_every_api_v1_row_and_changes_nothing() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("policy-owner@example.org");
    let nothing = id(&ok(call(&s, "POST", "/api/v1/policies", &owner, Some(json!({"name": "Nothing", "document": {"statement": []}}))), 201));
    let k = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "restricted", "policy_ids": [nothing]}))), 201);
    let (key_id, sk) = (id(&k), k["key"].as_str().unwrap().to_owned());
    let (_, ut) = user_with(&s, &owner, "restricted-user", &[&nothing]);
    // Something of each kind the walk could touch, so a write getting through would show.
    ok(call(&s, "POST", "/api/v1/secrets", &owner, Some(json!({"name": "TOKEN", "value": "s3cret"}))), 201);
    let before = holdings(&s, &owner);
    let mut walked = 0;
    for row in quarry::api::routes::table(&quarry::config::Config::defaults()) {
        if !row.path.starts_with("/api/v1/") || KEYLESS.contains(&row.path) || row.path == "/api/v1/users/me" {
            continue;
        }
        // The check comes before the handler reads anything: any id and body do.
        let mut path = row.path.to_owned();
        while let (Some(a), Some(b)) = (path.find('{'), path.find('}')) {
            path.replace_range(a..=b, "x_policywalk");
        }
        let method = row.method.as_str();
        let body = matches!(method, "POST" | "PUT" | "PATCH").then(|| json!({"name": "x"}));
        for (who, credential) in [("the key", &sk), ("the user", &ut)] {
            let e = refused(call(&s, method, &path, credential, body.clone()), 403);
            assert_eq!(e["code"], "FORBIDDEN", "{who}, {method} {}: {e}", row.path);
            assert_eq!(e["meta"]["policy_id"], nothing.as_str(), "{who}, {method} {}: {e}", row.path);
            assert!(e["message"].as_str().unwrap().contains(&nothing), "{e}");
            assert!(e["meta"]["action"].as_str().unwrap().contains(':'), "{e}");
        }
        walked += 1;
    }
    assert!(walked >= 150, "walked only {walked} rows");
    assert_eq!(holdings(&s, &owner), before, "a refused request changed something");
    // The exempt rows: who the user is, and login (no caller yet).
    assert_eq!(ok(call(&s, "GET", "/api/v1/users/me", &ut, None), 200)["username"], "restricted-user");
    // Every refused write is in the audit log, denied, with the policy.
    let denied = ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={key_id}&limit=100"), &owner, None), 200);
    assert!(denied["total"].as_u64().unwrap() >= 80, "{}", denied["total"]);
    for e in denied["data"].as_array().unwrap() {
        assert_eq!((e["status"].as_u64(), e["detail"]["outcome"].as_str()), (Some(403), Some("denied")), "{e}");
        assert_eq!(e["detail"]["policy_ids"], json!([nothing]), "{e}");
    }
}

#[test]
fn allows_and_denies_are_evaluated_as_soat_does_and_none_attached_allows() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("policy-eval@example.org");
    let read = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/policies",
            &owner,
            Some(json!({"name": "ReadSecrets", "document": {"statement": [
                {"effect": "Allow", "action": ["secrets:GetSecret", "secrets:ListSecrets"]}
            ]}})),
        ),
        201,
    ));
    let k = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "reader", "policy_ids": [read]}))), 201);
    let sk = k["key"].as_str().unwrap().to_owned();
    let secret = id(&ok(call(&s, "POST", "/api/v1/secrets", &owner, Some(json!({"name": "TOKEN", "value": "s3cret"}))), 201));
    ok(call(&s, "GET", "/api/v1/secrets", &sk, None), 200);
    ok(call(&s, "GET", &format!("/api/v1/secrets/{secret}"), &sk, None), 200);
    let e = refused(call(&s, "DELETE", &format!("/api/v1/secrets/{secret}"), &sk, None), 403);
    assert_eq!((e["code"].as_str(), e["meta"]["action"].as_str()), (Some("FORBIDDEN"), Some("secrets:DeleteSecret")), "{e}");
    refused(call(&s, "GET", "/api/v1/tools", &sk, None), 403);
    // A Deny on this very secret wins over the Allow, and is the policy named.
    let deny = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/policies",
            &owner,
            Some(json!({"document": {"statement": [
                {"effect": "Deny", "action": ["secrets:*"], "resource": [format!("srn:*:secret:{secret}")]}
            ]}})),
        ),
        201,
    ));
    ok(call(&s, "PUT", &format!("/api/v1/api-keys/{}", id(&k)), &owner, Some(json!({"policy_ids": [read, deny]}))), 200);
    let e = refused(call(&s, "GET", &format!("/api/v1/secrets/{secret}"), &sk, None), 403);
    assert_eq!(e["meta"]["policy_id"], deny.as_str(), "{e}");
    assert!(e["message"].as_str().unwrap().contains(&deny), "{e}");
    ok(call(&s, "GET", "/api/v1/secrets", &sk, None), 200);
    // A key held to policies makes keys held to the same, and cannot shed them.
    let allow_keys = id(&ok(
        call(&s, "POST", "/api/v1/policies", &owner, Some(json!({"document": {"statement": [{"effect": "Allow", "action": ["api-keys:*"]}]}}))),
        201,
    ));
    let maker = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "maker", "policy_ids": [allow_keys]}))), 201);
    let maker_sk = maker["key"].as_str().unwrap();
    let made = ok(call(&s, "POST", "/api/v1/api-keys", maker_sk, Some(json!({"name": "child"}))), 201);
    assert_eq!(made["policy_ids"], json!([allow_keys]), "{made}");
    refused(call(&s, "POST", "/api/v1/api-keys", maker_sk, Some(json!({"name": "free", "policy_ids": []}))), 403);
    let e = refused(call(&s, "PUT", &format!("/api/v1/api-keys/{}", id(&maker)), maker_sk, Some(json!({"policy_ids": []}))), 403);
    assert_eq!(e["code"], "FORBIDDEN", "{e}");
    refused(call(&s, "GET", "/api/v1/secrets", made["key"].as_str().unwrap(), None), 403);
    // Nor makes users freer than itself: no admin, and a user it makes is held the same.
    let users = id(&ok(
        call(&s, "POST", "/api/v1/policies", &owner, Some(json!({"document": {"statement": [{"effect": "Allow", "action": ["users:*"]}]}}))),
        201,
    ));
    let hr = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "hr", "policy_ids": [users]}))), 201);
    let hr_sk = hr["key"].as_str().unwrap();
    refused(call(&s, "POST", "/api/v1/users", hr_sk, Some(json!({"username": "boss", "password": "Policy-123", "role": "admin"}))), 403);
    let hired = ok(call(&s, "POST", "/api/v1/users", hr_sk, Some(json!({"username": "hired", "password": "Policy-123"}))), 201);
    assert_eq!(hired["policy_ids"], json!([users]), "{hired}");
    refused(call(&s, "PUT", &format!("/api/v1/users/{}/policies", id(&hired)), hr_sk, Some(json!({"policy_ids": []}))), 403);
    // A key naming a policy of no one's: 400, nothing made.
    let e = refused(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "x", "policy_ids": ["pol_nosuch"]}))), 400);
    assert_eq!(e["code"], "POLICY_NOT_FOUND");
    // None attached (the policies deleted): allowed, as before policies existed.
    ok(call(&s, "DELETE", &format!("/api/v1/policies/{read}"), &owner, None), 204);
    ok(call(&s, "DELETE", &format!("/api/v1/policies/{deny}"), &owner, None), 204);
    ok(call(&s, "GET", "/api/v1/tools", &sk, None), 200);
    // A plain user manages no policies; an invalid document is 400 naming the field.
    let (_, ut) = user_with(&s, &owner, "plain-user", &[]);
    refused(call(&s, "GET", "/api/v1/policies", &ut, None), 403);
    let e = refused(
        call(&s, "POST", "/api/v1/policies", &owner, Some(json!({"document": {"statement": [{"effect": "Allow", "action": ["nosuch:Thing"]}]}}))),
        400,
    );
    assert_eq!(e["meta"]["field"], "document.statement[0].action[0]", "{e}");
    assert_eq!(ok(call(&s, "GET", "/api/v1/policies", &owner, None), 200)["total"], 2);
}

#[test]
fn every_write_is_audited_without_bodies_and_the_log_is_append_only() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("audit-owner@example.org");
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P1"}))), 201));
    let k = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "ci", "project_id": p1}))), 201);
    let (key_id, sk) = (id(&k), k["key"].as_str().unwrap().to_owned());
    let secret = id(&ok(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "TOKEN", "value": "very-s3cret-value"}))), 201));
    ok(call(&s, "GET", &format!("/api/v1/secrets/{secret}"), &sk, None), 200);
    ok(call(&s, "PATCH", &format!("/api/v1/secrets/{secret}"), &sk, Some(json!({"value": "another-s3cret-value"}))), 200);
    refused(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"nme": "typo"}))), 400);
    ok(call(&s, "DELETE", &format!("/api/v1/secrets/{secret}"), &sk, None), 200);
    // /v1's key changes.
    let made = s.request("POST", "/v1/keys", Some(&owner), Some("{\"name\":\"second\"}"));
    assert_eq!(made.status, 201, "{}", made.text());

    let log = ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={key_id}"), &sk, None), 200);
    let actions: Vec<(&str, u64)> =
        log["data"].as_array().unwrap().iter().map(|e| (e["action"].as_str().unwrap(), e["status"].as_u64().unwrap())).collect();
    // Newest first; the read is not there.
    assert_eq!(
        actions,
        [("secrets:DeleteSecret", 200), ("secrets:CreateSecret", 400), ("secrets:UpdateSecret", 200), ("secrets:CreateSecret", 201)],
        "{log}"
    );
    let created = &log["data"][3];
    assert_eq!(created["resource_public_id"], secret.as_str(), "a create's id is read from its answer: {created}");
    assert_eq!(created["project_id"], p1.as_str());
    assert_eq!(created["principal_type"], "api_key");
    assert_eq!(created["detail"]["outcome"], "success");
    assert_eq!(log["data"][1]["detail"]["outcome"], "failed");
    assert!(created["request_id"].is_string() && created["created_at"].is_string(), "{created}");
    // Filters.
    let by_action = ok(call(&s, "GET", "/api/v1/audit-log?action=secrets:UpdateSecret", &owner, None), 200);
    assert_eq!(by_action["total"], 1);
    let by_resource = ok(call(&s, "GET", &format!("/api/v1/audit-log?resource_public_id={secret}"), &owner, None), 200);
    assert_eq!(by_resource["total"], 3);
    assert_eq!(ok(call(&s, "GET", "/api/v1/audit-log?to=2000-01-01T00:00:00Z", &owner, None), 200)["total"], 0);
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/audit-log?from=2000-01-01T00:00:00Z&principal_id={key_id}"), &owner, None), 200)["total"], 4);
    refused(call(&s, "GET", "/api/v1/audit-log?from=yesterday", &owner, None), 400);
    let keys = ok(call(&s, "GET", "/api/v1/audit-log?action=keys:CreateKey", &owner, None), 200);
    assert_eq!((keys["total"].as_u64(), keys["data"][0]["status"].as_u64()), (Some(1), Some(201)), "{keys}");
    // One entry by id; the export as NDJSON, oldest first; no secret value anywhere.
    let one = ok(call(&s, "GET", &format!("/api/v1/audit-log/{}", id(created)), &sk, None), 200);
    assert_eq!(&one, created);
    let export = call(&s, "GET", "/api/v1/audit-log/export", &owner, None);
    assert_eq!((export.status, export.header("content-type")), (200, Some("application/x-ndjson")));
    let lines: Vec<Value> = export.text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 7, "{}", export.text());
    assert!(lines.windows(2).all(|w| w[0]["id"].as_str() < w[1]["id"].as_str()), "ids grow with time");
    assert!(!export.text().contains("s3cret"), "a secret's value was audited");
    // Append-only: no route changes or removes an entry.
    for m in ["PUT", "PATCH", "DELETE"] {
        assert_eq!(call(&s, m, &format!("/api/v1/audit-log/{}", id(created)), &owner, None).status, 405);
    }
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/audit-log/{}", id(created)), &owner, None), 200), one);
    // Another account sees none of it.
    let (_, stranger) = s.signup("audit-stranger@example.org");
    assert_eq!(ok(call(&s, "GET", "/api/v1/audit-log", &stranger, None), 200)["total"], 0);
    refused(call(&s, "GET", &format!("/api/v1/audit-log/{}", id(created)), &stranger, None), 404);
}

#[test]
fn a_failed_generation_files_an_exception_that_is_acknowledged_then_resolved() {
    use super::scripted_llm::{Reply, Scripted};
    use super::soat_generate::{agent, server, setup};
    let up = Scripted::start();
    up.otherwise(Reply::Fail(404));
    let mut s = server();
    let st = setup(&s, &up, "exceptions@example.org");
    let a = agent(&s, &st, json!({}));
    let go = || {
        call(&s, "POST", &format!("/api/v1/agents/{a}/generate?wait=true"), &st.key, Some(json!({"messages": [{"role": "user", "content": "Go."}]})))
    };
    let first = refused(go(), 502)["meta"]["generation_id"].as_str().unwrap().to_owned();
    let list = ok(call(&s, "GET", "/api/v1/exceptions?status=open", &st.key, None), 200);
    assert_eq!(list["total"], 1, "{list}");
    let x = &list["data"][0];
    assert_eq!((x["kind"].as_str(), x["severity"].as_str(), x["agent_id"].as_str()), (Some("run_failed"), Some("critical"), Some(a.as_str())), "{x}");
    assert_eq!(x["detail"]["generation_id"], first.as_str());
    assert_eq!(x["occurrence_count"], 1);
    let xid = id(x);
    // The same failure again, while open: a recurrence, not a second item.
    refused(go(), 502);
    let again = ok(call(&s, "GET", &format!("/api/v1/exceptions/{xid}"), &st.key, None), 200);
    assert_eq!(again["occurrence_count"], 2, "{again}");
    assert_eq!(ok(call(&s, "GET", "/api/v1/exceptions", &st.key, None), 200)["total"], 1);
    // Its activity entry.
    let feed = ok(call(&s, "GET", "/api/v1/activity?kind=exception_created", &st.key, None), 200);
    assert_eq!((feed["data"][0]["ref_id"].as_str(), feed["next_cursor"].as_str()), (Some(xid.as_str()), None), "{feed}");
    refused(call(&s, "GET", "/api/v1/activity?cursor=nonsense", &st.key, None), 400);
    // Acknowledge (twice: a no-op), resolve with a note, and then it is final.
    let acked = ok(call(&s, "POST", &format!("/api/v1/exceptions/{xid}/acknowledge"), &st.key, None), 200);
    assert_eq!(acked["status"], "acknowledged");
    assert!(acked["acknowledged_by"].is_string());
    ok(call(&s, "POST", &format!("/api/v1/exceptions/{xid}/acknowledge"), &st.key, None), 200);
    let done = ok(call(&s, "POST", &format!("/api/v1/exceptions/{xid}/resolve"), &st.key, Some(json!({"note": "Provider fixed."}))), 200);
    assert_eq!((done["status"].as_str(), done["resolution_note"].as_str()), (Some("resolved"), Some("Provider fixed.")));
    for step in ["acknowledge", "resolve"] {
        let e = refused(call(&s, "POST", &format!("/api/v1/exceptions/{xid}/{step}"), &st.key, None), 409);
        assert_eq!(e["code"], "EXCEPTION_ALREADY_RESOLVED");
    }
    // A failure after the resolve opens a new item.
    refused(go(), 502);
    assert_eq!(ok(call(&s, "GET", "/api/v1/exceptions?status=open", &st.key, None), 200)["total"], 1);
    // The changes are audited.
    let log = ok(call(&s, "GET", &format!("/api/v1/audit-log?resource_public_id={xid}"), &st.key, None), 200);
    let actions: Vec<&str> = log["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"exceptions:ResolveException") && actions.contains(&"exceptions:AcknowledgeException"), "{actions:?}");
    // Filters are checked.
    refused(call(&s, "GET", "/api/v1/exceptions?status=closed", &st.key, None), 400);
    // Filed and audited with what they describe: both survive kill -9.
    let audited = ok(call(&s, "GET", "/api/v1/audit-log", &st.key, None), 200)["total"].clone();
    s.kill9();
    s.restart();
    let all = ok(call(&s, "GET", "/api/v1/exceptions", &st.key, None), 200);
    assert_eq!(all["total"], 2, "{all}");
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/exceptions/{xid}"), &st.key, None), 200)["status"], "resolved");
    assert_eq!(ok(call(&s, "GET", "/api/v1/audit-log", &st.key, None), 200)["total"], audited);
}

/// A policy document of one Allow of everything under `condition`.
fn allow_when(s: &TestServer, owner: &str, condition: Value) -> String {
    let doc = json!({"document": {"statement": [{"effect": "Allow", "action": ["*"], "condition": condition}]}});
    id(&ok(call(s, "POST", "/api/v1/policies", owner, Some(doc)), 201))
}

/// A key of the owner's held to `policies`: (id, secret).
fn key_with(s: &TestServer, owner: &str, name: &str, policies: &[&str]) -> (String, String) {
    let k = ok(call(s, "POST", "/api/v1/api-keys", owner, Some(json!({"name": name, "policy_ids": policies}))), 201);
    (id(&k), k["key"].as_str().unwrap().to_owned())
}

#[test]
fn a_condition_allows_only_in_its_time_window_for_its_principal_or_on_its_tags() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("policy-conditions@example.org");
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let (today, hour) = (&now[..10], &now[11..13]);
    // A window around now (today, this hour or the next, in case the hour turns), and one long past.
    let next = format!("{:02}", (hour.parse::<u32>().unwrap() + 1) % 24);
    // One key, its policy swapped: each case is checked on the next request.
    let (probe, probe_sk) = key_with(&s, &owner, "probe", &[]);
    let held_to = |policy: &str| {
        ok(call(&s, "PUT", &format!("/api/v1/api-keys/{probe}"), &owner, Some(json!({"policy_ids": [policy]}))), 200);
    };
    held_to(&allow_when(&s, &owner, json!({"StringLike": {"soat:CurrentTime": format!("{today}T*")}})));
    ok(call(&s, "GET", "/api/v1/secrets", &probe_sk, None), 200);
    held_to(&allow_when(&s, &owner, json!({"StringNotEquals": {"soat:CurrentHour": "never"}, "StringLike": {"soat:CurrentDate": today}})));
    ok(call(&s, "GET", "/api/v1/secrets", &probe_sk, None), 200);
    let closed = allow_when(&s, &owner, json!({"StringLike": {"soat:CurrentDate": "1999-*"}}));
    held_to(&closed);
    let e = refused(call(&s, "GET", "/api/v1/secrets", &probe_sk, None), 403);
    assert_eq!((e["code"].as_str(), e["meta"]["policy_id"].as_str()), (Some("FORBIDDEN"), Some(closed.as_str())), "{e}");
    held_to(&allow_when(&s, &owner, json!({"StringEquals": {"soat:CurrentHour": format!("{:02}", (next.parse::<u32>().unwrap() + 12) % 24)}})));
    refused(call(&s, "GET", "/api/v1/secrets", &probe_sk, None), 403);
    // One policy, two keys: its condition names one of them.
    let (first, first_sk) = key_with(&s, &owner, "first", &[]);
    let only_first = allow_when(&s, &owner, json!({"StringEquals": {"soat:PrincipalId": first, "soat:PrincipalType": "api_key"}}));
    ok(call(&s, "PUT", &format!("/api/v1/api-keys/{first}"), &owner, Some(json!({"policy_ids": [only_first]}))), 200);
    let (_, second_sk) = key_with(&s, &owner, "second", &[&only_first]);
    ok(call(&s, "GET", "/api/v1/secrets", &first_sk, None), 200);
    refused(call(&s, "GET", "/api/v1/secrets", &second_sk, None), 403);
    // A user's role and name: a plain user named alice may, bob may not.
    let by_name = allow_when(&s, &owner, json!({"StringEquals": {"soat:PrincipalRole": "user"}, "StringLike": {"soat:Username": "ali*"}}));
    let (_, alice) = user_with(&s, &owner, "alice", &[&by_name]);
    let (_, bob) = user_with(&s, &owner, "bob", &[&by_name]);
    ok(call(&s, "GET", "/api/v1/secrets", &alice, None), 200);
    refused(call(&s, "GET", "/api/v1/secrets", &bob, None), 403);
    // A record's tags: an actor tagged env=dev may be read, one tagged prod not.
    let tagged = |env: &str| {
        let a = id(&ok(call(&s, "POST", "/api/v1/actors", &owner, Some(json!({"name": format!("actor-{env}")}))), 201));
        ok(call(&s, "PUT", &format!("/api/v1/actors/{a}/tags"), &owner, Some(json!({"env": env}))), 200);
        a
    };
    let (dev, prod) = (tagged("dev"), tagged("prod"));
    held_to(&allow_when(&s, &owner, json!({"StringEquals": {"soat:ResourceTag/env": "dev"}})));
    ok(call(&s, "GET", &format!("/api/v1/actors/{dev}"), &probe_sk, None), 200);
    refused(call(&s, "GET", &format!("/api/v1/actors/{prod}"), &probe_sk, None), 403);
    refused(call(&s, "GET", "/api/v1/actors", &probe_sk, None), 403);
    // The action and method are keys too: this key may read, not delete.
    held_to(&allow_when(&s, &owner, json!({"StringEquals": {"soat:Method": "GET"}})));
    let secret = id(&ok(call(&s, "POST", "/api/v1/secrets", &owner, Some(json!({"name": "TOKEN", "value": "v"}))), 201));
    ok(call(&s, "GET", &format!("/api/v1/secrets/{secret}"), &probe_sk, None), 200);
    refused(call(&s, "DELETE", &format!("/api/v1/secrets/{secret}"), &probe_sk, None), 403);
    ok(call(&s, "GET", &format!("/api/v1/secrets/{secret}"), &owner, None), 200);
}

#[test]
fn a_create_naming_its_project_only_in_its_body_is_checked_against_that_project() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("policy-body-project@example.org");
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P1"}))), 201));
    let p2 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P2"}))), 201));
    // Everything, but no secret made in P2; and a key allowed P1 alone.
    let doc = json!({"document": {"statement": [
        {"effect": "Allow", "action": ["*"]},
        {"effect": "Deny", "action": ["secrets:CreateSecret"], "resource": [format!("srn:{p2}:*:*")]},
    ]}});
    let no_p2 = id(&ok(call(&s, "POST", "/api/v1/policies", &owner, Some(doc)), 201));
    let (_, sk) = key_with(&s, &owner, "not-p2", &[&no_p2]);
    let made = ok(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "IN_P1", "value": "v", "project_id": p1}))), 201);
    assert_eq!(made["project_id"], p1.as_str(), "{made}");
    let e = refused(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "IN_P2", "value": "v", "project_id": p2}))), 403);
    assert_eq!(
        (e["meta"]["policy_id"].as_str(), e["meta"]["resource"].as_str()),
        (Some(no_p2.as_str()), Some(format!("srn:{p2}:secret:*").as_str())),
        "{e}"
    );
    let listed = ok(call(&s, "GET", &format!("/api/v1/secrets?project_id={p2}"), &owner, None), 200);
    assert_eq!(listed["total"], 0, "the denied create made nothing: {listed}");
    let only_p1 = id(&ok(
        call(
            &s,
            "POST",
            "/api/v1/policies",
            &owner,
            Some(json!({"document": {"statement": [{"effect": "Allow", "action": ["*"], "resource": [format!("srn:{p1}:*:*")]}]}})),
        ),
        201,
    ));
    let (_, p1_sk) = key_with(&s, &owner, "p1-only", &[&only_p1]);
    ok(call(&s, "POST", "/api/v1/secrets", &p1_sk, Some(json!({"name": "ALSO_P1", "value": "v", "project_id": p1}))), 201);
    refused(call(&s, "POST", "/api/v1/secrets", &p1_sk, Some(json!({"name": "NOT_P2", "value": "v", "project_id": p2}))), 403);
    // The body read before the check is the one the handler parses: its errors are as before.
    let e = refused(call(&s, "POST", "/api/v1/secrets", &sk, Some(json!({"name": "X", "value": "v", "project_id": p1, "nme": 1}))), 400);
    assert_eq!(e["meta"]["field"], "nme", "{e}");
    // A body that names no project it can be read for (not JSON): the project is
    // unknown, and a Deny of any project applies, as before the body was read.
    let bad = s.request("POST", "/api/v1/secrets", Some(&sk), Some("{\"name\": "));
    assert_eq!(bad.status, 403, "{}", bad.text());
    let bad = s.request("POST", "/api/v1/secrets", None, Some("{\"name\": "));
    assert_eq!(bad.status, 401, "{}", bad.text());
    let plain = s.request("POST", "/api/v1/secrets", Some(&owner), Some("{\"name\": "));
    assert_eq!(plain.status, 400, "no policy, no body read before the handler: {}", plain.text());
    // The audit entry names the body's project.
    // The audit entries name the body's project: P2's are the two refused creates.
    let log = ok(call(&s, "GET", &format!("/api/v1/audit-log?project_id={p2}"), &owner, None), 200);
    let p2_entries: Vec<(&str, &str)> =
        log["data"].as_array().unwrap().iter().map(|e| (e["detail"]["outcome"].as_str().unwrap(), e["resource_srn"].as_str().unwrap())).collect();
    let srn = format!("srn:{p2}:secret:*");
    assert_eq!(p2_entries, [("denied", srn.as_str()), ("denied", srn.as_str())], "{log}");
}

#[test]
fn the_audit_log_filters_and_pages_in_the_store_over_many_rows() {
    let s = TestServer::with_config(ROOMY);
    let (_, owner) = s.signup("audit-pages@example.org");
    let p1 = id(&ok(call(&s, "POST", "/api/v1/projects", &owner, Some(json!({"name": "P1"}))), 201));
    let (a_id, a) = {
        let k = ok(call(&s, "POST", "/api/v1/api-keys", &owner, Some(json!({"name": "a", "project_id": p1}))), 201);
        (id(&k), k["key"].as_str().unwrap().to_owned())
    };
    let (b_id, b) = key_with(&s, &owner, "b", &[]);
    // 75 writes by a (in P1), 50 by b (in the default project), interleaved.
    let mut made_by_a = Vec::new();
    for i in 0..125 {
        let (key, name) = if i % 5 < 3 { (&a, format!("A{i}")) } else { (&b, format!("B{i}")) };
        let r = ok(call(&s, "POST", "/api/v1/secrets", key, Some(json!({"name": name, "value": "v"}))), 201);
        if key == &a {
            made_by_a.push(id(&r));
        }
    }
    assert_eq!(made_by_a.len(), 75);
    // a's entries, newest first, page by page: each page the next slice, the total all of them.
    let mut seen = Vec::new();
    for offset in (0..75).step_by(20) {
        let page = ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={a_id}&limit=20&offset={offset}"), &owner, None), 200);
        assert_eq!((page["total"].as_u64(), page["offset"].as_u64(), page["limit"].as_u64()), (Some(75), Some(offset), Some(20)), "{page}");
        seen.extend(page["data"].as_array().unwrap().iter().map(|e| e["resource_public_id"].as_str().unwrap().to_owned()));
    }
    made_by_a.reverse();
    assert_eq!(seen, made_by_a, "every entry once, newest first");
    let past_end = ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={a_id}&offset=75"), &owner, None), 200);
    assert_eq!((past_end["total"].as_u64(), past_end["data"].as_array().map(Vec::len)), (Some(75), Some(0)));
    // Filters combine: b's creates; P1's; a window from the 100th write on.
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={b_id}&action=secrets:CreateSecret"), &owner, None), 200)["total"], 50);
    assert_eq!(
        ok(call(&s, "GET", &format!("/api/v1/audit-log?project_id={p1}&action=secrets:CreateSecret&limit=1"), &owner, None), 200)["total"],
        75
    );
    let all = ok(call(&s, "GET", "/api/v1/audit-log?action=secrets:CreateSecret&limit=100", &owner, None), 200);
    assert_eq!(all["total"], 125);
    let from = all["data"][24]["created_at"].as_str().unwrap();
    let recent = ok(call(&s, "GET", &format!("/api/v1/audit-log?action=secrets:CreateSecret&from={from}&limit=100"), &owner, None), 200);
    let n = recent["total"].as_u64().unwrap();
    assert!((25..125).contains(&n), "the window from the 25th newest holds it and those after, not every entry: {n}");
    assert!(recent["data"].as_array().unwrap().iter().all(|e| e["created_at"].as_str().unwrap() >= from));
    // The project key sees its project's entries alone (its writes and its own making), paged the same.
    let mine = ok(call(&s, "GET", "/api/v1/audit-log?limit=5&offset=72", &a, None), 200);
    assert_eq!((mine["total"].as_u64(), mine["data"].as_array().map(Vec::len)), (Some(76), Some(4)), "{mine}");
    assert_eq!(mine["data"][3]["action"], "api-keys:CreateApiKey", "the oldest of P1's entries: {mine}");
    // The export holds every one, oldest first.
    let export = call(&s, "GET", &format!("/api/v1/audit-log/export?principal_id={b_id}"), &owner, None);
    assert_eq!(export.text().lines().count(), 50);
}

#[test]
fn login_and_bootstrap_are_audited_on_the_user_they_name() {
    let s = TestServer::with_config(ROOMY);
    let creds = |name: &str, password: &str| json!({"username": name, "password": password}).to_string();
    let boot = s.request("POST", "/api/v1/users/bootstrap", None, Some(&creds("root", "Bootstrap-123")));
    assert_eq!(boot.status, 201, "{}", boot.text());
    let root = boot.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(s.request("POST", "/api/v1/users/login", None, Some(&creds("root", "wrong-password"))).status, 401);
    assert_eq!(s.request("POST", "/api/v1/users/login", None, Some(&creds("nobody", "wrong-password"))).status, 401);
    let login = s.request("POST", "/api/v1/users/login", None, Some(&creds("root", "Bootstrap-123")));
    assert_eq!(login.status, 200, "{}", login.text());
    let token = login.json()["token"].as_str().unwrap().to_owned();
    let log = ok(call(&s, "GET", &format!("/api/v1/audit-log?principal_id={root}"), &token, None), 200);
    let seen: Vec<(&str, u64, &str)> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["status"].as_u64().unwrap(), e["detail"]["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [("users:LoginUser", 200, "success"), ("users:LoginUser", 401, "failed"), ("users:BootstrapUser", 201, "success")], "{log}");
    let entry = &log["data"][0];
    assert_eq!((entry["principal_type"].as_str(), entry["resource_public_id"].as_str()), (Some("user"), Some(root.as_str())), "{entry}");
    let export = call(&s, "GET", "/api/v1/audit-log/export", &token, None);
    assert!(!export.text().contains("Bootstrap-123") && !export.text().contains("wrong-password"), "a password was audited");
    // A failed bootstrap on a taken name is recorded on that user; the login's body reached its handler whole.
    assert_eq!(s.request("POST", "/api/v1/users/bootstrap", None, Some(&creds("root", "Bootstrap-456"))).status, 409);
    let e = s.request("POST", "/api/v1/users/login", None, Some("{\"username\": \"root\", \"password\": \"x\", \"extra\": 1}"));
    assert_eq!(e.status, 400, "{}", e.text());
}
