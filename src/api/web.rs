//! What a person opens in a browser: `GET /` leads to `/console`; `/console` is the
//! console (plain ES modules under `web/console/`, no build step) and `/docs` the API
//! reference (Swagger UI from the npm package `swagger-ui-dist`, over the served OpenAPI
//! documents). Every file is embedded by `build.rs`; nothing is fetched at run time, and
//! the pages' Content-Security-Policy lets them load and call this server only.

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CACHE_CONTROL, LOCATION};
use hyper::StatusCode;

use crate::app::App;
use crate::error::{ApiError, Code};
use crate::http::call::Call;
use crate::http::response::{self, Reply};

mod assets {
    include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));
}

/// Scripts, styles, images and connections from this origin only; no inline script, no
/// framing. Swagger UI sets element styles from script, which `style-src` allows for
/// CSSOM writes; inline `<style>` blocks are not used by either page.
const CSP: HeaderValue = HeaderValue::from_static(
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
);
static CONTENT_SECURITY_POLICY: HeaderName = HeaderName::from_static("content-security-policy");
static X_CONTENT_TYPE_OPTIONS: HeaderName = HeaderName::from_static("x-content-type-options");
static REFERRER_POLICY: HeaderName = HeaderName::from_static("referrer-policy");

/// `GET /`: a person who opens the server's address gets the console.
pub fn root(_: &App) -> Reply {
    let mut r = response::bytes(StatusCode::FOUND, HeaderValue::from_static("text/plain; charset=utf-8"), Bytes::from_static(b"See /console\n"));
    r.headers_mut().insert(LOCATION, HeaderValue::from_static("/console"));
    r
}

/// `GET /console`: the console's page.
pub fn console(_: &App) -> Reply {
    page(assets::CONSOLE, "index.html")
}

/// `GET /console/{file}`: one of the console's files.
pub async fn console_file(_: Call<'_>, file: String) -> Result<Reply, ApiError> {
    file_of(assets::CONSOLE, &file, "no-cache")
}

/// `GET /docs`: the API reference.
pub fn docs(_: &App) -> Reply {
    page(assets::DOCS, "index.html")
}

/// `GET /docs/{file}`: the reference's own files and Swagger UI's.
pub async fn docs_file(_: Call<'_>, file: String) -> Result<Reply, ApiError> {
    // Swagger UI's files change only with the pinned package (a new binary).
    let cache = if file.starts_with("swagger-ui") { "public, max-age=86400" } else { "no-cache" };
    file_of(assets::DOCS, &file, cache)
}

fn page(table: &'static [(&'static str, &'static [u8])], name: &str) -> Reply {
    file_of(table, name, "no-cache").expect("build.rs embeds every page's index.html")
}

fn file_of(table: &'static [(&'static str, &'static [u8])], name: &str, cache: &'static str) -> Result<Reply, ApiError> {
    let Some((_, body)) = table.iter().find(|(n, _)| *n == name) else {
        return Err(ApiError::new(Code::NotFound, format!("no file named {name:?} here")));
    };
    let mut r = response::bytes(StatusCode::OK, content_type(name), Bytes::from_static(body));
    let h = r.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(CONTENT_SECURITY_POLICY.clone(), CSP);
    h.insert(X_CONTENT_TYPE_OPTIONS.clone(), HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY.clone(), HeaderValue::from_static("no-referrer"));
    Ok(r)
}

fn content_type(name: &str) -> HeaderValue {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    HeaderValue::from_static(match ext {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_file_has_a_type_a_browser_will_run_or_show() {
        for (name, body) in assets::CONSOLE.iter().chain(assets::DOCS) {
            assert!(!body.is_empty(), "{name} is empty");
            assert_ne!(content_type(name), "application/octet-stream", "{name} has no known type");
        }
        for table in [assets::CONSOLE, assets::DOCS] {
            assert!(table.iter().any(|(n, _)| *n == "index.html"));
        }
    }
}
