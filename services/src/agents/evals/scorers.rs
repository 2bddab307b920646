//! The scorers an eval freezes (evaluations.yaml `Scorers`): `exact_match`,
//! `contains`, `regex` (Quarry's: the output matches a pattern), `output_schema`
//! (JSON Schema through the `jsonschema` crate, as an agent's own `output_schema` is
//! checked), `json_logic` (an expression over `{input, output, object, expected,
//! item.metadata}`, truthy scores 1, evaluated as guardrails' JSON Logic is) and
//! `llm_judge` (a model's verdict on a rubric). This file is pure: the
//! judge's call is made by `run`, which hands its reply to [`verdict`].

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
}

/// The most characters of a regex pattern (compiled once per item).
const MAX_PATTERN_CHARS: usize = 1_000;

impl Scorer {
    pub fn name(&self) -> &'static str {
        match self {
            Scorer::ExactMatch => "exact_match",
            Scorer::Contains { .. } => "contains",
            Scorer::Regex { .. } => "regex",
            Scorer::OutputSchema { .. } => "output_schema",
            Scorer::JsonLogic { .. } => "json_logic",
            Scorer::LlmJudge { .. } => "llm_judge",
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
                format!("{field}: {e} (this server scores exact_match, contains, regex, output_schema, json_logic and llm_judge)."),
            )
        })?;
        if out.iter().any(|o| o.name() == s.name()) {
            return Err(invalid(field.clone(), format!("{field}: the scorer type {} appears more than once.", s.name())));
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

/// Scores `a` with a deterministic scorer; `None` for the judge (see [`verdict`]).
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
        // An expression that errs over this answer scores 0, as a falsy one does.
        Scorer::JsonLogic { expression } => logic::apply(&Value::Object(expression.clone()), &logic_data(a)).is_ok_and(|v| logic::truthy(&v)),
        Scorer::LlmJudge { .. } => return None,
    };
    Some(binary(s, passed))
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
            (json!([{"type": "tool", "name": "t", "tool_id": "tool_x"}]), "scorers[0]"),
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
