//! The ChatGPT retrieval plugin surface (`/upsert`, `/query`, `/delete`) over HTTP, and LangChain as its client.
//!
//! The retrieval plugin (`/upsert`, `/upsert-file`, `/query`, `/delete`, also under
//! `/sub`) over real HTTP: the plugin's own sample documents and query, replace on
//! re-upsert, namespaces, one account's documents out of another's reach, FastAPI's
//! error shapes, the date and top_k knobs, the same ranking as AgentLex's hybrid
//! search on a SciFact subset, and LangChain's `ChatGPTPluginRetriever` as a client.
//!
//! Another account's key: without a namespace it works in its own default collection
//! (so it reads nothing and deletes nothing of the first account's, answered as empty
//! results and `success`); naming the first account's collection by id is 404.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::client::Response;
use super::server::{Options, TestServer};

/// The default plan with its limits raised: these tests send more requests than its
/// burst (the metering test runs on the plain plan).
use super::plans::RAISED;

fn keyword_server() -> TestServer {
    TestServer::with_config(RAISED)
}

fn minilm_server() -> TestServer {
    TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), config: RAISED.into(), ..Options::default() })
}

fn send(s: &TestServer, method: &str, path: &str, key: &str, body: &Value) -> Response {
    s.request(method, path, Some(key), Some(&body.to_string()))
}

fn ok(r: Response) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn upsert(s: &TestServer, key: &str, body: Value) -> Vec<String> {
    let r = ok(send(s, "POST", "/upsert", key, &body));
    r["ids"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_owned()).collect()
}

fn query(s: &TestServer, key: &str, body: Value) -> Value {
    ok(send(s, "POST", "/query", key, &body))
}

/// The document ids of query `i`'s results, in rank order.
fn docs(r: &Value, i: usize) -> Vec<String> {
    let results = r["results"][i]["results"].as_array().unwrap_or_else(|| panic!("no results[{i}]: {r}"));
    results.iter().map(|c| c["metadata"]["document_id"].as_str().unwrap().to_owned()).collect()
}

fn ask(s: &TestServer, key: &str, q: &str, extra: Value) -> Vec<String> {
    let mut one = json!({"query": q});
    one.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    docs(&query(s, key, json!({"queries": [one]})), 0)
}

fn delete(s: &TestServer, key: &str, body: Value) {
    assert_eq!(ok(send(s, "DELETE", "/delete", key, &body)), json!({"success": true}));
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn sample(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo(&format!("tests/data/retrieval-plugin/{name}"))).unwrap()).unwrap()
}

/// The 422 body's one error: its `loc` and `type`.
fn invalid(r: &Response) -> (Value, String) {
    assert_eq!(r.status, 422, "{}", r.text());
    let d = &r.json()["detail"];
    assert_eq!(d.as_array().map(Vec::len), Some(1), "{d}");
    assert!(d[0]["msg"].as_str().is_some_and(|m| !m.is_empty()), "{d}");
    (d[0]["loc"].clone(), d[0]["type"].as_str().unwrap().to_owned())
}

#[test]
fn the_plugins_sample_documents_round_trip() {
    let s = minilm_server();
    let (_, key) = s.signup("sample@example.com");
    let documents = sample("documents.json");
    assert_eq!(upsert(&s, &key, documents.clone()), ["openai", "chatgpt", "qdrant"]);

    let r = query(&s, &key, sample("queries.json"));
    assert_eq!(r["results"][0]["query"], "What vector database should I use?");
    assert_eq!(docs(&r, 0)[0], "qdrant", "{r}");
    assert_eq!(docs(&r, 0).len(), 3, "top_k defaults to 3: {r}");
    let top = &r["results"][0]["results"][0];
    assert!(top["text"].as_str().unwrap().starts_with("Qdrant is a vector similarity engine"), "{top}");
    assert_eq!(top["metadata"], json!({"document_id": "qdrant", "created_at": "2023-03-14", "author": "Kacper Łukawski"}));
    assert!(top["id"].as_str().unwrap().starts_with("AL-") && top["score"].as_f64().unwrap() > 0.0, "{top}");
    let scores: Vec<f64> = r["results"][0]["results"].as_array().unwrap().iter().map(|c| c["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "ranked by score: {scores:?}");
    // Chunk ids are stable: the same query names the same chunks.
    assert_eq!(query(&s, &key, sample("queries.json")), r);

    delete(&s, &key, json!({"ids": ["openai"]}));
    let left = ask(&s, &key, "AI research and deployment company mission", json!({"top_k": 10}));
    assert_eq!(sorted(left), ["chatgpt", "qdrant"]);
    delete(&s, &key, json!({"filter": {"author": "Kacper Łukawski"}}));
    assert_eq!(ask(&s, &key, "What vector database should I use?", json!({})), ["chatgpt"]);
    delete(&s, &key, json!({"delete_all": true}));
    let r = query(&s, &key, json!({"queries": [{"query": "ChatGPT"}, {"query": "Qdrant"}]}));
    assert_eq!(r, json!({"results": [{"query": "ChatGPT", "results": []}, {"query": "Qdrant", "results": []}]}));
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The account's collections by name, with their document counts (AgentLex's view).
fn collections(s: &TestServer, key: &str) -> Vec<(String, String, u64)> {
    let r = s.get("/v1/collections", Some(key)).json();
    let list = r["collections"].as_array().unwrap();
    list.iter().map(|c| (c["name"].as_str().unwrap().into(), c["id"].as_str().unwrap().into(), c["documents"].as_u64().unwrap())).collect()
}

#[test]
fn re_upsert_replaces_and_the_default_collection_comes_with_the_first() {
    let s = keyword_server();
    let (_, key) = s.signup("replace@example.com");
    assert_eq!(ask(&s, &key, "apples", json!({})), Vec::<String>::new(), "no default collection yet: empty, not an error");
    delete(&s, &key, json!({"delete_all": true}));
    assert_eq!(upsert(&s, &key, json!({"documents": []})), Vec::<String>::new());
    assert!(collections(&s, &key).is_empty(), "neither a query, a delete nor an empty upsert creates it");
    assert_eq!(upsert(&s, &key, json!({"documents": [{"id": "x", "text": "Apples grow on trees."}]})), ["x"]);
    let c = collections(&s, &key);
    assert_eq!((c.len(), c[0].0.as_str(), c[0].2), (1, "default", 1));
    upsert(&s, &key, json!({"documents": [{"id": "x", "text": "Bananas grow in bunches."}]}));
    assert_eq!(ask(&s, &key, "apples", json!({})), Vec::<String>::new(), "the old text is gone");
    assert_eq!(ask(&s, &key, "bananas", json!({})), ["x"]);
    assert_eq!(collections(&s, &key)[0].2, 1, "replaced, not added");
    // Ids are generated when absent (or empty); the same id twice in a batch: the later wins.
    let ids = upsert(
        &s,
        &key,
        json!({"documents": [{"text": "Cherries are red."}, {"id": "", "text": "Dates are sweet."}, {"id": "y", "text": "Elderberries."}, {"id": "y", "text": "Figs."}]}),
    );
    assert_eq!((ids.len(), ids[2].as_str(), ids[3].as_str()), (4, "y", "y"));
    assert!(ids[0].starts_with("doc_") && ids[1].starts_with("doc_") && ids[0] != ids[1], "{ids:?}");
    assert_eq!(ask(&s, &key, "figs", json!({})), ["y"]);
    assert_eq!(ask(&s, &key, "elderberries", json!({})), Vec::<String>::new());
    assert_eq!(collections(&s, &key)[0].2, 4);
    // The metadata is the document's, with its plugin id: AgentLex reads it back.
    upsert(&s, &key, json!({"documents": [{"id": "m", "text": "Grapes.", "metadata": {"source": "email", "team": "fruit"}}]}));
    let col = &collections(&s, &key)[0].1;
    let list = s.get(&format!("/v1/collections/{col}/documents"), Some(&key)).json();
    let m: Vec<&Value> = list["documents"].as_array().unwrap().iter().filter(|d| d["metadata"]["document_id"] == "m").collect();
    assert_eq!(m.len(), 1, "{list}");
    assert_eq!(m[0]["metadata"], json!({"document_id": "m", "source": "email", "team": "fruit"}));
    // A re-upsert after a delete of the same id is found again (ids are not reused in the engine).
    delete(&s, &key, json!({"ids": ["m"]}));
    assert_eq!(ask(&s, &key, "grapes", json!({})), Vec::<String>::new());
    upsert(&s, &key, json!({"documents": [{"id": "m", "text": "Grapes again."}]}));
    assert_eq!(ask(&s, &key, "grapes", json!({})), ["m"]);
}

#[test]
fn a_namespace_names_a_collection_by_id_or_by_name() {
    let s = keyword_server();
    let (_, key) = s.signup("ns@example.com");
    let notes = send(&s, "POST", "/v1/collections", &key, &json!({"name": "notes"}));
    assert_eq!(notes.status, 201, "{}", notes.text());
    let notes = notes.json()["id"].as_str().unwrap().to_owned();
    upsert(&s, &key, json!({"namespace": "notes", "documents": [{"id": "n1", "text": "Meeting notes about quarterly planning."}]}));
    upsert(&s, &key, json!({"namespace": notes, "documents": [{"id": "n2", "text": "Quarterly revenue notes."}]}));
    upsert(&s, &key, json!({"documents": [{"id": "d1", "text": "Quarterly report in the default collection."}]}));
    let names: Vec<(String, u64)> = collections(&s, &key).into_iter().map(|(n, _, d)| (n, d)).collect();
    assert_eq!(names, [("notes".to_owned(), 2), ("default".to_owned(), 1)]);
    let both = |ns: &str| sorted(docs(&query(&s, &key, json!({"namespace": ns, "queries": [{"query": "quarterly"}]})), 0));
    assert_eq!(both("notes"), ["n1", "n2"]);
    assert_eq!(both(&notes), ["n1", "n2"]);
    assert_eq!(ask(&s, &key, "quarterly", json!({})), ["d1"]);
    // A query's own namespace overrides the request's.
    let r = query(&s, &key, json!({"namespace": "notes", "queries": [{"query": "quarterly"}, {"query": "quarterly", "namespace": "default"}]}));
    assert_eq!((docs(&r, 0).len(), docs(&r, 1)), (2, vec!["d1".to_owned()]));
    let r = send(&s, "POST", "/query", &key, &json!({"namespace": "nope", "queries": [{"query": "q"}]}));
    assert_eq!((r.status, r.json()["code"].as_str()), (404, Some("collection_not_found")), "{}", r.text());
    assert!(r.json()["detail"].as_str().unwrap().contains("nope"));
    let r = send(&s, "POST", "/upsert", &key, &json!({"namespace": "nope", "documents": [{"text": "x"}]}));
    assert_eq!(r.status, 404, "only the default collection is made on upsert: {}", r.text());
    delete(&s, &key, json!({"namespace": "notes", "filter": {"document_id": "n1"}}));
    assert_eq!(both("notes"), ["n2"]);
}

#[test]
fn another_accounts_key_cannot_read_or_delete() {
    let s = keyword_server();
    let (_, a) = s.signup("a@example.com");
    let (_, b) = s.signup("b@example.com");
    upsert(&s, &a, json!({"documents": [{"id": "secret", "text": "The launch code is tangerine."}]}));
    let a_default = collections(&s, &a)[0].1.clone();
    assert_eq!(ask(&s, &b, "tangerine", json!({})), Vec::<String>::new(), "b's own (absent) default: empty");
    delete(&s, &b, json!({"delete_all": true}));
    delete(&s, &b, json!({"ids": ["secret"]}));
    for (method, path, body) in [
        ("POST", "/query", json!({"namespace": a_default, "queries": [{"query": "tangerine"}]})),
        ("DELETE", "/delete", json!({"namespace": a_default, "delete_all": true})),
        ("POST", "/upsert", json!({"namespace": a_default, "documents": [{"id": "secret", "text": "overwritten"}]})),
    ] {
        let r = send(&s, method, path, &b, &body);
        assert_eq!((r.status, r.json()["code"].as_str()), (404, Some("collection_not_found")), "{path}: {}", r.text());
    }
    assert_eq!(ask(&s, &a, "tangerine", json!({})), ["secret"], "a's document is untouched");
}

#[test]
fn plugin_errors_have_fastapis_shapes() {
    let s = keyword_server();
    let r = s.request("POST", "/query", None, Some(r#"{"queries":[{"query":"q"}]}"#));
    assert_eq!((r.status, r.json()["code"].as_str(), r.json()["detail"].is_string()), (401, Some("missing_key"), true), "{}", r.text());
    let r = s.request("POST", "/sub/query", Some("al_not_a_real_key"), Some(r#"{"queries":[]}"#));
    assert_eq!((r.status, r.json()["detail"].is_string()), (401, true), "{}", r.text());
    let (_, key) = s.signup("errors@example.com");
    let cases = [
        ("POST", "/query", json!({}), json!(["body", "queries"])),
        ("POST", "/query", json!({"queries": {}}), json!(["body", "queries"])),
        ("POST", "/query", json!({"queries": [{"query": "a"}, {"top_k": 2}]}), json!(["body", "queries", 1, "query"])),
        ("POST", "/query", json!({"queries": [{"query": "a", "top_k": "many"}]}), json!(["body", "queries", 0, "top_k"])),
        ("POST", "/query", json!({"queries": [{"query": "a", "top_k": 0}]}), json!(["body", "queries", 0, "top_k"])),
        ("POST", "/query", json!({"queries": [{"query": " "}]}), json!(["body", "queries", 0, "query"])),
        ("POST", "/query", json!({"queries": [{"query": "a", "filter": {"source": "fax"}}]}), json!(["body", "queries", 0, "filter", "source"])),
        (
            "POST",
            "/query",
            json!({"queries": [{"query": "a", "filter": {"start_date": "someday"}}]}),
            json!(["body", "queries", 0, "filter", "start_date"]),
        ),
        ("POST", "/query", json!({"queries": [{"query": "a", "filter": {"author": 7}}]}), json!(["body", "queries", 0, "filter", "author"])),
        ("POST", "/query", json!({"namespace": "", "queries": [{"query": "a"}]}), json!(["body", "namespace"])),
        ("POST", "/upsert", json!({"documents": [{"id": "a"}]}), json!(["body", "documents", 0, "text"])),
        (
            "POST",
            "/upsert",
            json!({"documents": [{"text": "a", "metadata": {"source": "fax"}}]}),
            json!(["body", "documents", 0, "metadata", "source"]),
        ),
        (
            "POST",
            "/upsert",
            json!({"documents": [{"text": "a", "metadata": {"created_at": "yesterday"}}]}),
            json!(["body", "documents", 0, "metadata", "created_at"]),
        ),
        ("POST", "/upsert", json!({"documents": [{"text": "ok"}, {"text": ""}]}), json!(["body", "documents", 1, "text"])),
        ("DELETE", "/delete", json!({}), json!(["body"])),
        ("DELETE", "/delete", json!({"ids": "a"}), json!(["body", "ids"])),
        ("DELETE", "/delete", json!({"delete_all": "yes"}), json!(["body", "delete_all"])),
        ("DELETE", "/delete", json!({"filter": {}}), json!(["body", "filter"])),
        ("POST", "/delete", json!({"ids": [1]}), json!(["body", "ids", 0])),
    ];
    for (method, path, body, loc) in cases {
        let (got, kind) = invalid(&send(&s, method, path, &key, &body));
        assert_eq!((&got, kind.as_str()), (&loc, "value_error"), "{method} {path} {body}");
    }
    let r = s.request("POST", "/query", Some(&key), Some("{\"queries\": ["));
    assert_eq!(invalid(&r), (json!(["body"]), "json_invalid".to_owned()));
    assert!(collections(&s, &key).is_empty(), "a refused upsert creates nothing");
    let r = s.request("GET", "/query", Some(&key), None);
    assert_eq!((r.status, r.header("allow"), r.json()["detail"].is_string()), (405, Some("POST"), true), "{}", r.text());
    let r = s.request("GET", "/sub/nothing", Some(&key), None);
    assert_eq!((r.status, r.json()["detail"].is_string()), (404, true), "{}", r.text());
}

/// A form part: name, (file name, type) for a file, content.
type Part<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a str);

/// A multipart/form-data upload of `parts`.
fn upload(s: &TestServer, path: &str, key: &str, parts: &[Part]) -> Response {
    let mut body = String::new();
    for (name, file, content) in parts {
        body.push_str("--b0undary\r\n");
        match file {
            Some((f, t)) => body.push_str(&format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: {t}\r\n\r\n")),
            None => body.push_str(&format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n")),
        }
        body.push_str(content);
        body.push_str("\r\n");
    }
    body.push_str("--b0undary--\r\n");
    let mut c = s.conn();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: quarry\r\nauthorization: Bearer {key}\r\ncontent-type: multipart/form-data; boundary=b0undary\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    c.stream.write_all(head.as_bytes()).unwrap();
    c.stream.write_all(body.as_bytes()).unwrap();
    c.read_response().unwrap()
}

#[test]
fn upsert_file_takes_text_and_markdown_and_refuses_other_types_by_name() {
    let s = keyword_server();
    let (_, key) = s.signup("files@example.com");
    let r = ok(upload(
        &s,
        "/upsert-file",
        &key,
        &[
            ("file", Some(("guide.md", "text/markdown")), "# Sourdough\n\nFeed the starter twice a day."),
            ("metadata", None, r#"{"source": "file", "author": "Baker"}"#),
        ],
    ));
    let id = r["ids"][0].as_str().unwrap().to_owned();
    let r = query(&s, &key, json!({"queries": [{"query": "sourdough starter", "filter": {"source": "file", "author": "Baker"}}]}));
    assert_eq!(docs(&r, 0), vec![id.clone()]);
    assert_eq!(r["results"][0]["results"][0]["metadata"], json!({"document_id": id, "source": "file", "author": "Baker"}));
    ok(upload(&s, "/sub/upsert-file", &key, &[("file", Some(("notes.txt", "application/octet-stream")), "Rye flour ferments fast.")]));
    assert_eq!(ask(&s, &key, "rye", json!({})).len(), 1);
    let r = upload(&s, "/upsert-file", &key, &[("file", Some(("scan.pdf", "application/pdf")), "%PDF-1.7")]);
    let (loc, _) = invalid(&r);
    assert_eq!(loc, json!(["body", "file"]));
    assert!(r.json()["detail"][0]["msg"].as_str().unwrap().contains("application/pdf"), "{}", r.text());
    let (loc, _) = invalid(&upload(&s, "/upsert-file", &key, &[("metadata", None, "{}")]));
    assert_eq!(loc, json!(["body", "file"]));
    let (loc, _) =
        invalid(&upload(&s, "/upsert-file", &key, &[("file", Some(("a.txt", "text/plain")), "x"), ("metadata", None, r#"{"source": 5}"#)]));
    assert_eq!(loc, json!(["body", "metadata", "source"]));
    let (loc, _) = invalid(&send(&s, "POST", "/upsert-file", &key, &json!({"file": "x"})));
    assert_eq!(loc, json!(["body", "file"]));
}

#[test]
fn sub_routes_answer_as_the_root_ones() {
    let s = keyword_server();
    let (_, key) = s.signup("sub@example.com");
    ok(send(
        &s,
        "POST",
        "/sub/upsert",
        &key,
        &json!({"documents": [{"id": "a", "text": "Granite is an igneous rock."}, {"id": "b", "text": "Basalt is a volcanic rock."}]}),
    ));
    let body = json!({"queries": [{"query": "igneous rock", "top_k": 2}, {"query": "volcanic"}]});
    let root = query(&s, &key, body.clone());
    assert_eq!(ok(send(&s, "POST", "/sub/query", &key, &body)), root);
    assert_eq!(docs(&root, 0)[0], "a");
    assert_eq!(ok(send(&s, "POST", "/sub/delete", &key, &json!({"ids": ["a"]}))), json!({"success": true}));
    assert_eq!(ask(&s, &key, "rock", json!({})), ["b"]);
}

#[test]
fn start_and_end_dates_filter_on_created_at_and_top_k_cuts() {
    let s = keyword_server();
    let (_, key) = s.signup("dates@example.com");
    let docs_in: Vec<Value> = [("jan", "2023-01-15"), ("jun", "2023-06-01T09:30:00Z"), ("dec", "2023-12-31"), ("next", "2024-02-02")]
        .iter()
        .map(|(id, at)| json!({"id": id, "text": format!("Harbour report {id}: ships and cargo."), "metadata": {"created_at": at}}))
        .collect();
    upsert(&s, &key, json!({"documents": docs_in}));
    upsert(&s, &key, json!({"documents": [{"id": "undated", "text": "Harbour report: ships without a date."}]}));
    let within = |filter: Value| sorted(ask(&s, &key, "harbour ships", json!({"filter": filter, "top_k": 10})));
    assert_eq!(within(json!({"start_date": "2023-06-01", "end_date": "2023-12-31"})), ["dec", "jun"]);
    assert_eq!(within(json!({"start_date": "2024-01-01T00:00:00Z"})), ["next"]);
    assert_eq!(within(json!({"end_date": "2023-01-31"})), ["jan"]);
    assert_eq!(within(json!({"start_date": "2023-03-01", "document_id": "jan"})), Vec::<String>::new());
    assert_eq!(within(json!({})).len(), 5);
    for k in [1, 2, 4] {
        assert_eq!(ask(&s, &key, "harbour ships", json!({"top_k": k})).len(), k);
    }
    assert_eq!(ask(&s, &key, "harbour ships", json!({})).len(), 3, "the spec's default");
    assert_eq!(ask(&s, &key, "harbour ships", json!({"top_k": null})).len(), 3, "null is the default");
    delete(&s, &key, json!({"filter": {"end_date": "2023-06-30"}}));
    assert_eq!(within(json!({})), ["dec", "next", "undated"]);
}

#[test]
fn each_query_of_a_batch_spends_one_search() {
    let s = TestServer::start();
    let (_, key) = s.signup("meter@example.com");
    upsert(&s, &key, json!({"documents": [{"text": "Meters count searches."}]}));
    let used = |s: &TestServer| s.get("/v1/account", Some(&key)).json()["usage"]["search"].as_u64().unwrap_or(0);
    let before = used(&s);
    query(&s, &key, json!({"queries": [{"query": "meters"}, {"query": "searches"}, {"query": "count"}]}));
    assert_eq!(used(&s), before + 3);
    let r = send(&s, "POST", "/query", &key, &json!({"queries": [{"query": "a"}, {"query": "b", "top_k": -1}]}));
    assert_eq!(r.status, 422);
    assert_eq!(used(&s), before + 3, "a refused batch spends nothing");
}

/// Regression (issue 2/9, finding 6): `POST /query` with 10,000 queries ran on its
/// shard for a minute for one rate token, and the shard's other requests (its health
/// check among them) waited as long. Now a batch holds at most 100 queries, each costs
/// a rate token as it would sent alone, a batch bigger than the plan's burst is refused
/// naming how many fit, and a refused batch spends nothing.
#[test]
fn a_query_batch_is_capped_and_costs_a_rate_token_a_query() {
    let s = TestServer::with_config("[plans.scribe]\nrate_per_minute = 60\nburst = 50\nsearch = \"unlimited\"\nstored_chars = \"unlimited\"\n");
    let (_, key) = s.signup("batch@example.com");
    upsert(&s, &key, json!({"documents": [{"text": "Batches of queries are searched in turn."}]}));
    let used = |s: &TestServer| s.get("/v1/account", Some(&key)).json()["usage"]["search"].as_u64().unwrap_or(0);
    let before = used(&s);
    let batch = |n: usize| json!({"queries": (0..n).map(|i| json!({"query": format!("batches {i}")})).collect::<Vec<_>>()});
    let started = std::time::Instant::now();
    let r = send(&s, "POST", "/query", &key, &batch(10_000));
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "refused before any search: {:?}", started.elapsed());
    let (loc, _) = invalid(&r);
    assert_eq!(loc, json!(["body", "queries"]));
    assert!(r.text().contains("at most 100"), "{}", r.text());
    let r = send(&s, "POST", "/query", &key, &batch(60));
    let (loc, _) = invalid(&r);
    assert_eq!(loc, json!(["body", "queries"]));
    assert!(r.text().contains("at most 50 per request"), "{}", r.text());
    assert_eq!(used(&s), before, "refused batches spend nothing");
    // 30 queries take 30 tokens of the 50: a second batch of 30 must wait.
    let r = send(&s, "POST", "/query", &key, &batch(30));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["results"].as_array().unwrap().len(), 30);
    let r = send(&s, "POST", "/query", &key, &batch(30));
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok_and(|n| n >= 1)), "{:?}", r.headers);
    assert_eq!(used(&s), before + 30, "one search a query, and none for the refused batch");
}

#[test]
fn plugin_query_ranks_the_same_documents_as_agentlex_hybrid() {
    use quarry_bench::quality::beir::Dataset;
    // Both surfaces must read one unchanging snapshot: a background flush or merge
    // between the batch and the searches renumbers pages, and pages tied on every rank
    // are ordered by where they sit. Everything stays in the tail here.
    let config = format!("{RAISED}[index]\nflush_batches = 100000\nflush_interval = \"1h\"\n");
    let s = TestServer::with(Options { embedder: Some("all-MiniLM-L6-v2".into()), config, ..Options::default() });
    let (_, key) = s.signup("same@example.com");
    let data = Dataset::load(&repo("tests/data/scifact-500"), "test").unwrap_or_else(|e| panic!("{e}")).subset(150);
    assert_eq!(data.corpus.len(), 150);
    for batch in data.corpus.chunks(10) {
        let documents: Vec<Value> = batch.iter().map(|d| json!({"id": d.id, "text": format!("{}\n\n{}", d.title, d.text)})).collect();
        assert_eq!(upsert(&s, &key, json!({"documents": documents})).len(), batch.len());
    }
    let col = collections(&s, &key)[0].1.clone();
    let listed = s.get(&format!("/v1/collections/{col}/documents"), Some(&key)).json();
    let plugin_ids: std::collections::HashMap<String, String> = listed["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["id"].as_str().unwrap().to_owned(), d["metadata"]["document_id"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(plugin_ids.len(), 150);
    let queries: Vec<&str> = data.queries.iter().take(30).map(|q| q.text.as_str()).collect();
    assert_eq!(queries.len(), 30, "the subset keeps enough queries");
    let plugin = query(&s, &key, json!({"queries": queries.iter().map(|q| json!({"query": q, "top_k": 10})).collect::<Vec<_>>()}));
    for (i, q) in queries.iter().enumerate() {
        let al = ok(send(&s, "POST", &format!("/v1/collections/{col}/search"), &key, &json!({"query": q, "k": 10, "mode": "hybrid"})));
        assert_eq!(al["mode"], "hybrid");
        let al = al["results"].as_array().unwrap();
        assert_eq!(al.len(), 10);
        let ours = plugin["results"][i]["results"].as_array().unwrap();
        // Pages by citation (a chunk id is its page's citation and its position).
        let pages: Vec<String> = ours.iter().map(|c| c["id"].as_str().unwrap().rsplit_once('-').unwrap().0.to_owned()).collect();
        let al_pages: Vec<String> = al.iter().map(|r| r["citation"].as_str().unwrap().to_owned()).collect();
        assert_eq!(pages, al_pages, "query {i}: {q}");
        let scores: Vec<f64> = ours.iter().map(|c| c["score"].as_f64().unwrap()).collect();
        let al_scores: Vec<f64> = al.iter().map(|r| r["score"].as_f64().unwrap()).collect();
        assert_eq!(scores, al_scores, "query {i}: the same fused scores");
        // And the documents: AgentLex's (engine) ids carry the plugin's as metadata.
        let al_ids: Vec<String> = al.iter().map(|r| plugin_ids[r["document"]["id"].as_str().unwrap()].clone()).collect();
        assert_eq!(docs(&plugin, i), al_ids, "query {i}: {q}");
    }
}

/// The test venv's python (`ops/setup-llm-tests` installs it, run here), or `None` to
/// skip when it cannot be installed outside CI; in CI a missing venv fails.
fn venv_python() -> Option<PathBuf> {
    let cache = std::env::var_os("QUARRY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/quarry"));
    let py = cache.join("venv-sdk/bin/python");
    let ok = Command::new(repo("ops/setup-llm-tests")).status().is_ok_and(|s| s.success());
    let present = ok && py.exists();
    super::prerequisite::prerequisite("ops/setup-llm-tests could not install the test venv", present).then_some(py)
}

#[test]
fn langchains_chatgpt_plugin_retriever_reads_the_plugin() {
    let Some(py) = venv_python() else { return };
    let s = keyword_server();
    let (_, key) = s.signup("langchain@example.com");
    upsert(
        &s,
        &key,
        json!({"documents": [
            {"id": "tea-1", "text": "Green tea is steeped briefly below boiling.", "metadata": {"source": "file", "source_id": "handbook.md", "author": "Ann"}},
            {"id": "tea-2", "text": "Black tea is steeped in boiling water.", "metadata": {"source": "web", "url": "https://example.com/tea", "author": "Bo"}},
            {"id": "tea-3", "text": "Oolong tea sits between green and black tea.", "metadata": {"source": "file", "author": "Ann"}},
            {"id": "tea-4", "text": "Herbal tea is not tea at all.", "metadata": {"source": "chat", "author": "Cy"}},
        ]}),
    );
    let spec = json!({"base": format!("http://{}", s.addr), "key": key});
    let mut child =
        Command::new(py).arg(repo("tests/plugin_langchain.py")).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(spec.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("4 passed, 0 failed"), "{stdout}\n{stderr}");
}
