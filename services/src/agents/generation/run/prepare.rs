//! Preparing a generation's first step: the request's messages made into the
//! transcript (each `tool_output` message's tool run, each document read) and the
//! knowledge search whose matches join the system prompt. Its own file because it
//! runs once per generation, before the turn loop, and reaches into tools, search
//! and knowledge, which the loop itself never does.

use serde_json::{Map, Value};

use super::Run;
use crate::agents::generation::record::{Block, Failure, InContent, Message, Part, Role};
use crate::agents::tools::call::CallInput;
use crate::error::{Code, ErrorCode};

impl Run {
    /// Before the first step: the request's messages made into the transcript (each
    /// `tool_output` tool run, each document read) and the knowledge search.
    pub(super) async fn prepare(&mut self) -> Result<(), Failure> {
        let raw = std::mem::take(&mut self.g.state.raw_messages);
        let ran_tools = raw.iter().any(|m| matches!(m.content, InContent::Part(Part::ToolOutput { .. })));
        for (i, m) in raw.iter().enumerate() {
            let text = match &m.content {
                InContent::Text(t) => t.clone(),
                InContent::Part(Part::ToolOutput { tool_id, action, input, output_path }) => self
                    .tool_output(tool_id, action.clone(), input.clone().unwrap_or_default(), output_path.as_deref())
                    .await
                    .map_err(|f| Failure { message: format!("messages[{i}].content: {}", f.message), ..f })?,
                InContent::Part(Part::Document { document_id }) => {
                    self.document(document_id).await.map_err(|f| Failure { message: format!("messages[{i}].content: {}", f.message), ..f })?
                }
            };
            let text = self.screen_prepared(text);
            self.g.state.messages.push(Message::text(m.role, text));
        }
        self.g.state.context = self.knowledge().await?;
        self.g.state.prepared = true;
        // Only a tool_output message did something a restart must not redo; otherwise
        // the first step's commit carries the prepared transcript.
        if ran_tools {
            self.save().await?;
        }
        Ok(())
    }

    async fn tool_output(&self, tool_id: &str, action: Option<String>, input: Map<String, Value>, path: Option<&str>) -> Result<String, Failure> {
        let tool = self
            .host
            .agents
            .tools
            .lookup_in(self.project(), tool_id)
            .map_err(|e| Failure::new(e.code(), e.message()))?
            .ok_or_else(|| Failure::new(Code::ToolNotFound, format!("no tool {tool_id} in this project")))?;
        let env = self.env();
        let call =
            CallInput { action, input, context: self.g.state.input.tool_context.clone(), idempotency_key: Some(format!("{}:{tool_id}", self.g.id)) };
        let out = self.host.agents.tools.run(&env, self.project(), &tool.def, call, 0).await.map_err(|e| Failure::new(e.code(), e.message()))?;
        let picked = match path {
            Some(p) => p.split('.').filter(|s| !s.is_empty()).try_fold(&out, |v, k| match v {
                Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get(i)),
                v => v.get(k),
            }),
            None => Some(&out),
        };
        let picked = picked.ok_or_else(|| {
            Failure::new(Code::SoatValidation, format!("output_path {:?} names nothing in the tool's output", path.unwrap_or_default()))
        })?;
        Ok(match picked {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        })
    }

    /// A Quarry document of the account, its pages' text in order, for a run whose
    /// key reads `/v1` data.
    async fn document(&self, id: &str) -> Result<String, Failure> {
        const MAX_CHARS: usize = 60_000;
        let collections = self.host.agents.search.readable_collections(self.env().caller).await.map_err(|e| Failure::new(e.code(), e.message()))?;
        for owned in collections {
            let snap = owned.snapshot();
            let Some(at) = snap.find(id) else { continue };
            let d = snap.doc_view(at);
            let mut text = String::new();
            for n in 0..d.pages {
                if let Some(p) = snap.page_view(at, n) {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(p.text);
                }
                if text.chars().count() > MAX_CHARS {
                    text = text.chars().take(MAX_CHARS).collect();
                    break;
                }
            }
            return Ok(text);
        }
        Err(Failure::new(Code::SoatNotFound, format!("no document {id} in this account's collections")))
    }

    /// The knowledge search before the first step (§2.8): the agent's
    /// `knowledge_config` merged with the request's, searched with the last user
    /// message; its matches, with their citations, join the system prompt.
    async fn knowledge(&self) -> Result<Option<String>, Failure> {
        let Some(cfg) = crate::agents::knowledge::merge(self.g.state.config.knowledge_config.as_ref(), self.g.state.input.knowledge_config.as_ref())
        else {
            return Ok(None);
        };
        let query: String = self
            .g
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect())
            .unwrap_or_default();
        if query.trim().is_empty() {
            return Ok(None);
        }
        let env = self.env();
        let matches = crate::agents::knowledge::retrieve(&env, self.project(), &cfg, &query)
            .await
            .map_err(|e| Failure::new(e.code(), format!("The knowledge search failed: {}", e.message())))?;
        Ok((!matches.is_empty()).then(|| crate::agents::knowledge::context(&matches)))
    }
}
