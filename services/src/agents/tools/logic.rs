//! The JSON Logic a tool's `output_mapping` and a pipeline's step inputs and `output`
//! are written in, as far as this server runs it: `{"var": "a.b"}` (or
//! `{"var": ["a.b", default]}`) reads a dotted path of the data; any other object or
//! array is a template whose values are evaluated in turn; anything else is itself.
//! Other JSON Logic operators are refused on write, naming what is not implemented.

use serde_json::{Map, Value};

use super::ToolError;

/// What an `output_mapping` reads: `{output, input}`.
pub const MAPPING_ROOTS: &[&str] = &["output", "input"];
/// What a pipeline's inputs and output read: `{input, steps}`.
pub const PIPELINE_ROOTS: &[&str] = &["input", "steps"];

/// The JSON Logic operators this server does not run (refused rather than taken for
/// a template key).
const OPERATORS: &[&str] = &[
    "if",
    "==",
    "===",
    "!=",
    "!==",
    "!",
    "!!",
    "or",
    "and",
    ">",
    ">=",
    "<",
    "<=",
    "max",
    "min",
    "+",
    "-",
    "*",
    "/",
    "%",
    "map",
    "filter",
    "reduce",
    "all",
    "none",
    "some",
    "merge",
    "in",
    "cat",
    "substr",
    "log",
    "missing",
    "missing_some",
    "?:",
];

#[derive(Debug)]
pub struct LogicError {
    message: String,
    unsupported: bool,
}

impl std::fmt::Display for LogicError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl LogicError {
    /// As the tool's error, naming the field it was found in.
    pub fn at(self, field: &str) -> ToolError {
        let m = format!("{field}: {}", self.message);
        if self.unsupported {
            ToolError::NotImplemented(m)
        } else {
            ToolError::Invalid(m)
        }
    }
}

/// Checks `v`: every `var` reads one of `roots`, and under `steps` only a step in `steps`.
pub fn check(v: &Value, roots: &[&str], steps: &[&str]) -> Result<(), LogicError> {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("var") => check_var(&o["var"], roots, steps),
        Value::Object(o) if o.len() == 1 && OPERATORS.contains(&o.keys().next().map_or("", String::as_str)) => Err(LogicError {
            message: format!("the JSON Logic operator {:?} is not implemented (only \"var\" is)", o.keys().next().map_or("", String::as_str)),
            unsupported: true,
        }),
        Value::Object(o) => o.values().try_for_each(|x| check(x, roots, steps)),
        Value::Array(a) => a.iter().try_for_each(|x| check(x, roots, steps)),
        _ => Ok(()),
    }
}

fn check_var(arg: &Value, roots: &[&str], steps: &[&str]) -> Result<(), LogicError> {
    let bad = |m: String| LogicError { message: m, unsupported: false };
    let path = match arg {
        Value::String(s) => s.as_str(),
        Value::Array(a) if !a.is_empty() && a.len() <= 2 => a[0].as_str().ok_or_else(|| bad("var's path must be a string".into()))?,
        _ => return Err(bad("var takes a path string, or [path, default]".into())),
    };
    let mut parts = path.split('.');
    let root = parts.next().unwrap_or("");
    if !roots.contains(&root) {
        return Err(bad(format!("var {path:?} must start with {}", roots.join(" or "))));
    }
    if root == "steps" {
        let step = parts.next().unwrap_or("");
        if !steps.contains(&step) {
            return Err(bad(format!("var {path:?} reads step {step:?}, which is not an earlier step")));
        }
    }
    Ok(())
}

/// `v` evaluated over `data`.
pub fn eval(v: &Value, data: &Value) -> Value {
    match v {
        Value::Object(o) if o.len() == 1 && o.contains_key("var") => var(&o["var"], data),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), eval(x, data))).collect::<Map<_, _>>()),
        Value::Array(a) => Value::Array(a.iter().map(|x| eval(x, data)).collect()),
        other => other.clone(),
    }
}

fn var(arg: &Value, data: &Value) -> Value {
    let (path, default) = match arg {
        Value::Array(a) => (a.first().and_then(Value::as_str).unwrap_or(""), a.get(1).cloned().unwrap_or(Value::Null)),
        Value::String(s) => (s.as_str(), Value::Null),
        _ => return Value::Null,
    };
    let mut at = data;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let next = match at {
            Value::Object(o) => o.get(part),
            Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        match next {
            Some(n) => at = n,
            None => return default,
        }
    }
    at.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn var_reads_paths_and_templates_nest() {
        let data = json!({"input": {"x": 2, "list": [10, 20]}, "steps": {"a": {"sum": 5}}});
        let m = json!({"a": {"var": "input.x"}, "b": [{"var": "input.list.1"}, "lit"], "c": {"var": ["input.nope", 7]}, "d": {"var": "steps.a.sum"}});
        assert_eq!(eval(&m, &data), json!({"a": 2, "b": [20, "lit"], "c": 7, "d": 5}));
        assert!(check(&m, PIPELINE_ROOTS, &["a"]).is_ok());
        assert!(check(&m, PIPELINE_ROOTS, &[]).is_err(), "a step not yet run");
        assert!(check(&json!({"var": "output.text"}), MAPPING_ROOTS, &[]).is_ok());
        assert!(check(&json!({"var": "steps.a"}), MAPPING_ROOTS, &[]).is_err());
        let e = check(&json!({"x": {"cat": ["a", "b"]}}), MAPPING_ROOTS, &[]).unwrap_err();
        assert!(e.unsupported && e.message.contains("cat"));
    }
}
