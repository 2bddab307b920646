//! The scorers an eval freezes (evaluations.yaml `Scorers`): `exact_match`,
//! `contains`, `regex` (Quarry's: the output matches a pattern), `output_schema`
//! (JSON Schema through the `jsonschema` crate, as an agent's own `output_schema` is
//! checked), `json_logic` (an expression over `{input, output, object, expected,
//! item.metadata}`, truthy scores 1, evaluated as guardrails' JSON Logic is),
//! `llm_judge` (a model's verdict on a rubric), `embedding_similarity` (the cosine of
//! the output's and the reference's vectors, through the server's embedder) and `tool`
//! (a project tool's verdict on the item). This file is pure: the judge's, the
//! embedder's and the tool's calls are made by `run`, which hands what they answered to
//! [`verdict`], [`similar`] and [`tool_verdict`].

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::record::ScoreOut;
use crate::agents::guardrails::logic;
use crate::error::{ApiError, Code};

/// One scorer's frozen config; each type at most once per eval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Scorer {
    ExactMatch,
    Contains {
        value: String,
        #[serde(default)]
        case_sensitive: bool,
    },
    Regex {
        pattern: String,
    },
    OutputSchema {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schema: Option<Map<String, Value>>,
    },
    JsonLogic {
        expression: Map<String, Value>,
    },
    LlmJudge {
        prompt: String,
        pass_threshold: f64,
        #[serde(default)]
        ai_provider_id: Option<String>,
        #[serde(default)]
        model: Option<String>,
    },
    EmbeddingSimilarity {
        pass_threshold: f64,
    },
    /// A custom algorithm: a server-callable project tool, called once per item.
    Tool {
        name: String,
        tool_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preset_parameters: Option<Map<String, Value>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pass_threshold: Option<f64>,
    },
}

/// The built-in scorer types (a `tool` scorer's name may not be one of them: results
/// and aggregates key on it).
const BUILT_IN: &[&str] = &["exact_match", "contains", "json_logic", "regex", "output_schema", "embedding_similarity", "llm_judge", "tool"];

/// The keys the engine gives a `tool` scorer's call, which `preset_parameters` may
/// not set (the engine's values win, or a config could pin `output` and grade a fiction).
pub const TOOL_RESERVED_KEYS: &[&str] = &["input", "output", "object", "expected", "item"];

/// The most characters of a regex pattern (compiled once per item).
const MAX_PATTERN_CHARS: usize = 1_000;

impl Scorer {
    /// What its results and aggregates key on: the type, or a `tool` scorer's name.
    pub fn name(&self) -> &str {
        match self {
            Scorer::ExactMatch => "exact_match",
            Scorer::Contains { .. } => "contains",
            Scorer::Regex { .. } => "regex",
            Scorer::OutputSchema { .. } => "output_schema",
            Scorer::JsonLogic { .. } => "json_logic",
            Scorer::LlmJudge { .. } => "llm_judge",
            Scorer::EmbeddingSimilarity { .. } => "embedding_similarity",
            Scorer::Tool { name, .. } => name,
        }
    }
}

fn invalid(field: String, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field)
}

/// A threshold is a number from 0 to 1.
pub fn check_threshold(field: &str, t: f64) -> Result<(), ApiError> {
    if !(0.0..=1.0).contains(&t) {
        return Err(invalid(field.to_owned(), format!("{field} must be from 0 to 1, not {t}.")));
    }
    Ok(())
}

/// Parses and checks `scorers` against the agent under test's `output_schema`.
pub fn parse(raw: &[Value], agent_schema: Option<&Map<String, Value>>) -> Result<Vec<Scorer>, ApiError> {
    let mut out: Vec<Scorer> = Vec::with_capacity(raw.len());
    for (i, v) in raw.iter().enumerate() {
        let field = format!("scorers[{i}]");
        let s: Scorer = serde_json::from_value(v.clone()).map_err(|e| {
            invalid(
                field.clone(),
                format!("{field}: {e} (this server scores exact_match, contains, regex, output_schema, json_logic, llm_judge, embedding_similarity and tool)."),
            )
        })?;
        if out.iter().any(|o| o.name() == s.name()) {
            let what = if matches!(s, Scorer::Tool { .. }) { "tool scorer name" } else { "scorer type" };
            return Err(invalid(field.clone(), format!("{field}: the {what} {} appears more than once.", s.name())));
        }
        match &s {
            Scorer::Contains { value, .. } if value.is_empty() => return Err(invalid(format!("{field}.value"), "value must not be empty.")),
            Scorer::Regex { pattern } => {
                if pattern.chars().count() > MAX_PATTERN_CHARS {
                    return Err(invalid(format!("{field}.pattern"), format!("pattern holds at most {MAX_PATTERN_CHARS} characters.")));
                }
                regex::Regex::new(pattern).map_err(|e| invalid(format!("{field}.pattern"), format!("pattern does not compile: {e}")))?;
            }
            Scorer::OutputSchema { schema } => {
                let Some(schema) = schema.as_ref().or(agent_schema) else {
                    return Err(invalid(
                        field.clone(),
                        format!("{field}: an output_schema scorer needs a schema, its own or the agent's output_schema; the agent has none."),
                    ));
                };
                jsonschema::validator_for(&Value::Object(schema.clone()))
                    .map_err(|e| invalid(format!("{field}.schema"), format!("schema does not compile: {e}")))?;
            }
            Scorer::JsonLogic { expression } => {
                if expression.len() != 1 {
                    return Err(invalid(format!("{field}.expression"), "expression must be one JSON Logic operation: an object of one operator."));
                }
                logic::compiles(&Value::Object(expression.clone()))
                    .map_err(|e| invalid(format!("{field}.expression"), format!("expression does not compile: {e}")))?;
            }
            Scorer::LlmJudge { prompt, pass_threshold, .. } => {
                if prompt.trim().is_empty() {
                    return Err(invalid(format!("{field}.prompt"), "prompt must not be empty."));
                }
                check_threshold(&format!("{field}.pass_threshold"), *pass_threshold)?;
            }
            Scorer::EmbeddingSimilarity { pass_threshold } => check_threshold(&format!("{field}.pass_threshold"), *pass_threshold)?,
            Scorer::Tool { name, tool_id, preset_parameters, pass_threshold, .. } => {
                if name.trim().is_empty() {
                    return Err(invalid(format!("{field}.name"), "name must not be empty."));
                }
                if BUILT_IN.contains(&name.as_str()) {
                    return Err(invalid(
                        format!("{field}.name"),
                        format!("name must not be a built-in scorer type ({name:?}); pick a name of your own."),
                    ));
                }
                if tool_id.is_empty() {
                    return Err(invalid(format!("{field}.tool_id"), "tool_id must be a tool id."));
                }
                if let Some(k) = preset_parameters.iter().flat_map(|p| p.keys()).find(|k| TOOL_RESERVED_KEYS.contains(&k.as_str())) {
                    return Err(invalid(format!("{field}.preset_parameters"), format!("preset_parameters cannot set {k:?}: the engine gives it.")));
                }
                if let Some(t) = pass_threshold {
                    check_threshold(&format!("{field}.pass_threshold"), *t)?;
                }
            }
            _ => {}
        }
        out.push(s);
    }
    Ok(out)
}

/// What a generation answered, as the scorers read it.
pub struct Answer<'a> {
    pub text: &'a str,
    /// The structured output, when the agent has an `output_schema`.
    pub object: Option<&'a Value>,
    pub expected: Option<&'a str>,
    /// The item's input messages and metadata (`json_logic` reads them).
    pub input: &'a [Value],
    pub metadata: Option<&'a Value>,
}

/// What a `json_logic` expression reads (evaluations.yaml `Scorers`): `object` only when
/// there is a structured output.
fn logic_data(a: &Answer<'_>) -> Value {
    let mut data = json!({
        "input": a.input, "output": a.text, "expected": a.expected,
        "item": {"metadata": a.metadata.cloned().unwrap_or_else(|| json!({}))},
    });
    if let Some(o) = a.object {
        data["object"] = o.clone();
    }
    data
}

fn binary(scorer: &Scorer, passed: bool) -> ScoreOut {
    ScoreOut { scorer: scorer.name().to_owned(), score: if passed { 1.0 } else { 0.0 }, passed, reasoning: None }
}

/// Scores `a` with a deterministic scorer; `None` for one that asks something (the
/// judge, the embedder, a tool). An item without a reference scores 0 on
/// `embedding_similarity`, the embedder never asked.
pub fn score(s: &Scorer, a: &Answer<'_>, agent_schema: Option<&Map<String, Value>>) -> Option<ScoreOut> {
    let passed = match s {
        Scorer::ExactMatch => a.expected.is_some_and(|e| e.trim() == a.text.trim()),
        Scorer::Contains { value, case_sensitive: true } => a.text.contains(value.as_str()),
        Scorer::Contains { value, case_sensitive: false } => a.text.to_lowercase().contains(&value.to_lowercase()),
        Scorer::Regex { pattern } => regex::Regex::new(pattern).is_ok_and(|r| r.is_match(a.text)),
        Scorer::OutputSchema { schema } => {
            let parsed;
            let object = match a.object {
                Some(o) => Some(o),
                None => {
                    parsed = serde_json::from_str::<Value>(a.text.trim()).ok();
                    parsed.as_ref()
                }
            };
            let schema = schema.as_ref().or(agent_schema);
            match (object, schema.and_then(|s| jsonschema::validator_for(&Value::Object(s.clone())).ok())) {
                (Some(o), Some(v)) => v.is_valid(o),
                _ => false,
            }
        }
        Scorer::EmbeddingSimilarity { .. } if a.expected.is_none() => false,
        // An expression that errs over this answer scores 0, as a falsy one does.
        Scorer::JsonLogic { expression } => logic::apply(&Value::Object(expression.clone()), &logic_data(a)).is_ok_and(|v| logic::truthy(&v)),
        Scorer::LlmJudge { .. } | Scorer::EmbeddingSimilarity { .. } | Scorer::Tool { .. } => return None,
    };
    Some(binary(s, passed))
}

/// The cosine of two vectors clamped to 0–1 (below 0 is equally "not the reference");
/// a vector without magnitude has no direction: 0.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())).clamp(0.0, 1.0)
}

/// `embedding_similarity`'s outcome for a similarity.
pub fn similar(similarity: f64, pass_threshold: f64) -> ScoreOut {
    ScoreOut { scorer: "embedding_similarity".into(), score: similarity, passed: similarity >= pass_threshold, reasoning: None }
}

/// A `tool` scorer's outcome from what its tool answered: an object with a `score`
/// from 0 to 1, an optional `passed` (which wins) and `reasoning`; without `passed`
/// the scorer's `pass_threshold` decides, and without one there is no verdict.
/// Anything else errs the item, never scores 0.
pub fn tool_verdict(name: &str, answer: &Value, pass_threshold: Option<f64>) -> Result<ScoreOut, String> {
    let Value::Object(o) = answer else {
        return Err(format!("The scorer tool of {name} did not answer a JSON object with a score."));
    };
    let score = o.get("score").and_then(Value::as_f64).filter(|s| (0.0..=1.0).contains(s));
    let score = score.ok_or_else(|| format!("The scorer tool of {name} answered no numeric score from 0 to 1."))?;
    let passed = match (o.get("passed"), pass_threshold) {
        (Some(Value::Bool(p)), _) => *p,
        (Some(other), _) if !other.is_null() => return Err(format!("The scorer tool of {name} answered passed: {other}, not true or false.")),
        (_, Some(t)) => score >= t,
        (_, None) => return Err(format!("The scorer tool of {name} answered no passed, and the scorer has no pass_threshold: no verdict.")),
    };
    let reasoning = o.get("reasoning").and_then(Value::as_str).map(str::to_owned);
    Ok(ScoreOut { scorer: name.to_owned(), score, passed, reasoning })
}

/// Fills the judge prompt's `{{input}}`, `{{output}}` and `{{expected}}` slots in one
/// pass, so a slot value holding `{{output}}` is not expanded again (a judged output
/// is untrusted text and must not rewrite the prompt that grades it).
pub fn render(prompt: &str, input: &[Value], output: &str, expected: Option<&str>) -> String {
    let input = serde_json::to_string(input).expect("JSON serializes");
    let mut out = String::with_capacity(prompt.len() + output.len() + input.len());
    let mut rest = prompt;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let slot = [("{{input}}", input.as_str()), ("{{output}}", output), ("{{expected}}", expected.unwrap_or_default())]
            .into_iter()
            .find(|(name, _)| tail.starts_with(name));
        match slot {
            Some((name, value)) => {
                out.push_str(value);
                rest = &tail[name.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The judge's reply read as `{"score": 0–1, "reasoning": "…"}` (a fenced block or
/// the first JSON object in the text); anything else errs the item, never scores 0.
pub fn verdict(reply: &str, pass_threshold: f64) -> Result<ScoreOut, String> {
    let t = reply.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).map_or(t, |r| r.trim_end().strip_suffix("```").unwrap_or(r)).trim();
    let parsed: Option<Value> = serde_json::from_str(t).ok().or_else(|| {
        let (start, end) = (t.find('{')?, t.rfind('}')?);
        serde_json::from_str(t.get(start..=end)?).ok()
    });
    let Some(Value::Object(o)) = parsed else {
        return Err("The judge's reply is not a JSON object with a score.".into());
    };
    let score = o.get("score").and_then(Value::as_f64).filter(|s| (0.0..=1.0).contains(s));
    let score = score.ok_or_else(|| "The judge's reply has no numeric score from 0 to 1.".to_owned())?;
    let reasoning = o.get("reasoning").and_then(Value::as_str).map(str::to_owned);
    Ok(ScoreOut { scorer: "llm_judge".into(), score, passed: score >= pass_threshold, reasoning })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer<'a>(text: &'a str, expected: Option<&'a str>) -> Answer<'a> {
        Answer { text, object: None, expected, input: &[], metadata: None }
    }

    #[test]
    fn deterministic_scorers_pass_and_fail() {
        let s = parse(
            &[
                json!({"type": "exact_match"}),
                json!({"type": "contains", "value": "Invoice"}),
                json!({"type": "regex", "pattern": "^day \\d+$"}),
                json!({"type": "output_schema", "schema": {"type": "object", "required": ["a"]}}),
            ],
            None,
        )
        .unwrap();
        let run = |a: &Answer<'_>| s.iter().map(|s| score(s, a, None).unwrap().passed).collect::<Vec<_>>();
        assert_eq!(run(&answer(" day 1 ", Some("day 1"))), [true, false, false, false]);
        assert_eq!(run(&answer("day 12", Some("day 1"))), [false, false, true, false]);
        assert_eq!(run(&answer("{\"a\": \"the invoice\"}", None)), [false, true, false, true]);
        let case = parse(&[json!({"type": "contains", "value": "Invoice", "case_sensitive": true})], None).unwrap();
        assert!(!score(&case[0], &answer("the invoice", None), None).unwrap().passed);
    }

    #[test]
    fn bad_scorers_are_refused_naming_the_field() {
        for (raw, field) in [
            (json!([{"type": "exact_match"}, {"type": "exact_match"}]), "scorers[1]"),
            (json!([{"type": "json_logic", "expression": {}}]), "scorers[0].expression"),
            (json!([{"type": "json_logic", "expression": {"regex": ["a", "b"]}}]), "scorers[0].expression"),
            (json!([{"type": "json_logic"}]), "scorers[0]"),
            (json!([{"type": "embedding_similarity"}]), "scorers[0]"),
            (json!([{"type": "embedding_similarity", "pass_threshold": -0.1}]), "scorers[0].pass_threshold"),
            (json!([{"type": "tool", "name": "contains", "tool_id": "tool_1"}]), "scorers[0].name"),
            (json!([{"type": "tool", "name": "t", "tool_id": "tool_1", "preset_parameters": {"output": "fixed"}}]), "scorers[0].preset_parameters"),
            (json!([{"type": "tool", "name": "t", "tool_id": "tool_1"}, {"type": "tool", "name": "t", "tool_id": "tool_2"}]), "scorers[1]"),
            (json!([{"type": "regex", "pattern": "("}]), "scorers[0].pattern"),
            (json!([{"type": "output_schema"}]), "scorers[0]"),
            (json!([{"type": "llm_judge", "prompt": "x", "pass_threshold": 1.5}]), "scorers[0].pass_threshold"),
            (json!([{"type": "llm_judge", "prompt": "x"}]), "scorers[0]"),
            (json!([{"type": "contains", "value": "x", "extra": 1}]), "scorers[0]"),
        ] {
            let e = parse(raw.as_array().unwrap(), None).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{raw}: {}", e.message);
        }
        let agent = json!({"type": "object"}).as_object().unwrap().clone();
        assert!(parse(&[json!({"type": "output_schema"})], Some(&agent)).is_ok());
    }

    #[test]
    fn embedding_similarity_is_a_clamped_cosine_and_needs_a_reference() {
        let s = parse(&[json!({"type": "embedding_similarity", "pass_threshold": 0.8})], None).unwrap();
        assert!(score(&s[0], &answer("anything", None), None).is_some_and(|o| o.score == 0.0 && !o.passed), "no reference: 0, no call");
        assert!(score(&s[0], &answer("anything", Some("ref")), None).is_none(), "with one, the embedder is asked");
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), 0.0, "clamped at 0");
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0, "no direction");
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!(similar(0.85, 0.8).passed && !similar(0.75, 0.8).passed);
    }

    #[test]
    fn a_tool_scorers_verdict_is_its_passed_else_its_threshold_else_none() {
        let s = parse(
            &[
                json!({"type": "tool", "name": "tone", "tool_id": "tool_1", "preset_parameters": {"lang": "en"}, "pass_threshold": 0.5}),
                json!({"type": "tool", "name": "facts", "tool_id": "tool_2"}),
            ],
            None,
        )
        .unwrap();
        assert_eq!((s[0].name(), s[1].name()), ("tone", "facts"), "several tool scorers under distinct names");
        assert!(score(&s[0], &answer("x", None), None).is_none());
        let v = tool_verdict("tone", &json!({"score": 0.4, "passed": true, "reasoning": "polite"}), Some(0.5)).unwrap();
        assert_eq!((v.scorer.as_str(), v.passed, v.reasoning.as_deref()), ("tone", true, Some("polite")), "passed wins");
        assert!(!tool_verdict("tone", &json!({"score": 0.4}), Some(0.5)).unwrap().passed);
        assert!(tool_verdict("tone", &json!({"score": 0.6}), Some(0.5)).unwrap().passed);
        assert!(tool_verdict("facts", &json!({"score": 0.6}), None).is_err(), "no passed, no threshold: no verdict");
        assert!(tool_verdict("facts", &json!({"score": 1.5, "passed": true}), None).is_err());
        assert!(tool_verdict("facts", &json!("fine"), None).is_err());
    }

    #[test]
    fn a_json_logic_scorer_reads_output_expected_object_input_and_metadata() {
        let expr = json!({"type": "json_logic", "expression": {"and": [
            {"in": ["invoice", {"var": "output"}]},
            {"==": [{"var": "object.total"}, {"var": "item.metadata.total"}]},
            {"==": [{"var": "input.0.role"}, "user"]},
            {"!=": [{"var": "expected"}, null]},
        ]}});
        let s = parse(&[expr], None).unwrap();
        let input = [json!({"role": "user", "content": "total?"})];
        let (object, metadata) = (json!({"total": "12"}), json!({"total": 12}));
        let a = Answer { text: "the invoice says 12", object: Some(&object), expected: Some("12"), input: &input, metadata: Some(&metadata) };
        let out = score(&s[0], &a, None).unwrap();
        assert_eq!((out.scorer.as_str(), out.score, out.passed), ("json_logic", 1.0, true));
        let wrong = json!({"total": 13});
        assert!(!score(&s[0], &Answer { object: Some(&wrong), ..a }, None).unwrap().passed);
        assert!(!score(&s[0], &Answer { object: None, expected: None, ..answer("the invoice", None) }, None).unwrap().passed);
    }

    #[test]
    fn the_judge_prompt_is_filled_once_and_its_verdict_read() {
        let p = render("Q: {{input}} A: {{output}} R: {{expected}} {{other}}", &[json!({"role": "user", "content": "hi"})], "{{expected}}", None);
        assert_eq!(p, r#"Q: [{"content":"hi","role":"user"}] A: {{expected}} R:  {{other}}"#);
        let v = verdict("```json\n{\"score\": 0.8, \"reasoning\": \"close\"}\n```", 0.7).unwrap();
        assert_eq!((v.score, v.passed, v.reasoning.as_deref()), (0.8, true, Some("close")));
        assert!(!verdict("Sure! {\"score\": 0.5}", 0.7).unwrap().passed);
        assert!(verdict("{\"score\": 2}", 0.7).is_err());
        assert!(verdict("great answer", 0.7).is_err());
    }
}
