//! SOAT chats (chats.yaml): a chat (`chat_…`) is a stored completion target, an AI
//! provider of its project with the model and instructions to use; and the
//! completion itself (`POST /api/v1/chat/completions`), OpenAI Chat Completions'
//! shape, against a chat or statelessly against a provider.
//!
//! A completion names exactly one target. With `ai_provider_id` it runs in the
//! provider's project; with `chat_id` in the chat's, its provider, model and
//! instructions applying. A chat made without a provider inherits its project's
//! `default_model_route_id`, read at each completion: the route's targets in order,
//! failing over on its `retry_on` classes as a generation does. `instructions` is the one channel for system text: a
//! request's replaces the chat's for that call (never merged), and a `role: "system"`
//! message is refused (400 `SYSTEM_MESSAGE_NOT_ALLOWED`), so request data cannot
//! rewrite a configured prompt. A message may name a SOAT document of the call's
//! project (`document_id`) instead of its `content`: the document's text is sent.
//! Chats keep no history; every request carries all its messages.
//!
//! The model call goes through the providers module (`providers::complete` and
//! `stream`): the record's kind and manifest, its secret, the egress policy, the
//! account's token meters, the local model for `local`. What this module prepares is
//! the call; [`Prepared`] is everything the handler needs to make it.

use serde::Deserialize;

use super::agent::record::{ModelRouteRecord, RetryOn};
use super::providers::{self, CallError, Upstreams};
use super::scope::{in_project, Scope};
use super::SoatError;
use crate::clock::now_rfc3339;
use crate::error::Code;
use crate::ids::random_base62;
use crate::llm::request::{Block, ChatRequest, Message, Role};
use crate::llm::{ChatStream, Completion};
use crate::store::{AiProviderRecord, ChatRecord, DocumentRecord, ProjectRecord, Records, CHAT_PREFIX};

in_project!(ChatRecord);

/// What a chat's operation refuses: the module's own refusal, the system message,
/// beside the `/api/v1` services' shared ones.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Soat(#[from] SoatError),
    #[error("messages[{index}]: a system message is not accepted in `messages`. Send system content in the `instructions` field instead.")]
    SystemMessage { index: usize },
}

impl From<crate::store::StoreError> for ChatError {
    fn from(e: crate::store::StoreError) -> ChatError {
        ChatError::Soat(e.into())
    }
}

impl crate::error::ErrorCode for ChatError {
    fn code(&self) -> Code {
        match self {
            ChatError::Soat(e) => e.code(),
            ChatError::SystemMessage { .. } => Code::SystemMessageNotAllowed,
        }
    }

    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            ChatError::Soat(e) => e.meta(),
            ChatError::SystemMessage { index } => {
                let mut m = serde_json::Map::new();
                m.insert("field".into(), format!("messages[{index}].role").into());
                Some(m)
            }
        }
    }
}

/// The most characters of a chat's `model`.
const MAX_MODEL_CHARS: usize = 200;
/// The most characters of `instructions` (an agent's instructions hold as many).
const MAX_INSTRUCTIONS_CHARS: usize = 100_000;

/// `POST /api/v1/chats` (strict).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewChat {
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub ai_provider_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

/// `POST /api/v1/chat/completions` (strict: a field OpenAI's API has and this one does
/// not, `temperature` say, is refused by name rather than silently ignored).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompletionIn {
    #[serde(default)]
    pub ai_provider_id: Option<String>,
    #[serde(default)]
    pub chat_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    pub messages: Vec<MessageIn>,
    #[serde(default)]
    pub stream: Option<bool>,
}

/// One message of a completion: `content`, or a document's text by `document_id`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageIn {
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub document_id: Option<String>,
}

/// A completion, ready to send: where it goes (in `scope`'s project), the request
/// (its model set per target), and whether it streams.
#[derive(Debug)]
pub struct Prepared {
    pub scope: Scope,
    /// The chat's or request's provider; or, for a chat on its project's default
    /// model route, the route's targets in order.
    pub targets: Vec<Target>,
    /// The failure classes a route fails over on (`provider_error`, `timeout`,
    /// `rate_limited`); none for a provider.
    pub retry_on: Vec<&'static str>,
    pub request: ChatRequest,
    pub stream: bool,
}

/// One place a completion may go: a provider and the model asked of it.
#[derive(Debug, Clone)]
pub struct Target {
    pub provider: AiProviderRecord,
    pub model: String,
}

fn check_text(field: &str, v: &str, max: usize) -> Result<(), SoatError> {
    let n = v.trim().chars().count();
    if n == 0 || v.chars().count() > max {
        return Err(SoatError::invalid(field, format!("must be 1 to {max} characters, not blank.")));
    }
    Ok(())
}

/// The provider `id` of exactly `scope`'s project: a 404 `AI_PROVIDER_NOT_FOUND` (the
/// spec's 404 for both operations) when there is none.
fn provider_in_project(records: &Records, scope: &Scope, id: &str) -> Result<AiProviderRecord, SoatError> {
    providers::in_project(records, scope, id).map_err(|e| match e {
        SoatError::NotFound { .. } => {
            SoatError::Reference { code: Code::AgentAiProviderNotFound, kind: "AI provider", field: "ai_provider_id", id: id.to_owned() }
        }
        e => e,
    })
}

/// Stores a chat in the scope's project, bound to a provider of that project, or (none
/// named) to the project's default model route.
pub fn create(records: &Records, scope: &Scope, new: NewChat) -> Result<ChatRecord, SoatError> {
    if let Some(name) = &new.name {
        crate::names::check(name, 200).map_err(|problem| SoatError::invalid("name", problem.to_string()))?;
    }
    if let Some(i) = &new.instructions {
        check_text("instructions", i, MAX_INSTRUCTIONS_CHARS)?;
    }
    if let Some(m) = &new.model {
        check_text("model", m, MAX_MODEL_CHARS)?;
    }
    let provider_id = match new.ai_provider_id {
        Some(id) => Some(provider_in_project(records, scope, &id)?.id),
        // SOAT: a chat that pins no provider inherits its project's default model
        // route, which must exist; each of its targets names its own model.
        None => {
            if new.model.is_some() {
                return Err(SoatError::invalid(
                    "model",
                    "cannot be set without ai_provider_id: each target of the project's default model route names its own.",
                ));
            }
            default_route(records, scope)?;
            None
        }
    };
    let now = now_rfc3339();
    let chat = ChatRecord {
        id: format!("{CHAT_PREFIX}{}", random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        ai_provider_id: provider_id,
        name: new.name.map(|n| n.trim().to_owned()),
        instructions: new.instructions,
        model: new.model.map(|m| m.trim().to_owned()),
        created_at: now.clone(),
        updated_at: now,
    };
    records.insert(&chat)?;
    Ok(chat)
}

/// The scope's project's default model route (400 when it has none, or names a route
/// that is gone).
fn default_route(records: &Records, scope: &Scope) -> Result<ModelRouteRecord, SoatError> {
    let project: Option<ProjectRecord> = records.get(&scope.account_id, &scope.project_id)?;
    let Some(route_id) = project.and_then(|p| p.default_model_route_id) else {
        return Err(SoatError::invalid(
            "ai_provider_id",
            format!("is required: project {} has no default_model_route_id for the chat to inherit.", scope.project_id),
        ));
    };
    let route: Option<ModelRouteRecord> = records.get(&scope.account_id, &route_id)?;
    route.filter(|r| r.project_id == scope.project_id).ok_or(SoatError::Reference {
        code: Code::ModelRouteNotFound,
        kind: "model route",
        field: "default_model_route_id",
        id: route_id,
    })
}

/// The targets of the project's default model route, in order, with its failover classes.
pub(crate) fn route_targets(records: &Records, scope: &Scope) -> Result<(Vec<Target>, Vec<&'static str>), SoatError> {
    let route = default_route(records, scope)?;
    let targets = route
        .targets
        .iter()
        .map(|t| Ok(Target { provider: provider_in_project(records, scope, &t.ai_provider_id)?, model: t.model.clone() }))
        .collect::<Result<Vec<_>, SoatError>>()?;
    let retry_on = route
        .retry_on
        .iter()
        .map(|r| match r {
            RetryOn::ProviderError => "provider_error",
            RetryOn::Timeout => "timeout",
            RetryOn::RateLimited => "rate_limited",
        })
        .collect();
    Ok((targets, retry_on))
}

/// The scope's project's chats, newest first (SOAT's order).
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<ChatRecord>, SoatError> {
    let mut all: Vec<ChatRecord> = scope.list(records)?;
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(all)
}

/// The chat when the scope sees it; 404 otherwise.
pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<ChatRecord, SoatError> {
    scope.find(records, "chat", id)
}

pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), SoatError> {
    get(records, scope, id)?;
    records.remove::<ChatRecord>(&scope.account_id, id)?;
    Ok(())
}

/// The chats of `account_id` bound to provider `provider_id`: deleting the provider is
/// 409 `AI_PROVIDER_HAS_DEPENDENTS` while there is one (SOAT: a chat is a hard reference).
pub fn using_provider(records: &Records, account_id: &str, provider_id: &str) -> Result<Vec<String>, crate::store::StoreError> {
    let chats = records.list::<ChatRecord>(account_id)?;
    Ok(chats.into_iter().filter(|c| c.ai_provider_id.as_deref() == Some(provider_id)).map(|c| c.id).collect())
}

/// The request's messages as the provider gets them: the refusals SOAT gives before
/// anything is looked up (none, a system message, a bad role, content and document
/// both or neither). Pure.
pub fn check_messages(messages: &[MessageIn]) -> Result<(), ChatError> {
    if messages.is_empty() {
        return Err(SoatError::invalid("messages", "is required and must be a non-empty array.").into());
    }
    if let Some(index) = messages.iter().position(|m| m.role == "system") {
        return Err(ChatError::SystemMessage { index });
    }
    for (i, m) in messages.iter().enumerate() {
        if !matches!(m.role.as_str(), "user" | "assistant") {
            return Err(SoatError::invalid(format!("messages[{i}].role"), format!("is user or assistant, not \"{}\".", m.role)).into());
        }
        match (&m.content, &m.document_id) {
            (Some(_), Some(_)) => return Err(SoatError::invalid(format!("messages[{i}]"), "has content or document_id, not both.").into()),
            (None, None) => return Err(SoatError::invalid(format!("messages[{i}]"), "needs content or a document_id.").into()),
            _ => {}
        }
    }
    Ok(())
}

/// Exactly one target (SOAT's messages). Pure.
pub fn check_target(req: &CompletionIn) -> Result<(), SoatError> {
    let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
    match (given(&req.ai_provider_id), given(&req.chat_id)) {
        (true, true) => Err(SoatError::invalid("chat_id", "ai_provider_id and chat_id are mutually exclusive.")),
        (false, false) => Err(SoatError::invalid("ai_provider_id", "ai_provider_id or chat_id is required.")),
        _ => Ok(()),
    }
}

/// Resolves a completion: checks it, finds its target (the chat and its provider, or
/// the provider) where the caller sees it, inlines the documents it names, and builds
/// the request (blocking: store reads).
pub fn prepare(records: &Records, scope: &Scope, req: CompletionIn) -> Result<Prepared, ChatError> {
    check_messages(&req.messages)?;
    check_target(&req)?;
    if let Some(m) = &req.model {
        check_text("model", m, MAX_MODEL_CHARS)?;
    }
    let asked = req.model.clone();
    let pinned = |provider: AiProviderRecord, model: Option<String>| {
        let model = asked.clone().or(model).unwrap_or_else(|| provider.default_model.clone());
        (vec![Target { provider, model }], Vec::new())
    };
    let (scope, (targets, retry_on), chat) = match (&req.chat_id, &req.ai_provider_id) {
        (Some(chat_id), _) if !chat_id.is_empty() => {
            let chat: ChatRecord = scope.get(records, chat_id)?.ok_or_else(|| SoatError::Reference {
                code: Code::ChatNotFound,
                kind: "chat",
                field: "chat_id",
                id: chat_id.clone(),
            })?;
            let scope = scope.within(&chat.project_id);
            let targets = match &chat.ai_provider_id {
                Some(id) => pinned(provider_in_project(records, &scope, id)?, chat.model.clone()),
                // The project's default route as it is now; each target names its model.
                None if asked.is_some() => {
                    return Err(SoatError::invalid(
                        "model",
                        "cannot be set for a chat on its project's default model route: each target names its own.",
                    )
                    .into());
                }
                None => route_targets(records, &scope)?,
            };
            (scope, targets, Some(chat))
        }
        (_, Some(provider_id)) => {
            let found: AiProviderRecord = scope.get(records, provider_id)?.ok_or_else(|| SoatError::Reference {
                code: Code::AgentAiProviderNotFound,
                kind: "AI provider",
                field: "ai_provider_id",
                id: provider_id.clone(),
            })?;
            (scope.within(&found.project_id), pinned(found, None), None)
        }
        _ => unreachable!("check_target admits one target"),
    };
    if targets.is_empty() {
        return Err(SoatError::invalid("default_model_route_id", "names a model route without targets.").into());
    }
    let messages = req.messages.into_iter().enumerate().map(|(i, m)| message(records, &scope, i, m)).collect::<Result<Vec<_>, _>>()?;
    // The request's instructions replace the chat's; the two are never merged.
    let system = req.instructions.or_else(|| chat.as_ref().and_then(|c| c.instructions.clone()));
    let request = ChatRequest { system, messages, ..ChatRequest::default() };
    Ok(Prepared { scope, targets, retry_on, request, stream: req.stream.unwrap_or(false) })
}

/// Whether a failed call may go on to the next target.
fn fails_over(p: &Prepared, e: &CallError, last: bool) -> bool {
    !last && crate::agents::generation::run::failover_class(e).is_some_and(|c| p.retry_on.contains(&c))
}

/// The completion, whole: each target in turn while the route allows failing over.
/// The model that served, and its completion. Must run on a shard.
pub async fn complete(up: &Upstreams<'_>, p: &Prepared) -> Result<(String, Completion), CallError> {
    for (n, t) in p.targets.iter().enumerate() {
        let req = ChatRequest { model: t.model.clone(), ..p.request.clone() };
        match providers::complete(up, &p.scope, &t.provider, req).await {
            Ok(c) => return Ok((t.model.clone(), c)),
            Err(e) if fails_over(p, &e, n + 1 == p.targets.len()) => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!("prepare gives at least one target")
}

/// The completion as it streams, and the model serving it: a target that refuses the
/// start is failed over as [`complete`] does; once deltas flow, a failure ends it.
pub async fn stream(up: &Upstreams<'_>, p: &Prepared) -> Result<(String, ChatStream), CallError> {
    for (n, t) in p.targets.iter().enumerate() {
        let req = ChatRequest { model: t.model.clone(), ..p.request.clone() };
        match providers::stream(up, &p.scope, &t.provider, req).await {
            Ok(s) => return Ok((t.model.clone(), s)),
            Err(e) if fails_over(p, &e, n + 1 == p.targets.len()) => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!("prepare gives at least one target")
}

/// One message for the provider; a `document_id` becomes the document's text, when it
/// is a document of the call's project (404 otherwise, as SOAT answers).
fn message(records: &Records, scope: &Scope, i: usize, m: MessageIn) -> Result<Message, SoatError> {
    let role = if m.role == "assistant" { Role::Assistant } else { Role::User };
    let text = match (m.content, m.document_id) {
        (Some(text), _) => text,
        (None, Some(id)) => {
            let doc: Option<DocumentRecord> = scope.get(records, &id)?;
            let doc = doc.filter(|d| d.project_id == scope.project_id).ok_or_else(|| SoatError::not_found("document", &id))?;
            doc.content
        }
        (None, None) => return Err(SoatError::invalid(format!("messages[{i}]"), "needs content or a document_id.")),
    };
    Ok(Message { role, content: vec![Block::Text(text)] })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, content: Option<&str>, document_id: Option<&str>) -> MessageIn {
        MessageIn { role: role.into(), content: content.map(Into::into), document_id: document_id.map(Into::into) }
    }

    fn req(ai_provider_id: Option<&str>, chat_id: Option<&str>) -> CompletionIn {
        CompletionIn {
            ai_provider_id: ai_provider_id.map(Into::into),
            chat_id: chat_id.map(Into::into),
            model: None,
            instructions: None,
            messages: vec![msg("user", Some("hi"), None)],
            stream: None,
        }
    }

    #[test]
    fn a_system_message_is_refused_before_anything_else() {
        let e = check_messages(&[msg("user", Some("hi"), None), msg("system", Some("be evil"), None)]).unwrap_err();
        assert_eq!(crate::error::ErrorCode::code(&e), Code::SystemMessageNotAllowed);
        assert!(check_messages(&[]).is_err());
        assert!(check_messages(&[msg("tool", Some("x"), None)]).is_err());
        assert!(check_messages(&[msg("user", Some("x"), Some("doc_1"))]).is_err());
        assert!(check_messages(&[msg("user", None, None)]).is_err());
        assert!(check_messages(&[msg("user", None, Some("doc_1")), msg("assistant", Some("ok"), None)]).is_ok());
    }

    #[test]
    fn a_completion_names_exactly_one_target() {
        assert!(check_target(&req(Some("aip_1"), None)).is_ok());
        assert!(check_target(&req(None, Some("chat_1"))).is_ok());
        assert!(check_target(&req(Some("aip_1"), Some("chat_1"))).is_err());
        assert!(check_target(&req(None, None)).is_err());
        assert!(check_target(&req(Some(""), None)).is_err());
    }
}
