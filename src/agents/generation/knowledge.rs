//! The generation's side of knowledge: the `write_memory` tool a write store adds.

use serde_json::{json, Value};

use crate::agents::tools::call::Env;
use crate::agents::Project;

pub async fn write_memory(env: &Env<'_>, p: Project<'_>, store_id: &str, args: &Value) -> Result<Value, String> {
    let content = args.get("content").and_then(Value::as_str).unwrap_or_default();
    if content.trim().is_empty() {
        return Err("content must not be empty".into());
    }
    let input = json!({"memory_id": store_id, "content": content});
    crate::agents::tools::builtin::write_memory(env, p, &input).await.map_err(|e| e.to_string())
}
