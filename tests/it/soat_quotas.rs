//! Quotas (issue 37): CRUD over HTTP, and enforcement before the model is called: concurrent generations never spend past a tokens quota; a generation's receipt.
//!
//! `/api/v1/quotas` (SOAT v0.28's quotas.yaml) against the real binary: create, the
//! duplicate's 409, the scope/metric pairs and refs refused, get with the window's
//! count, PATCH, delete, another account's 404; a key's `requests` quota counting every
//! request it makes and refusing the one past it (a generation never sent); and 64
//! generations at once against a `tokens` quota of N, the scripted upstream reporting
//! each call's usage: what they spend is at most N, every one refused is
//! `QUOTA_EXCEEDED` and never reached the model; the same for a `cost_usd` quota priced
//! from the price book, and a model it cannot price refused with `QUOTA_UNPRICED`.
//!
//! Usage thresholds: a crossing writes one `usage.threshold_crossed` to a subscribed
//! webhook, and the next step in its window none.
//!
//! usage (issue 37, SOAT v0.28's usage.yaml): the account's price book, and receipts
//! priced at the row in force when their generation ran, so a price change shows in
//! the next receipt and not in the ones before it; the usage events (one per
//! generation) and their rollup, whose sums are the receipts'.

use std::time::Duration;

use serde_json::{json, Value};

use super::scripted_llm::{Reply, Scripted};
use super::server::TestServer;
use super::soat::{call, ok, refused};
use super::soat_generate::{agent, setup};

use super::plans::LAB;

fn server() -> TestServer {
    TestServer::with_config(&format!("{LAB}[agents]\nmax_running_per_account = 100\n"))
}

fn generate(s: &TestServer, key: &str, agent: &str, text: &str) -> super::client::Response {
    call(s, "POST", &format!("/api/v1/agents/{agent}/generate?wait=true"), key, Some(json!({"messages": [{"role": "user", "content": text}]})))
}

#[test]
fn quotas_are_created_read_changed_and_deleted_and_refuse_what_cannot_be_enforced() {
    let up = Scripted::start();
    let s = server();
    let st = setup(&s, &up, "quota-crud@example.com");
    let a = agent(&s, &st, json!({}));
    let body = json!({"scope": "agent", "scope_ref": a, "metric": "tokens", "window": "rolling_1h", "limit": 500});
    let q = ok(call(&s, "POST", "/api/v1/quotas", &st.key, Some(body.clone())), 201);
    let id = q["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("quota_"), "{q}");
    assert_eq!((q["mode"].as_str(), q["limit"].as_f64(), q["current_usage"]["count"].as_u64()), (Some("enforce"), Some(500.0), Some(0)), "{q}");
    let e = refused(call(&s, "POST", "/api/v1/quotas", &st.key, Some(body)), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["quota_id"].as_str()), (Some("QUOTA_CONFLICT"), Some(id.as_str())));
    for (bad, field) in [
        (json!({"scope": "agent", "metric": "requests", "window": "rolling_1m", "limit": 5}), "scope"),
        (json!({"scope": "project", "metric": "tokens", "window": "rolling_1m", "limit": 5.5}), "limit"),
        (json!({"scope": "project", "metric": "tokens", "window": "rolling_2m", "limit": 5}), "window"),
        (json!({"scope": "agent", "scope_ref": "agt_nothere", "metric": "tokens", "window": "rolling_1m", "limit": 5}), "scope_ref"),
        (json!({"scope": "project", "metric": "tokens", "window": "rolling_1m", "limit": 5, "extra": 1}), "extra"),
    ] {
        let e = refused(call(&s, "POST", "/api/v1/quotas", &st.key, Some(bad.clone())), 400);
        assert_eq!(e["code"], "VALIDATION_FAILED", "{bad}: {e}");
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }
    let list = ok(call(&s, "GET", "/api/v1/quotas", &st.key, None), 200);
    assert_eq!((list["total"].as_u64(), list["data"][0]["id"].as_str()), (Some(1), Some(id.as_str())), "{list}");
    let p = ok(call(&s, "PATCH", &format!("/api/v1/quotas/{id}"), &st.key, Some(json!({"limit": 900, "mode": "monitor"}))), 200);
    assert_eq!((p["limit"].as_f64(), p["mode"].as_str(), p["scope_ref"].as_str()), (Some(900.0), Some("monitor"), Some(a.as_str())));
    refused(call(&s, "PATCH", &format!("/api/v1/quotas/{id}"), &st.key, Some(json!({"metric": "requests"}))), 400);
    let (_, other) = s.signup("quota-other@example.com");
    refused(call(&s, "GET", &format!("/api/v1/quotas/{id}"), &other, None), 404);
    refused(call(&s, "DELETE", &format!("/api/v1/quotas/{id}"), &other, None), 404);
    ok(call(&s, "DELETE", &format!("/api/v1/quotas/{id}"), &st.key, None), 204);
    refused(call(&s, "GET", &format!("/api/v1/quotas/{id}"), &st.key, None), 404);
}

#[test]
fn a_requests_quota_counts_every_request_of_its_key_and_refuses_the_one_past_it_before_the_model_is_called() {
    let up = Scripted::start();
    up.otherwise(Reply::Text("fine".into(), 10, 5));
    let s = server();
    let st = setup(&s, &up, "quota-requests@example.com");
    let a = agent(&s, &st, json!({}));
    // A webhook taking quota events: its deliveries are the outbox (its URL answers nothing).
    let hook =
        ok(call(&s, "POST", "/api/v1/webhooks", &st.key, Some(json!({"name": "q", "url": "http://127.0.0.1:9/hook", "events": ["quota.*"]}))), 201);
    let hook = hook["id"].as_str().unwrap().to_owned();
    // A project key, and a quota of three requests a month on it.
    let project = ok(call(&s, "GET", "/api/v1/projects", &st.key, None), 200)["data"][0]["id"].clone();
    let made = ok(call(&s, "POST", "/api/v1/api-keys", &st.key, Some(json!({"name": "ci", "project_id": project}))), 201);
    let (sk, key_id) = (made["key"].as_str().unwrap().to_owned(), made["id"].as_str().unwrap().to_owned());
    let body = json!({"scope": "api_key", "scope_ref": key_id, "metric": "requests", "window": "calendar_month", "limit": 3});
    let q = ok(call(&s, "POST", "/api/v1/quotas", &st.key, Some(body)), 201);
    // Every request counts, a read as well as a generation.
    ok(call(&s, "GET", "/api/v1/quotas", &sk, None), 200);
    let first = ok(generate(&s, &sk, &a, "Hello."), 200)["id"].as_str().unwrap().to_owned();
    ok(generate(&s, &sk, &a, "Hello."), 200);
    let e = refused(generate(&s, &sk, &a, "Hello."), 429);
    assert_eq!(
        (e["code"].as_str(), e["meta"]["quota_id"].as_str(), e["meta"]["metric"].as_str()),
        (Some("QUOTA_EXCEEDED"), q["id"].as_str(), Some("requests")),
        "{e}"
    );
    assert_eq!(up.bodies().len(), 2, "the refused generation never reached the model");
    let e = refused(call(&s, "GET", "/api/v1/quotas", &sk, None), 429);
    assert_eq!(e["code"], "QUOTA_EXCEEDED", "a read past the quota is refused too: {e}");
    // The first breach of the window raised quota.exceeded, once: a second refusal adds none.
    let d = ok(call(&s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={hook}"), &st.key, None), 200);
    let events: Vec<&str> = d["data"].as_array().unwrap().iter().map(|d| d["event_type"].as_str().unwrap_or("")).collect();
    assert_eq!(events, ["quota.exceeded"], "{d}");
    assert_eq!(d["data"][0]["payload"]["data"]["quota_id"], q["id"], "{d}");
    // The account's key is not this quota's: it still reads, and the count is the key's three.
    let got = ok(call(&s, "GET", &format!("/api/v1/quotas/{}", q["id"].as_str().unwrap()), &st.key, None), 200);
    assert_eq!(got["current_usage"]["count"], 3, "refusals take nothing: {got}");
    // usage (issue 37): the generation's receipt, what the provider reported for it.
    let r = ok(call(&s, "GET", &format!("/api/v1/usage/receipt?generation_id={first}"), &st.key, None), 200);
    assert_eq!(
        (r["generation_id"].as_str(), r["total_input_tokens"].as_u64(), r["total_output_tokens"].as_u64()),
        (Some(first.as_str()), Some(10), Some(5)),
        "{r}"
    );
    assert_eq!(
        (r["line_items"][0]["meter_type"].as_str(), r["line_items"][0]["model"].as_str(), r["total_cost_usd"].is_null()),
        (Some("llm_tokens"), Some("reader"), true),
        "{r}"
    );
    let (_, other) = s.signup("quota-receipt-other@example.com");
    refused(call(&s, "GET", &format!("/api/v1/usage/receipt?generation_id={first}"), &other, None), 404);
    refused(call(&s, "GET", "/api/v1/usage/receipt", &st.key, None), 400);
}

/// `n` generations of `agent` at once: the ids of those that completed, and how many
/// were refused, each refusal `QUOTA_EXCEEDED` by `quota_id` (anything else fails).
fn at_once(s: &TestServer, key: &str, agent: &str, n: usize, quota_id: &str) -> (Vec<String>, u64) {
    let answers: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                scope.spawn(move || {
                    let r = generate(s, key, agent, &format!("Question {i}."));
                    (r.status, r.json())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut completed, mut refusals) = (Vec::new(), 0u64);
    for (status, body) in &answers {
        match status {
            200 => completed.push(body["id"].as_str().unwrap().to_owned()),
            429 => {
                let e = &body["error"];
                assert_eq!((e["code"].as_str(), e["meta"]["quota_id"].as_str()), (Some("QUOTA_EXCEEDED"), Some(quota_id)), "{body}");
                refusals += 1;
            }
            other => panic!("answer {other}: {body}"),
        }
    }
    (completed, refusals)
}

#[test]
fn sixty_four_concurrent_generations_against_a_tokens_quota_of_n_spend_at_most_n() {
    const N: u64 = 2000;
    const PER_CALL: u64 = 40;
    let up = Scripted::start();
    // Slow enough that the 64 overlap; each call reports 30 prompt and 10 completion tokens.
    up.otherwise(Reply::Slow(Duration::from_millis(150), Box::new(Reply::Text("done".into(), 30, 10))));
    let s = server();
    let st = setup(&s, &up, "quota-tokens@example.com");
    let a = agent(&s, &st, json!({"max_output_tokens": 20}));
    let q = ok(
        call(&s, "POST", "/api/v1/quotas", &st.key, Some(json!({"scope": "project", "metric": "tokens", "window": "calendar_month", "limit": N}))),
        201,
    );
    let quota_id = q["id"].as_str().unwrap().to_owned();
    let (ids, refusals) = at_once(&s, &st.key, &a, 64, &quota_id);
    let mut spent = 0;
    for id in &ids {
        let g = ok(call(&s, "GET", &format!("/api/v1/generations/{id}"), &st.key, None), 200);
        assert_eq!(g["status"], "completed", "{g}");
        spent += g["usage"]["input_tokens"].as_u64().unwrap() + g["usage"]["output_tokens"].as_u64().unwrap();
    }
    let completed = ids.len() as u64;
    eprintln!("{completed} completed, {refusals} refused, {spent} tokens spent of {N}");
    assert!(spent <= N, "64 generations spent {spent} tokens against a quota of {N}");
    assert_eq!(spent, completed * PER_CALL);
    assert!(completed >= 1 && refusals >= 1, "{completed} completed, {refusals} refused");
    assert_eq!(up.bodies().len() as u64, completed, "a refused generation never reached the model");
    assert!(up.bodies().iter().all(|b| b["max_tokens"] == 20 || b["max_completion_tokens"] == 20), "the call is bounded by max_output_tokens");
    // Every reservation settled to what was spent: the window counts exactly that.
    let got = ok(call(&s, "GET", &format!("/api/v1/quotas/{quota_id}"), &st.key, None), 200);
    assert_eq!(got["current_usage"]["count"].as_u64(), Some(spent), "{got}");
    // Raised, the quota lets the next one through.
    ok(call(&s, "PATCH", &format!("/api/v1/quotas/{quota_id}"), &st.key, Some(json!({"limit": N * 10}))), 200);
    ok(generate(&s, &st.key, &a, "Once more."), 200);
}

/// `t` seconds from now, as RFC 3339 in UTC (whole seconds).
fn in_seconds(t: u64) -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + t;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // The civil date of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn close(got: &Value, want: f64) -> bool {
    got.as_f64().is_some_and(|g| (g - want).abs() < 1e-9)
}

#[test]
fn receipts_are_priced_from_the_price_book_in_force_when_their_generation_ran_and_meters_sum_them() {
    let up = Scripted::start();
    up.otherwise(Reply::Text("fine".into(), 1000, 200));
    let s = server();
    let st = setup(&s, &up, "usage-prices@example.com");
    let a = agent(&s, &st, json!({}));
    let receipt = |g: &str| ok(call(&s, "GET", &format!("/api/v1/usage/receipt?generation_id={g}"), &st.key, None), 200);
    let run = || ok(generate(&s, &st.key, &a, "Hello."), 200)["id"].as_str().unwrap().to_owned();
    let put = |key: &str, body: Value| call(&s, "PUT", "/api/v1/usage/prices", key, Some(body));
    // No price book yet: the quantities are there, the costs null (not zero).
    let unpriced = run();
    let r = receipt(&unpriced);
    assert!(r["total_cost_usd"].is_null() && r["line_items"][0]["components"][0]["unit_price"].is_null(), "{r}");
    assert_eq!(r["line_items"][0]["components"][0]["quantity"], 1000, "{r}");
    let (provider, model) = (r["line_items"][0]["provider"].clone(), r["line_items"][0]["model"].clone());
    let prices = |input: f64, output: f64, from: &str| {
        let row = |component: &str, price: f64| json!({"provider": provider, "model": model, "component": component, "unit": "token", "unit_price": price, "effective_from": from});
        json!({"prices": [row("input_tokens", input), row("output_tokens", output)]})
    };
    // Refused, and nothing written: a past price, a negative one, an unknown field, a project key.
    for (bad, field) in [
        (prices(0.001, 0.002, "2020-01-01T00:00:00Z"), "prices[0].effective_from"),
        (prices(0.001, -0.002, &in_seconds(60)), "prices[1].unit_price"),
        (json!({"prices": [], "currency": "EUR"}), "currency"),
    ] {
        let e = refused(put(&st.key, bad.clone()), 400);
        assert_eq!(e["code"], "VALIDATION_FAILED", "{bad}: {e}");
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }
    let project = ok(call(&s, "GET", "/api/v1/projects", &st.key, None), 200)["data"][0]["id"].clone();
    let pid = project.as_str().unwrap().to_owned();
    let sk = ok(call(&s, "POST", "/api/v1/api-keys", &st.key, Some(json!({"name": "ci", "project_id": project}))), 201)["key"]
        .as_str()
        .unwrap()
        .to_owned();
    refused(put(&sk, prices(0.001, 0.002, &in_seconds(60))), 403);
    assert_eq!(ok(call(&s, "GET", "/api/v1/usage/prices", &sk, None), 200), json!({"prices": []}));
    // A price in force from two seconds on prices the generations after it.
    let first = ok(put(&st.key, prices(0.001, 0.002, &in_seconds(2))), 200);
    let first_input = first["prices"][0]["id"].as_str().unwrap().to_owned();
    assert!(first_input.starts_with("price_") && first["prices"][0]["component"] == "input_tokens", "{first}");
    std::thread::sleep(Duration::from_secs(3));
    let cheap = run();
    let r = receipt(&cheap);
    assert!(close(&r["total_cost_usd"], 1000.0 * 0.001 + 200.0 * 0.002), "{r}");
    let input = &r["line_items"][0]["components"][0];
    assert!(close(&input["unit_price"], 0.001) && close(&input["cost_usd"], 1.0) && input["price_id"] == first_input.as_str(), "{r}");
    assert!(close(&r["by_meter_type"][0]["cost_usd"], 1.4) && close(&r["line_items"][0]["cost_usd"], 1.4), "{r}");
    // A price change shows in the next receipt; the ones already written keep theirs.
    ok(put(&st.key, prices(0.002, 0.004, &in_seconds(2))), 200);
    std::thread::sleep(Duration::from_secs(3));
    let dear = run();
    assert!(close(&receipt(&dear)["total_cost_usd"], 2.8), "{}", receipt(&dear));
    assert!(close(&receipt(&cheap)["total_cost_usd"], 1.4), "{}", receipt(&cheap));
    assert!(receipt(&unpriced)["total_cost_usd"].is_null());
    // A row upserted again under its key is replaced, keeping its id.
    let later = in_seconds(3600);
    let once = ok(put(&st.key, prices(0.5, 0.5, &later)), 200);
    let again = ok(put(&st.key, prices(0.25, 0.5, &later)), 200);
    assert_eq!(once["prices"][0]["id"], again["prices"][0]["id"], "{once} {again}");
    let book = ok(call(&s, "GET", "/api/v1/usage/prices", &st.key, None), 200);
    let rows = book["prices"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{book}");
    assert!(rows.iter().any(|p| p["id"] == again["prices"][0]["id"] && close(&p["unit_price"], 0.25)), "{book}");
    // Usage meters and the rollup: one event per generation, their sums the receipts'.
    let receipts: Vec<Value> = [&unpriced, &cheap, &dear].into_iter().map(|g| receipt(g)).collect();
    let input: u64 = receipts.iter().map(|r| r["total_input_tokens"].as_u64().unwrap()).sum();
    let cost: f64 = receipts.iter().filter_map(|r| r["total_cost_usd"].as_f64()).sum();
    assert_eq!(input, 3000);
    let m = ok(call(&s, "GET", "/api/v1/usage/meters", &st.key, None), 200);
    assert_eq!((m["total"].as_u64(), m["data"][0]["generation_id"].as_str()), (Some(3), Some(dear.as_str())), "most recent first: {m}");
    let listed: f64 = m["data"].as_array().unwrap().iter().filter_map(|e| e["cost_usd"].as_f64()).sum();
    assert!((listed - cost).abs() < 1e-9, "{m}");
    let one = ok(call(&s, "GET", &format!("/api/v1/usage/meters?generation_id={cheap}"), &st.key, None), 200);
    assert!(one["total"] == 1 && close(&one["data"][0]["cost_usd"], 1.4), "{one}");
    let none = ok(call(&s, "GET", "/api/v1/usage/meters?source=eval", &st.key, None), 200);
    assert_eq!(none["total"], 0, "{none}");
    let rollup = |q: &str| call(&s, "GET", &format!("/api/v1/usage?{q}"), &st.key, None);
    let by_model = ok(rollup(&format!("project_id={pid}&group_by=model")), 200);
    let t = &by_model["totals"];
    assert!(t["input_tokens"] == input && t["output_tokens"] == 600 && close(&t["cost_usd"], cost), "{by_model}");
    assert_eq!((by_model["groups"].as_array().map(Vec::len), &by_model["groups"][0]["key"]), (Some(1), &model), "{by_model}");
    let by_day = ok(rollup(&format!("project_id={pid}&group_by=day")), 200);
    assert!(close(&by_day["groups"][0]["cost_usd"], cost) && by_day["groups"][0]["key"].as_str().is_some_and(|d| d.len() == 10), "{by_day}");
    let after = ok(rollup(&format!("project_id={pid}&group_by=agent&from={}", in_seconds(3600))), 200);
    assert!(after["groups"] == json!([]) && after["totals"]["cost_usd"].is_null() && after["totals"]["input_tokens"] == 0, "{after}");
    // Every group_by sums the same usage: its groups' tokens are the totals'.
    for g in ["model", "agent", "run", "day", "meter_type", "actor", "session", "source"] {
        let r = ok(rollup(&format!("project_id={pid}&group_by={g}")), 200);
        let grouped: u64 = r["groups"].as_array().unwrap().iter().map(|g| g["input_tokens"].as_u64().unwrap()).sum();
        assert!(r["totals"]["input_tokens"] == input && grouped == input && close(&r["totals"]["cost_usd"], cost), "{g}: {r}");
    }
    let none = ok(rollup(&format!("project_id={pid}&group_by=model&meter_type=storage")), 200);
    assert_eq!(none["groups"], json!([]), "{none}");
    refused(rollup(&format!("project_id={pid}&group_by=colour")), 400);
    refused(rollup("group_by=model"), 400);
    // Another account's book is its own.
    let (_, other) = s.signup("usage-prices-other@example.com");
    assert_eq!(ok(call(&s, "GET", "/api/v1/usage/prices", &other, None), 200), json!({"prices": []}));
    // Nor does it see this account's usage: not its project, nor a single event.
    refused(call(&s, "GET", &format!("/api/v1/usage?project_id={pid}&group_by=model"), &other, None), 403);
    assert_eq!(ok(call(&s, "GET", "/api/v1/usage/meters", &other, None), 200)["total"], 0);
    refused(call(&s, "GET", &format!("/api/v1/usage/receipt?generation_id={dear}"), &other, None), 404);
}

/// The webhook deliveries (the outbox) of `hook`, by event type.
fn outbox(s: &TestServer, key: &str, hook: &str, event: &str) -> Vec<Value> {
    let d = ok(call(s, "GET", &format!("/api/v1/webhook-deliveries?webhook_id={hook}"), key, None), 200);
    d["data"].as_array().unwrap().iter().filter(|d| d["event_type"] == event).cloned().collect()
}

#[test]
fn a_usage_threshold_crossed_by_a_step_delivers_one_event_and_the_next_step_in_its_window_none() {
    let up = Scripted::start();
    // Each generation meters 30 + 10 tokens.
    up.otherwise(Reply::Text("fine".into(), 30, 10));
    let s = server();
    let st = setup(&s, &up, "usage-thresholds@example.com");
    let a = agent(&s, &st, json!({}));
    let receiver = super::soat_webhooks::Receiver::start(&[]);
    let hook = ok(call(&s, "POST", "/api/v1/webhooks", &st.key, Some(json!({"name": "u", "url": receiver.url(), "events": ["usage.*"]}))), 201);
    let hook = hook["id"].as_str().unwrap().to_owned();
    let pid = ok(call(&s, "GET", "/api/v1/projects", &st.key, None), 200)["data"][0]["id"].as_str().unwrap().to_owned();
    let body = json!({"project_id": pid, "metric": "tokens", "window": "calendar_month", "threshold": 50});
    let t = ok(call(&s, "POST", "/api/v1/usage/thresholds", &st.key, Some(body)), 201);
    let id = t["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("uthr_") && t["project_id"] == pid.as_str() && t["last_fired_at"].is_null(), "{t}");
    // One that this test's usage does not reach.
    let far =
        ok(call(&s, "POST", "/api/v1/usage/thresholds", &st.key, Some(json!({"metric": "tokens", "window": "rolling_24h", "threshold": 1e6}))), 201);
    for (bad, field) in [
        (json!({"metric": "requests", "window": "calendar_month", "threshold": 5}), "metric"),
        (json!({"metric": "tokens", "window": "rolling_1h", "threshold": 5}), "window"),
        (json!({"metric": "tokens", "window": "calendar_month", "threshold": 0}), "threshold"),
        (json!({"metric": "tokens", "window": "calendar_month", "threshold": 5, "colour": 1}), "colour"),
    ] {
        let e = refused(call(&s, "POST", "/api/v1/usage/thresholds", &st.key, Some(bad.clone())), 400);
        assert!(e["code"] == "VALIDATION_FAILED" && e.to_string().contains(field), "{bad}: {e}");
    }
    let list = ok(call(&s, "GET", &format!("/api/v1/usage/thresholds?project_id={pid}"), &st.key, None), 200);
    assert_eq!((list["total"].as_u64(), &list["data"][0]["id"]), (Some(2), &far["id"]), "newest first: {list}");
    // Under the threshold: no event.
    ok(generate(&s, &st.key, &a, "One."), 200);
    assert_eq!(outbox(&s, &st.key, &hook, "usage.threshold_crossed").len(), 0);
    // The step that crosses it writes the event with its save; the next one in the window writes none.
    ok(generate(&s, &st.key, &a, "Two."), 200);
    ok(generate(&s, &st.key, &a, "Three."), 200);
    let events = outbox(&s, &st.key, &hook, "usage.threshold_crossed");
    assert_eq!(events.len(), 1, "{events:?}");
    let data = &events[0]["payload"]["data"];
    assert_eq!(
        (data["threshold_id"].as_str(), data["metric"].as_str(), data["observed_value"].as_f64()),
        (Some(id.as_str()), Some("tokens"), Some(80.0)),
        "{data}"
    );
    // Delivered to the subscribed receiver, once.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let got = loop {
        let got: Vec<Value> = receiver.got().iter().map(|g| g.json()).filter(|g| g["event"] == "usage.threshold_crossed").collect();
        if !got.is_empty() || std::time::Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["resource_id"], id.as_str());
    let list = ok(call(&s, "GET", "/api/v1/usage/thresholds", &st.key, None), 200);
    let fired = list["data"].as_array().unwrap().iter().find(|t| t["id"] == id.as_str()).unwrap().clone();
    let month = data["window_key"].as_str().unwrap().to_owned();
    assert!(month.len() == 7 && fired["fired_window_key"] == month.as_str() && fired["last_fired_at"].is_string(), "{fired}");
    // Another account neither sees nor deletes it.
    let (_, other) = s.signup("usage-thresholds-other@example.com");
    assert_eq!(ok(call(&s, "GET", "/api/v1/usage/thresholds", &other, None), 200)["total"], 0);
    refused(call(&s, "DELETE", &format!("/api/v1/usage/thresholds/{id}"), &other, None), 404);
    ok(call(&s, "DELETE", &format!("/api/v1/usage/thresholds/{id}"), &st.key, None), 204);
    refused(call(&s, "DELETE", &format!("/api/v1/usage/thresholds/{id}"), &st.key, None), 404);
    assert_eq!(ok(call(&s, "GET", "/api/v1/usage/thresholds", &st.key, None), 200)["total"], 1);
}

#[test]
fn concurrent_generations_against_a_cost_quota_never_spend_past_it_and_an_unpriced_model_is_refused() {
    const LIMIT: f64 = 2.0;
    let up = Scripted::start();
    // Slow enough that they overlap; each call reports 30 prompt and 10 completion tokens.
    up.otherwise(Reply::Slow(Duration::from_millis(150), Box::new(Reply::Text("done".into(), 30, 10))));
    let s = server();
    let st = setup(&s, &up, "quota-cost@example.com");
    let a = agent(&s, &st, json!({"max_output_tokens": 20}));
    let hook =
        ok(call(&s, "POST", "/api/v1/webhooks", &st.key, Some(json!({"name": "u", "url": "http://127.0.0.1:9/hook", "events": ["usage.*"]}))), 201);
    let hook = hook["id"].as_str().unwrap().to_owned();
    let q = ok(
        call(
            &s,
            "POST",
            "/api/v1/quotas",
            &st.key,
            Some(json!({"scope": "project", "metric": "cost_usd", "window": "calendar_month", "limit": LIMIT})),
        ),
        201,
    );
    let quota_id = q["id"].as_str().unwrap().to_owned();
    // No price for the model: the call cannot be bounded, so it is refused before it is made.
    let e = refused(generate(&s, &st.key, &a, "Unpriced."), 409);
    assert_eq!((e["code"].as_str(), e["meta"]["quota_id"].as_str()), (Some("QUOTA_UNPRICED"), Some(quota_id.as_str())), "{e}");
    assert!(e["message"].as_str().unwrap().contains("/api/v1/usage/prices"), "{e}");
    assert_eq!(up.bodies().len(), 0, "an unpriced call never reached the model");
    // Priced: 0.001 USD a prompt token, 0.002 a completion token (0.05 a call).
    let model = ok(call(&s, "GET", &format!("/api/v1/agents/{a}"), &st.key, None), 200)["model"].clone();
    let provider = ok(call(&s, "GET", &format!("/api/v1/ai-providers/{}", st.provider), &st.key, None), 200);
    let model = if model.is_string() { model } else { provider["default_model"].clone() };
    let row = |component: &str, price: f64| json!({"provider": provider["provider"], "model": model, "component": component, "unit": "token", "unit_price": price, "effective_from": in_seconds(2)});
    ok(call(&s, "PUT", "/api/v1/usage/prices", &st.key, Some(json!({"prices": [row("input_tokens", 0.001), row("output_tokens", 0.002)]}))), 200);
    ok(
        call(&s, "POST", "/api/v1/usage/thresholds", &st.key, Some(json!({"metric": "cost_usd", "window": "calendar_month", "threshold": 0.01}))),
        201,
    );
    std::thread::sleep(Duration::from_secs(3));
    let (ids, refusals) = at_once(&s, &st.key, &a, 32, &quota_id);
    let mut spent = 0.0;
    for id in &ids {
        let r = ok(call(&s, "GET", &format!("/api/v1/usage/receipt?generation_id={id}"), &st.key, None), 200);
        assert!(close(&r["total_cost_usd"], 30.0 * 0.001 + 10.0 * 0.002), "{r}");
        spent += r["total_cost_usd"].as_f64().unwrap();
    }
    let completed = ids.len() as u64;
    eprintln!("{completed} completed, {refusals} refused, {spent} USD spent of {LIMIT}");
    assert!(spent <= LIMIT, "32 generations spent {spent} USD against a quota of {LIMIT}");
    assert!(completed >= 1 && refusals >= 1, "{completed} completed, {refusals} refused");
    assert_eq!(up.bodies().len() as u64, completed, "a refused generation never reached the model");
    // The priced usage is metered: the cost threshold fired, once.
    let crossed = outbox(&s, &st.key, &hook, "usage.threshold_crossed");
    assert_eq!(crossed.len(), 1, "{crossed:?}");
    assert_eq!(crossed[0]["payload"]["data"]["metric"], "cost_usd");
    // Every reservation settled to what was spent: raised past that, the quota lets one through.
    ok(call(&s, "PATCH", &format!("/api/v1/quotas/{quota_id}"), &st.key, Some(json!({"limit": spent + 1.0}))), 200);
    ok(generate(&s, &st.key, &a, "Once more."), 200);
}
