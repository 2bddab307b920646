//! The console and the reference in a real browser: Debian's chromium, headless, driven
//! by selenium (tests/browser/harness.py) against the real binary on loopback, every
//! other host unreachable and every request checked. Each flow is a script in
//! tests/browser/; screenshots of each step at 360 px and 1280 px go to
//! target/browser-shots/<flow>/ (not committed). Skipped without chromium, chromedriver
//! or selenium (ops/setup-browser-tests installs them), a failure under CI.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::server::TestServer;

/// The test venv's python with selenium, when chromium and its driver are installed.
pub(super) fn browser() -> Option<PathBuf> {
    let cache = std::env::var_os("QUARRY_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/quarry"));
    let python = cache.join("venv-sdk/bin/python");
    let ready = python.exists()
        && std::path::Path::new("/usr/bin/chromium").exists()
        && std::path::Path::new("/usr/bin/chromedriver").exists()
        && Command::new(&python).args(["-c", "import selenium"]).status().is_ok_and(|s| s.success());
    if ready {
        return Some(python);
    }
    assert!(std::env::var_os("CI").is_none(), "no browser under CI (ops/setup-browser-tests installs chromium, chromium-driver, selenium)");
    eprintln!("skipped: no chromium, chromedriver or selenium (ops/setup-browser-tests installs them)");
    None
}

/// Runs `tests/browser/<flow>.py` against `server`, with `env` added, within `limit`;
/// panics with its output unless it passed.
pub(super) fn run_flow(python: &PathBuf, flow: &str, server: &TestServer, env: &[(&str, String)], limit: Duration) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shots = root.join("target/browser-shots");
    let mut cmd = Command::new(python);
    cmd.arg(root.join(format!("tests/browser/{flow}.py")))
        .current_dir(root.join("tests/browser"))
        .env("QUARRY_URL", format!("http://{}", server.addr))
        .env("QUARRY_SHOTS", &shots)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("python runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("the flow can be waited for") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (reader.join().unwrap(), err_reader.join().unwrap());
    match status {
        Some(s) if s.success() => {
            assert!(stdout.contains(&format!("{flow}: passed")), "{flow} exited 0 without passing:\n{stdout}\n{stderr}");
            eprintln!("{stdout}");
        }
        Some(s) => panic!("{flow} failed ({s}):\n{stdout}\n{stderr}"),
        None => panic!("{flow} did not finish within {limit:?}:\n{stdout}\n{stderr}"),
    }
}

/// `/` leads to the console; sign up, sign out, a wrong key refused in words, sign in
/// by keyboard; `/docs` renders the four documents with the bundled Swagger UI.
#[test]
fn browser_console_shell_and_docs() {
    let Some(python) = browser() else { return };
    let s = TestServer::start();
    run_flow(&python, "shell_flow", &s, &[], Duration::from_secs(120));
}
