//! `output_schema`: the model's answer parsed as JSON and checked against the agent's
//! schema on return (jsonschema, as tools' parameters are); a violation is 502
//! `OUTPUT_SCHEMA_VALIDATION_FAILED` naming the field.

use serde_json::{Map, Value};

use super::record::Failure;
use crate::error::Code;

pub fn parse(schema: &Map<String, Value>, text: &str) -> Result<Value, Failure> {
    let t = text.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).map_or(t, |r| r.trim_end().strip_suffix("```").unwrap_or(r)).trim();
    let value: Value = serde_json::from_str(t)
        .map_err(|e| Failure::new(Code::OutputSchemaValidationFailed, format!("The model's answer is not the JSON output_schema asks for: {e}.")))?;
    let validator = jsonschema::validator_for(&Value::Object(schema.clone()))
        .map_err(|e| Failure::new(Code::OutputSchemaValidationFailed, format!("output_schema does not compile: {e}")))?;
    if let Some(e) = validator.iter_errors(&value).next() {
        let at = e.instance_path().to_string();
        let field = if at.is_empty() { "(the whole output)".to_owned() } else { at.trim_start_matches('/').replace('/', ".") };
        let mut f = Failure::new(Code::OutputSchemaValidationFailed, format!("The model's output violates output_schema at {field}: {e}."));
        f.meta.insert("field".into(), Value::from(field));
        return Err(f);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Map<String, Value> {
        json!({"type": "object", "required": ["name", "tags"], "properties": {
            "name": {"type": "string", "minLength": 2},
            "kind": {"enum": ["a", "b"]},
            "tags": {"type": "array", "minItems": 1}
        }})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn outputs_are_parsed_and_checked_with_the_field_named() {
        assert_eq!(parse(&schema(), r#"{"name":"ok","tags":[1]}"#).unwrap()["name"], "ok");
        assert!(parse(&schema(), "```json\n{\"name\":\"ok\",\"tags\":[1]}\n```").is_ok());
        let e = parse(&schema(), r#"{"name":"x","tags":[1]}"#).unwrap_err();
        assert_eq!(e.meta["field"], "name", "{}", e.message);
        let e = parse(&schema(), r#"{"name":"ok","tags":[],"kind":"a"}"#).unwrap_err();
        assert_eq!(e.meta["field"], "tags");
        assert!(parse(&schema(), "not json").is_err());
    }
}
