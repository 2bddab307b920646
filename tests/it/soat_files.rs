//! SOAT files (`/api/v1/files`): bytes round trip, base64, checksum, tags, corruption on disk refused, trace files.
//!
//! A file uploaded as base64 comes back byte for byte (download and download as
//! base64), with its SHA-256, tags replaced and merged, metadata changed; another
//! account's file is absent; a byte changed on disk is refused on read, never served;
//! the bytes count against the plan's stored characters and are given back on delete.
//! A trace's `file_id` names a file holding its steps as a JSON array once its
//! generation settled (the tutorial `debug-session-generation-trace-history`).

use serde_json::{json, Value};

use super::soat::{call, ok, refused};
use super::soat_generate::{agent, server, setup};

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_file_round_trips_with_its_checksum_tags_and_metadata() {
    let s = super::server::TestServer::with_config(super::plans::ROOMY);
    let (_, key) = s.signup("files@example.org");
    let bytes: Vec<u8> = (0..=255u8).chain(b"hello\n".iter().copied()).collect();
    let body = json!({"content": b64(&bytes), "prefix": "/docs", "filename": "blob.bin", "content_type": "application/octet-stream", "metadata": "{\"author\":\"Ann\"}"});
    let f = ok(call(&s, "POST", "/api/v1/files/upload/base64", &key, Some(body)), 201);
    let id = f["id"].as_str().unwrap().to_owned();
    assert_eq!((f["path"].as_str(), f["size"].as_u64()), (Some("/docs/blob.bin"), Some(bytes.len() as u64)), "{f}");
    assert_eq!(f["sha256"].as_str(), Some(sha256_hex(&bytes).as_str()));
    let r = s.request("GET", &format!("/api/v1/files/{id}/download"), Some(&key), None);
    assert_eq!((r.status, &r.body[..]), (200, &bytes[..]));
    let b = ok(call(&s, "GET", &format!("/api/v1/files/{id}/download/base64"), &key, None), 200);
    assert_eq!((unb64(b["content"].as_str().unwrap()), b["filename"].as_str()), (bytes.clone(), Some("blob.bin")));
    // Tags: replaced, then merged.
    assert_eq!(ok(call(&s, "PUT", &format!("/api/v1/files/{id}/tags"), &key, Some(json!({"a": "1", "b": "2"}))), 200), json!({"a": "1", "b": "2"}));
    assert_eq!(
        ok(call(&s, "PATCH", &format!("/api/v1/files/{id}/tags"), &key, Some(json!({"b": "3", "c": "4"}))), 200),
        json!({"a": "1", "b": "3", "c": "4"})
    );
    assert_eq!(ok(call(&s, "GET", &format!("/api/v1/files/{id}/tags"), &key, None), 200)["c"], "4");
    let m = ok(
        call(&s, "PATCH", &format!("/api/v1/files/{id}/metadata"), &key, Some(json!({"metadata": "{\"author\":\"Bo\"}", "filename": "b.bin"}))),
        200,
    );
    assert_eq!((m["metadata"].as_str(), m["path"].as_str()), (Some("{\"author\":\"Bo\"}"), Some("/docs/b.bin")));
    let bad = refused(call(&s, "PATCH", &format!("/api/v1/files/{id}/metadata"), &key, Some(json!({"metadata": "{not json"}))), 400);
    assert_eq!(bad["meta"]["field"], "metadata");
    assert_eq!(refused(call(&s, "POST", "/api/v1/files/upload/base64", &key, Some(json!({"content": "***"}))), 400)["meta"]["field"], "content");
    let listed = ok(call(&s, "GET", "/api/v1/files", &key, None), 200);
    assert_eq!((listed["total"].as_u64(), listed["data"][0]["id"].as_str()), (Some(1), Some(id.as_str())));
    // Another account sees none of it.
    let (_, other) = s.signup("files-other@example.org");
    for path in [format!("/api/v1/files/{id}"), format!("/api/v1/files/{id}/download/base64"), format!("/api/v1/files/{id}/tags")] {
        assert_eq!(refused(call(&s, "GET", &path, &other, None), 404)["code"], "RESOURCE_NOT_FOUND", "{path}");
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/files", &other, None), 200)["total"], 0);
    // The bytes count as stored characters, and are given back on delete.
    let stored = |s: &super::server::TestServer| ok(call(s, "GET", "/v1/account", &key, None), 200)["usage"]["stored_chars"].as_u64().unwrap_or(0);
    let with = stored(&s);
    ok(call(&s, "DELETE", &format!("/api/v1/files/{id}"), &key, None), 204);
    let without = stored(&s);
    assert!(with >= without + bytes.len() as u64, "stored {with} with the file, {without} after");
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/files/{id}/download"), &key, None), 404)["code"], "RESOURCE_NOT_FOUND");
}

#[test]
fn a_file_changed_on_disk_is_refused_not_served() {
    let s = super::server::TestServer::with_config(super::plans::ROOMY);
    let (_, key) = s.signup("files-corrupt@example.org");
    let f = ok(call(&s, "POST", "/api/v1/files/upload/base64", &key, Some(json!({"content": b64(b"the ledger balances")}))), 201);
    let id = f["id"].as_str().unwrap();
    let on_disk = s.data().join("files").join(id);
    assert_eq!(std::fs::read(&on_disk).unwrap(), b"the ledger balances", "the bytes are where the module says");
    std::fs::write(&on_disk, b"the ledger balanced").unwrap();
    for path in [format!("/api/v1/files/{id}/download"), format!("/api/v1/files/{id}/download/base64")] {
        let r = call(&s, "GET", &path, &key, None);
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        assert!(!r.text().contains("balanced"), "the changed bytes are not served: {}", r.text());
        assert_eq!(r.json()["error"]["meta"]["file_id"], id, "{}", r.text());
        assert!(r.text().contains("checksum"), "{}", r.text());
    }
    // The record is still there to delete.
    ok(call(&s, "DELETE", &format!("/api/v1/files/{id}"), &key, None), 204);
}

#[test]
fn a_traces_file_holds_its_steps_as_a_json_array() {
    use super::scripted_llm::{text, Scripted};
    let up = Scripted::start();
    up.otherwise(text("The answer is 42."));
    let s = server();
    let st = setup(&s, &up, "trace-file@example.org");
    let a = agent(&s, &st, json!({}));
    let g = ok(
        call(
            &s,
            "POST",
            &format!("/api/v1/agents/{a}/generate?wait=true"),
            &st.key,
            Some(json!({"messages": [{"role": "user", "content": "What is it?"}]})),
        ),
        200,
    );
    let trace_id = g["trace_id"].as_str().unwrap();
    let t = ok(call(&s, "GET", &format!("/api/v1/traces/{trace_id}"), &st.key, None), 200);
    let file_id = t["file_id"].as_str().unwrap_or_else(|| panic!("no file_id: {t}"));
    assert_eq!((t["agent_id"].as_str(), t["step_count"].as_u64()), (Some(a.as_str()), Some(1)), "{t}");
    let b = ok(call(&s, "GET", &format!("/api/v1/files/{file_id}/download/base64"), &st.key, None), 200);
    let steps: Value = serde_json::from_slice(&unb64(b["content"].as_str().unwrap())).unwrap();
    let steps = steps.as_array().unwrap_or_else(|| panic!("not an array: {steps}"));
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert!(steps[0].to_string().contains("The answer is 42."), "{}", steps[0]);
    let f = ok(call(&s, "GET", &format!("/api/v1/files/{file_id}"), &st.key, None), 200);
    assert_eq!(
        (f["content_type"].as_str(), f["path"].as_str()),
        (Some("application/json"), Some(format!("/traces/{trace_id}.json").as_str())),
        "{f}"
    );
    // Another account sees neither.
    let other = setup(&s, &up, "trace-file-other@example.org");
    assert_eq!(refused(call(&s, "GET", &format!("/api/v1/files/{file_id}/download/base64"), &other.key, None), 404)["code"], "RESOURCE_NOT_FOUND");
}

#[test]
fn a_project_deleted_with_force_takes_its_conversations_documents_and_files_and_a_restart_sweeps_stray_bytes() {
    let mut s = super::server::TestServer::with_config(super::plans::ROOMY);
    let (_, key) = s.signup("files-project@example.org");
    let p = ok(call(&s, "POST", "/api/v1/projects", &key, Some(json!({"name": "leaving"}))), 201)["id"].as_str().unwrap().to_owned();
    let keep =
        ok(call(&s, "POST", "/api/v1/files/upload/base64", &key, Some(json!({"content": b64(b"stays")}))), 201)["id"].as_str().unwrap().to_owned();
    let file = ok(call(&s, "POST", "/api/v1/files/upload/base64", &key, Some(json!({"project_id": p, "content": b64(b"goes")}))), 201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let conv =
        ok(call(&s, "POST", "/api/v1/conversations", &key, Some(json!({"project_id": p, "name": "c"}))), 201)["id"].as_str().unwrap().to_owned();
    let doc = json!({"project_id": p, "path": "/a.txt", "content": "The north gate opens at dawn."});
    let doc = ok(call(&s, "POST", "/api/v1/documents", &key, Some(doc)), 201)["id"].as_str().unwrap().to_owned();

    let e = refused(call(&s, "DELETE", &format!("/api/v1/projects/{p}"), &key, None), 409);
    assert_eq!(e["code"], "PROJECT_HAS_DEPENDENTS", "{e}");
    for kind in ["file", "conversation", "document"] {
        assert_eq!(e["meta"][format!("{kind}_count")], 1, "{kind}: {e}");
    }
    ok(call(&s, "DELETE", &format!("/api/v1/projects/{p}?force=true"), &key, None), 204);
    for path in [format!("/api/v1/files/{file}"), format!("/api/v1/conversations/{conv}"), format!("/api/v1/documents/{doc}")] {
        refused(call(&s, "GET", &path, &key, None), 404);
    }
    let files = s.data().join("files");
    assert!(!files.join(&file).exists(), "the project's bytes went with it");
    assert!(files.join(&keep).exists(), "another project's bytes stay");
    let hidden = ok(call(&s, "GET", "/v1/collections", &key, None), 200).to_string();
    assert!(!hidden.contains(&p), "no collection of the project is left: {hidden}");

    // Bytes a crash left between the disk and the record, and a temporary name, are
    // removed at the next start; a recorded file's are not.
    std::fs::write(files.join("file_strayStrayStray1"), b"orphan").unwrap();
    std::fs::write(files.join("file_half.tmp"), b"half").unwrap();
    s.kill9();
    s.restart();
    assert!(!files.join("file_strayStrayStray1").exists() && !files.join("file_half.tmp").exists(), "stray bytes swept at start");
    let r = s.request("GET", &format!("/api/v1/files/{keep}/download"), Some(&key), None);
    assert_eq!((r.status, &r.body[..]), (200, &b"stays"[..]));
}

/// A form part: its name, file name, content type and bytes.
type Part<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A multipart body of `parts`.
fn multipart(parts: &[Part]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, kind, bytes) in parts {
        body.extend_from_slice(b"--b0undary\r\n");
        let file = file.map(|f| format!("; filename=\"{f}\"")).unwrap_or_default();
        body.extend_from_slice(format!("content-disposition: form-data; name=\"{name}\"{file}\r\n").as_bytes());
        if let Some(k) = kind {
            body.extend_from_slice(format!("content-type: {k}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--b0undary--\r\n");
    body
}

#[test]
fn a_multipart_upload_keeps_its_bytes_and_names_and_a_bad_form_changes_nothing() {
    let s = super::server::TestServer::with_config(super::plans::ROOMY);
    let (_, key) = s.signup("files-multipart@example.org");
    let auth = format!("Bearer {key}");
    let upload = |body: &[u8], kind: &str| {
        s.conn().send("POST", "/api/v1/files/upload", &[("authorization", auth.as_str()), ("content-type", kind)], Some(body))
    };
    let bytes: Vec<u8> = (0..=255u8).rev().chain(b"\r\n--b0undar".iter().copied()).collect();
    let form = multipart(&[
        ("prefix", None, None, b"/images"),
        ("metadata", None, None, b"{\"author\":\"Ann\"}"),
        ("file", Some("logo.png"), Some("image/png"), &bytes),
    ]);
    let r = upload(&form, "multipart/form-data; boundary=b0undary");
    assert_eq!(r.status, 201, "{}", r.text());
    let f = r.json();
    assert_eq!(
        (f["path"].as_str(), f["content_type"].as_str(), f["size"].as_u64(), f["metadata"].as_str()),
        (Some("/images/logo.png"), Some("image/png"), Some(bytes.len() as u64), Some("{\"author\":\"Ann\"}")),
        "{f}"
    );
    assert_eq!(f["sha256"].as_str(), Some(sha256_hex(&bytes).as_str()));
    let id = f["id"].as_str().unwrap();
    let d = s.request("GET", &format!("/api/v1/files/{id}/download"), Some(&key), None);
    assert_eq!((d.status, &d.body[..]), (200, &bytes[..]), "the bytes as sent, a boundary look-alike inside them kept");

    // A form field names the file over its part.
    let form = multipart(&[("filename", None, None, b"renamed.txt"), ("file", Some("a.bin"), None, b"plain")]);
    let f = upload(&form, "multipart/form-data; boundary=b0undary").json();
    assert_eq!((f["path"].as_str(), f["content_type"].as_str()), (Some("/renamed.txt"), None), "{f}");

    // Refused, and nothing made: no file part, JSON instead of a form, an unknown field.
    for (body, kind, field) in [
        (multipart(&[("prefix", None, None, b"/x")]), "multipart/form-data; boundary=b0undary", "file"),
        (b"{\"content\":\"aGk=\"}".to_vec(), "application/json", "file"),
        (multipart(&[("owner", None, None, b"me"), ("file", Some("a"), None, b"x")]), "multipart/form-data; boundary=b0undary", "owner"),
    ] {
        let r = upload(&body, kind);
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!((r.json()["error"]["code"].as_str(), r.json()["error"]["meta"]["field"].as_str()), (Some("VALIDATION_FAILED"), Some(field)));
    }
    assert_eq!(ok(call(&s, "GET", "/api/v1/files", &key, None), 200)["total"], 2);
}

#[test]
fn a_presigned_url_uploads_one_file_without_a_key_and_a_used_forged_or_foreign_token_writes_nothing() {
    let s = super::server::TestServer::with_config(super::plans::ROOMY);
    let (_, key) = s.signup("files-presigned@example.org");
    let body = json!({"prefix": "/docs", "filename": "report.txt", "content_type": "text/plain"});
    let p = ok(call(&s, "POST", "/api/v1/files/presigned-url", &key, Some(body)), 201);
    let (token, url) = (p["upload_token"].as_str().unwrap().to_owned(), p["upload_url"].as_str().unwrap().to_owned());
    assert!(token.starts_with("upt_") && url == format!("/api/v1/files/upload/{token}"), "{p}");
    let expires = humantime::parse_rfc3339(p["expires_at"].as_str().unwrap()).unwrap();
    let left = expires.duration_since(std::time::SystemTime::now()).unwrap().as_secs();
    assert!((800..=900).contains(&left), "about 15 minutes: {left} s");

    // No credential: the token is one. JSON with base64 content, metadata added.
    let up = json!({"content": b64(b"quarterly numbers"), "metadata": "{\"q\":3}"}).to_string();
    let r = s.request("POST", &url, None, Some(&up));
    assert_eq!(r.status, 201, "{}", r.text());
    let f = r.json();
    assert_eq!(
        (f["path"].as_str(), f["content_type"].as_str(), f["metadata"].as_str()),
        (Some("/docs/report.txt"), Some("text/plain"), Some("{\"q\":3}"))
    );
    let id = f["id"].as_str().unwrap().to_owned();
    let d = s.request("GET", &format!("/api/v1/files/{id}/download"), Some(&key), None);
    assert_eq!((d.status, &d.body[..]), (200, &b"quarterly numbers"[..]));

    // Used: 409, and the file keeps its bytes.
    let r = s.request("POST", &url, None, Some(&json!({"content": b64(b"overwritten?")}).to_string()));
    assert_eq!(r.status, 409, "{}", r.text());
    let d = s.request("GET", &format!("/api/v1/files/{id}/download"), Some(&key), None);
    assert_eq!(&d.body[..], &b"quarterly numbers"[..], "a reused token changed nothing");

    // Forged or cut: 404. A multipart form works too, with a fresh token.
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    for bad in [forged.as_str(), "upt_00", "nope"] {
        let r = s.request("POST", &format!("/api/v1/files/upload/{bad}"), None, Some(&json!({"content": b64(b"x")}).to_string()));
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (404, Some("RESOURCE_NOT_FOUND")), "{bad}: {}", r.text());
    }
    let p = ok(call(&s, "POST", "/api/v1/files/presigned-url", &key, Some(json!({}))), 201);
    let form = multipart(&[("file", Some("photo.jpg"), Some("image/jpeg"), b"\xff\xd8\xff")]);
    let r = s.conn().send("POST", p["upload_url"].as_str().unwrap(), &[("content-type", "multipart/form-data; boundary=b0undary")], Some(&form));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!((r.json()["path"].as_str(), r.json()["content_type"].as_str()), (Some("/photo.jpg"), Some("image/jpeg")));

    // Another account's token uploads into that account only.
    let (_, other) = s.signup("files-presigned-other@example.org");
    let p = ok(call(&s, "POST", "/api/v1/files/presigned-url", &other, Some(json!({}))), 201);
    ok(call(&s, "POST", p["upload_url"].as_str().unwrap(), &key, Some(json!({"content": b64(b"theirs")}))), 201);
    assert_eq!(ok(call(&s, "GET", "/api/v1/files", &key, None), 200)["total"], 2, "nothing landed in the caller's account");
    assert_eq!(ok(call(&s, "GET", "/api/v1/files", &other, None), 200)["total"], 1);
    // Bad naming is refused when the URL is made.
    let e = refused(call(&s, "POST", "/api/v1/files/presigned-url", &key, Some(json!({"prefix": "/a/../b"}))), 400);
    assert_eq!(e["meta"]["field"], "prefix", "{e}");
}
