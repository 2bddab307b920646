//! The generation's side of knowledge: the `write_memory` tool a write store adds
//! (`agents::knowledge::write_memory`, indexed like every entry).

use serde_json::Value;

use crate::agents::tools::call::Env;
use crate::agents::Project;
use crate::error::ErrorCode;

pub async fn write_memory(
    env: &Env<'_>,
    p: Project<'_>,
    store_id: &str,
    args: &Value,
    source: crate::agents::knowledge::Provenance,
) -> Result<Value, String> {
    let content = args.get("content").and_then(Value::as_str).unwrap_or_default();
    if content.trim().is_empty() {
        return Err("content must not be empty".into());
    }
    crate::agents::knowledge::write_memory(env, p, store_id, content, None, source).await.map_err(|e| e.message())
}
