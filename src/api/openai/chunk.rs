//! A streamed generation as canonical OpenAI `chat.completion.chunk` events: a first
//! chunk with the role, then one chunk per delta (content always a string, reasoning
//! in `reasoning_content`, tool calls with a 0-based `index` always present, id and
//! name on a call's first chunk), a last chunk with the finish reason, a usage chunk
//! when `stream_options.include_usage` asked for it, and `data: [DONE]`. A failure
//! after the stream began ends it with an OpenAI error event and no `[DONE]`.

use std::convert::Infallible;

use bytes::Bytes;
use hyper::body::Frame;
use serde::Serialize;

use super::envelope;
use super::response::{completion_id, finish_reason, now, WireUsage};
use crate::llm::{ChatStream, Delta};

/// What the chunks have in common.
struct Head {
    id: String,
    created: u64,
    model: String,
    include_usage: bool,
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<Choice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<WireUsage>,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: WireDelta<'a>,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct WireDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[WireToolDelta<'a>; 1]>,
}

#[derive(Serialize)]
struct WireToolDelta<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: WireFunctionDelta<'a>,
}

#[derive(Serialize)]
struct WireFunctionDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

impl Head {
    fn event(&self, choices: Vec<Choice<'_>>, usage: Option<WireUsage>) -> Bytes {
        let c = Chunk { id: &self.id, object: "chat.completion.chunk", created: self.created, model: &self.model, choices, usage };
        let mut out = b"data: ".to_vec();
        serde_json::to_writer(&mut out, &c).expect("chunks serialize");
        out.extend_from_slice(b"\n\n");
        Bytes::from(out)
    }

    fn delta(&self, delta: WireDelta<'_>, finish: Option<&'static str>) -> Bytes {
        self.event(vec![Choice { index: 0, delta, finish_reason: finish }], None)
    }
}

fn delta_event(head: &Head, d: &Delta) -> Bytes {
    let wire = match d {
        Delta::Text(t) => WireDelta { content: Some(t), ..WireDelta::default() },
        Delta::Reasoning(t) => WireDelta { reasoning_content: Some(t), ..WireDelta::default() },
        Delta::ToolCall { index, id, name, arguments } => WireDelta {
            tool_calls: Some([WireToolDelta {
                index: *index,
                id: id.as_deref(),
                kind: id.as_ref().map(|_| "function"),
                function: WireFunctionDelta { name: name.as_deref(), arguments },
            }]),
            ..WireDelta::default()
        },
    };
    head.delta(wire, None)
}

enum State {
    Start(ChatStream),
    Streaming(ChatStream),
    Done,
}

/// The SSE body for `stream`.
pub fn events(stream: ChatStream, model: String, include_usage: bool) -> crate::http::response::Streamed {
    let head = std::rc::Rc::new(Head { id: completion_id(), created: now(), model, include_usage });
    let s = futures_lite::stream::unfold(State::Start(stream), move |state| {
        let head = head.clone();
        async move {
            let (bytes, next) = step(&head, state).await?;
            Some((Ok::<_, Infallible>(Frame::data(bytes)), next))
        }
    });
    http_body_util::StreamBody::new(Box::pin(s))
}

async fn step(head: &Head, state: State) -> Option<(Bytes, State)> {
    match state {
        State::Done => None,
        State::Start(s) => {
            let first = head.delta(WireDelta { role: Some("assistant"), content: Some(""), ..WireDelta::default() }, None);
            Some((first, State::Streaming(s)))
        }
        State::Streaming(mut s) => match s.next().await {
            Some(Ok(d)) => Some((delta_event(head, &d), State::Streaming(s))),
            Some(Err(e)) => {
                tracing::warn!(provider = s.provider, error = %e, "a model stream failed after it began");
                Some((envelope::stream_event(&e), State::Done))
            }
            None => Some((tail(head, &s), State::Done)),
        },
    }
}

/// The finish chunk, the usage chunk if asked for, and `[DONE]`.
fn tail(head: &Head, s: &ChatStream) -> Bytes {
    let c = s.completion();
    let mut out = head.delta(WireDelta::default(), Some(finish_reason(c.termination.reason))).to_vec();
    if head.include_usage {
        out.extend_from_slice(&head.event(Vec::new(), Some(WireUsage::from(&c.output.usage))));
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    Bytes::from(out)
}

