//! Model routes' circuit breaker (issue 37): a target that keeps failing is skipped until its cooldown passes, and the generation's routing says so.
//!
//! A route of two targets, the first a scripted upstream that always fails (500), the
//! second one that answers, `failure_threshold` 2 and `cooldown_seconds` 1: the first
//! two generations try the failing target and fail over; the third skips it (it is
//! never called) and its `routing` names the skipped target with `circuit_open`; once
//! the cooldown has passed the failing target is tried again (half-open), and one more
//! failure opens it again.

use std::time::Duration;

use serde_json::{json, Value};

use super::scripted_llm::{text, Reply, Scripted};
use super::soat::{call, ok};
use super::soat_generate::{server, setup};

#[test]
fn a_route_target_failing_past_its_threshold_is_skipped_until_its_cooldown_passes() {
    let down = Scripted::start();
    down.otherwise(Reply::Fail(500));
    let up = Scripted::start();
    up.otherwise(text("From the second target."));
    let s = server();
    let st = setup(&s, &down, "breaker@example.com");
    let second = ok(
        call(
            &s,
            "POST",
            "/api/v1/ai-providers",
            &st.key,
            Some(json!({"name": "up", "provider": "custom", "base_url": format!("http://{}/v1", up.addr), "default_model": "reader"})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let targets = json!([{"ai_provider_id": st.provider, "model": "m1"}, {"ai_provider_id": second, "model": "m2"}]);
    let route = ok(
        call(
            &s,
            "POST",
            "/api/v1/model-routes",
            &st.key,
            Some(json!({"name": "r", "targets": targets, "retry_on": ["provider_error"], "failure_threshold": 2, "cooldown_seconds": 1})),
        ),
        201,
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = ok(call(&s, "POST", "/api/v1/agents", &st.key, Some(json!({"model_route_id": route, "instructions": "x"}))), 201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = || -> Value {
        let g = ok(
            call(
                &s,
                "POST",
                &format!("/api/v1/agents/{a}/generate?wait=true"),
                &st.key,
                Some(json!({"messages": [{"role": "user", "content": "Hi."}]})),
            ),
            200,
        );
        assert_eq!(g["output"]["content"], "From the second target.", "{g}");
        ok(call(&s, "GET", &format!("/api/v1/generations/{}", g["id"].as_str().unwrap()), &st.key, None), 200)["routing"].clone()
    };
    // The provider layer retries a 500 before the route fails over: `per` requests a try.
    let r = run();
    assert_eq!(r["attempts"][0]["error_class"], "provider_error", "{r}");
    let per = down.bodies().len();
    assert!(per >= 1);
    let r = run();
    assert_eq!(r["attempts"][0]["error_class"], "provider_error", "{r}");
    assert_eq!(down.bodies().len(), 2 * per, "failure 2 of the threshold: the target is still tried");
    let r = run();
    assert_eq!(down.bodies().len(), 2 * per, "open: the failing target is not called");
    let skipped = &r["attempts"][0];
    assert_eq!((skipped["target_index"].as_u64(), skipped["skipped"].as_str()), (Some(0), Some("circuit_open")), "{r}");
    assert!(skipped["retry_after_seconds"].as_u64().is_some_and(|s| s <= 1), "{r}");
    assert_eq!((r["target_index"].as_u64(), r["fallbacks"].as_u64()), (Some(1), Some(0)), "{r}");
    std::thread::sleep(Duration::from_millis(1100));
    let r = run();
    assert_eq!(down.bodies().len(), 3 * per, "after the cooldown the target is tried again");
    assert_eq!(r["attempts"][0]["error_class"], "provider_error", "{r}");
    run();
    assert_eq!(down.bodies().len(), 3 * per, "one failure half-open opens the circuit again");
}
