use serde_json::{json, Value};

use super::*;
use crate::agents::agent::config::{Create, Update};
use crate::error::{Code, ErrorCode};

fn create(v: Value) -> Result<(), AgentError> {
    create_under(v, None)
}

fn create_under(v: Value, project: Option<TraceContentMode>) -> Result<(), AgentError> {
    let body: Create = serde_json::from_value(v).expect("the body parses");
    let (config, null_choice) = body.config();
    shape(&config, null_choice, project)
}

fn code(r: Result<(), AgentError>) -> Code {
    r.expect_err("refused").code()
}

#[test]
fn exactly_one_of_provider_and_route() {
    create(json!({"ai_provider_id": "aip_1"})).unwrap();
    create(json!({"model_route_id": "route_1"})).unwrap();
    assert_eq!(code(create(json!({}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": "aip_1", "model_route_id": "route_1"}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"model_route_id": "route_1", "model": "gpt-4o"}))), Code::SoatValidation, "model with a route");
    create(json!({"ai_provider_id": "aip_1", "model": "gpt-4o"})).unwrap();
}

#[test]
fn switching_to_a_route_needs_the_provider_cleared_in_the_same_request() {
    let current = Create { ai_provider_id: Some("aip_1".into()), ..Create::default() }.config().0;
    let only_route: Update = serde_json::from_value(json!({"model_route_id": "route_1"})).unwrap();
    let (next, n) = only_route.apply(&current);
    assert_eq!(code(shape(&next, n, None)), Code::SoatValidation);
    let switch: Update = serde_json::from_value(json!({"model_route_id": "route_1", "ai_provider_id": null})).unwrap();
    let (next, n) = switch.apply(&current);
    shape(&next, n, None).unwrap();
}

#[test]
fn a_forcing_tool_choice_without_a_stop_condition_forces_the_first_step_only() {
    let p = json!("aip_1");
    for choice in [json!("required"), json!({"type": "tool", "tool_name": "search"})] {
        // v0.28's reading, written as the seed's equivalent: auto, and step 1 forced.
        let body: Create = serde_json::from_value(json!({"ai_provider_id": p, "tool_choice": choice, "max_steps": 3})).unwrap();
        let (config, _) = body.config();
        assert_eq!(serde_json::to_value(&config.tool_choice).unwrap(), json!("auto"));
        assert_eq!(serde_json::to_value(&config.step_rules).unwrap(), json!([{"step": 1, "tool_choice": choice}]));
        shape(&config, false, None).unwrap();
        let chain_only = json!([{"type": "max_chain_generations", "max_generations": 3}]);
        create(json!({"ai_provider_id": p, "tool_choice": choice, "stop_conditions": chain_only})).unwrap();
        // The seed's: with a has_tool_call condition, every step forces.
        let body: Create = serde_json::from_value(
            json!({"ai_provider_id": p, "tool_choice": choice, "stop_conditions": [{"type": "has_tool_call", "tool_name": "done"}]}),
        )
        .unwrap();
        let (config, _) = body.config();
        assert_eq!(serde_json::to_value(&config.tool_choice).unwrap(), choice);
        assert!(config.step_rules.is_none());
        // A step rule that sets step 1's choice already: the seed's rule refuses it.
        let own_step_1 = json!([{"step": 1, "tool_choice": "auto"}]);
        assert_eq!(code(create(json!({"ai_provider_id": p, "tool_choice": choice, "step_rules": own_step_1}))), Code::ForcedToolChoiceCannotStop);
    }
    create(json!({"ai_provider_id": p, "tool_choice": "auto"})).unwrap();
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_choice": null}))), Code::SoatValidation, "tool_choice is not nullable");
}

#[test]
fn stop_conditions_are_checked_by_type() {
    let p = json!("aip_1");
    assert_eq!(code(create(json!({"ai_provider_id": p, "stop_conditions": [{"type": "has_tool_call"}]}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "stop_conditions": [{"type": "has_tool_call", "tool_name": " "}]}))), Code::SoatValidation);
    for n in [json!(0), json!(-1), json!(null)] {
        let c = json!({"ai_provider_id": p, "stop_conditions": [{"type": "max_chain_generations", "max_generations": n}]});
        assert_eq!(code(create(c)), Code::SoatValidation, "{n}");
    }
    create(json!({"ai_provider_id": p, "stop_conditions": [{"type": "max_chain_generations", "max_generations": 1}]})).unwrap();
    // An unknown type, a non-object entry and a non-integer are refused by the parse itself.
    for bad in [json!([{"type": "never"}]), json!(["has_tool_call"]), json!([{"type": "max_chain_generations", "max_generations": 1.5}])] {
        assert!(serde_json::from_value::<Create>(json!({"stop_conditions": bad})).is_err(), "{bad}");
    }
}

#[test]
fn step_rules_and_active_tools() {
    let p = json!("aip_1");
    let bound = json!([{"tool_id": "tool_a"}, {"tool_id": "tool_b"}]);
    create(json!({"ai_provider_id": p, "tool_bindings": bound, "step_rules": [{"step": 1, "tool_choice": null}, {"step": 2, "active_tool_ids": ["tool_a"], "tool_choice": "required"}]})).unwrap();
    assert_eq!(code(create(json!({"ai_provider_id": p, "step_rules": [{"step": 0}]}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "step_rules": [{"step": 1}, {"step": 1}]}))), Code::SoatValidation);
    assert_eq!(
        code(create(json!({"ai_provider_id": p, "tool_bindings": bound, "step_rules": [{"step": 1, "active_tool_ids": ["tool_c"]}]}))),
        Code::SoatValidation
    );
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_bindings": bound, "active_tool_ids": ["tool_c"]}))), Code::SoatValidation);
    create(json!({"ai_provider_id": p, "tool_bindings": bound, "active_tool_ids": []})).unwrap();
    assert!(serde_json::from_value::<Create>(json!({"step_rules": [{"tool_choice": "auto"}]})).is_err(), "step is required");
}

#[test]
fn bindings_take_exactly_one_form() {
    let p = json!("aip_1");
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_bindings": [{}]}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_bindings": [{"tool_id": "tool_a", "tool": {"name": "x"}}]}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_bindings": [{"tool_id": "tool_a"}, {"tool_id": "tool_a"}]}))), Code::SoatValidation);
    create(json!({"ai_provider_id": p, "tool_bindings": [{"tool": {"name": "lookup", "type": "client"}}]})).unwrap();
    let literal = json!([{"tool": {"name": "x", "execute": {"url": "https://h", "headers": {"X-Api-Key": "k-123"}}}}]);
    assert_eq!(code(create(json!({"ai_provider_id": p, "tool_bindings": literal}))), Code::LiteralCredential);
}

#[test]
fn the_project_is_a_floor_for_trace_content_mode() {
    let p = json!("aip_1");
    let none = Some(TraceContentMode::None);
    assert_eq!(code(create_under(json!({"ai_provider_id": p, "trace_content_mode": "full"}), none)), Code::SoatValidation);
    create_under(json!({"ai_provider_id": p, "trace_content_mode": "none"}), none).unwrap();
    create_under(json!({"ai_provider_id": p, "trace_content_mode": null}), none).unwrap();
    create_under(json!({"ai_provider_id": p, "trace_content_mode": "full"}), None).unwrap();
    create_under(json!({"ai_provider_id": p, "trace_content_mode": "none"}), Some(TraceContentMode::Full)).unwrap();
}

#[test]
fn numbers_knowledge_and_schemas() {
    let p = json!("aip_1");
    for bad in [json!({"max_steps": 0}), json!({"max_output_tokens": 0}), json!({"temperature": -0.1}), json!({"max_context_messages": 0})] {
        let mut body = bad.clone();
        body["ai_provider_id"] = p.clone();
        assert_eq!(code(create(body)), Code::SoatValidation, "{bad}");
    }
    assert_eq!(code(create(json!({"ai_provider_id": p, "knowledge_config": {"min_score": 1.5}}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "knowledge_config": {"limit": 0}}))), Code::SoatValidation);
    assert_eq!(code(create(json!({"ai_provider_id": p, "knowledge_config": {"tags": {"system.owner": "x"}}}))), Code::ReservedTagKey);
    create(json!({"ai_provider_id": p, "knowledge_config": {"tags": {"env": "prod"}, "min_score": 0.3, "recency_half_life_days": 0}})).unwrap();
    assert_eq!(code(create(json!({"ai_provider_id": p, "output_schema": {"type": "thing"}}))), Code::SoatValidation);
    create(json!({"ai_provider_id": p, "output_schema": {"type": "object", "required": ["a"]}})).unwrap();
}

#[test]
fn context_keys_are_header_tokens_unique_ignoring_case() {
    check_context_keys("tool_context", ["userId", "x-tenant", "a.b_c~"].into_iter()).unwrap();
    for bad in [vec!["a b"], vec![""], vec!["é"], vec!["a:b"], vec!["User", "user"]] {
        let e = check_context_keys("tool_context", bad.clone().into_iter()).unwrap_err();
        assert_eq!(e.code(), Code::InvalidToolContextKey, "{bad:?}");
    }
}

#[test]
fn references_name_their_fields_and_missing_ones_have_their_codes() {
    let body: Create = serde_json::from_value(json!({
        "ai_provider_id": "aip_1", "tool_bindings": [{"tool_id": "tool_a"}, {"tool": {"name": "x"}}], "guardrail_ids": ["grd_1"]
    }))
    .unwrap();
    let refs = references(&body.config().0);
    let fields: Vec<&str> = refs.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(fields, ["ai_provider_id", "tool_bindings[0].tool_id", "guardrail_ids[0]"]);
    let only = |kind: RefKind| move |r: &Reference| Ok(r.kind != kind);
    assert_eq!(missing(&refs, false, only(RefKind::AiProvider)).unwrap_err().code(), Code::AgentAiProviderNotFound);
    assert_eq!(missing(&refs, true, only(RefKind::AiProvider)).unwrap_err().code(), Code::AiProviderNotFound);
    assert_eq!(missing(&refs, false, only(RefKind::Tool)).unwrap_err().code(), Code::ToolNotFound);
    assert_eq!(missing(&refs, false, only(RefKind::Guardrail)).unwrap_err().code(), Code::GuardrailNotFound);
    missing(&refs, false, |_| Ok(true)).unwrap();
}
