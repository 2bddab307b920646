//! The JSON Logic a guardrail's `class` and `guard` (and an eval's `json_logic` scorer)
//! are written in, evaluated by the `datalogic-rs` crate as json-logic-js (which SOAT
//! runs) evaluates it. Three adjustments, made by rewriting the expression before the
//! crate compiles it (each pinned by the table in this file's tests):
//!
//! - **Fail closed on context.** In a guardrail, a `var` of `context.*` or `runtime.*`
//!   without a default that does not resolve is not a falsy value but a failure
//!   ([`Unresolved`]), so that forgetting to supply context tightens a policy rather
//!   than loosening it (guardrails.md, "Fail-closed at both ends"); it fails only when
//!   evaluated (an untaken `if` branch does not). An absent `args.*` reads as `null`,
//!   as JSON Logic says.
//! - **`==` and `!=` are JavaScript's loose equality**, as json-logic-js's: `null`
//!   equals only `null` (the crate makes `null == 0` true, so a missing `args.*` would
//!   compare equal to `0` or `false`), `"" == 0` and `true == "1"` hold.
//! - **`missing` counts `null` and `""` as missing**, as json-logic-js does (the crate
//!   only absent keys), for literal key lists; a computed key list keeps the crate's.
//!
//! The engine's truthiness is json-logic-js's (`[]` falsy, `{}` truthy). Where the
//! crate is stricter than JavaScript and stays so: an ordering comparison (`<`, ...)
//! or arithmetic on a value that is no number (`"a" < 1`) is an error, not `false`; a
//! guard that errs fails, a class that errs falls back to `default_class`.

use std::sync::OnceLock;

use datalogic_rs::bumpalo::Bump;
use datalogic_rs::datavalue::OwnedDataValue;
use datalogic_rs::operator::EvalContext;
use datalogic_rs::{CustomOperator, DataValue, Engine, Error, ErrorKind, EvaluationConfig, TruthyEvaluator};
use serde_json::{json, Map, Value};

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

/// The operators a guardrail document may use (each `var` also checked, see [`check`]).
const OPERATORS: &[&str] = &[
    "var",
    "missing",
    "missing_some",
    "if",
    "?:",
    "==",
    "===",
    "!=",
    "!==",
    "!",
    "!!",
    "and",
    "or",
    "<",
    "<=",
    ">",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "min",
    "max",
    "in",
    "cat",
    "substr",
    "merge",
];

/// The custom operators the rewrite introduces (not nameable in a document: their
/// names hold a character `check` refuses and no JSON Logic operator has).
const STRICT_VAR: &str = "quarry:var_strict";
const LOOSE_EQ: &str = "quarry:==";
const LOOSE_NE: &str = "quarry:!=";

/// What did not evaluate: a `var` of `context.*`/`runtime.*` that did not resolve (its
/// path), or an expression the evaluator refused (its message).
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

/// `path` in `root`, objects by key and arrays by index.
fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(root, |at, part| match at {
        Value::Object(m) => m.get(part),
        Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn fails_closed(path: &str) -> bool {
    path.starts_with("context.") || path.starts_with("runtime.")
}

/// json-logic-js's truthiness: `null`, `false`, `0`, `NaN`, `""` and `[]` are false.
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

fn owned_truthy(v: &OwnedDataValue) -> bool {
    match v {
        OwnedDataValue::Null => false,
        OwnedDataValue::Bool(b) => *b,
        OwnedDataValue::Number(n) => {
            let f = n.as_f64();
            f != 0.0 && !f.is_nan()
        }
        OwnedDataValue::String(s) => !s.is_empty(),
        OwnedDataValue::Array(a) => !a.is_empty(),
        _ => true,
    }
}

/// JavaScript's `ToNumber` of a string (`""` and blanks are 0; no number is NaN).
fn string_number(s: &str) -> f64 {
    let t = s.trim();
    if t.is_empty() {
        return 0.0;
    }
    t.parse().unwrap_or(f64::NAN)
}

/// JavaScript's `ToPrimitive` of an array or object, as `==` takes it.
fn primitive(v: &Value) -> String {
    match v {
        Value::Array(a) => a.iter().map(|x| if x.is_null() { String::new() } else { primitive(x) }).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// JavaScript's abstract equality (`==`) over JSON values. Two arrays or objects are
/// equal when structurally equal (JavaScript compares identity, which JSON cannot
/// express).
pub fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Bool(x), other) | (other, Value::Bool(x)) => loose_eq(&json!(u8::from(*x)), other),
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => n.as_f64() == Some(string_number(s)),
        (Value::Array(_) | Value::Object(_), Value::Array(_) | Value::Object(_)) => a == b,
        (c @ (Value::Array(_) | Value::Object(_)), p) | (p, c @ (Value::Array(_) | Value::Object(_))) => loose_eq(&Value::String(primitive(c)), p),
    }
}

/// `{"quarry:var_strict": path}`: a `context.*`/`runtime.*` var that fails when absent.
struct StrictVar;

impl CustomOperator for StrictVar {
    fn evaluate<'a>(&self, args: &[&'a DataValue<'a>], ctx: &mut EvalContext<'_, 'a>, _arena: &'a Bump) -> Result<&'a DataValue<'a>, Error> {
        let path = args.first().and_then(|a| a.as_str()).unwrap_or_default();
        let mut at: &'a DataValue<'a> = ctx.root_input();
        for part in path.split('.') {
            let next = match at {
                DataValue::Object(_) => at.get(part),
                DataValue::Array(_) => part.parse::<usize>().ok().and_then(|i| at.get(i)),
                _ => None,
            };
            at = next.ok_or_else(|| Error::variable_not_found(path.to_owned()))?;
        }
        Ok(at)
    }
}

/// `quarry:==` / `quarry:!=`: [`loose_eq`] on the two evaluated operands.
struct Loose {
    negate: bool,
}

impl CustomOperator for Loose {
    fn evaluate<'a>(&self, args: &[&'a DataValue<'a>], _ctx: &mut EvalContext<'_, 'a>, arena: &'a Bump) -> Result<&'a DataValue<'a>, Error> {
        let side = |i: usize| args.get(i).map_or(Value::Null, |v| v.to_serde_value());
        let eq = loose_eq(&side(0), &side(1));
        Ok(arena.alloc(DataValue::Bool(eq != self.negate)))
    }
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let config = EvaluationConfig::default().with_loose_equality_errors(false).with_truthy_evaluator(TruthyEvaluator::custom(owned_truthy));
        Engine::builder()
            .with_config(config)
            .add_operator(STRICT_VAR, StrictVar)
            .add_operator(LOOSE_EQ, Loose { negate: false })
            .add_operator(LOOSE_NE, Loose { negate: true })
            .build()
    })
}

/// The expression the crate runs: the adjustments of the module doc applied.
fn rewrite(v: &Value, strict: bool) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(|x| rewrite(x, strict)).collect()),
        Value::Object(m) if m.len() == 1 => {
            let (op, arg) = m.iter().next().expect("one key");
            match op.as_str() {
                "var" => {
                    let no_default = !matches!(arg, Value::Array(a) if a.len() > 1);
                    match var_path(arg) {
                        Some(path) if strict && no_default && fails_closed(path) => json!({ STRICT_VAR: path }),
                        _ => json!({ "var": rewrite(arg, strict) }),
                    }
                }
                "==" => json!({ LOOSE_EQ: rewrite(arg, strict) }),
                "!=" => json!({ LOOSE_NE: rewrite(arg, strict) }),
                "missing" => missing(arg).unwrap_or_else(|| json!({ "missing": rewrite(arg, strict) })),
                _ => json!({ op.clone(): rewrite(arg, strict) }),
            }
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), rewrite(x, strict))).collect()),
        other => other.clone(),
    }
}

/// json-logic-js's `missing` of literal keys: each key whose value is absent, `null` or
/// `""`, in order (a `var`, so never strict: `missing` is how a document asks).
fn missing(arg: &Value) -> Option<Value> {
    let keys: Vec<&str> = match arg {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => match a.as_slice() {
            [Value::Array(inner)] => inner.iter().map(Value::as_str).collect::<Option<_>>()?,
            items => items.iter().map(Value::as_str).collect::<Option<_>>()?,
        },
        _ => return None,
    };
    let each: Vec<Value> = keys.iter().map(|k| json!({"if": [{"or": [{"===": [{"var": k}, null]}, {"===": [{"var": k}, ""]}]}, [k], []]})).collect();
    Some(json!({ "merge": each }))
}

/// Whether `expr` compiles (every operator known, each well formed), the message
/// naming what does not.
pub fn compiles(expr: &Value) -> Result<(), String> {
    known_operators(expr)?;
    engine().compile(&rewrite(expr, false)).map(drop).map_err(|e| e.to_string())
}

/// Every operator of `v` one the engine runs (the crate compiles an unknown one into a
/// call that fails only when evaluated).
fn known_operators(v: &Value) -> Result<(), String> {
    match v {
        Value::Array(a) => a.iter().try_for_each(known_operators),
        Value::Object(m) if m.len() == 1 => {
            let (op, arg) = m.iter().next().expect("one key");
            if !engine().builtin_operator_names().any(|b| b == op) {
                return Err(format!("the JSON Logic operator {op:?} is not one this server runs"));
            }
            known_operators(arg)
        }
        Value::Object(m) => m.values().try_for_each(known_operators),
        _ => Ok(()),
    }
}

/// Evaluates a JSON Logic expression over `data` as json-logic-js would (no namespace
/// fails closed): the evals `json_logic` scorer's evaluator.
pub fn apply(expr: &Value, data: &Value) -> Result<Value, String> {
    engine().eval_into::<Value, _, _>(&rewrite(expr, false), data).map_err(|e| e.to_string())
}

/// Evaluates a guardrail expression `v` over `data`, recording in `data.read` the
/// values of the namespace vars it names.
pub fn eval(v: &Value, data: &mut Data<'_>) -> Result<Value, Unresolved> {
    snapshot(v, data);
    engine().eval_into::<Value, _, _>(&rewrite(v, true), data.root).map_err(|e| match &e.kind {
        ErrorKind::VariableNotFound(path) => Unresolved(path.to_string()),
        _ => Unresolved(e.to_string()),
    })
}

/// Records each literal namespace `var` of `v` with the value it reads: found, else its
/// default, else `null` for `args.*`; an unresolved `context.*`/`runtime.*` is left out.
fn snapshot(v: &Value, data: &mut Data<'_>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| snapshot(x, data)),
        Value::Object(m) => {
            for (op, arg) in m {
                if op == "var" {
                    if let Some(path) = var_path(arg).filter(|p| ROOTS.contains(&p.split('.').next().unwrap_or_default())) {
                        let default = match arg {
                            Value::Array(a) => a.get(1),
                            _ => None,
                        };
                        let found = lookup(data.root, path).or(default).cloned().or_else(|| (!fails_closed(path)).then_some(Value::Null));
                        if let Some(found) = found {
                            data.read.insert(path.to_owned(), found);
                        }
                    }
                }
                snapshot(arg, data);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
