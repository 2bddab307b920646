//! The step's server-run tool calls: each marked `started` with the step that made
//! it, sent with its idempotency key (`<generation>:<step>:<call>`), and its result
//! committed before the next; what a tool's failure means for the generation (the
//! model sees it, or the generation fails).

use serde_json::{json, Value};

use super::Run;
use crate::agents::generation::event::Event;
use crate::agents::generation::record::{Failure, PendingCall, Runner};
use crate::agents::generation::tools::Does;
use crate::agents::tools::call::CallInput;
use crate::agents::tools::ToolError;
use crate::error::{Code, ErrorCode};

impl Run {
    /// Runs the step's server-side calls that have no committed result.
    pub(super) async fn run_server_calls(&mut self) -> Result<(), Failure> {
        let todo: Vec<usize> = (0..self.g.state.pending.len())
            .filter(|&i| self.g.state.pending[i].runner == Runner::Server && self.g.state.pending[i].result.is_none())
            // guardrails (issue 37): a call held for approval runs once approved.
            .filter(|&i| self.g.state.pending[i].gate.as_ref().is_none_or(|g| g.approved))
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        if todo.iter().any(|&i| !self.g.state.pending[i].started) {
            for &i in &todo {
                self.g.state.pending[i].started = true;
            }
            self.save().await?;
        }
        for i in todo {
            let call = self.g.state.pending[i].clone();
            let (result, is_error) = match self.call_tool(&call).await {
                Ok(v) => (v, false),
                Err(Call::Soft(message)) => (json!({"error": message}), true),
                Err(Call::Fatal(f)) => return Err(f),
            };
            let result = self.scrub_result(result);
            self.emit(Event::ToolResult { tool_call_id: &call.id, tool_name: &call.tool_name, output: &result, is_error });
            let p = &mut self.g.state.pending[i];
            p.result = Some(result);
            p.is_error = is_error;
            self.save().await?;
        }
        Ok(())
    }

    async fn call_tool(&self, call: &PendingCall) -> Result<Value, Call> {
        let bound = self.tools.iter().find(|b| b.name == call.tool_name).ok_or_else(|| Call::Soft("no such tool".into()))?;
        let env = self.env();
        let args = call.args.as_object().cloned().unwrap_or_default();
        match &bound.does {
            Does::Tool { def, action } => {
                let input = CallInput {
                    action: action.clone(),
                    input: args,
                    context: self.g.state.input.tool_context.clone(),
                    // The step too: a provider may reuse call ids from step to step.
                    idempotency_key: Some(format!("{}:{}:{}", self.g.id, self.g.state.steps, call.id)),
                };
                self.host.agents.tools.run(&env, self.project(), def, input, 0).await.map_err(tool_failure)
            }
            Does::WriteMemory { store_id } => {
                let source = crate::agents::knowledge::Provenance {
                    generation_id: Some(self.g.id.clone()),
                    conversation_id: self.g.state.input.conversation_id.clone(),
                };
                crate::agents::generation::knowledge::write_memory(&env, self.project(), store_id, &call.args, source).await.map_err(Call::Soft)
            }
            Does::Agent { agent_id } => {
                let agent_id = agent_id.clone().or_else(|| args.get("agent_id").and_then(Value::as_str).map(str::to_owned));
                let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or_default().to_owned();
                let agent_id = agent_id.ok_or_else(|| Call::Soft("agent_id is required".into()))?;
                crate::agents::generation::nested::ask(self.host.clone(), &self.g, &agent_id, &prompt).await.map_err(Call::Soft)
            }
        }
    }
}

/// How a tool call ended, when not with a result.
enum Call {
    /// The model sees the error as the call's result and may try again.
    Soft(String),
    /// The generation fails (an http tool's non-2xx is 502 `TOOL_HTTP_ERROR`).
    Fatal(Failure),
}

fn tool_failure(e: ToolError) -> Call {
    match &e {
        ToolError::Http { status: Some(status), .. } => {
            Call::Fatal(Failure::new(Code::ToolHttpError, e.message()).with("status", *status).with("tool_error", e.to_string()))
        }
        ToolError::Http { .. } | ToolError::Refused { .. } | ToolError::Secret(_) | ToolError::Store(_) | ToolError::MissingContext(_) => {
            Call::Fatal(Failure::new(e.code(), e.message()))
        }
        _ => Call::Soft(e.message()),
    }
}
