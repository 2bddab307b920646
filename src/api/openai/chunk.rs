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
use crate::http::json_out::{self, Object};
use crate::llm::{ChatStream, Delta};

/// What the chunks have in common.
struct Head {
    include_usage: bool,
    /// How every chunk begins: `{"id":…,"object":…,"created":…,"model":…,"choices":[`,
    /// written once per stream.
    prefix: Vec<u8>,
}

/// One chunk as serde_json writes it: the definition [`Head::event`] writes by hand,
/// byte for byte (held to it by a test).
#[cfg_attr(not(test), allow(dead_code))]
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

#[derive(Serialize, Default, Clone)]
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

#[derive(Serialize, Clone)]
struct WireToolDelta<'a> {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: WireFunctionDelta<'a>,
}

#[derive(Serialize, Clone)]
struct WireFunctionDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

impl Head {
    fn new(id: &str, created: u64, model: &str, include_usage: bool) -> Head {
        let mut prefix = b"{\"id\":".to_vec();
        json_out::str(&mut prefix, id);
        prefix.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        json_out::value(&mut prefix, &created);
        prefix.extend_from_slice(b",\"model\":");
        json_out::str(&mut prefix, model);
        prefix.extend_from_slice(b",\"choices\":[");
        Head { include_usage, prefix }
    }

    /// Appends one `data:` event to `out`: a [`Chunk`] with these choices and usage.
    fn event(&self, out: &mut Vec<u8>, choices: Option<Choice<'_>>, usage: Option<WireUsage>) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&self.prefix);
        if let Some(c) = choices {
            write_choice(out, &c);
        }
        out.push(b']');
        if let Some(u) = usage {
            out.extend_from_slice(b",\"usage\":");
            json_out::value(out, &u);
        }
        out.extend_from_slice(b"}\n\n");
    }

    fn delta(&self, out: &mut Vec<u8>, delta: WireDelta<'_>, finish: Option<&'static str>) {
        self.event(out, Some(Choice { index: 0, delta, finish_reason: finish }), None)
    }
}

fn write_choice(out: &mut Vec<u8>, c: &Choice<'_>) {
    let mut o = Object::new(out);
    json_out::value(o.field("index"), &c.index);
    {
        let d = &c.delta;
        let mut delta = Object::new(o.field("delta"));
        if let Some(role) = d.role {
            json_out::str(delta.field("role"), role);
        }
        if let Some(content) = d.content {
            json_out::str(delta.field("content"), content);
        }
        if let Some(reasoning) = d.reasoning_content {
            json_out::str(delta.field("reasoning_content"), reasoning);
        }
        if let Some([call]) = &d.tool_calls {
            let calls = delta.field("tool_calls");
            calls.push(b'[');
            {
                let mut t = Object::new(calls);
                json_out::value(t.field("index"), &call.index);
                if let Some(id) = call.id {
                    json_out::str(t.field("id"), id);
                }
                if let Some(kind) = call.kind {
                    json_out::str(t.field("type"), kind);
                }
                let mut f = Object::new(t.field("function"));
                if let Some(name) = call.function.name {
                    json_out::str(f.field("name"), name);
                }
                json_out::str(f.field("arguments"), call.function.arguments);
            }
            calls.push(b']');
        }
    }
    json_out::opt_str(o.field("finish_reason"), c.finish_reason);
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
    let head = std::rc::Rc::new(Head::new(&completion_id(), now(), &model, include_usage));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the writer must equal: `Chunk` through serde_json.
    fn serde_event(id: &str, created: u64, model: &str, choices: Option<Choice<'_>>, usage: Option<WireUsage>) -> Vec<u8> {
        let c = Chunk { id, object: "chat.completion.chunk", created, model, choices: choices.into_iter().collect(), usage };
        let mut out = b"data: ".to_vec();
        serde_json::to_writer(&mut out, &c).unwrap();
        out.extend_from_slice(b"\n\n");
        out
    }

    #[test]
    fn the_written_chunks_are_serde_jsons() {
        let text = "plain \"quoted\" back\\slash \n\t\r\u{8}\u{c}\u{1} é 漢 🎉 \u{7f}";
        let tool = |id: Option<&'static str>, name: Option<&'static str>, arguments: &'static str| WireDelta {
            tool_calls: Some([WireToolDelta { index: 3, id, kind: id.map(|_| "function"), function: WireFunctionDelta { name, arguments } }]),
            ..WireDelta::default()
        };
        let deltas = [
            WireDelta { role: Some("assistant"), content: Some(""), ..WireDelta::default() },
            WireDelta { content: Some(text), ..WireDelta::default() },
            WireDelta { reasoning_content: Some(text), ..WireDelta::default() },
            tool(Some("call_1"), Some("get_weather"), "{\"city\": \"Paris\"}"),
            tool(None, None, text),
            WireDelta::default(),
        ];
        for (id, model) in [("chatcmpl-1", "gpt-x"), ("id \"odd\"\n", "模型/\\x")] {
            let head = Head::new(id, 1_764_000_000, model, true);
            for d in &deltas {
                for finish in [None, Some("stop"), Some("tool_calls")] {
                    let choice = || Choice { index: 0, delta: d.clone(), finish_reason: finish };
                    let mut written = Vec::new();
                    head.event(&mut written, Some(choice()), None);
                    assert_eq!(
                        String::from_utf8(written).unwrap(),
                        String::from_utf8(serde_event(id, 1_764_000_000, model, Some(choice()), None)).unwrap()
                    );
                }
            }
            let usage = || WireUsage::from(&crate::llm::Usage { input: 9, output: 12, cached: 4, cache_write: 1, reasoning: 2 });
            let mut written = Vec::new();
            head.event(&mut written, None, Some(usage()));
            assert_eq!(String::from_utf8(written).unwrap(), String::from_utf8(serde_event(id, 1_764_000_000, model, None, Some(usage()))).unwrap());
        }
    }
}
