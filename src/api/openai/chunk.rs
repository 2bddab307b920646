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
    /// Appends one `data:` event to `out`.
    fn event(&self, out: &mut Vec<u8>, choices: Option<Choice<'_>>, usage: Option<WireUsage>) {
        let c = Chunk { id: &self.id, object: "chat.completion.chunk", created: self.created, model: &self.model, choices: choices.into_iter().collect(), usage };
        out.extend_from_slice(b"data: ");
        serde_json::to_writer(&mut *out, &c).expect("chunks serialize");
        out.extend_from_slice(b"\n\n");
    }

    fn delta(&self, out: &mut Vec<u8>, delta: WireDelta<'_>, finish: Option<&'static str>) {
        self.event(out, Some(Choice { index: 0, delta, finish_reason: finish }), None)
    }
}

fn delta_event(head: &Head, out: &mut Vec<u8>, d: &Delta) {
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
    head.delta(out, wire, None)
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

/// One body frame: the deltas that are ready (waiting only for the first), so a
/// provider's burst of events leaves as one frame rather than one each.
async fn step(head: &Head, state: State) -> Option<(Bytes, State)> {
    let mut out = Vec::new();
    let (mut s, mut next) = match state {
        State::Done => return None,
        State::Start(s) => {
            head.delta(&mut out, WireDelta { role: Some("assistant"), content: Some(""), ..WireDelta::default() }, None);
            (s, None)
        }
        State::Streaming(mut s) => {
            let first = s.next().await;
            (s, Some(first))
        }
    };
    loop {
        match next {
            None => {}
            Some(Some(Ok(d))) => delta_event(head, &mut out, &d),
            Some(Some(Err(e))) => {
                tracing::warn!(provider = s.provider, error = %e, "a model stream failed after it began");
                out.extend_from_slice(&envelope::stream_event(&e));
                return Some((Bytes::from(out), State::Done));
            }
            Some(None) => {
                tail(head, &s, &mut out);
                return Some((Bytes::from(out), State::Done));
            }
        }
        // `ChatStream::next` is cancel-safe: a piece not yet arrived stays unread.
        match futures_lite::future::poll_once(s.next()).await {
            Some(n) => next = Some(n),
            None => return Some((Bytes::from(out), State::Streaming(s))),
        }
    }
}

/// The finish chunk, the usage chunk if asked for, and `[DONE]`.
fn tail(head: &Head, s: &ChatStream, out: &mut Vec<u8>) {
    let c = s.completion();
    head.delta(out, WireDelta::default(), Some(finish_reason(c.termination.reason)));
    if head.include_usage {
        head.event(out, None, Some(WireUsage::from(&c.output.usage)));
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
}

