//! The one evaluator: a guardrail against one call (a tool call at dispatch, or the
//! dry run of `evaluateGuardrail`) or one text (a generation's input or output), giving
//! the `guardrail_evaluation` record guardrails.yaml defines. Several guardrails that
//! apply compose stricter-wins: `blocked` > `tripwire` > `route_to_approval` > `execute`.

use serde::Serialize;
use serde_json::{json, Map, Value};

use quarry_index::identify;

use super::document::{self, Action, Class, Rule, Stage};
use super::logic::{self, Data};
use crate::agents::agent::record::GuardrailRecord;

/// What an evaluation decides, weakest first (the order composition takes the max of).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Execute,
    RouteToApproval,
    Tripwire,
    Blocked,
}

/// What an `identifiers` rule found and did (Quarry's, beside SOAT's fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub stage: &'static str,
    pub action: &'static str,
    /// How many identifiers, by kind.
    pub counts: Map<String, Value>,
}

/// guardrails.yaml's `GuardrailEvaluation`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub kind: &'static str,
    pub guardrail_id: String,
    pub guardrail_version: Option<u64>,
    pub scope: &'static str,
    pub tool: Option<String>,
    pub action: Option<String>,
    pub class: &'static str,
    pub decision: Decision,
    pub guard_result: Option<bool>,
    pub context_source: &'static str,
    pub context_snapshot: Map<String, Value>,
    pub agent_id: Option<String>,
    pub orchestration_run_id: Option<String>,
    pub generation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifiers: Option<Found>,
}

impl Evaluation {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("an evaluation serializes")
    }

    /// Whether the trace should say so: anything but a plain execute.
    pub fn notable(&self) -> bool {
        self.decision != Decision::Execute || self.identifiers.is_some()
    }
}

/// A guardrail that applies, where it is attached; `record` is `None` for an id that
/// no longer resolves (fail-closed: class C).
#[derive(Debug, Clone)]
pub struct Applied {
    pub id: String,
    pub scope: &'static str,
    pub record: Option<GuardrailRecord>,
}

/// Who and what is evaluated.
#[derive(Debug, Clone, Default)]
pub struct Subject<'a> {
    pub project_id: &'a str,
    pub agent_id: Option<&'a str>,
    pub generation_id: Option<&'a str>,
    pub tool_id: Option<&'a str>,
    pub tool_name: Option<&'a str>,
    pub action: Option<&'a str>,
    pub context: Option<&'a Value>,
}

fn base(a: &Applied, s: &Subject<'_>) -> Evaluation {
    Evaluation {
        kind: "guardrail_evaluation",
        guardrail_id: a.id.clone(),
        guardrail_version: a.record.as_ref().map(|r| r.version),
        scope: a.scope,
        tool: s.tool_name.map(str::to_owned),
        action: s.action.or(s.tool_name).map(str::to_owned),
        class: "A",
        decision: Decision::Execute,
        guard_result: None,
        context_source: if s.context.is_some() { "caller" } else { "none" },
        context_snapshot: Map::new(),
        agent_id: s.agent_id.map(str::to_owned),
        orchestration_run_id: None,
        generation_id: s.generation_id.map(str::to_owned),
        identifiers: None,
    }
}

/// The data the document's `var`s read: only what resolves is present.
fn data(args: &Value, s: &Subject<'_>) -> Value {
    let mut runtime = Map::new();
    let mut put = |path: &[&str], v: Option<&str>| {
        if let Some(v) = v {
            let mut at = &mut runtime;
            for p in &path[..path.len() - 1] {
                at = at.entry(*p).or_insert_with(|| json!({})).as_object_mut().expect("an object");
            }
            at.insert(path[path.len() - 1].into(), Value::from(v));
        }
    };
    put(&["action"], s.action.or(s.tool_name));
    put(&["tool", "id"], s.tool_id);
    put(&["tool", "name"], s.tool_name);
    put(&["agent", "id"], s.agent_id);
    put(&["project", "id"], Some(s.project_id));
    json!({"args": args, "context": s.context.cloned().unwrap_or_else(|| json!({})), "runtime": runtime})
}

/// A guardrail's decision on a tool call with `args` (already redacted, when a rule
/// redacts them: see [`scrub_args`]).
pub fn call(a: &Applied, args: &Value, s: &Subject<'_>) -> Evaluation {
    let mut e = base(a, s);
    let Some(r) = &a.record else {
        e.class = "C";
        e.decision = Decision::RouteToApproval;
        return e;
    };
    let doc = &r.document;
    let root = data(args, s);
    let mut d = Data { root: &root, read: Map::new() };
    let default = doc.get("default_class").and_then(Class::parse).unwrap_or(Class::C);
    let class = match &doc.get("class") {
        Some(Value::String(_)) => Class::parse(&doc["class"]).unwrap_or(default),
        Some(expr) => logic::eval(expr, &mut d).ok().as_ref().and_then(Class::parse).unwrap_or(default),
        None => default,
    };
    e.class = class.as_str();
    e.decision = match class {
        Class::A => Decision::Execute,
        Class::C => Decision::RouteToApproval,
        Class::D => Decision::Blocked,
        Class::B => {
            let passed = doc.get("guard").is_none_or(|g| logic::eval(g, &mut d).is_ok_and(|v| logic::truthy(&v)));
            e.guard_result = Some(passed);
            match (passed, doc.get("escalate").and_then(Value::as_bool).unwrap_or(false)) {
                (true, _) => Decision::Execute,
                (false, true) => Decision::RouteToApproval,
                (false, false) => Decision::Tripwire,
            }
        }
    };
    e.context_snapshot = d.read;
    e
}

/// The counts of what was found, by kind name.
fn counts(c: &identify::Counts) -> Map<String, Value> {
    c.by_count().into_iter().map(|(k, n)| (k.name().to_owned(), Value::from(n))).collect()
}

/// What a rule's action decides once it found something.
fn decided(action: Action) -> (Decision, &'static str) {
    match action {
        Action::Redact | Action::Flag => (Decision::Execute, "A"),
        Action::Block => (Decision::Blocked, "D"),
        Action::RequireApproval => (Decision::RouteToApproval, "C"),
    }
}

/// The guardrail's `identifiers` rule at `stage` over `text`: the evaluation when it
/// found something, and the text as it goes on (masked when the rule redacts or blocks:
/// what a guardrail stops is not kept either).
pub fn text(a: &Applied, stage: Stage, text: &str, s: &Subject<'_>) -> Option<(Evaluation, String)> {
    let rule = a.record.as_ref().and_then(|r| document::rule(&r.document)).filter(|r| r.applies(stage))?;
    let masked = identify::mask(text, rule.kinds);
    if masked.counts.total() == 0 && masked.text == text {
        return None;
    }
    let mut e = base(a, s);
    (e.decision, e.class) = decided(rule.action);
    e.identifiers = Some(Found { stage: stage.as_str(), action: rule.action.as_str(), counts: counts(&masked.counts) });
    let out = if rule.action == Action::Flag || rule.action == Action::RequireApproval { text.to_owned() } else { masked.text };
    Some((e, out))
}

/// The rule of `a` at the tool-call stage over every string of `args`: what it found
/// (counts, decision) and the arguments as they go on.
pub fn scrub_args(a: &Applied, args: &Value, s: &Subject<'_>) -> Option<(Evaluation, Value)> {
    let rule: Rule = a.record.as_ref().and_then(|r| document::rule(&r.document)).filter(|r| r.applies(Stage::ToolCall))?;
    let mut total = identify::Counts::default();
    let keep = matches!(rule.action, Action::Flag | Action::RequireApproval);
    let out = map_strings(args, &mut |t| {
        let m = identify::mask(t, rule.kinds);
        total.add(&m.counts);
        if keep {
            t.to_owned()
        } else {
            m.text
        }
    });
    if total.total() == 0 && out == *args {
        return None;
    }
    let mut e = base(a, s);
    (e.decision, e.class) = decided(rule.action);
    e.identifiers = Some(Found { stage: Stage::ToolCall.as_str(), action: rule.action.as_str(), counts: counts(&total) });
    Some((e, out))
}

/// `v` with each string (object keys aside) replaced by `f` of it.
pub fn map_strings(v: &Value, f: &mut impl FnMut(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| map_strings(x, f)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), map_strings(x, f))).collect()),
        other => other.clone(),
    }
}

/// The strictest of `evaluations`' decisions (`Execute` when there are none).
pub fn strictest(evaluations: &[Evaluation]) -> Decision {
    evaluations.iter().map(|e| e.decision).max().unwrap_or(Decision::Execute)
}

/// The approval window of the strictest-matching guardrail that routes to approval.
pub fn expires_in(evaluations: &[Evaluation], applied: &[Applied]) -> Option<u64> {
    evaluations
        .iter()
        .filter(|e| e.decision == Decision::RouteToApproval)
        .find_map(|e| applied.iter().find(|a| a.id == e.guardrail_id)?.record.as_ref()?.document.get("expires_in")?.as_u64())
}
