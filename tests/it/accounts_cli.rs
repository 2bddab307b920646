//! `quarry accounts …`: the operator's tools, on a stopped server's data directory.

use std::path::Path;
use std::process::Command;

use super::server::{bin, TestServer};

fn quarry(data: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(bin()).args(args).arg("--data").arg(data).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn operators_create_list_and_move_accounts() {
    let mut s = TestServer::start();
    s.terminate(std::time::Duration::from_secs(5));
    let data = s.data().to_owned();
    let (ok, out, err) = quarry(&data, &["accounts", "create", "--email", "Ops@X.org", "--plan", "scholar"]);
    assert!(ok, "{err}");
    let key = out.split_whitespace().find(|w| w.starts_with("al_")).expect("the key is printed").to_owned();
    let (ok, _, err) = quarry(&data, &["accounts", "create", "--email", "ops@x.org"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    let (ok, _, err) = quarry(&data, &["accounts", "set-plan", "--email", "ops@x.org", "--plan", "gold"]);
    assert!(!ok && err.contains("No plan `gold`"), "{err}");
    let (ok, _, err) = quarry(&data, &["accounts", "set-plan", "--email", "ops@x.org", "--plan", "library"]);
    assert!(ok, "{err}");
    let (_, list, _) = quarry(&data, &["accounts", "list"]);
    assert!(list.contains("ops@x.org\tlibrary"), "{list}");

    s.restart();
    let j = s.get("/v1/account", Some(&key)).json();
    assert_eq!(j["plan"], "library");
    assert_eq!(j["allowances"]["rate"]["burst"], 500);
}

#[test]
fn the_cli_refuses_a_data_directory_a_server_holds() {
    let s = TestServer::start();
    let (ok, _, err) = quarry(s.data(), &["accounts", "list"]);
    assert!(!ok);
    assert!(err.contains("in use by another process"), "{err}");
}
