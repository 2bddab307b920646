//! Where one `/api/v1` module asks about another's records: which agents use a
//! provider, whether a guardrail or model route exists, what a project still holds.
//! Each function is the single place a module answers for its kind; a module that
//! owns the kind fills the body (agents: `agents_using_provider`; guardrails and
//! model routes: theirs; every kind: a line in `project_dependents` and
//! `remove_project_records`). Until then a kind that does not exist answers "none".

use crate::agents::agent::record::{AgentRecord, EvalRecord, EvalRunRecord, GuardrailRecord, ModelRouteRecord};
use crate::agents::agent::{AgentError, Agents};
use crate::store::{
    AiProviderRecord, ConversationRecord, DocumentRecord, FileRecord, MemoryEntryRecord, MemoryRecord, Records, SecretRecord, SessionRecord,
    StoreError, ToolRecord,
};

/// The ids of the agents of `account_id` whose `ai_provider_id` is `provider_id`
/// (or whose model route targets it): deleting the provider is 409
/// `AI_PROVIDER_HAS_DEPENDENTS` while there is one. Filled by the agents module.
pub fn agents_using_provider(records: &Records, account_id: &str, provider_id: &str) -> Result<Vec<String>, StoreError> {
    Agents::agents_using_provider(records, account_id, provider_id).map_err(|e| match e {
        AgentError::Store(e) => e,
        other => StoreError::Corrupt { what: "agents".into(), reason: other.to_string() },
    })
}

/// The ids of the chats of `account_id` bound to provider `provider_id` (chats, issue 36).
pub fn chats_using_provider(records: &Records, account_id: &str, provider_id: &str) -> Result<Vec<String>, StoreError> {
    crate::agents::chats::using_provider(records, account_id, provider_id)
}

/// Whether guardrail `id` exists in `project_id` (400 `GUARDRAIL_NOT_FOUND` when not).
/// Guardrails are the agents module's minimal records (`agents::agent::related`).
pub fn guardrail_in_project(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    in_project::<GuardrailRecord>(records, account_id, project_id, id)
}

fn in_project<R: super::InProject>(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    Ok(records.get::<R>(account_id, id)?.is_some_and(|r| r.project_id() == project_id))
}

fn count_in<R: super::InProject>(records: &Records, account_id: &str, project_id: &str) -> Result<usize, StoreError> {
    Ok(records.list::<R>(account_id)?.iter().filter(|r| r.project_id() == project_id).count())
}

/// Whether model route `id` exists in `project_id` (400 `MODEL_ROUTE_NOT_FOUND` when
/// not). Model routes are the agents module's (`agents::agent::related`).
pub fn model_route_in_project(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    in_project::<ModelRouteRecord>(records, account_id, project_id, id)
}

/// What `project_id` still holds, by kind (plural, snake case: `meta.<kind>_count`):
/// deleting it without `force` is 409 `PROJECT_HAS_DEPENDENTS` while any is non-zero.
/// Each module adds a line for its kind.
pub fn project_dependents(records: &Records, account_id: &str, project_id: &str) -> Result<Vec<(&'static str, usize)>, StoreError> {
    let in_project = |p: &AiProviderRecord| p.project_id == project_id;
    Ok(vec![
        ("ai_provider", records.list::<AiProviderRecord>(account_id)?.iter().filter(|p| in_project(p)).count()),
        ("agent", records.agents::<AgentRecord>(account_id, project_id)?.len()),
        ("model_route", count_in::<ModelRouteRecord>(records, account_id, project_id)?),
        ("guardrail", count_in::<GuardrailRecord>(records, account_id, project_id)?),
        ("eval", count_in::<EvalRecord>(records, account_id, project_id)?),
        ("secret", count_in::<SecretRecord>(records, account_id, project_id)?),
        ("tool", count_in::<ToolRecord>(records, account_id, project_id)?),
        ("memory", count_in::<MemoryRecord>(records, account_id, project_id)?),
        ("memory_entry", count_in::<MemoryEntryRecord>(records, account_id, project_id)?),
        // webhooks
        ("webhook", count_in::<crate::store::WebhookRecord>(records, account_id, project_id)?),
        // sessions, conversations, documents, files (issue 36)
        ("session", count_in::<SessionRecord>(records, account_id, project_id)?),
        ("conversation", count_in::<ConversationRecord>(records, account_id, project_id)?),
        ("document", count_in::<DocumentRecord>(records, account_id, project_id)?),
        ("file", count_in::<FileRecord>(records, account_id, project_id)?),
        // actors
        ("actor", count_in::<crate::store::ActorRecord>(records, account_id, project_id)?),
        // chats (issue 36)
        ("chat", count_in::<crate::store::ChatRecord>(records, account_id, project_id)?),
    ])
}

/// Whether tool `id` exists in exactly `project_id` (an agent's `tool_bindings[].tool_id`:
/// 400 `TOOL_NOT_FOUND` when not). Filled by the tools module.
pub fn tool_in_project(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<bool, StoreError> {
    in_project::<ToolRecord>(records, account_id, project_id, id)
}

/// The AI providers of `account_id` whose `secret_id` is `secret_id`: deleting the
/// secret is 409 `SECRET_HAS_DEPENDENTS` while there is one.
pub fn providers_using_secret(records: &Records, account_id: &str, secret_id: &str) -> Result<Vec<String>, StoreError> {
    Ok(records.list::<AiProviderRecord>(account_id)?.into_iter().filter(|p| p.secret_id.as_deref() == Some(secret_id)).map(|p| p.id).collect())
}

/// Removes every record `project_id` holds of the other modules' kinds, before the
/// project itself goes (`?force=true`); its keys and providers go with the project
/// (`Records::remove_project`). Each module adds a line for its kind. Files' bytes and
/// the documents' collection are not records: the caller removes them after
/// (`files::remove_unrecorded`, `documents::sweep`), and a crash in between leaves only
/// what those sweeps remove on the next start.
pub fn remove_project_records(records: &Records, account_id: &str, project_id: &str) -> Result<(), StoreError> {
    for agent in records.agents::<AgentRecord>(account_id, project_id)? {
        records.delete_agent::<AgentRecord>(account_id, &agent.id, true)?;
    }
    // evaluations (issue 37): results, items and datasets go with the runs and evals.
    remove_all::<crate::agents::evals::record::EvalResultRecord>(records, account_id, project_id)?;
    remove_all::<crate::agents::evals::record::DatasetItemRecord>(records, account_id, project_id)?;
    remove_all::<crate::agents::evals::record::DatasetRecord>(records, account_id, project_id)?;
    remove_all::<EvalRunRecord>(records, account_id, project_id)?;
    remove_all::<EvalRecord>(records, account_id, project_id)?;
    remove_all::<GuardrailRecord>(records, account_id, project_id)?;
    remove_all::<ModelRouteRecord>(records, account_id, project_id)?;
    remove_all::<SecretRecord>(records, account_id, project_id)?;
    remove_all::<ToolRecord>(records, account_id, project_id)?;
    // Memory stores' collections: memory::sweep.
    crate::agents::memory::remove_records(records, account_id, |m| m.project_id == project_id)?;
    // Webhooks, each with its deliveries.
    for w in records.list::<crate::store::WebhookRecord>(account_id)?.into_iter().filter(|w| w.project_id == project_id) {
        records.remove_webhook(account_id, &w.id)?;
    }
    remove_all::<MemoryEntryRecord>(records, account_id, project_id)?;
    // Sessions with their conversations, then the conversations no session holds.
    for s in records.list::<SessionRecord>(account_id)?.into_iter().filter(|s| s.project_id == project_id) {
        records.remove_session(account_id, &s.id)?;
    }
    for c in records.list::<ConversationRecord>(account_id)?.into_iter().filter(|c| c.project_id == project_id) {
        records.remove_conversation(account_id, &c.id)?;
    }
    // actors (after the sessions and messages that name them)
    remove_all::<crate::store::ActorRecord>(records, account_id, project_id)?;
    remove_all::<DocumentRecord>(records, account_id, project_id)?;
    for f in records.list::<FileRecord>(account_id)?.into_iter().filter(|f| f.project_id == project_id) {
        records.remove_file(account_id, &f.id)?;
    }
    remove_all::<crate::store::ChatRecord>(records, account_id, project_id)?; // chats (issue 36)
    Ok(())
}

fn remove_all<R: super::InProject>(records: &Records, account_id: &str, project_id: &str) -> Result<(), StoreError> {
    for r in records.list::<R>(account_id)?.into_iter().filter(|r| r.project_id() == project_id) {
        records.remove::<R>(account_id, r.id())?;
    }
    Ok(())
}
