//! `POST /v1/scan`: the identifiers a text carries, counted by kind, and a masked
//! preview of its first 300 characters. Spans are never returned, so no identifier
//! goes back to the caller: the answer is the counts, the kinds and the preview, in
//! which every kind asked for (without `kinds`: the default set, all but date and url)
//! is masked.

use hyper::StatusCode;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::super::Call;
use super::input::scan::{self as input, ScanIn};
use crate::error::ApiError;
use crate::http::response::{self, Reply};
use quarry_index::identify::{self, Counts, Kinds};

/// The preview's length, in characters of the masked text.
pub const PREVIEW_CHARS: usize = 300;

/// Texts longer than this are scanned on the blocking pool, off the shard.
const INLINE_BYTES: usize = 16 * 1024;

#[derive(Serialize)]
struct Response {
    total: u32,
    counts: CountsOut,
    kinds: Vec<&'static str>,
    masked_preview: String,
}

/// The counts as an object, in count order.
struct CountsOut(Counts);

impl Serialize for CountsOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let by = self.0.by_count();
        let mut m = s.serialize_map(Some(by.len()))?;
        for (k, n) in by {
            m.serialize_entry(k.name(), &n)?;
        }
        m.end()
    }
}

pub async fn scan(mut call: Call<'_>) -> Result<Reply, ApiError> {
    let req = input::parse(&call.bytes().await?)?;
    let out = if req.text.len() <= INLINE_BYTES { answer(&req) } else { crate::runtime::blocking(move || answer(&req)).await };
    Ok(response::json(StatusCode::OK, &out))
}

fn answer(req: &ScanIn) -> Response {
    let (counted, masked) = match req.kinds {
        Some(k) => (k, k),
        None => (Kinds::ALL, Kinds::default_mask()),
    };
    let spans = identify::scan(&req.text, counted);
    let counts = Counts::of(&spans);
    Response {
        total: counts.total(),
        kinds: counts.by_count().into_iter().map(|(k, _)| k.name()).collect(),
        counts: CountsOut(counts),
        masked_preview: identify::mask_spans(&req.text, &spans, masked, PREVIEW_CHARS),
    }
}
