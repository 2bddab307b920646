//! One model call of a step: the request built from the transcript and the step's
//! tools, sent to each target in turn (the agent's provider, or its model route's
//! targets, failing over as the route allows), streamed as deltas when the request
//! streams; the generation's `routing` records what each attempt did.

use serde_json::{json, Value};

use super::route::{failover_class, routing};
use super::Run;
use crate::agents::generation::event::Event;
use crate::agents::generation::record::Failure;
use crate::agents::generation::tools as gtools;
use crate::agents::providers::{self, CallError};
use crate::error::Code;
use crate::llm::request::{ChatRequest, Effort, Params, ResponseFormat, ToolChoice};
use crate::llm::Delta;

impl Run {
    /// One model call for `step`: the request from the transcript, streamed (each
    /// text delta an event) when the request streams, else whole.
    pub(super) async fn model_call(&mut self, step: u32) -> Result<(crate::llm::Output, crate::llm::Reason, bool), Failure> {
        let config = &self.g.state.config;
        let step_tools = gtools::for_step(&self.tools, config, step);
        let forced = matches!(step_tools.choice, Some(ToolChoice::Required | ToolChoice::Specific(_)));
        let mut req = ChatRequest {
            model: config.model.clone().unwrap_or_default(),
            system: crate::agents::generation::prompt::system(config, self.g.state.context.as_deref()),
            messages: crate::agents::generation::prompt::messages(&self.g.state.messages, config.max_context_messages),
            tools: gtools::llm_tools(&step_tools.visible),
            tool_choice: step_tools.choice,
            params: Params { temperature: config.temperature, max_tokens: config.max_output_tokens.map(|n| n.max(1) as u64), ..Params::default() },
            response_format: None,
            reasoning_effort: config.reasoning.as_ref().and_then(|r| effort(r.effort)),
            cache_breakpoints: config.prompt_caching.as_ref().is_some_and(|p| p.enabled),
        };
        if let Some(schema) = &config.output_schema {
            req.response_format = Some(ResponseFormat::JsonSchema { name: "output".into(), schema: Value::Object(schema.clone()), strict: false });
        }
        let targets = self.targets().await?;
        // quotas (issue 37): reserved before the model is called, never after.
        self.reserve_call(&mut req, &targets).await?;
        let scope = self.scope();
        let agents = self.host.agents.clone();
        let routed = targets.iter().any(|t| t.index.is_some());
        let mut attempts = Vec::new();
        let mut fallbacks = 0u64;
        // issue 37: targets whose circuit is open are skipped (all open: the first is tried).
        let skipped = self.open_circuits(&targets);
        for (n, t) in targets.iter().enumerate() {
            let mut req = req.clone();
            req.model = t.model.clone().unwrap_or_default();
            let model = t.model.clone().unwrap_or_else(|| t.provider.default_model.clone());
            let attempt = json!({"target_index": t.index, "ai_provider_id": t.provider.id, "model": model});
            if let Some(wait) = skipped[n] {
                let mut a = attempt;
                a["skipped"] = Value::from("circuit_open");
                a["retry_after_seconds"] = Value::from(wait.as_secs().max(1));
                attempts.push(a);
                continue;
            }
            let out = if self.g.state.input.stream {
                match providers::stream(&agents.upstreams(), &scope, &t.provider, req).await {
                    Ok(mut s) => {
                        let mut failed = None;
                        while let Some(d) = s.next().await {
                            match d {
                                Ok(Delta::Text(t)) if !t.is_empty() && !self.hold => self.emit(Event::Delta { text: &t }),
                                Ok(_) => {}
                                Err(e) => {
                                    failed = Some(e);
                                    break;
                                }
                            }
                        }
                        match failed {
                            // Deltas were sent: a stream that broke is not retried elsewhere.
                            Some(e) => Err((CallError::Llm(e), false)),
                            None => Ok(s.completion()),
                        }
                    }
                    Err(e) => Err((e, true)),
                }
            } else {
                providers::complete(&agents.upstreams(), &scope, &t.provider, req).await.map_err(|e| (e, true))
            };
            match out {
                Ok(c) => {
                    self.spent(&c.output.usage, c.output.tool_calls.len(), t);
                    if let Some(p) = &t.breaker {
                        agents.breakers.succeeded(p);
                    }
                    attempts.push(attempt);
                    self.g.ai_provider_id = Some(t.provider.id.clone());
                    self.g.state.served_by = Some(model);
                    if let Some(route_id) = &self.g.state.config.model_route_id {
                        self.g.routing = Some(routing(route_id, t.index, fallbacks, attempts, self.g.routing.take()));
                    }
                    if !self.g.state.input.stream && !self.hold && !c.output.text.is_empty() {
                        self.emit(Event::Delta { text: &c.output.text });
                    }
                    return Ok((c.output, c.termination.reason, forced));
                }
                Err((e, may_fail_over)) => {
                    let class = failover_class(&e).filter(|c| routed && may_fail_over && t.retry_on.iter().any(|r| r == c));
                    if let (Some(p), Some(_)) = (&t.breaker, class) {
                        agents.breakers.failed(p);
                    }
                    let last = skipped[n + 1..].iter().all(Option::is_some);
                    match class {
                        Some(class) if !last => {
                            let mut a = attempt;
                            a["error_class"] = Value::from(class);
                            attempts.push(a);
                            fallbacks += 1;
                        }
                        _ => {
                            if let Some(route_id) = &self.g.state.config.model_route_id {
                                let mut a = attempt;
                                if let Some(c) = failover_class(&e) {
                                    a["error_class"] = Value::from(c);
                                }
                                attempts.push(a);
                                self.g.routing = Some(routing(route_id, None, fallbacks, attempts, self.g.routing.take()));
                            }
                            return Err(e.into());
                        }
                    }
                }
            }
        }
        Err(Failure::new(Code::AiProviderError, "The agent's model route has no target."))
    }
}

impl Run {
    /// For each target, how long it stays skipped if its circuit is open; none skipped
    /// when every one is open but the first, which is tried anyway (half-open).
    fn open_circuits(&self, targets: &[super::route::Target]) -> Vec<Option<std::time::Duration>> {
        let breakers = &self.host.agents.breakers;
        let mut open: Vec<_> = targets.iter().map(|t| t.breaker.as_ref().and_then(|p| breakers.open(p))).collect();
        if open.iter().all(Option::is_some) {
            if let Some(first) = open.first_mut() {
                *first = None;
            }
        }
        open
    }
}

fn effort(e: crate::agents::agent::config::Effort) -> Option<Effort> {
    use crate::agents::agent::config::Effort as E;
    match e {
        E::None => None,
        E::Low => Some(Effort::Low),
        E::Medium => Some(Effort::Medium),
        E::High => Some(Effort::High),
    }
}
