//! Start, stop, crash, restart.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use super::server::{bin, TestServer};

#[test]
fn sigterm_finishes_requests_in_flight_then_exits_zero() {
    let mut s = TestServer::start();
    let mut c = s.conn();
    // A request whose body is still on its way when the signal lands.
    let body = br#"{"email":"late@x.org"}"#;
    let head = format!("POST /v1/signup HTTP/1.1\r\nhost: q\r\ncontent-length: {}\r\n\r\n", body.len());
    c.stream.write_all(head.as_bytes()).unwrap();
    c.stream.write_all(&body[..5]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    s.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    c.stream.write_all(&body[5..]).unwrap();
    let r = c.read_response().expect("the in-flight request is answered");
    assert_eq!(r.status, 201, "{}", r.text());
    let status = s.wait(Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    // No new connections once it is stopping, and the signup survived.
    s.restart();
    assert_eq!(s.request("POST", "/v1/signup", None, Some(r#"{"email":"late@x.org"}"#)).code(), "email_taken");
}

#[test]
fn sigterm_on_an_idle_server_exits_quickly() {
    let mut s = TestServer::start();
    let _idle = s.conn();
    let start = Instant::now();
    assert!(s.terminate(Duration::from_secs(5)).success());
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
}

#[test]
fn after_kill_9_and_restart_every_account_and_key_is_there() {
    let mut s = TestServer::start();
    let (id, key) = s.signup("a@x.org");
    let second = s.request("POST", "/v1/keys", Some(&key), None).json()["api_key"].as_str().unwrap().to_owned();
    let third = s.request("POST", "/v1/keys", Some(&key), None).json()["api_key"].as_str().unwrap().to_owned();
    assert_eq!(s.request("DELETE", &format!("/v1/keys/{}", &third[..10]), Some(&key), None).status, 200);
    s.kill9();
    s.restart();
    let j = s.get("/v1/account", Some(&second)).json();
    assert_eq!(j["id"], id.as_str());
    assert_eq!(j["keys"].as_array().unwrap().len(), 3);
    assert_eq!(s.get("/v1/account", Some(&key)).status, 200);
    assert_eq!(s.get("/v1/account", Some(&third)).code(), "invalid_key", "a revoke survives a crash too");
}

#[test]
fn a_second_server_on_the_same_data_directory_is_refused() {
    let s = TestServer::start();
    let out = Command::new(bin()).args(["serve", "--listen", "127.0.0.1:0", "--shards", "1", "--data"]).arg(s.data()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another process"), "{err}");
}

#[test]
fn an_unknown_config_key_stops_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("q.toml");
    std::fs::write(&cfg, "[http]\nheader_timeout = \"1s\"\n").unwrap();
    let out = Command::new(bin()).args(["serve", "--config"]).arg(&cfg).arg("--data").arg(dir.path()).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http.header_timeout"), "{err}");
    let out = Command::new(bin()).args(["serve", "--data"]).arg(dir.path()).env("QUARRY_SHARDZ", "1").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("QUARRY_SHARDZ"));
}

#[test]
fn a_port_in_use_is_reported() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["serve", "--shards", "1", "--listen", &taken.local_addr().unwrap().to_string(), "--data"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen"));
}

/// Regression (issue 2/9, finding 9): the shards bind with SO_REUSEPORT, so a second
/// `quarry serve` on a running server's port started without a word and, with another
/// data directory, took half its connections; a refused start-up printed anyhow's
/// "Caused by" list (and a backtrace under RUST_BACKTRACE). Now it is refused in one
/// line that says what to do, and the first server keeps every connection.
#[test]
fn a_second_server_on_a_running_servers_port_is_refused_in_one_line() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        .args(["serve", "--shards", "1", "--listen", &s.addr.to_string(), "--data"])
        .arg(dir.path())
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.contains(" INFO ") && !l.contains(" WARN ")).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("quarry: ") && lines[0].contains("another process is listening there") && lines[0].contains("--listen"), "{err}");
    assert!(!err.contains("backtrace") && !err.contains("Caused by"), "{err}");
    // Every connection still reaches the first server (its accounts, its data).
    let (_, key) = s.signup("still-one@example.com");
    for _ in 0..20 {
        assert_eq!(s.get("/v1/account", Some(&key)).status, 200);
    }
}

#[test]
fn version_flag_prints_the_version() {
    let out = Command::new(bin()).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("quarry {}", env!("CARGO_PKG_VERSION")));
}

/// glommio registers io_uring memory, which counts against RLIMIT_MEMLOCK for a user
/// without CAP_IPC_LOCK; 8 MiB is the usual default. Runs when the tests run as root
/// (which can drop to `nobody`), as CI does.
#[test]
fn starts_as_a_non_root_user_under_an_8_mib_memlock_limit() {
    // SAFETY: geteuid has no preconditions.
    let can_drop = unsafe { libc::geteuid() } == 0 && Command::new("setpriv").arg("--version").output().is_ok();
    if !super::prerequisite::prerequisite("needs root and setpriv (util-linux) to drop to an unprivileged user; CI runs as root", can_drop) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut child = Command::new("prlimit")
        .args(["--memlock=8388608:8388608", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--shards", "2", "--data"])
        .arg(dir.path().join("data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let addr = line.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).expect("it starts and prints its address");
    let mut c = super::client::Conn::open(addr.parse().unwrap());
    assert_eq!(c.send("GET", "/v1/health", &[], None).status, 200);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("registering buffers"), "io_uring buffers did not fit the memlock limit:\n{err}");
}
