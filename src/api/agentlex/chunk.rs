//! `POST /v1/chunk`: what adding a document would store, nothing stored, no key. The
//! same parse, the same [`crate::search::Service::preview`] → `ingest::prepare` as an
//! add; the chunk objects are the ones the page view shows ([`ChunkOut`]).

use hyper::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::super::Call;
use super::input::document;
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use quarry_index::chunk::Kinds;
use quarry_index::collection::ChunkView;
use quarry_index::segment::{Batch, ChunkRec, PageRec};

pub async fn chunk(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let doc = document::parse_off_shard(call.bytes().await?).await?;
    let batch = call.app.search.preview(doc).await?;
    Ok(response::json(StatusCode::OK, &preview(&batch)))
}

/// The spec's `Chunk`, from a stored chunk or a prepared one.
#[derive(Serialize, Debug, PartialEq)]
pub struct ChunkOut<'a> {
    pos: u32,
    text: &'a str,
    kinds: Vec<&'static str>,
    heading: Option<&'a str>,
    start: Option<u32>,
    end: Option<u32>,
    meta: Value,
    #[serde(rename = "footnoteOf")]
    footnote_of: Option<u32>,
}

impl<'a> ChunkOut<'a> {
    pub fn of_view(c: &ChunkView<'a>) -> ChunkOut<'a> {
        ChunkOut {
            pos: c.pos,
            text: c.text,
            kinds: c.kinds.names(),
            heading: c.heading,
            start: Some(c.start),
            end: Some(c.end),
            meta: meta(c.meta_json),
            footnote_of: c.footnote_of,
        }
    }

    fn of_rec(page: &'a PageRec, c: &'a ChunkRec) -> ChunkOut<'a> {
        ChunkOut {
            pos: c.pos,
            text: &page.text[c.byte_start as usize..c.byte_end as usize],
            kinds: Kinds(c.kinds).names(),
            heading: c.heading.as_deref(),
            start: Some(c.start),
            end: Some(c.end),
            meta: meta(c.meta_json.as_deref()),
            footnote_of: c.footnote_of,
        }
    }
}

/// A meta stored as JSON text, as the object it is (null when there is none).
pub fn meta(json: Option<&str>) -> Value {
    json.and_then(|s| serde_json::from_str(s).ok()).unwrap_or(Value::Null)
}

#[derive(Serialize)]
struct Preview<'a> {
    chunker: &'a str,
    format: &'a str,
    meta: Value,
    pages: Vec<PageOut<'a>>,
}

#[derive(Serialize)]
struct PageOut<'a> {
    n: u32,
    number: Option<&'a str>,
    volume: Option<&'a str>,
    heading: Option<&'a str>,
    chars: usize,
    meta: Value,
    chunks: Vec<ChunkOut<'a>>,
}

fn preview(b: &Batch) -> Preview<'_> {
    let d = &b.docs[0];
    let pages = b
        .pages
        .iter()
        .map(|p| {
            let chunks = &b.chunks[p.first_chunk as usize..(p.first_chunk + p.chunks) as usize];
            PageOut {
                n: p.n,
                number: p.number.as_deref(),
                volume: p.volume.as_deref(),
                heading: p.heading.as_deref(),
                chars: p.text.chars().count(),
                meta: meta(p.meta_json.as_deref()),
                chunks: chunks.iter().map(|c| ChunkOut::of_rec(p, c)).collect(),
            }
        })
        .collect();
    Preview { chunker: &d.chunker, format: &d.format, meta: meta(Some(&d.meta_json)), pages }
}
