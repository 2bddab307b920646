//! The generation's state machine in one place. Every change of a generation's
//! status, and with it its stop reason, its error, its timestamps, its lease and its
//! event counter, is a [`Transition`] applied by [`GenerationRecord::apply`]; the
//! runner, the expiry, the recovery and the service all call it, and the status
//! field is private to the record so nothing else can write it.
//!
//! ```text
//!             Start ──► in_progress ──Complete──► completed
//!                        │  ▲   │
//!                 Pause  │  │   └──Fail / Interrupt──► failed ──ChainLimit──► failed
//!                        ▼  │ Resume
//!                   requires_action ──Expire──► failed
//! ```
//!
//! `Step` (each commit) and `TakeOver` (a restart) keep the status and move the
//! lease and the event counter.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::{GenerationRecord, NewGeneration, Output, RecordedError, Status};
use crate::error::Code;

/// Event ids a step may use before its commit: a resumed run numbers its events
/// after any a reader may have seen (see `RunState::reserved`).
pub const RESERVE: u64 = 1 << 20;

/// This process's boot: a run's lease names it, so another boot knows the run died.
pub static BOOT: LazyLock<String> = LazyLock::new(|| crate::ids::random_base62(12));

/// Why a generation failed: the code (recorded as SOAT's registry name), the
/// message a 502 body carries, its meta, and the record's `stop_reason`.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: Code,
    pub message: String,
    pub meta: Map<String, Value>,
    /// `error`, or why it was stopped (`interrupted`, `approval_expired`).
    pub stop_reason: &'static str,
}

impl Failure {
    pub fn new(code: Code, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into(), meta: Map::new(), stop_reason: "error" }
    }

    pub fn with(mut self, key: &str, v: impl Into<Value>) -> Failure {
        self.meta.insert(key.to_owned(), v.into());
        self
    }
}

/// One change of a generation's state.
#[derive(Debug, Clone)]
pub enum Transition {
    /// A generation begins (a new one, or an expiry's continuation made from the
    /// expired one): `in_progress`, nothing settled, leased to this boot, its events
    /// numbered from the start, `at` its start.
    Start { at: String },
    /// A step is about to be committed: its activity stamped and the ids it may use
    /// before the next commit reserved. Any status.
    Step,
    /// `in_progress` → `requires_action`: the turn waits for client tool outputs
    /// until `expires_at`, and no boot holds it.
    Pause { expires_at: String },
    /// `requires_action` → `in_progress`: the outputs arrived; this boot runs it.
    Resume,
    /// `in_progress`, left by another boot: this boot takes it over and numbers its
    /// events after any id a reader may have seen.
    TakeOver,
    /// `in_progress` → `completed` with its output.
    Complete { stop_reason: String, output: Output },
    /// → `failed`: the error recorded, naming the generation and its trace.
    Fail(Failure),
    /// `requires_action` → `failed`: the pause expired unanswered.
    Expire,
    /// → `failed`, released: the run could not go on (`why`); its error frame takes
    /// the next id after those reserved.
    Interrupt { why: String },
    /// `failed` by `Expire`, and the continuation `react` would spawn is over the
    /// chain's limit: only the stop reason says so.
    ChainLimit,
}

impl GenerationRecord {
    /// A new generation, as its start commits it ([`Transition::Start`] at `at`).
    pub fn start(n: NewGeneration, at: String) -> GenerationRecord {
        let mut g = GenerationRecord {
            id: n.id,
            account_id: n.account_id,
            project_id: n.project_id,
            agent_id: n.agent_id,
            trace_id: n.trace_id,
            initiator_generation_id: n.initiator_generation_id,
            parent_trace_id: n.parent_trace_id,
            root_trace_id: n.root_trace_id,
            started_by_principal_type: n.started_by_principal_type,
            started_by_principal_id: n.started_by_principal_id,
            status: Status::InProgress,
            stop_reason: None,
            error: None,
            agent_version: n.agent_version,
            ai_provider_id: n.ai_provider_id,
            action_id: n.action_id,
            routing: None,
            extraction: None,
            metadata: n.metadata,
            idempotency_key: n.idempotency_key,
            store_content: n.store_content,
            content_redacted_at: None,
            started_at: String::new(),
            completed_at: None,
            last_activity_at: None,
            state: n.state,
        };
        g.apply(Transition::Start { at });
        g
    }

    /// The generation's status (only [`GenerationRecord::apply`] changes it).
    pub fn status(&self) -> Status {
        self.status
    }

    /// Applies `t` (see [`Transition`]).
    pub fn apply(&mut self, t: Transition) {
        let now = crate::clock::now_rfc3339();
        match t {
            Transition::Start { at } => {
                self.status = Status::InProgress;
                self.stop_reason = None;
                self.error = None;
                self.started_at = at.clone();
                self.completed_at = None;
                self.last_activity_at = Some(at);
                self.state.output = None;
                self.state.seq = 0;
                self.state.reserved = RESERVE;
                self.state.lease = Some(BOOT.clone());
                self.state.expires_at = None;
            }
            Transition::Step => {
                self.last_activity_at = Some(now);
                self.state.reserved = self.state.seq + RESERVE;
            }
            Transition::Pause { expires_at } => {
                self.status = Status::RequiresAction;
                self.state.expires_at = Some(expires_at);
                self.state.lease = None;
            }
            Transition::Resume => {
                self.status = Status::InProgress;
                self.state.lease = Some(BOOT.clone());
                self.state.expires_at = None;
                self.last_activity_at = Some(now);
            }
            Transition::TakeOver => {
                self.state.lease = Some(BOOT.clone());
                self.state.seq = self.state.reserved;
                self.state.reserved = self.state.seq + RESERVE;
            }
            Transition::Complete { stop_reason, output } => {
                self.status = Status::Completed;
                self.stop_reason = Some(stop_reason);
                self.completed_at = Some(now);
                self.state.output = Some(output);
            }
            Transition::Fail(f) => self.fail(f, now),
            Transition::Expire => {
                let f = Failure {
                    stop_reason: "approval_expired",
                    ..Failure::new(Code::ApprovalExpired, "The generation's client tool calls were not answered before their expiry.")
                };
                let f = f.with("expired_at", self.state.expires_at.clone());
                self.fail(f, now);
            }
            Transition::Interrupt { why } => {
                let f = Failure {
                    stop_reason: "interrupted",
                    ..Failure::new(Code::GenerationInterrupted, format!("The generation was interrupted: {why}."))
                };
                self.fail(f, now);
                self.state.lease = None;
                self.state.seq = self.state.reserved + 1;
            }
            Transition::ChainLimit => self.stop_reason = Some("chain_limit".into()),
        }
    }

    /// The one way a failure becomes the record's error.
    fn fail(&mut self, f: Failure, now: String) {
        let mut meta = f.meta;
        meta.insert("generation_id".into(), Value::from(self.id.as_str()));
        meta.insert("trace_id".into(), Value::from(self.trace_id.as_str()));
        self.status = Status::Failed;
        self.stop_reason = Some(f.stop_reason.to_owned());
        self.error = Some(RecordedError { code: f.code.soat().to_owned(), message: f.message, meta });
        self.completed_at = Some(now);
    }

    /// Numbers the next event.
    pub fn next_event_id(&mut self) -> u64 {
        self.state.seq += 1;
        self.state.seq
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The compiler keeps the status field private to the record; this keeps the
    /// record's own module from writing it beside the transitions, and any other
    /// generation or store file from writing a status through a copy.
    #[test]
    fn only_the_transition_writes_a_generation_status() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        collect(&root.join("services/src/agents/generation"), &mut files);
        files.push(root.join("core/src/store/generations.rs"));
        files.push(root.join("src/api/soat/generate.rs"));
        files.push(root.join("src/api/soat/generations.rs"));
        let this = root.join("services/src/agents/generation/record/transition.rs");
        for f in files.iter().filter(|f| **f != this) {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                // `.status =` but not `.status ==` (a comparison reads it).
                let assigns = code.match_indices(".status =").any(|(i, m)| !code[i + m.len()..].starts_with('='));
                let writes = assigns || code.contains("status: Status::");
                assert!(!writes, "{}:{} writes a generation's status outside the transition: {line}", f.display(), n + 1);
            }
        }
    }

    fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                collect(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
}
