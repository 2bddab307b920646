//! `POST /v1/collections/{id}/extract`: parse → the extract service → serialize.

use hyper::StatusCode;
use serde::Serialize;

use super::super::Call;
use super::caller;
use super::input::extract as input;
use super::search::{DocRef, Offsets, PageRef};
use crate::error::ApiError;
use crate::extract::{Extracted, Extractor};
use crate::http::response::{self, Reply};

#[derive(Serialize)]
struct Response<'a> {
    question: &'a str,
    pages: Vec<PageJson<'a>>,
    kept: usize,
    #[serde(rename = "rejectedExcerpts")]
    rejected_excerpts: usize,
    usage: Usage,
    model: &'a str,
    masked: bool,
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
struct PageJson<'a> {
    citation: &'a str,
    relevant: bool,
    note: &'a str,
    excerpts: Vec<ExcerptJson<'a>>,
    rejected: usize,
    document: DocRef<'a>,
    page: PageRef<'a>,
}

#[derive(Serialize)]
struct ExcerptJson<'a> {
    text: &'a str,
    #[serde(rename = "match")]
    matched: &'static str,
    offset: Offsets,
}

pub async fn extract(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    let req = input::parse(&call.bytes().await?)?;
    let app = call.app;
    let x =
        Extractor { search: &app.search, llm: app.llm.as_deref(), meters: &app.meters, config: &app.config.extract, local_ready: app.local_ready() };
    let out = x.run(call.embedders, caller(&call), &owned, &req.request).await?;
    let body = serde_json::to_vec(&render(&req.request.question, &out)).expect("responses serialize");
    Ok(response::json_bytes(StatusCode::OK, body.into()))
}

fn render<'a>(question: &'a str, x: &'a Extracted) -> Response<'a> {
    let pages = x
        .pages
        .iter()
        .map(|p| PageJson {
            citation: &p.citation,
            relevant: p.relevant,
            note: &p.note,
            excerpts: p
                .excerpts
                .iter()
                .map(|e| ExcerptJson { text: &e.text, matched: e.matched.as_str(), offset: Offsets { start: e.start, end: e.end } })
                .collect(),
            rejected: p.rejected,
            document: DocRef { id: &p.doc_id, title: p.title.as_deref(), author: p.author.as_deref() },
            page: PageRef { n: p.n, number: p.number.as_deref(), volume: p.volume.as_deref(), heading: p.heading.as_deref() },
        })
        .collect();
    Response {
        question,
        pages,
        kept: x.kept,
        rejected_excerpts: x.rejected,
        usage: Usage { input_tokens: x.input_tokens, output_tokens: x.output_tokens },
        model: &x.model,
        masked: x.masked,
    }
}
