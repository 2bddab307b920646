//! Answers sent before the request body was read (401, 413, 429) and what they leave of the connection.
//!
//! Regression (issue 1/9 item 8, "an early error answer breaks a keep-alive connection"):
//! a 401, 413 or 429 sent before the request body was read left the body unread, and
//! the server then closed without `connection: close`, so a keep-alive client's next
//! request on the same socket (Python's `http.client` retrying a 429 after
//! `retry-after`) met a broken pipe. A body of up to 64 KiB is now drained and the
//! connection serves the next request; a larger one is answered with
//! `connection: close` and the connection closes cleanly once the client has sent it.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::json;

use super::client::Conn;
use super::server::TestServer;

/// A plan with a burst of 3 and a token every 100 ms, as `limits.rs`' TINY.
use super::plans::TINY;

/// A collection-creating body padded to about `len` bytes (the pad is never read: the
/// answer comes first).
fn padded(len: usize) -> Vec<u8> {
    json!({ "name": "c", "pad": "x".repeat(len) }).to_string().into_bytes()
}

/// Writes a POST's head, then its body after `pause` (as clients that send them in two
/// writes do: the answer may be ready before the body has arrived).
fn post(c: &mut Conn, path: &str, key: &str, body: &[u8], pause: Duration) {
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: quarry\r\nauthorization: Bearer {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    if pause.is_zero() {
        c.stream.write_all(&[head.as_bytes(), body].concat()).expect("write the request");
        return;
    }
    c.stream.write_all(head.as_bytes()).expect("write the head");
    std::thread::sleep(pause);
    c.stream.write_all(body).expect("write the body");
}

/// The server closed the connection in order (EOF), not with a reset.
fn closed_cleanly(c: &mut Conn) {
    c.stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut rest = Vec::new();
    match c.stream.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "bytes after the answer: {}", String::from_utf8_lossy(&rest)),
        Err(e) => panic!("the connection ended with {e} rather than a clean close"),
    }
}

#[test]
fn an_early_401_with_a_body_leaves_the_keep_alive_connection_usable() {
    let s = TestServer::start();
    let (_, key) = s.signup("a@x.org");
    for (size, pause) in [(10, 0), (10, 50), (5_000, 50), (60_000, 0), (60_000, 50)] {
        let mut c = s.conn();
        post(&mut c, "/v1/collections", "al_wrong", &padded(size), Duration::from_millis(pause));
        let r = c.read_response().expect("the 401");
        assert_eq!((r.status, r.header("connection")), (401, None), "{size} bytes, {pause} ms: {}", r.text());
        // The same socket serves the next request.
        post(&mut c, "/v1/collections", &key, br#"{"name":"next"}"#, Duration::ZERO);
        let r = c.read_response().unwrap_or_else(|e| panic!("{size} bytes, {pause} ms: the next request on the socket failed: {e}"));
        assert_eq!(r.status, 201, "{}", r.text());
    }
}

#[test]
fn an_early_429_with_a_body_then_a_retry_after_retry_on_the_same_connection_is_served() {
    let s = TestServer::with_config(TINY);
    let (_, key) = s.signup("a@x.org");
    let auth = format!("Bearer {key}");
    let mut c = s.conn();
    for _ in 0..3 {
        assert_eq!(c.send("GET", "/v1/account", &[("authorization", &auth)], None).status, 200);
    }
    post(&mut c, "/v1/collections", &key, &padded(20_000), Duration::from_millis(50));
    let r = c.read_response().expect("the 429");
    assert_eq!((r.status, r.code().as_str(), r.header("connection")), (429, "rate_limited", None));
    let wait: u64 = r.header("retry-after").and_then(|v| v.parse().ok()).expect("retry-after");
    std::thread::sleep(Duration::from_secs(wait));
    post(&mut c, "/v1/collections", &key, br#"{"name":"retried"}"#, Duration::ZERO);
    let r = c.read_response().expect("the retry is answered on the same socket");
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn an_early_413_from_content_length_drains_a_small_body_and_keeps_the_connection() {
    let s = TestServer::with_config("[http]\nmax_body_bytes = 1024\n");
    let mut c = s.conn();
    let big = json!({ "email": "a@x.org", "pad": "x".repeat(4000) }).to_string();
    c.write_request("POST", "/v1/signup", &[], Some(big.as_bytes()));
    let r = c.read_response().expect("the 413");
    assert_eq!((r.status, r.code().as_str(), r.header("connection")), (413, "body_too_large", None));
    let r = c.send("POST", "/v1/signup", &[], Some(br#"{"email":"a@x.org"}"#));
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn an_early_answer_to_a_body_over_the_drain_bound_says_connection_close_and_closes_cleanly() {
    let s = TestServer::with_config("[http]\nmax_body_bytes = 524288\n");
    // A 401 to a 1 MiB body (also over max_body_bytes) and to a 200 KB one (under it).
    for size in [1 << 20, 200_000] {
        let mut c = s.conn();
        post(&mut c, "/v1/collections", "al_wrong", &padded(size), Duration::ZERO);
        let r = c.read_response().expect("the answer, not a reset");
        assert_eq!((r.status, r.header("connection")), (401, Some("close")), "{size} bytes");
        closed_cleanly(&mut c);
    }
    // A 413 refused from content-length alone.
    let mut c = s.conn();
    c.write_request("POST", "/v1/signup", &[], Some(&padded(1 << 20)));
    let r = c.read_response().expect("the 413, not a reset");
    assert_eq!((r.status, r.code().as_str(), r.header("connection")), (413, "body_too_large", Some("close")));
    closed_cleanly(&mut c);
    assert_eq!(s.get("/v1/health", None).status, 200);
}

/// The client the defect was found with: `http.client` on one connection, a bulk load
/// retrying every 429 after `retry-after`, with the body in the head's write and in
/// one of its own (as urllib3 sends it); then a body over the drain bound, which is
/// answered with `connection: close`, so `http.client` opens a new connection.
#[test]
fn python_http_client_retrying_429s_on_one_connection_never_breaks() {
    let s = TestServer::with_config(TINY);
    let (_, key) = s.signup("a@x.org");
    let script = r#"
import http.client, json, sys, time
port, key = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
headers = {"authorization": "Bearer " + key, "content-type": "application/json"}
def post(body, split):
    if split:
        c.putrequest("POST", "/v1/collections")
        for k, v in headers.items():
            c.putheader(k, v)
        c.putheader("content-length", str(len(body)))
        c.endheaders()
        time.sleep(0.02)
        c.send(body)
    else:
        c.request("POST", "/v1/collections", body=body, headers=headers)
    r = c.getresponse()
    r.read()
    return r
refused, port_of = 0, None
for i in range(8):
    body = json.dumps({"name": "c%d" % i, "settings": {"guidance": "g" * 1500}}).encode()
    while True:
        r = post(body, i % 2 == 1)
        here = c.sock.getsockname()[1]
        port_of = port_of or here
        assert here == port_of, "the connection was replaced"
        if r.status == 429:
            refused += 1
            time.sleep(float(r.getheader("retry-after")))
            continue
        assert r.status == 201, r.status
        break
assert refused > 0, "the plan's burst never refused"
headers["authorization"] = "Bearer al_wrong"
r = post(json.dumps({"name": "big", "pad": "x" * 200000}).encode(), False)
assert (r.status, r.getheader("connection")) == (401, "close"), (r.status, r.getheader("connection"))
headers["authorization"] = "Bearer " + key
r = post(b'{"name":"after"}', False)
assert r.status in (201, 429), r.status
print("ok", refused)
"#;
    let out = std::process::Command::new("python3").args(["-c", script, &s.addr.port().to_string(), &key]).output().expect("python3 runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.starts_with("ok"), "{stdout}{stderr}");
}
