//! A streamed model answer decoded as the provider layer decodes it for every SSE body
//! it reads (`llm::stream::Decoder::push`): SSE framing, each frame's JSON, the
//! manifest's event map, typed events and their assembly into deltas.
//!
//!     cargo bench -p quarry-bench --bench stream
//!
//! - `openai-bench`: the 11 chunks of "Hello! How can I help you today?" that the
//!   gateway bench's fake upstream sends (`bench/gateway/run.sh`), in one read.
//! - `azure-recorded`: a recorded Azure OpenAI stream from
//!   `tests/data/provider-transcripts` (content-filter results in every chunk).
//!
//! Throughput is frames (SSE events).

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quarry::llm::manifest::Catalog;
use quarry::llm::stream::Decoder;

/// The gateway bench's upstream body.
fn bench_body() -> Vec<u8> {
    let chunk = |delta: &str, finish: &str| {
        format!(
            r#"data: {{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        ) + "\n\n"
    };
    let mut body = chunk(r#"{"role":"assistant","content":""}"#, "null");
    for w in ["Hello", "!", " How", " can", " I", " help", " you", " today", "?"] {
        body += &chunk(&format!(r#"{{"content":"{w}"}}"#), "null");
    }
    body += &chunk("{}", r#""stop""#);
    body += "data: [DONE]\n\n";
    body.into_bytes()
}

/// A recorded stream: one JSON chunk per line, framed as SSE.
fn recorded(path: &str) -> Vec<u8> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/provider-transcripts").join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut body: String = text.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("data: {l}\n\n")).collect();
    body += "data: [DONE]\n\n";
    body.into_bytes()
}

fn stream(c: &mut Criterion) {
    let catalog = Catalog::load(None).expect("the shipped manifests");
    let openai = catalog.get("openai").expect("the openai manifest").clone();
    let mut g = c.benchmark_group("stream-decode");
    for (name, body) in [("openai-bench", bench_body()), ("azure-recorded", recorded("openai/chat/azure-model-router.1.chunks.txt"))] {
        let frames = body.windows(2).filter(|w| w == b"\n\n").count() as u64;
        let text = decode(&openai, &body);
        assert!(!text.is_empty(), "{name}: the stream decodes to text");
        g.throughput(Throughput::Elements(frames));
        g.bench_function(name, |b| b.iter(|| decode(&openai, &body)));
    }
    g.finish();
}

/// The text the stream carries, decoded from one read of the whole body.
fn decode(manifest: &Arc<quarry::llm::manifest::Manifest>, body: &[u8]) -> String {
    let mut d = Decoder::new(manifest.clone());
    let mut deltas = d.push(body).expect("a valid stream");
    deltas.extend(d.finish().expect("a valid stream"));
    deltas
        .iter()
        .filter_map(|x| match x {
            quarry::llm::Delta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    targets = stream
}
criterion_main!(benches);
