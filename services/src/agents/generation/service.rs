//! Starting a generation, resuming a paused one with its tool outputs, and taking
//! over, after a restart, the runs the last boot left `in_progress`.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::rc::Rc;

use super::live::Log;
use super::record::{
    GenerationRecord, InContent, InMessage, Input, Message, NewGeneration, Part, RunState, Runner, Status, TraceRecord, Transition, Usage, BOOT,
    GENERATION_PREFIX, RESERVE, TRACE_PREFIX,
};
use super::request::GenerateBody;
use super::run::{self, Host};
use crate::agents::agent::config::{AgentConfig, TraceContentMode};
use crate::agents::agent::record::{AgentRecord, VersionRecord};
use crate::agents::agent::rollout::{self, Caller, Served};
use crate::agents::Scope;
use crate::error::{ApiError, Code};
use crate::runtime::blocking;
use crate::store::generations::{Claim, Created};
use crate::store::{ProjectRecord, Records};

/// A generation started, or the one an idempotency key already names.
pub enum Started {
    New { record: GenerationRecord, log: Rc<Log> },
    Replay(GenerationRecord),
}

/// A store failure, logged and answered 500; a write past the plan's storage is 429.
fn store_err(e: crate::store::StoreError) -> ApiError {
    if let crate::store::StoreError::StorageExceeded { .. } = e {
        return e.into();
    }
    tracing::error!(error = %e, "a generation's store access failed");
    ApiError::internal()
}

/// The fingerprint an idempotency key binds: the agent and every body field but
/// `stream`, in a canonical form (object keys sorted at every depth).
pub fn fingerprint(agent_id: &str, body: &Value) -> String {
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::from(k.as_str()).to_string());
                    out.push(':');
                    canonical(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    canonical(x, out);
                }
                out.push(']');
            }
            v => out.push_str(&v.to_string()),
        }
    }
    let mut body = body.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("stream");
        o.remove("idempotency_key");
    }
    let mut text = String::new();
    canonical(&body, &mut text);
    let mut h = Sha256::new();
    h.update(agent_id.as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The first request field through which a run would read `/v1` documents: a
/// `document` message, or documents named by the agent's knowledge or the request's.
/// An id `own` says is a SOAT document of the project is not a `/v1` one.
fn documents_read(messages: &[InMessage], config: &AgentConfig, body: &GenerateBody, own: impl Fn(&str) -> bool + Copy) -> Option<String> {
    if let Some(i) = messages.iter().position(|m| matches!(m.content, InContent::Part(Part::Document { .. }))) {
        return Some(format!("messages[{i}].content"));
    }
    let names = |k: Option<&crate::agents::agent::config::KnowledgeConfig>| k.is_some_and(|k| k.names_documents(own));
    if names(body.knowledge_config.as_ref()) {
        return Some("knowledge_config.document_ids".into());
    }
    names(config.knowledge_config.as_ref()).then(|| "the agent's knowledge_config.document_ids".into())
}

/// What a start needs beyond the body.
#[derive(Clone)]
pub struct StartArgs {
    pub scope: Scope,
    pub agent_id: String,
    pub body: GenerateBody,
    pub idempotency: Option<(String, String)>,
    /// The generation this one runs for (an agent called as a tool).
    pub initiator: Option<String>,
    /// evaluations: the agent version that serves, whatever the release says (an eval
    /// run's version under test); `None` splits by the release as usual.
    pub version: Option<u64>,
}

fn replay_or_conflict(claim: Claim, agent_id: &str, fingerprint: &str, g: Option<GenerationRecord>) -> Result<Started, ApiError> {
    if claim.agent_id != agent_id || claim.fingerprint != fingerprint {
        let what = if claim.agent_id != agent_id { "another agent" } else { "a different request body" };
        return Err(ApiError::new(
            Code::IdempotencyKeyReused,
            format!("This idempotency_key was used with {what}; nothing ran. Use a new key for a new request."),
        )
        .with_meta("generation_id", claim.generation_id));
    }
    g.map(Started::Replay).ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("No generation {}.", claim.generation_id)))
}

/// The actor and session a session's generation comes from, read from the session's
/// record (of the scope's project), for the canary split.
fn session_caller(records: &Records, scope: &Scope, session_id: Option<&str>) -> Option<(Option<String>, Option<String>)> {
    let s: crate::store::SessionRecord = records.get(&scope.account_id, session_id?).ok().flatten()?;
    (s.project_id == scope.project_id).then_some((s.actor_id, Some(s.id)))
}

/// Starts a generation of `args.agent_id` in the scope's project: the record (and a
/// new trace, and the key's claim) committed, then the run spawned on this shard.
pub async fn start(host: Rc<Host>, args: StartArgs) -> Result<Started, ApiError> {
    let records = host.agents.records.clone();
    let StartArgs { scope, agent_id, body, idempotency, initiator, version } = args;
    let messages = body.check()?;
    let (r, a, id) = (records.clone(), scope.account_id.clone(), agent_id.clone());
    let agent: Option<AgentRecord> = blocking(move || r.agent::<AgentRecord>(&a, &id)).await.map_err(store_err)?;
    let agent = agent.filter(|a| scope.sees(&a.project_id)).ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("No agent {agent_id}.")))?;
    // The generation is recorded in the agent's project.
    let scope = Scope { project_id: agent.project_id.clone(), ..scope };
    // A replay answers from the claim alone: nothing else is loaded or checked again.
    if let Some((key, fp)) = &idempotency {
        let (r, s, k) = (records.clone(), scope.clone(), key.clone());
        let claim = blocking(move || r.idempotency_claim(&s.account_id, &s.project_id, &k)).await.map_err(store_err)?;
        if let Some(claim) = claim {
            let g = records.get::<GenerationRecord>(&scope.account_id, &claim.generation_id).map_err(store_err)?;
            return replay_or_conflict(claim, &agent_id, fp, g);
        }
    }
    // actors: a session's generation is split by the session's own actor, else the
    // session (never by what its tool_context says, which a request may override).
    let (actor, session) = match session_caller(&records, &scope, body.session_id.as_deref()) {
        Some(caller) => caller,
        None => {
            (body.tool_context.as_ref().and_then(|c| c.get("actorId").cloned()), body.tool_context.as_ref().and_then(|c| c.get("sessionId").cloned()))
        }
    };
    let served = match version {
        // evaluations: the version under test, the live config when it is the agent's own.
        Some(v) if v == agent.version => Served::Live(v),
        Some(v) => Served::Canary(v),
        None => rollout::serve(&agent, Caller::of(actor.as_deref(), session.as_deref())),
    };
    let config = served_config(&records, &agent, served)?;
    // guardrails (issue 37): the input screened before anything is written, so what a
    // guardrail redacts never reaches the record, its events or the data directory.
    let mut messages = messages;
    let guards = crate::agents::guardrails::applicable(
        &records,
        &scope.account_id,
        &agent.project_id,
        config.guardrail_ids.as_deref().unwrap_or_default(),
        &[],
    )
    .map_err(store_err)?;
    let subject = crate::agents::guardrails::Subject {
        project_id: &agent.project_id,
        agent_id: Some(&agent.id),
        context: body.guardrail_context.as_ref(),
        ..Default::default()
    };
    let screened = super::guard::screen_input(&guards, &mut messages, &subject);
    let generation_id = format!("{GENERATION_PREFIX}{}", crate::ids::random_base62(16));
    // approvals (issue 37): an input a guardrail sends to approval is held until decided.
    let held = screened.approval.as_ref().map(|e| held_input(e, &guards, &generation_id, &agent.id, &messages));
    // What the run would read of /v1, the starting key must reach (crate::access):
    // refused here, before anything is recorded; the run asks again at each read.
    let own = |id: &str| crate::agents::documents::in_project(&records, &scope.account_id, &scope.project_id, id);
    if let Some(field) = documents_read(&messages, &config, &body, own) {
        scope.may_read_collections(&field)?;
    }
    // Each document the request names is one the key reads (another account's is absent).
    let search = &host.agents.search;
    for (i, m) in messages.iter().enumerate() {
        if let InContent::Part(Part::Document { document_id }) = &m.content {
            crate::agents::knowledge::check_document(search, &scope, document_id, &format!("messages[{i}].content.document_id")).await?;
        }
    }
    if let Some(k) = &body.knowledge_config {
        crate::agents::knowledge::check_documents(search, &scope, k.documents().0, "knowledge_config.document_ids").await?;
    }
    if let Some(provider) = &config.ai_provider_id {
        let found = crate::agents::providers::in_project(&records, &scope, provider);
        if found.is_err() {
            return Err(ApiError::new(Code::AgentAiProviderNotFound, format!("The agent's AI provider {provider} does not exist in this project.")));
        }
    }
    let project: Option<ProjectRecord> = records.get(&scope.account_id, &scope.project_id).map_err(store_err)?;
    let project_none = project.is_some_and(|p| p.trace_content_mode == "none");
    let store_content = !(project_none || config.trace_content_mode == Some(TraceContentMode::None));
    if config.output_schema.is_some() && body.stream {
        return Err(ApiError::new(
            Code::OutputSchemaStreamingUnsupported,
            "This agent has an output_schema, which is checked on the whole answer; send the request without stream.",
        ));
    }
    // A parent or root trace named must be one of this project's: a foreign id would
    // link this generation's trace into another tenant's tree.
    for (field, id) in [("parent_trace_id", &body.parent_trace_id), ("root_trace_id", &body.root_trace_id)] {
        if let Some(t) = id {
            let found: Option<TraceRecord> = records.get(&scope.account_id, t).map_err(store_err)?;
            if found.is_none_or(|t| t.project_id != scope.project_id) {
                return Err(ApiError::new(Code::SoatNotFound, format!("No trace {t} in this project.")).at(field));
            }
        }
    }
    let now = crate::clock::now_rfc3339();
    let (trace, new_trace) = match &body.trace_id {
        Some(t) => {
            let found: Option<TraceRecord> = records.get(&scope.account_id, t).map_err(store_err)?;
            let t = found
                .filter(|t| t.project_id == scope.project_id)
                .ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("No trace {t} in this project.")).at("trace_id"))?;
            (t, false)
        }
        None => (
            TraceRecord {
                id: format!("{TRACE_PREFIX}{}", crate::ids::random_base62(16)),
                account_id: scope.account_id.clone(),
                project_id: scope.project_id.clone(),
                agent_id: agent.id.clone(),
                step_count: 0,
                parent_trace_id: body.parent_trace_id.clone(),
                root_trace_id: body.root_trace_id.clone(),
                error: None,
                content_redacted_at: None,
                created_at: now.clone(),
                updated_at: now.clone(),
                guardrail_events: Vec::new(),
            },
            true,
        ),
    };
    // quotas (issue 37): the request that starts it counted at the dispatch (http::oversight).
    let new = NewGeneration {
        id: generation_id,
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        agent_id: agent.id.clone(),
        trace_id: trace.id.clone(),
        initiator_generation_id: initiator,
        parent_trace_id: body.parent_trace_id.clone(),
        root_trace_id: body.root_trace_id.clone(),
        started_by_principal_type: Some(scope.principal_type().to_owned()),
        started_by_principal_id: Some(scope.principal_id().to_owned()),
        agent_version: Some(served.version()),
        ai_provider_id: config.ai_provider_id.clone(),
        action_id: body.action_id.clone(),
        metadata: body.metadata.clone().filter(|m| !m.is_null()),
        idempotency_key: idempotency.as_ref().map(|(k, _)| k.clone()),
        store_content,
        state: RunState {
            config,
            input: Input {
                tool_context: body.tool_context.clone().unwrap_or_default(),
                knowledge_config: body.knowledge_config.clone(),
                max_call_depth: body.max_call_depth.unwrap_or(10),
                guardrail_context: body.guardrail_context.clone(),
                actor_id: actor,
                session_id: body.session_id.clone(),
                conversation_id: body.conversation_id.clone(),
                stream: body.stream,
            },
            messages: Vec::new(),
            raw_messages: messages,
            prepared: false,
            context: None,
            steps: 0,
            pending: Vec::new(),
            output: None,
            served_by: None,
            seq: 0,
            reserved: RESERVE,
            lease: Some(BOOT.clone()),
            expires_at: None,
            chain: 0,
            usage: Usage::default(),
            guardrails: screened.evaluations,
            blocked: screened.blocked,
            held,
        },
    };
    // The account's share of the server: a new generation past the cap is refused before
    // anything is written (the slot is given back if the write does not happen).
    let max = host.agents.config.max_running_per_account as usize;
    let slot = host.agents.running.enter(&scope.account_id, max).map_err(|n| ApiError {
        retry_after: Some(1),
        ..ApiError::new(
            Code::TooManyConcurrent,
            format!("This account runs {n} generations now, the most this server runs for one account at once; retry when one ends."),
        )
    })?;
    let g = GenerationRecord::start(new, now);
    let persisted = host.agents.content.persisted(&g);
    let (r, t) = (records.clone(), new_trace.then_some(trace));
    let key = idempotency.clone();
    let pending = run::Pending::new(&g.id);
    let created = match blocking(move || r.create_generation(&persisted, t.as_ref(), key.as_ref().map(|(k, f)| (k.as_str(), f.as_str())))).await {
        // The store went away mid-write (a PostgreSQL restart): the commit may have
        // landed, and then this boot's adopt loop would run a generation its client was
        // told failed. Read back what happened once the store answers.
        Err(e) if e.is_unavailable() => match landed(&records, &scope.account_id, &g.id).await {
            Some(true) => Ok(Created::New),
            _ => Err(e),
        },
        other => other,
    }
    .map_err(store_err)?;
    match created {
        Created::New => {
            let log = run::spawn(host, g.clone(), Some(slot));
            pending.spawned();
            Ok(Started::New { record: g, log })
        }
        // The session started another generation between our look and our write.
        Created::SessionBusy(running) => {
            host.agents.content.forget(&g.id);
            Err(ApiError::new(
                Code::GenerationAlreadyInProgress,
                format!("The session's generation {running} has not settled yet; wait for it, or answer its tool calls."),
            )
            .with_meta("generation_id", running))
        }
        // Another request claimed the key between our look and our write.
        Created::Claimed(claim) => {
            host.agents.content.forget(&g.id);
            let (_, fp) = idempotency.expect("a claim needs a key");
            let found = records.get::<GenerationRecord>(&scope.account_id, &claim.generation_id).map_err(store_err)?;
            replay_or_conflict(claim, &agent.id, &fp, found)
        }
    }
}

/// Whether generation `id`'s record exists, read as soon as the records store answers
/// again (within the patience a run's own commits get); `None` if it never does.
async fn landed(records: &std::sync::Arc<Records>, account_id: &str, id: &str) -> Option<bool> {
    let (r, a, i) = (records.clone(), account_id.to_owned(), id.to_owned());
    run::patiently(move || r.get::<GenerationRecord>(&a, &i)).await.ok().map(|found| found.is_some())
}

/// approvals (issue 37): the request's input held for the approval item `e` routes it to.
fn held_input(
    e: &crate::agents::guardrails::Evaluation,
    guards: &[crate::agents::guardrails::Applied],
    generation_id: &str,
    agent_id: &str,
    messages: &[InMessage],
) -> super::record::Held {
    let text: Vec<&str> = messages.iter().filter_map(|m| if let InContent::Text(t) = &m.content { Some(t.as_str()) } else { None }).collect();
    let text = text.join("\n");
    let key = super::guard::dedup_key(agent_id, "input", &Value::from(text.as_str()));
    let expires_in = crate::agents::guardrails::evaluate::expires_in(std::slice::from_ref(e), guards);
    super::record::Held {
        gate: super::guard::gate(e, generation_id, "input", key, expires_in, None),
        content: text,
        stop: "stop".into(),
        finish: "stop".into(),
        object: None,
        refusal: None,
        stage: super::record::HeldStage::Input,
        expired: false,
    }
}

/// The config that serves: the live one, or the archived stable or canary version's.
fn served_config(records: &Records, agent: &AgentRecord, served: Served) -> Result<AgentConfig, ApiError> {
    match served {
        Served::Live(_) => Ok(agent.config.clone()),
        Served::Stable(v) | Served::Canary(v) => {
            let archived: Option<VersionRecord> = records.agent_version(&agent.id, v).map_err(store_err)?;
            let archived =
                archived.ok_or_else(|| ApiError::new(Code::Internal, format!("The agent's release names version {v}, which is not archived.")))?;
            AgentConfig::from_snapshot(&archived.config, &agent.config)
                .map_err(|e| ApiError::new(Code::SoatValidation, format!("The served version {v} no longer parses: {e}")))
        }
    }
}

/// One submitted output.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOutput {
    pub tool_call_id: String,
    pub output: Value,
}

/// Fills a paused generation's client calls and resumes it on this shard. Each pause
/// accepts its outputs once: the check and the write are one transaction.
pub async fn submit(
    host: Rc<Host>,
    scope: &Scope,
    agent_id: &str,
    generation_id: &str,
    outputs: Vec<ToolOutput>,
) -> Result<(GenerationRecord, Rc<Log>, u64), ApiError> {
    let records = host.agents.records.clone();
    let (r, s, a, id, outs) = (records.clone(), scope.clone(), agent_id.to_owned(), generation_id.to_owned(), outputs.clone());
    let updated = blocking(move || {
        r.update::<GenerationRecord, Result<GenerationRecord, ApiError>>(&s.account_id, &id, |g| {
            if g.project_id != s.project_id || g.agent_id != a {
                return crate::store::owned::Change::Keep(Err(ApiError::new(Code::SoatNotFound, format!("No generation {id} of agent {a}."))));
            }
            if g.status() != Status::RequiresAction {
                return crate::store::owned::Change::Keep(Err(ApiError::new(
                    Code::GenerationNotAwaitingToolOutputs,
                    format!("The generation {id} is {} and awaits no tool outputs (each pause accepts its outputs once).", g.status().as_str()),
                )));
            }
            if g.content_redacted_at.is_some() {
                return crate::store::owned::Change::Keep(Err(ApiError::new(
                    Code::GenerationNotAwaitingToolOutputs,
                    format!("The generation {id}'s content was purged while it was paused, so it cannot resume; start a new generation."),
                )));
            }
            let waiting: Vec<String> = g
                .state
                .pending
                .iter()
                .filter(|c| c.runner == Runner::Client && c.result.is_none())
                .filter(|c| c.gate.as_ref().is_none_or(|x| x.approved))
                .map(|c| c.id.clone())
                .collect();
            for o in &outs {
                if !waiting.contains(&o.tool_call_id) {
                    return crate::store::owned::Change::Keep(Err(ApiError::new(
                        Code::SoatValidation,
                        format!("tool_call_id {:?} is not a call this generation waits for (it waits for {}).", o.tool_call_id, waiting.join(", ")),
                    )
                    .at("tool_outputs")));
                }
            }
            if let Some(missing) = waiting.iter().find(|w| !outs.iter().any(|o| &o.tool_call_id == *w)) {
                return crate::store::owned::Change::Keep(Err(ApiError::new(
                    Code::SoatValidation,
                    format!("tool_outputs lacks the call {missing}: send one entry per pending call."),
                )
                .at("tool_outputs")));
            }
            for c in &mut g.state.pending {
                if let Some(o) = outs.iter().find(|o| o.tool_call_id == c.id) {
                    c.result = Some(if g.store_content { o.output.clone() } else { Value::Null });
                }
            }
            g.apply(Transition::Resume);
            crate::store::owned::Change::Write(Ok(g.clone()))
        })
    })
    .await
    .map_err(store_err)?;
    let mut g = updated.ok_or_else(|| ApiError::new(Code::SoatNotFound, format!("No generation {generation_id}.")))??;
    if !host.agents.content.restore(&mut g) {
        let log = super::live::open(&g.id);
        super::recover::interrupt(&host, g.clone(), "its content was kept in memory only (trace_content_mode none) and the server restarted").await;
        super::live::finish(&g.id, &log);
        let g = records.get::<GenerationRecord>(&scope.account_id, generation_id).map_err(store_err)?.unwrap_or(g);
        return Ok((g.clone(), log, g.state.seq));
    }
    for c in &mut g.state.pending {
        if let Some(o) = outputs.iter().find(|o| o.tool_call_id == c.id) {
            c.result = Some(o.output.clone());
        }
    }
    let after = g.state.seq;
    let log = run::spawn(host, g.clone(), None);
    Ok((g, log, after))
}

impl Message {
    /// A user message of text.
    pub fn user(text: &str) -> Message {
        Message::text(super::record::Role::User, text)
    }
}
