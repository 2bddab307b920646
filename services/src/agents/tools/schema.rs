//! A tool's `parameters`: a JSON Schema, checked against its meta-schema and compiled
//! on write, and every call's arguments validated against it (the `jsonschema` crate,
//! without network: a remote `$ref` is refused, never fetched).

use serde_json::{Map, Value};

use super::ToolError;

/// Refuses a `parameters` that is not a usable JSON Schema.
pub fn check_schema(schema: &Map<String, Value>) -> Result<(), ToolError> {
    let schema = Value::Object(schema.clone());
    if let Err(e) = jsonschema::meta::validate(&schema) {
        return Err(ToolError::Invalid(format!("parameters is not a valid JSON Schema: {e} (at {})", e.instance_path())));
    }
    jsonschema::validator_for(&schema).map(|_| ()).map_err(|e| ToolError::Invalid(format!("parameters cannot be used as a JSON Schema: {e}")))
}

/// Refuses call arguments the tool's `parameters` does not accept, naming each fault.
pub fn check_input(schema: &Map<String, Value>, input: &Value) -> Result<(), ToolError> {
    let schema = Value::Object(schema.clone());
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| ToolError::Invalid(format!("the tool's parameters schema does not compile: {e}")))?;
    let faults: Vec<String> = validator.iter_errors(input).take(5).map(|e| format!("{} (at \"{}\")", e, e.instance_path())).collect();
    if faults.is_empty() {
        return Ok(());
    }
    Err(ToolError::Invalid(format!("input does not match the tool's parameters: {}", faults.join("; "))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn schemas_and_inputs_are_checked() {
        let s = obj(json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}}, "required": ["city"]}));
        check_schema(&s).unwrap();
        check_input(&s, &json!({"city": "Oslo"})).unwrap();
        let e = check_input(&s, &json!({"city": 3})).unwrap_err().to_string();
        assert!(e.contains("/city"), "{e}");
        assert!(check_input(&s, &json!({})).unwrap_err().to_string().contains("city"));
        assert!(check_schema(&obj(json!({"type": "objekt"}))).is_err());
        assert!(check_schema(&obj(json!({"type": "string", "pattern": "(unclosed"}))).is_err());
        assert!(check_schema(&obj(json!({"$ref": "https://example.com/s.json"}))).is_err(), "a remote $ref is not fetched");
    }
}
