//! `POST /v1/collections/{id}/sample`: indexes a bundled sample corpus of a domain, one
//! document at a time through the same path as adding one (parsed as a request body,
//! storage checked, pages metered).

use hyper::StatusCode;
use include_dir::{include_dir, Dir};
use serde::{Deserialize, Serialize};

use super::super::Call;
use super::caller;
use super::input::document;
use crate::error::{ApiError, Code};
use crate::http::response::{self, Reply};

/// `samples/<domain>/*.json`, in the binary.
static SAMPLES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/samples");

/// The domains the spec names, and the folder each one's documents are in.
const DOMAINS: [&str; 3] = ["medical", "legal", "archive"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleRequest {
    domain: String,
}

#[derive(Serialize, Default, Debug, PartialEq)]
struct Indexed {
    documents: u64,
    pages: u64,
    chunks: u64,
}

/// The bundled documents of `domain` in file-name order: (file name, bytes).
fn documents(domain: &str) -> Vec<(&'static str, &'static [u8])> {
    let Some(dir) = SAMPLES.get_dir(domain) else { return Vec::new() };
    let mut files: Vec<_> = dir
        .files()
        .filter(|f| f.path().extension().is_some_and(|e| e == "json"))
        .map(|f| (f.path().file_name().and_then(|n| n.to_str()).unwrap_or(""), f.contents()))
        .collect();
    files.sort();
    files
}

pub async fn sample(mut call: Call<'_>, id: String) -> Result<Reply, ApiError> {
    let req: SampleRequest = call.json(Code::InvalidDomain).await?;
    if !DOMAINS.contains(&req.domain.as_str()) {
        let msg = format!("domain must be one of {}; {:?} is not one of them.", DOMAINS.join(", "), req.domain);
        return Err(ApiError::new(Code::InvalidDomain, msg));
    }
    let owned = call.app.search.owned(&call.principal().account_id, &id).await?;
    call.app.search.check_embedder(&owned.record)?;
    let files = documents(&req.domain);
    if files.is_empty() {
        return Err(ApiError::new(Code::SampleNotFound, format!("This server has no {} sample bundled.", req.domain)));
    }
    let mut out = Indexed::default();
    for (name, bytes) in files {
        let doc = document::parse(bytes).map_err(|e| {
            tracing::error!(file = name, domain = req.domain, error = e.message.as_str(), "a bundled sample does not parse");
            ApiError::new(Code::SampleUnreadable, format!("The bundled sample {}/{name} could not be read.", req.domain))
        })?;
        let added = call.app.search.add(caller(&call), &owned, doc, None).await?;
        out.documents += 1;
        out.pages += added.pages as u64;
        out.chunks += added.chunks as u64;
    }
    Ok(response::json(StatusCode::CREATED, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bundled sample is a document the API accepts: a broken file would be a 500
    /// for every user who asks for it.
    #[test]
    fn every_bundled_sample_parses_as_a_document() {
        for domain in DOMAINS {
            for (name, bytes) in documents(domain) {
                let doc = document::parse(bytes).unwrap_or_else(|e| panic!("{domain}/{name}: {}", e.message));
                assert!(!doc.pages.is_empty(), "{domain}/{name} has no pages");
            }
        }
    }
}
