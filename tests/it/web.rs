//! What a browser is served over HTTP: the console's and the reference's files, their types and CSP.
//!
//! What a browser is served, over HTTP: `/` leads to `/console`; the console's and the
//! reference's files come from the binary with their types and a Content-Security-Policy
//! that keeps the pages on this origin; the Swagger UI is npm's swagger-ui-dist as
//! pinned (its bytes are the installed package's); an unknown file is the AgentLex 404.

use super::server::TestServer;

#[test]
fn the_root_leads_to_the_console_and_its_files_are_served_with_a_strict_policy() {
    let s = TestServer::start();
    let r = s.get("/", None);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/console"));

    let page = s.get("/console", None);
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let csp = page.header("content-security-policy").expect("the console has a CSP");
    assert!(csp.contains("default-src 'self'") && csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(page.text().contains("/console/app.js"));

    for (path, ty) in [
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/core.js", "text/javascript; charset=utf-8"),
        ("/console/app.css", "text/css; charset=utf-8"),
    ] {
        let r = s.get(path, None);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(ty), "{path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        let file = std::fs::read(format!("{}/web{}", env!("CARGO_MANIFEST_DIR"), path)).unwrap();
        assert_eq!(r.body, file, "{path} is served as the file in web/");
    }

    let missing = s.get("/console/nothing.js", None);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.code(), "not_found");
    // A path with a slash in it is no file of the table, never a path on disk.
    assert_eq!(s.get("/console/..%2Fcore.js", None).status, 404);
    assert_eq!(s.get("/console/../Cargo.toml", None).status, 404);
}

#[test]
fn the_reference_serves_swagger_ui_from_the_pinned_npm_package() {
    let s = TestServer::start();
    let page = s.get("/docs", None);
    assert_eq!(page.status, 200);
    let html = page.text();
    for asset in ["/docs/swagger-ui-bundle.js", "/docs/swagger-ui-standalone-preset.js", "/docs/swagger-ui.css", "/docs/docs.js"] {
        assert!(html.contains(asset), "{asset} is not loaded by /docs");
        let r = s.get(asset, None);
        assert_eq!(r.status, 200, "{asset}");
    }
    assert!(!html.contains("//cdn") && !html.contains("https://"), "/docs names no other host");
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/web/package-lock.json")).unwrap()).unwrap();
    let pinned = lock["packages"]["node_modules/swagger-ui-dist"]["version"].as_str().unwrap();
    let pkg = concat!(env!("CARGO_MANIFEST_DIR"), "/web/node_modules/swagger-ui-dist");
    let installed: serde_json::Value = serde_json::from_slice(&std::fs::read(format!("{pkg}/package.json")).unwrap()).unwrap();
    assert_eq!(installed["version"], pinned, "web/node_modules holds the pinned swagger-ui-dist (ops/setup-web)");
    let bundle = s.get("/docs/swagger-ui-bundle.js", None);
    assert_eq!(bundle.body, std::fs::read(format!("{pkg}/swagger-ui-bundle.js")).unwrap());
    assert_eq!(bundle.header("cache-control"), Some("public, max-age=86400"));
    let init = s.get("/docs/docs.js", None).text();
    assert!(init.contains("validatorUrl: null"), "the validator badge would call another host");
    let licence = s.get("/docs/swagger-ui-LICENSE.txt", None);
    assert_eq!(licence.status, 200);
    assert!(licence.text().contains("Apache License"));
}
