//! The AgentLex error answers: bad JSON and fields, unknown routes and methods, oversized bodies, unparseable HTTP, panics.

use super::client::Conn;
use super::server::TestServer;

#[test]
fn malformed_json_is_invalid_json_with_the_position() {
    let s = TestServer::start();
    let r = s.request("POST", "/v1/signup", None, Some("{\"email\": \"a@x.org\",\n  oops}"));
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_json"));
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("line 2 column 3"), "{}", r.text());
    for body in ["", "[]", "\"a@x.org\"", "{\"email\":\"a@x.org\"} trailing"] {
        let r = s.request("POST", "/v1/signup", None, Some(body));
        assert_eq!((r.status, r.code().as_str()), (400, "invalid_json"), "{body:?}");
    }
}

#[test]
fn ill_typed_and_missing_fields_name_the_field() {
    let s = TestServer::start();
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email": 42}"#));
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_email"));
    assert!(r.json()["error"]["message"].as_str().unwrap().starts_with("email:"), "{}", r.text());
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"mail": "a@x.org"}"#));
    assert_eq!(r.code(), "invalid_email");
    let r = s.request("POST", "/v1/signup", None, Some(r#"{"email": "not-an-email"}"#));
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_email"));
    // Nothing was created by any of these.
    assert_eq!(s.request("POST", "/v1/signup", None, Some(r#"{"email": "a@x.org"}"#)).status, 201);
}

#[test]
fn unknown_routes_and_wrong_methods() {
    let s = TestServer::start();
    let r = s.get("/v1/nothing-here", None);
    assert_eq!((r.status, r.code().as_str()), (404, "not_found"));
    let r = s.request("DELETE", "/v1/health", None, None);
    assert_eq!((r.status, r.code().as_str()), (405, "method_not_allowed"));
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    let r = s.request("PUT", "/v1/keys", None, None);
    assert_eq!(r.header("allow"), Some("GET, HEAD, POST"));
    let r = s.get("/v1/signup", None);
    assert_eq!((r.status, r.header("allow")), (405, Some("POST")));
}

#[test]
fn oversized_bodies_are_413_and_change_nothing() {
    let s = TestServer::with_config("[http]\nmax_body_bytes = 1024\n");
    let big = format!("{{\"email\":\"a@x.org\",\"pad\":\"{}\"}}", "x".repeat(2000));
    let r = s.request("POST", "/v1/signup", None, Some(&big));
    assert_eq!((r.status, r.code().as_str()), (413, "body_too_large"));
    // Chunked, with no length up front: refused once it passes the cap.
    let mut c = Conn::open(s.addr);
    let head = "POST /v1/signup HTTP/1.1\r\nhost: q\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n";
    let chunk = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    std::io::Write::write_all(&mut c.stream, format!("{head}{chunk}").as_bytes()).unwrap();
    let r = c.read_response().unwrap();
    assert_eq!((r.status, r.code().as_str()), (413, "body_too_large"));
    assert_eq!(s.request("POST", "/v1/signup", None, Some(r#"{"email":"a@x.org"}"#)).status, 201, "nothing was written");
}

/// Sends `raw` on a fresh connection and reads the one answer; the server must then
/// close the connection (it cannot know where the next request would start).
fn protocol_error(s: &TestServer, raw: &[u8]) -> super::client::Response {
    use std::io::Write;
    let mut c = s.conn();
    c.stream.write_all(raw).unwrap();
    let r = c.read_response().expect("an answer, not a bare close");
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.json()["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", r.text());
    assert!(c.is_closed_by_server(std::time::Duration::from_secs(5)));
    // A well-formed request on a fresh connection is served as ever.
    assert_eq!(s.get("/v1/health", None).status, 200);
    r
}

/// Regression (issue 1/9, "protocol-level errors have an empty body"): hyper answered
/// these itself with `content-length: 0`.
#[test]
fn protocol_errors_have_a_body_oversized_headers_are_431_headers_too_large() {
    let s = TestServer::with(super::server::Options { config: "[http]\nmax_header_bytes = 4096\n".into(), shards: Some(1), ..Default::default() });
    let raw = format!("GET /v1/health HTTP/1.1\r\nhost: quarry\r\nx-big: {}\r\n\r\n", "v".repeat(8000));
    let r = protocol_error(&s, raw.as_bytes());
    assert_eq!((r.status, r.code().as_str()), (431, "headers_too_large"));
    assert!(r.text().contains("4096"), "the message names the limit: {}", r.text());
    assert_eq!(r.shard(), 0);
}

#[test]
fn protocol_errors_have_a_body_a_duplicate_content_length_is_400_bad_request() {
    let s = TestServer::start();
    let raw = b"POST /v1/signup HTTP/1.1\r\nhost: quarry\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}";
    let r = protocol_error(&s, raw);
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
}

#[test]
fn protocol_errors_have_a_body_a_raw_0xff_in_the_path_is_400_bad_request() {
    let s = TestServer::start();
    let r = protocol_error(&s, b"GET /v1/\xffhealth HTTP/1.1\r\nhost: quarry\r\n\r\n");
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
}

#[test]
fn protocol_errors_have_a_body_a_malformed_request_line_is_400_bad_request() {
    let s = TestServer::start();
    let r = protocol_error(&s, b"GET\r\n\r\n");
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
}

/// After answers of ours on a keep-alive connection, a malformed request is still
/// answered with our body: the replacement looks at what is written, not at the
/// connection's first bytes.
#[test]
fn protocol_errors_have_a_body_after_requests_on_the_same_connection() {
    use std::io::Write;
    let s = TestServer::start();
    let mut c = s.conn();
    assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    assert_eq!(c.send("GET", "/v1/nope", &[], None).status, 404);
    c.stream.write_all(b"GET /v1/\xff HTTP/1.1\r\nhost: quarry\r\n\r\n").unwrap();
    let r = c.read_response().unwrap();
    assert_eq!((r.status, r.code().as_str()), (400, "bad_request"));
}

#[test]
fn a_panic_costs_one_request_a_500_and_the_shard_keeps_serving() {
    let s = TestServer::with(super::server::Options { config: "[debug]\npanic_route = true\n".into(), shards: Some(1), ..Default::default() });
    let mut c = s.conn();
    let r = c.send("GET", "/v1/_panic", &[], None);
    assert_eq!((r.status, r.code().as_str()), (500, "internal"));
    assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200, "same connection still served");
    assert_eq!(s.get("/v1/health", None).status, 200);
}

#[test]
fn the_panic_route_is_off_by_default() {
    let s = TestServer::start();
    assert_eq!(s.get("/v1/_panic", None).status, 404);
}
