//! glommio's io_uring rings go through `shard::uring` (see there why): every binary
//! and test of this crate links with liburing's ring set-up wrapped.
//!
//! The web assets the binary serves (`src/api/web.rs`) are embedded from here: every
//! file of `web/console/` and `web/docs/` (ours), and the Swagger UI files `/docs` uses
//! from the npm package `swagger-ui-dist`, pinned by `web/package-lock.json` and
//! installed into `web/node_modules` by `ops/setup-web`. Each is `include_bytes!`'d
//! by absolute path, so the compiler tracks it; the generated table is
//! `$OUT_DIR/web_assets.rs`.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The Swagger UI files `/docs` loads, from the package's root.
const SWAGGER_UI: [&str; 4] = ["swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css", "LICENSE"];

fn main() {
    println!("cargo:rustc-link-arg=-Wl,--wrap=io_uring_queue_init_params");
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let web = root.join("web");
    let mut out = String::new();
    table(&mut out, "CONSOLE", &files(&web.join("console")));
    let swagger = web.join("node_modules/swagger-ui-dist");
    println!("cargo:rerun-if-changed={}", swagger.display());
    let mut docs = files(&web.join("docs"));
    for name in SWAGGER_UI {
        let path = swagger.join(name);
        if !path.is_file() {
            panic!(
                "{} is missing: the Swagger UI that /docs serves comes from the npm package swagger-ui-dist; \
                 run ops/setup (or ops/setup-web, which runs `npm ci --ignore-scripts` in web/)",
                path.display()
            );
        }
        let served = if name == "LICENSE" { "swagger-ui-LICENSE.txt".to_owned() } else { name.to_owned() };
        docs.push((served, path));
    }
    table(&mut out, "DOCS", &docs);
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("web_assets.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// The files directly in `dir`, by name, sorted (so the table is stable).
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().expect("a file has a name").to_string_lossy().into_owned(), p))
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    found.sort();
    found
}

fn table(out: &mut String, name: &str, files: &[(String, PathBuf)]) {
    writeln!(out, "pub static {name}: &[(&str, &[u8])] = &[").unwrap();
    for (served, path) in files {
        writeln!(out, "    ({served:?}, include_bytes!({:?})),", path.display().to_string()).unwrap();
    }
    writeln!(out, "];").unwrap();
}
