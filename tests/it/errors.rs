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

#[test]
fn oversized_headers_are_refused() {
    let s = TestServer::with_config("[http]\nmax_header_bytes = 4096\n");
    let mut c = s.conn();
    let huge = "v".repeat(8000);
    c.write_request("GET", "/v1/health", &[("x-big", &huge)], None);
    match c.read_response() {
        Ok(r) => assert_eq!(r.status, 431),
        Err(_) => {} // closing the connection is an acceptable refusal too
    }
    assert_eq!(s.get("/v1/health", None).status, 200);
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
