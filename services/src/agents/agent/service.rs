//! The agents service: every operation of the spec's agents, versions and release
//! paths, on the records store. Each write reads the agent, builds and validates the
//! next config outside the transaction, then lands through [`Records::write_agent`],
//! whose closure checks the version again inside the transaction: against the
//! caller's `If-Match` / `expected_version`, or, for an unconditional write, against
//! the version this request read, so concurrent writes are serialised and the loser
//! is refused with `VERSION_CONFLICT` having written nothing. Calls block: run them
//! on the blocking pool.

use std::sync::Arc;

use super::config::{AgentConfig, Create, Restore, SetRelease, TraceContentMode, Update};
use super::error::{AgentError, Dependents, RefKind};
use super::links;
use super::record::{AgentRecord, Author, EvalRecord, EvalRunRecord, GuardrailRecord, ModelRouteRecord, Release, VersionRecord};
use super::validate::{self, Reference};
use crate::agents::{InProject, Scope};
use crate::store::agents::{Deleted, Write};
use crate::store::{ProjectRecord, Records};

pub struct Agents {
    records: Arc<Records>,
}

/// The version a write must find: the caller's, or `None` for "as this request read it".
pub type Expected = Option<u64>;

/// Who a version is attributed to: the key behind the request.
fn author_of(p: &Scope) -> Author {
    Author { principal_type: p.principal_type().to_owned(), principal_id: p.principal_id().to_owned() }
}

/// A record of one of this module's minimal kinds, when it is in `project_id`.
pub fn in_project<R: InProject>(records: &Records, account_id: &str, project_id: &str, id: &str) -> Result<Option<R>, AgentError> {
    Ok(records.get::<R>(account_id, id)?.filter(|r| r.project_id() == project_id))
}

fn now() -> String {
    crate::clock::now_rfc3339()
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", crate::ids::random_base62(16))
}

/// The precondition of a write from `If-Match` (`3`, `"3"`, `W/"3"`, `*`) and the
/// body's `expected_version`; both given and different is a 400.
pub fn precondition(if_match: Option<&str>, body: Option<i64>) -> Result<Expected, AgentError> {
    let header = match if_match.map(str::trim) {
        None | Some("*") => None,
        Some(h) => {
            let tag = h.strip_prefix("W/").unwrap_or(h);
            let tag = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(tag);
            match tag.parse::<u64>() {
                Ok(v) if v >= 1 => Some(v),
                _ => return Err(AgentError::invalid("If-Match", format!("If-Match must be a version number (3 or \"3\") or *, not {h:?}."))),
            }
        }
    };
    let body = match body {
        None => None,
        Some(v) if v >= 1 => Some(v as u64),
        Some(v) => return Err(AgentError::invalid("expected_version", format!("expected_version must be an integer of at least 1, not {v}."))),
    };
    match (header, body) {
        (Some(h), Some(b)) if h != b => Err(AgentError::invalid(
            "expected_version",
            format!("If-Match says version {h} and expected_version says {b}; send one, or the same in both."),
        )),
        (h, b) => Ok(h.or(b)),
    }
}

/// Refuses the write unless the agent is at `expected` (or, with none, at `read`).
fn check_version(current: &AgentRecord, expected: Expected, read: u64) -> Result<(), AgentError> {
    let want = expected.unwrap_or(read);
    match current.version == want {
        true => Ok(()),
        false => Err(AgentError::VersionConflict { current: current.version, expected: want }),
    }
}

fn version_record(agent: &AgentRecord, label: Option<String>, eval_run_id: Option<String>, author: Option<&Author>) -> VersionRecord {
    VersionRecord {
        id: new_id("agver_"),
        agent_id: agent.id.clone(),
        version: agent.version,
        config: agent.config.snapshot(),
        label,
        eval_run_id,
        created_by_principal_type: author.map(|a| a.principal_type.clone()),
        created_by_principal_id: author.map(|a| a.principal_id.clone()),
        created_at: agent.updated_at.clone(),
    }
}

/// The write a config change makes: nothing when it is the same config; the settings
/// alone when only they changed; else the next version, archived.
fn change(
    mut agent: AgentRecord,
    next: AgentConfig,
    label: Option<String>,
    eval_run_id: Option<String>,
    author: Option<&Author>,
) -> Write<AgentRecord, VersionRecord, AgentRecord> {
    if agent.config == next {
        return Write::Keep(agent);
    }
    let versioned = !agent.config.same_version_as(&next);
    agent.config = next;
    agent.updated_at = now();
    if !versioned {
        return Write::Put { out: agent.clone(), agent, version: None };
    }
    agent.version += 1;
    let version = version_record(&agent, label, eval_run_id, author);
    Write::Put { out: agent.clone(), agent, version: Some(version) }
}

impl Agents {
    pub fn new(records: Arc<Records>) -> Agents {
        Agents { records }
    }

    pub fn records(&self) -> &Records {
        &self.records
    }

    fn not_found(id: &str) -> AgentError {
        AgentError::NotFound { id: id.to_owned() }
    }

    /// Whether a reference names a record in the agent's own project.
    fn exists(&self, account_id: &str, project_id: &str, r: &Reference) -> Result<bool, AgentError> {
        Ok(match r.kind {
            RefKind::AiProvider => links::provider_exists(&self.records, account_id, project_id, &r.id)?,
            RefKind::Tool => links::tool_exists(&self.records, account_id, project_id, &r.id)?,
            RefKind::ModelRoute => in_project::<ModelRouteRecord>(&self.records, account_id, project_id, &r.id)?.is_some(),
            RefKind::Guardrail => in_project::<GuardrailRecord>(&self.records, account_id, project_id, &r.id)?.is_some(),
            RefKind::Eval => in_project::<EvalRecord>(&self.records, account_id, project_id, &r.id)?.is_some(),
            RefKind::MemoryStore => in_project::<crate::store::MemoryRecord>(&self.records, account_id, project_id, &r.id)?.is_some(),
        })
    }

    /// The project's `trace_content_mode` as a floor: `Some(None)` when it stores nothing.
    fn floor(&self, account_id: &str, project_id: &str) -> Result<Option<TraceContentMode>, AgentError> {
        let project = self.records.get::<ProjectRecord>(account_id, project_id)?;
        Ok(project.filter(|p| p.trace_content_mode == "none").map(|_| TraceContentMode::None))
    }

    /// Every rule of the config, for an agent of `project_id`, its references looked up.
    fn validate(&self, p: &Scope, project_id: &str, config: &AgentConfig, null_tool_choice: bool, archived: bool) -> Result<(), AgentError> {
        validate::shape(config, null_tool_choice, self.floor(&p.account_id, project_id)?)?;
        validate::missing(&validate::references(config), archived, |r| self.exists(&p.account_id, project_id, r))
    }

    /// A key that reads no `/v1` data may keep the documents an agent's knowledge
    /// already names (an account key set them), never name new ones.
    fn check_reach(&self, p: &Scope, project_id: &str, before: Option<&AgentConfig>, config: &AgentConfig) -> Result<(), AgentError> {
        let own = |id: &str| crate::agents::documents::in_project(&self.records, &p.account_id, project_id, id);
        let Some(now) = config.knowledge_config.as_ref().filter(|k| k.names_documents(own)) else { return Ok(()) };
        let kept = before.and_then(|c| c.knowledge_config.as_ref()).is_some_and(|k| k.documents() == now.documents());
        if p.reach().reads_collections() || kept {
            return Ok(());
        }
        Err(AgentError::OutOfReach { field: "knowledge_config.document_ids".into() })
    }

    pub fn create(&self, p: &Scope, body: Create) -> Result<AgentRecord, AgentError> {
        let author = author_of(p);
        let author = Some(&author);
        let (config, null_tool_choice) = body.config();
        self.check_reach(p, &p.project_id, None, &config)?;
        self.validate(p, &p.project_id, &config, null_tool_choice, false)?;
        let at = now();
        let agent = AgentRecord {
            id: new_id("agent_"),
            account_id: p.account_id.clone(),
            project_id: p.project_id.clone(),
            config,
            version: 1,
            active_release: None,
            created_at: at.clone(),
            updated_at: at,
        };
        self.records.create_agent(&agent, &version_record(&agent, body.version_label, None, author))?;
        Ok(agent)
    }

    /// The project's agents, oldest first.
    pub fn list(&self, p: &Scope) -> Result<Vec<AgentRecord>, AgentError> {
        let mut all: Vec<AgentRecord> = self.records.agents(&p.account_id, &p.project_id)?;
        all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(all)
    }

    pub fn get(&self, p: &Scope, id: &str) -> Result<AgentRecord, AgentError> {
        let agent = self.records.agent::<AgentRecord>(&p.account_id, id)?;
        agent.filter(|a| p.sees(&a.project_id)).ok_or_else(|| Self::not_found(id))
    }

    /// PUT and PATCH (both partial). `if_match` is the header as sent.
    pub fn update(&self, p: &Scope, id: &str, body: Update, if_match: Option<&str>) -> Result<AgentRecord, AgentError> {
        let author = author_of(p);
        let author = Some(&author);
        let expected = precondition(if_match, body.expected_version.clone().value())?;
        let read = self.get(p, id)?;
        check_version(&read, expected, read.version)?;
        let (next, null_tool_choice) = body.apply(&read.config);
        self.check_reach(p, &read.project_id, Some(&read.config), &next)?;
        self.validate(p, &read.project_id, &next, null_tool_choice, false)?;
        let label = body.version_label.clone().value();
        self.write(p, id, |current| {
            check_version(&current, expected, read.version)?;
            Ok(change(current, next, label, None, author))
        })
    }

    fn write(
        &self,
        p: &Scope,
        id: &str,
        decide: impl FnOnce(AgentRecord) -> Result<Write<AgentRecord, VersionRecord, AgentRecord>, AgentError>,
    ) -> Result<AgentRecord, AgentError> {
        self.records.write_agent(&p.account_id, id, decide)?.ok_or_else(|| Self::not_found(id))
    }

    pub fn delete(&self, p: &Scope, id: &str, force: bool) -> Result<(), AgentError> {
        let agent = self.get(p, id)?;
        if force {
            // Its generations and traces in its own project first: a crash between the
            // two writes leaves the agent, and deleting it again finishes the job, never
            // runs naming an agent that is gone.
            self.records.remove_agent_runs::<crate::agents::generation::GenerationRecord>(&p.account_id, &agent.project_id, id)?;
        }
        match self.records.delete_agent::<AgentRecord>(&p.account_id, id, force)? {
            Deleted::NotFound => Err(Self::not_found(id)),
            Deleted::Blocked(c) => Err(AgentError::HasDependents(Dependents {
                generation_count: c.generations,
                trace_count: c.traces,
                accepted_share_count: c.accepted_shares,
                ingestion_rule_count: c.ingestion_rules,
            })),
            Deleted::Done { .. } => Ok(()),
        }
    }

    /// The agent's versions, newest first.
    pub fn versions(&self, p: &Scope, id: &str) -> Result<Vec<VersionRecord>, AgentError> {
        let agent = self.get(p, id)?;
        Ok(self.records.agent_versions(&agent.id)?)
    }

    pub fn version(&self, p: &Scope, id: &str, version: u64) -> Result<VersionRecord, AgentError> {
        let agent = self.get(p, id)?;
        self.records.agent_version(&agent.id, version)?.ok_or(AgentError::VersionNotFound { agent_id: agent.id, version })
    }

    /// The archived config of `version`, as it would go live on `agent` (its
    /// unversioned settings kept), re-validated: refused when it holds a literal
    /// credential or names a record deleted since.
    fn archived_config(&self, p: &Scope, agent: &AgentRecord, version: &VersionRecord) -> Result<AgentConfig, AgentError> {
        let config = AgentConfig::from_snapshot(&version.config, &agent.config)
            .map_err(|e| AgentError::invalid("", format!("Version {} no longer validates: {e}.", version.version)))?;
        validate::no_literal_credentials(&config)?;
        self.validate(p, &agent.project_id, &config, false, true)?;
        Ok(config)
    }

    /// Writes version `n`'s config as a new version (a no-op when the agent holds it).
    pub fn restore(&self, p: &Scope, id: &str, n: u64, body: Restore, if_match: Option<&str>) -> Result<AgentRecord, AgentError> {
        let author = author_of(p);
        let author = Some(&author);
        let expected = precondition(if_match, None)?;
        let read = self.get(p, id)?;
        let archived = self.version(p, id, n)?;
        check_version(&read, expected, read.version)?;
        let config = self.archived_config(p, &read, &archived)?;
        let label = body.label.unwrap_or_else(|| format!("restored from v{n}"));
        self.write(p, id, |current| {
            check_version(&current, expected, read.version)?;
            Ok(change(current, config, Some(label), None, author))
        })
    }

    /// Sets or replaces the agent's staged rollout.
    pub fn set_release(&self, p: &Scope, id: &str, body: SetRelease) -> Result<AgentRecord, AgentError> {
        let read = self.get(p, id)?;
        let release = self.release_of(p, &read, body)?;
        self.write(p, id, |mut current| {
            current.active_release = Some(release);
            current.updated_at = now();
            Ok(Write::Put { out: current.clone(), agent: current, version: None })
        })
    }

    fn release_of(&self, p: &Scope, agent: &AgentRecord, body: SetRelease) -> Result<Release, AgentError> {
        let version_number = |field: &str, v: i64| match u64::try_from(v) {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(AgentError::invalid(field, format!("{field} must be a version number of at least 1, not {v}."))),
        };
        let stable = version_number("stable_version", body.stable_version)?;
        let canary = version_number("canary_version", body.canary_version)?;
        if stable == canary {
            return Err(AgentError::invalid("canary_version", format!("canary_version must differ from stable_version (both are {stable}).")));
        }
        let percent = u8::try_from(body.canary_percent).ok().filter(|p| *p <= 100);
        let percent = percent
            .ok_or_else(|| AgentError::invalid("canary_percent", format!("canary_percent must be from 0 to 100, not {}.", body.canary_percent)))?;
        for (field, n) in [("stable_version", stable), ("canary_version", canary)] {
            let Some(v) = self.records.agent_version::<VersionRecord>(&agent.id, n)? else {
                return Err(AgentError::invalid(field, format!("{field}: agent {} has no version {n}.", agent.id)));
            };
            let config = AgentConfig::from_snapshot(&v.config, &agent.config)
                .map_err(|e| AgentError::invalid(field, format!("{field}: version {n} no longer validates: {e}.")))?;
            validate::no_literal_credentials(&config)?;
        }
        if let Some(gate) = &body.promotion_gate {
            let eval = in_project::<EvalRecord>(&self.records, &p.account_id, &agent.project_id, gate)?;
            if eval.is_none_or(|e| e.agent_id != agent.id) {
                return Err(AgentError::invalid(
                    "promotion_gate",
                    format!("promotion_gate: {gate} is not an eval of agent {} in this project.", agent.id),
                ));
            }
        }
        Ok(Release { stable_version: stable, canary_version: canary, canary_percent: percent, promotion_gate: body.promotion_gate })
    }

    /// The run of the release's gate that clears it, if the release has a gate.
    fn gate_run(&self, agent: &AgentRecord, release: &Release) -> Result<Option<EvalRunRecord>, AgentError> {
        let Some(gate) = &release.promotion_gate else { return Ok(None) };
        let runs: Vec<EvalRunRecord> = self.records.list(&agent.account_id)?;
        let mut passing: Vec<EvalRunRecord> =
            runs.into_iter().filter(|r| r.project_id == agent.project_id && r.clears(gate, release.canary_version)).collect();
        passing.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        match passing.into_iter().next() {
            Some(run) => Ok(Some(run)),
            None => Err(AgentError::PromotionGateUnmet { eval_id: gate.clone(), canary_version: release.canary_version }),
        }
    }

    /// Makes the canary's config live and ends the rollout.
    pub fn promote(&self, p: &Scope, id: &str) -> Result<AgentRecord, AgentError> {
        self.end_release(p, id, true)
    }

    /// Puts the stable version's config back live and ends the rollout.
    pub fn abort(&self, p: &Scope, id: &str) -> Result<AgentRecord, AgentError> {
        self.end_release(p, id, false)
    }

    fn end_release(&self, p: &Scope, id: &str, promote: bool) -> Result<AgentRecord, AgentError> {
        let author = author_of(p);
        let author = Some(&author);
        let read = self.get(p, id)?;
        let release = read.active_release.clone().ok_or(AgentError::NoActiveRelease)?;
        let run = if promote { self.gate_run(&read, &release)? } else { None };
        let target = if promote { release.canary_version } else { release.stable_version };
        let archived = self.version(p, id, target)?;
        let config = self.archived_config(p, &read, &archived)?;
        let label = match promote {
            true => format!("promoted canary v{target}"),
            false => format!("rollout aborted, back to stable v{target}"),
        };
        let run_id = run.map(|r| r.id);
        let records = &self.records;
        self.write(p, id, |mut current| {
            check_version(&current, None, read.version)?;
            if current.active_release.as_ref() != Some(&release) {
                return Err(AgentError::VersionConflict { current: current.version, expected: read.version });
            }
            current.active_release = None;
            current.updated_at = now();
            match change(current.clone(), config, Some(label), run_id.clone(), author) {
                Write::Put { agent, version, out } => Ok(Write::Put { agent, version, out }),
                // The live config already is the target: only the release ends, and the
                // run that cleared the gate is noted on the version now live.
                Write::Keep(_) => {
                    let version = match run_id {
                        Some(run) => records
                            .agent_version::<VersionRecord>(&current.id, current.version)?
                            .map(|v| VersionRecord { eval_run_id: Some(run), ..v }),
                        None => None,
                    };
                    Ok(Write::Put { out: current.clone(), agent: current, version })
                }
            }
        })
    }

    /// The agents of the account that name the provider, directly or through one of
    /// their model route's targets (deleting it is then 409 `AI_PROVIDER_HAS_DEPENDENTS`).
    pub fn agents_using_provider(records: &Records, account_id: &str, ai_provider_id: &str) -> Result<Vec<String>, AgentError> {
        let routes: Vec<ModelRouteRecord> = records.list(account_id)?;
        let via: Vec<&str> = routes.iter().filter(|r| r.targets.iter().any(|t| t.ai_provider_id == ai_provider_id)).map(|r| r.id.as_str()).collect();
        let mut ids = Vec::new();
        for agent in records.agents_of_account::<AgentRecord>(account_id)? {
            let direct = agent.config.ai_provider_id.as_deref() == Some(ai_provider_id);
            if direct || agent.config.model_route_id.as_deref().is_some_and(|r| via.contains(&r)) {
                ids.push(agent.id);
            }
        }
        ids.sort();
        Ok(ids)
    }
}

#[cfg(test)]
mod tests;
