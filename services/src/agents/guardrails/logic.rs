//! The JSON Logic a guardrail's `class` and `guard` are written in (jsonlogic.com's
//! operators, as far as a policy needs them), evaluated over `{args, context, runtime}`.
//! No crate for JSON Logic is in this workspace, and the semantics a guardrail needs
//! are narrower than the library's: a `var` of `context.*` or `runtime.*` that does not
//! resolve is not a falsy value but a failure ([`Unresolved`]), so that forgetting to
//! supply context tightens a policy rather than loosening it (guardrails.md,
//! "Fail-closed at both ends"); an absent `args.*` reads as `null`, as JSON Logic says.

use serde_json::{Map, Value};

/// The namespaces a `var` may read.
pub const ROOTS: &[&str] = &["args", "context", "runtime"];

/// The `runtime.*` keys a document may name (guardrails.md's catalog).
pub const RUNTIME: &[&str] = &[
    "runtime.action",
    "runtime.tool.id",
    "runtime.tool.name",
    "runtime.agent.id",
    "runtime.project.id",
    "runtime.run.node_attempt",
    "runtime.run.tool_calls",
    "runtime.activity.actions_1h",
    "runtime.activity.actions_24h",
    "runtime.usage.cost_usd_1h",
    "runtime.usage.cost_usd_24h",
    "runtime.usage.cost_usd_7d",
    "runtime.usage.cost_usd_30d",
    "runtime.usage.tokens_24h",
    "runtime.usage.tokens_30d",
    "runtime.usage.run_tokens",
    "runtime.usage.run_cost_usd",
];

const OPERATORS: &[&str] = &[
    "var", "missing", "if", "?:", "==", "===", "!=", "!==", "!", "!!", "and", "or", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "min", "max",
    "in", "cat",
];

/// A `var` that did not resolve (a missing `context.*` key, a `runtime.*` value this
/// server cannot compute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved(pub String);

/// Checks an expression on write: every operator known, every `var` in a namespace,
/// every `runtime.*` key in the catalog. The message names what is wrong.
pub fn check(v: &Value) -> Result<(), String> {
    match v {
        Value::Array(a) => a.iter().try_for_each(check),
        Value::Object(m) if m.len() == 1 => {
            let (op, arg) = m.iter().next().expect("one key");
            if !OPERATORS.contains(&op.as_str()) {
                return Err(format!("the JSON Logic operator {op:?} is not one this server runs"));
            }
            if op == "var" {
                let path = var_path(arg).ok_or("a var names a path (a string)")?;
                let root = path.split('.').next().unwrap_or_default();
                if !ROOTS.contains(&root) || !path.contains('.') {
                    return Err(format!("the var {path:?} reads outside args.*, context.* and runtime.*"));
                }
                if root == "runtime" && !RUNTIME.contains(&path) {
                    return Err(format!("the var {path:?} is not a runtime.* key of the catalog"));
                }
                return Ok(());
            }
            check(arg)
        }
        Value::Object(_) => Err("a JSON Logic expression is an object of one operator".into()),
        _ => Ok(()),
    }
}

fn var_path(arg: &Value) -> Option<&str> {
    match arg {
        Value::String(s) => Some(s),
        Value::Array(a) => a.first().and_then(Value::as_str),
        _ => None,
    }
}

/// What an evaluation reads, and the values it read (`context_snapshot`).
pub struct Data<'a> {
    pub root: &'a Value,
    pub read: Map<String, Value>,
}

impl Data<'_> {
    fn var(&mut self, path: &str, default: Option<&Value>) -> Result<Value, Unresolved> {
        let mut at = Some(self.root);
        for part in path.split('.') {
            at = at.and_then(|v| match v {
                Value::Object(m) => m.get(part),
                Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            });
        }
        let found = match (at, default) {
            (Some(v), _) => v.clone(),
            (None, Some(d)) => d.clone(),
            (None, None) if path.starts_with("args.") => Value::Null,
            (None, None) => return Err(Unresolved(path.to_owned())),
        };
        self.read.insert(path.to_owned(), found.clone());
        Ok(found)
    }
}

/// JavaScript's truthiness, as JSON Logic uses it.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(_) => true,
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Null => Some(0.0),
        _ => None,
    }
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::String(x), Value::String(y)) => x == y,
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => num(a)?.partial_cmp(&num(b)?),
    }
}

fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// Evaluates `v` over `data`.
pub fn eval(v: &Value, data: &mut Data<'_>) -> Result<Value, Unresolved> {
    let (op, arg) = match v {
        Value::Object(m) if m.len() == 1 => m.iter().next().expect("one key"),
        Value::Array(a) => return a.iter().map(|x| eval(x, data)).collect::<Result<Vec<_>, _>>().map(Value::Array),
        other => return Ok(other.clone()),
    };
    let args: Vec<Value> = match arg {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let lazy = |i: usize, data: &mut Data<'_>| -> Result<Value, Unresolved> { args.get(i).map_or(Ok(Value::Null), |a| eval(a, data)) };
    Ok(match op.as_str() {
        "var" => {
            let path = lazy(0, data)?;
            let path = path.as_str().unwrap_or_default().to_owned();
            let default = args.get(1).cloned();
            return data.var(&path, default.as_ref());
        }
        "missing" => {
            let mut out = Vec::new();
            for i in 0..args.len() {
                let p = lazy(i, data)?;
                if let Some(p) = p.as_str() {
                    if data.var(p, None).map_or(true, |v| v.is_null()) {
                        out.push(Value::from(p));
                    }
                }
            }
            Value::Array(out)
        }
        "if" | "?:" => {
            let mut i = 0;
            while i + 1 < args.len() {
                if truthy(&lazy(i, data)?) {
                    return lazy(i + 1, data);
                }
                i += 2;
            }
            if i < args.len() {
                lazy(i, data)?
            } else {
                Value::Null
            }
        }
        "and" => {
            let mut last = Value::Bool(true);
            for i in 0..args.len() {
                last = lazy(i, data)?;
                if !truthy(&last) {
                    return Ok(last);
                }
            }
            last
        }
        "or" => {
            let mut last = Value::Bool(false);
            for i in 0..args.len() {
                last = lazy(i, data)?;
                if truthy(&last) {
                    return Ok(last);
                }
            }
            last
        }
        "!" => Value::Bool(!truthy(&lazy(0, data)?)),
        "!!" => Value::Bool(truthy(&lazy(0, data)?)),
        "==" => Value::Bool(loose_eq(&lazy(0, data)?, &lazy(1, data)?)),
        "!=" => Value::Bool(!loose_eq(&lazy(0, data)?, &lazy(1, data)?)),
        "===" => Value::Bool(lazy(0, data)? == lazy(1, data)?),
        "!==" => Value::Bool(lazy(0, data)? != lazy(1, data)?),
        "<" | "<=" | ">" | ">=" => {
            let vals: Vec<Value> = (0..args.len()).map(|i| lazy(i, data)).collect::<Result<_, _>>()?;
            let ok = |a: &Value, b: &Value| {
                compare(a, b).is_some_and(|o| match op.as_str() {
                    "<" => o.is_lt(),
                    "<=" => o.is_le(),
                    ">" => o.is_gt(),
                    _ => o.is_ge(),
                })
            };
            Value::Bool(vals.len() >= 2 && vals.windows(2).all(|w| ok(&w[0], &w[1])))
        }
        "+" | "*" | "min" | "max" => {
            let vals: Vec<f64> = (0..args.len()).map(|i| lazy(i, data).map(|v| num(&v).unwrap_or(f64::NAN))).collect::<Result<_, _>>()?;
            let f = match op.as_str() {
                "+" => vals.iter().sum(),
                "*" => vals.iter().product(),
                "min" => vals.iter().copied().fold(f64::INFINITY, f64::min),
                _ => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            };
            number(f)
        }
        "-" | "/" | "%" => {
            let a = num(&lazy(0, data)?).unwrap_or(f64::NAN);
            if args.len() == 1 && op == "-" {
                return Ok(number(-a));
            }
            let b = num(&lazy(1, data)?).unwrap_or(f64::NAN);
            number(match op.as_str() {
                "-" => a - b,
                "/" => a / b,
                _ => a % b,
            })
        }
        "in" => {
            let (needle, hay) = (lazy(0, data)?, lazy(1, data)?);
            Value::Bool(match (&needle, &hay) {
                (_, Value::Array(a)) => a.iter().any(|x| x == &needle),
                (Value::String(n), Value::String(h)) => h.contains(n.as_str()),
                _ => false,
            })
        }
        "cat" => {
            let mut s = String::new();
            for i in 0..args.len() {
                match lazy(i, data)? {
                    Value::String(x) => s.push_str(&x),
                    Value::Null => {}
                    other => s.push_str(&other.to_string()),
                }
            }
            Value::String(s)
        }
        // Not an operator (refused on write): a literal object.
        _ => v.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(expr: Value, data: Value) -> Result<Value, Unresolved> {
        let mut d = Data { root: &data, read: Map::new() };
        eval(&expr, &mut d)
    }

    #[test]
    fn classifies_by_a_threshold_and_reads_a_missing_arg_as_null() {
        let class = json!({"if": [{"<": [{"var": "args.amount"}, 500]}, "B", "C"]});
        assert_eq!(run(class.clone(), json!({"args": {"amount": 100}})), Ok(json!("B")));
        assert_eq!(run(class.clone(), json!({"args": {"amount": 900}})), Ok(json!("C")));
        assert_eq!(run(class, json!({"args": {}})), Ok(json!("B")));
    }

    #[test]
    fn a_missing_context_key_is_unresolved_not_falsy() {
        let guard = json!({"<=": [{"var": "args.amount"}, {"var": "context.max"}]});
        assert_eq!(run(guard.clone(), json!({"args": {"amount": 1}, "context": {"max": 5}})), Ok(json!(true)));
        assert_eq!(run(guard, json!({"args": {"amount": 1}, "context": {}})), Err(Unresolved("context.max".into())));
    }

    #[test]
    fn check_refuses_unknown_operators_namespaces_and_runtime_keys() {
        assert!(check(&json!({"and": [{"var": "args.a"}, {"var": "runtime.usage.cost_usd_24h"}]})).is_ok());
        assert!(check(&json!({"regex": ["a", "b"]})).is_err());
        assert!(check(&json!({"var": "secrets.a"})).is_err());
        assert!(check(&json!({"var": "runtime.usage.nope"})).is_err());
    }
}
