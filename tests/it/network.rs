//! What a server facing the network must withstand: slow clients, idle clients, too many clients.

use std::io::Write;
use std::time::{Duration, Instant};

use super::client::Conn;
use super::server::{Options, TestServer};

#[test]
fn a_slowloris_client_is_cut_off_and_does_not_pin_the_shard() {
    let s = TestServer::with(Options { config: "[http]\nheader_read_timeout = \"1s\"\n".into(), shards: Some(1), ..Default::default() });
    let mut slow = s.conn();
    slow.stream.write_all(b"GET /v1/health HTTP/1.1\r\nhost: q\r\n").unwrap();
    let start = Instant::now();
    let mut cut = false;
    for i in 0..40 {
        std::thread::sleep(Duration::from_millis(100));
        // The same shard keeps serving everyone else meanwhile.
        if i % 5 == 0 {
            assert_eq!(s.get("/v1/health", None).status, 200);
        }
        if slow.stream.write_all(format!("x-trickle-{i}: y\r\n").as_bytes()).is_err() {
            cut = true;
            break;
        }
    }
    cut = cut || slow.is_closed_by_server(Duration::from_secs(2));
    assert!(cut, "the slow client was never cut off");
    assert!(start.elapsed() < Duration::from_secs(4), "cut off after {:?}", start.elapsed());
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let s = TestServer::with_config("[http]\nheader_read_timeout = \"1s\"\n");
    let mut c = s.conn();
    assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(c.is_closed_by_server(Duration::from_secs(2)));
}

#[test]
fn a_connection_silent_past_the_idle_timeout_is_closed() {
    // The header timer is long; the idle sweep closes the silent connection.
    let s = TestServer::with_config("[http]\nheader_read_timeout = \"30s\"\nidle_timeout = \"500ms\"\n");
    let mut c = s.conn();
    assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    let start = Instant::now();
    assert!(c.is_closed_by_server(Duration::from_secs(5)));
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn connections_over_the_per_shard_cap_get_a_clean_503() {
    let s = TestServer::with(Options { config: "[http]\nmax_connections_per_shard = 2\n".into(), shards: Some(1), ..Default::default() });
    let mut held: Vec<Conn> = (0..2).map(|_| s.conn()).collect();
    for c in held.iter_mut() {
        assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    }
    let mut extra = s.conn();
    extra.write_request("GET", "/v1/health", &[], None);
    let r = extra.read_response().expect("a refusal, not a hang");
    assert_eq!((r.status, r.code().as_str()), (503, "overloaded"));
    assert!(extra.is_closed_by_server(Duration::from_secs(2)));
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(s.get("/v1/health", None).status, 200, "room again once they close");
}

/// Regression (issue 34, finding 8): one unauthenticated client holding idle
/// connections (about 17,000 of them) filled the shards' caps, and every other client
/// got 503 `overloaded`. A client address now holds at most
/// `http.max_connections_per_client` at once: one more from it is 429
/// `too_many_concurrent` and closed, another address is still served, and a connection
/// it closes gives its place back.
#[test]
fn one_client_holding_idle_connections_cannot_turn_other_clients_away() {
    use std::net::Ipv4Addr;
    let config = "[http]\nmax_connections_per_client = 20\nmax_connections_per_shard = 21\n";
    let s = TestServer::with(Options { config: config.into(), shards: Some(1), ..Default::default() });
    let from = |ip: Ipv4Addr| Conn::open_from(s.addr, ip);
    let hog = Ipv4Addr::new(127, 0, 0, 1);
    let mut held: Vec<Conn> = (0..20).map(|_| from(hog)).collect();
    for c in held.iter_mut() {
        assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    }
    let mut extra = from(hog);
    extra.write_request("GET", "/v1/health", &[], None);
    let r = extra.read_response().expect("a refusal, not a hang");
    assert_eq!((r.status, r.code().as_str()), (429, "too_many_concurrent"), "{}", r.text());
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("20 open connections"), "{}", r.text());
    assert!(extra.is_closed_by_server(Duration::from_secs(2)));
    // Another client is served beside the 20 idle ones.
    let mut other = from(Ipv4Addr::new(127, 0, 0, 2));
    assert_eq!(other.send("GET", "/v1/health", &[], None).status, 200, "another address is not turned away");
    drop(other);
    // Closing some lets the first client in again.
    held.truncate(15);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut again = from(hog);
        again.write_request("GET", "/v1/health", &[], None);
        match again.read_response() {
            Ok(r) if r.status == 200 => break,
            Ok(r) => assert_eq!(r.status, 429, "{}", r.text()),
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "the closed connections never gave their places back");
        std::thread::sleep(Duration::from_millis(50));
    }
}
