//! The wire shapes of the payload formats: a normalised request to a provider's
//! body, and a provider's whole (non-streamed) answer to an [`Output`]. Parameter
//! names and places come from the manifest's `parameter_mappings`; only the shape of
//! messages, tools and answers is per format — one file each.

pub mod anthropic;
pub mod converse;
pub mod gemini;
pub mod openai;

use serde_json::{Map, Value};

use super::error::LlmError;
use super::manifest::{Manifest, PayloadFormat};
use super::request::ChatRequest;
use super::stream::assemble::Output;

/// The request body for `m`.
pub fn encode(m: &Manifest, req: &ChatRequest, stream: bool) -> Result<Value, LlmError> {
    req.params.validate()?;
    let mut body = match m.format {
        PayloadFormat::OpenAi => openai::encode(m, req, stream)?,
        PayloadFormat::Anthropic => anthropic::encode(m, req, stream)?,
        PayloadFormat::Gemini => gemini::encode(m, req)?,
        PayloadFormat::Converse => converse::encode(m, req)?,
    };
    for (path, value) in map_parameters(m, &req.params.standard()) {
        set(&mut body, &path, value);
    }
    Ok(body)
}

/// A whole answer.
pub fn decode(m: &Manifest, body: &[u8]) -> Result<Output, String> {
    match m.format {
        PayloadFormat::OpenAi => openai::decode(body),
        PayloadFormat::Anthropic => anthropic::decode(body),
        PayloadFormat::Gemini => gemini::decode(body),
        PayloadFormat::Converse => converse::decode(body),
    }
}

/// Standard parameters → (wire path, value): the manifest's defaults fill what is
/// missing, values are clamped to the manifest's declared ranges, and a parameter the
/// manifest does not map is not sent.
pub fn map_parameters(m: &Manifest, standard: &Map<String, Value>) -> Vec<(String, Value)> {
    let mut given = standard.clone();
    for (name, spec) in &m.param_specs {
        if let (false, Some(d)) = (given.contains_key(name), &spec.default) {
            given.insert(name.clone(), d.clone());
        }
    }
    given
        .into_iter()
        .filter_map(|(name, v)| {
            let path = m.params.get(&name)?;
            let v = match (m.param_specs.get(&name), v.as_f64()) {
                (Some(spec), Some(x)) => match clamp(spec, x) {
                    Some(c) if v.is_u64() => Value::from(c as u64),
                    Some(c) => Value::from(c),
                    None => v,
                },
                _ => v,
            };
            Some((path.clone(), v))
        })
        .collect()
}

fn clamp(spec: &super::manifest::RawParam, x: f64) -> Option<f64> {
    let (lo, hi) = match spec.range {
        Some([lo, hi]) => (Some(lo), Some(hi)),
        None => (spec.min, spec.max),
    };
    let c = x.max(lo.unwrap_or(f64::MIN)).min(hi.unwrap_or(f64::MAX));
    (c != x).then_some(c)
}

/// Sets `value` at a dotted path, creating objects on the way.
pub fn set(body: &mut Value, path: &str, value: Value) {
    let mut slot = body;
    for key in path.split('.') {
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        slot = slot.as_object_mut().expect("an object").entry(key).or_insert(Value::Null);
    }
    match (slot, value) {
        (Value::Object(existing), Value::Object(more)) => existing.extend(more),
        (slot, value) => *slot = value,
    }
}

/// Where the manifest puts a standard parameter, if it maps it.
pub fn place<'m>(m: &'m Manifest, name: &str) -> Option<&'m str> {
    m.params.get(name).map(String::as_str)
}

/// A tool call's arguments (JSON text) as an object.
pub fn arguments_object(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Map::new()))
}
