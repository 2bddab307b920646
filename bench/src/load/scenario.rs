//! A scenario is the list of requests a run cycles through, serialized up front. Today it comes
//! from the command line (one request) or from a JSONL file (one request per line); search and
//! ingest scenarios will build the same list from evaluation queries or documents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::request::{default_method, PreparedRequest, RequestSpec};

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("reading scenario {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("scenario {path} line {line}: {source}")]
    Line {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("scenario {path} has no requests")]
    Empty { path: PathBuf },
}

/// The prepared requests of a run. Connections walk it in order, each from its own offset.
#[derive(Debug, Clone)]
pub struct Scenario {
    requests: Vec<PreparedRequest>,
}

impl Scenario {
    pub fn single(spec: &RequestSpec, host: &str) -> Scenario {
        Scenario { requests: vec![spec.prepare(host)] }
    }

    /// A scenario built in code (e.g. search queries from an evaluation set); `None` if empty.
    pub fn from_specs<'a>(specs: impl IntoIterator<Item = &'a RequestSpec>, host: &str) -> Option<Scenario> {
        let requests: Vec<PreparedRequest> = specs.into_iter().map(|spec| spec.prepare(host)).collect();
        (!requests.is_empty()).then_some(Scenario { requests })
    }

    /// Reads one JSON object per non-blank line: `{"method","path","headers","body"}`, where
    /// only `path` is required, `headers` is an object or a list of `[name, value]` pairs, and
    /// `body` is a string sent as is or any other JSON value sent compactly as
    /// `application/json`. `extra_headers` (e.g. from `-H`) are added to every request.
    pub fn from_jsonl(path: &Path, host: &str, extra_headers: &[(String, String)]) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io { path: path.into(), source })?;
        let mut requests = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let parsed: Line = serde_json::from_str(line).map_err(|source| ScenarioError::Line { path: path.into(), line: i + 1, source })?;
            let mut spec = parsed.into_spec();
            add_missing_headers(&mut spec, extra_headers);
            requests.push(spec.prepare(host));
        }
        if requests.is_empty() {
            return Err(ScenarioError::Empty { path: path.into() });
        }
        Ok(Scenario { requests })
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    pub fn get(&self, index: usize) -> &PreparedRequest {
        &self.requests[index % self.requests.len()]
    }

    /// Where connection `conn` of `conns` starts, spreading connections evenly over the list.
    pub fn start_for(&self, conn: usize, conns: usize) -> usize {
        conn * self.requests.len() / conns.max(1)
    }
}

/// Adds each header the spec does not already set.
pub fn add_missing_headers(spec: &mut RequestSpec, headers: &[(String, String)]) {
    for (name, value) in headers {
        if !spec.has_header(name) {
            spec.headers.push((name.clone(), value.clone()));
        }
    }
}

/// One JSONL line, parsed at the edge and turned into a typed [`RequestSpec`] at once.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(default = "default_method")]
    method: String,
    path: String,
    #[serde(default)]
    headers: Option<Headers>,
    #[serde(default)]
    body: Option<Body>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Headers {
    Map(BTreeMap<String, String>),
    Pairs(Vec<(String, String)>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    Text(String),
    Json(serde_json::Value),
}

impl Line {
    fn into_spec(self) -> RequestSpec {
        let mut headers: Vec<(String, String)> = match self.headers {
            None => Vec::new(),
            Some(Headers::Map(map)) => map.into_iter().collect(),
            Some(Headers::Pairs(pairs)) => pairs,
        };
        let body = self.body.map(|body| match body {
            Body::Text(text) => text.into_bytes(),
            Body::Json(value) => {
                if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                serde_json::to_vec(&value).expect("a JSON value always serializes")
            }
        });
        RequestSpec { method: self.method, path: self.path, headers, body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario_file(text: &str) -> tempfile_like::TempFile {
        tempfile_like::TempFile::with(text)
    }

    /// A minimal temporary file, to keep `tempfile` out of the dependencies.
    mod tempfile_like {
        pub struct TempFile(pub std::path::PathBuf);
        impl TempFile {
            pub fn with(text: &str) -> TempFile {
                static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path = std::env::temp_dir().join(format!("quarry-load-{}-{n}.jsonl", std::process::id()));
                std::fs::write(&path, text).unwrap();
                TempFile(path)
            }
        }
        impl Drop for TempFile {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn reads_jsonl_lines_in_order() {
        let file = scenario_file(concat!(
            r#"{"path":"/v1/health"}"#,
            "\n\n",
            r#"{"method":"POST","path":"/v1/search","headers":{"Authorization":"Bearer k"},"body":{"q":"rust"}}"#,
            "\n",
            r#"{"method":"PUT","path":"/d","headers":[["X-A","1"]],"body":"raw"}"#,
        ));
        let s = Scenario::from_jsonl(&file.0, "h:1", &[("X-Run".into(), "7".into())]).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(0).bytes, b"GET /v1/health HTTP/1.1\r\nHost: h:1\r\nX-Run: 7\r\n\r\n");
        let search = String::from_utf8(s.get(1).bytes.clone()).unwrap();
        assert!(search.starts_with("POST /v1/search HTTP/1.1\r\n"), "{search}");
        assert!(search.contains("Authorization: Bearer k\r\n"), "{search}");
        assert!(search.contains("Content-Type: application/json\r\n"), "{search}");
        assert!(search.ends_with("Content-Length: 12\r\n\r\n{\"q\":\"rust\"}"), "{search}");
        assert!(String::from_utf8(s.get(2).bytes.clone()).unwrap().ends_with("X-A: 1\r\nX-Run: 7\r\nContent-Length: 3\r\n\r\nraw"));
        assert_eq!(s.get(3), s.get(0), "the list cycles");
    }

    #[test]
    fn bad_line_names_file_and_line() {
        let file = scenario_file("{\"path\":\"/\"}\n{\"paht\":\"/\"}\n");
        let err = Scenario::from_jsonl(&file.0, "h", &[]).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains(&file.0.display().to_string()), "{err}");
    }

    #[test]
    fn empty_file_is_refused() {
        let file = scenario_file("\n \n");
        assert!(matches!(Scenario::from_jsonl(&file.0, "h", &[]), Err(ScenarioError::Empty { .. })));
    }

    #[test]
    fn built_in_code() {
        let specs = [RequestSpec::get("/a"), RequestSpec::get("/b")];
        let s = Scenario::from_specs(&specs, "h").unwrap();
        assert_eq!(s.len(), 2);
        assert!(s.get(1).bytes.starts_with(b"GET /b "));
        assert!(Scenario::from_specs(&[], "h").is_none());
    }

    #[test]
    fn connections_start_spread_out() {
        let spec = RequestSpec::get("/");
        let s = Scenario { requests: vec![spec.prepare("h"); 10] };
        let starts: Vec<usize> = (0..4).map(|c| s.start_for(c, 4)).collect();
        assert_eq!(starts, [0, 2, 5, 7]);
    }
}
