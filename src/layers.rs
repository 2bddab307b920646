//! The layers of the server's crates, and the tests that keep them. The crates cut the
//! stack in three (`quarry-core` below `quarry-services` below this crate), so an import
//! up across a crate does not compile. Inside each crate every top-level module sits in
//! one layer and may `use crate::…` only modules of layers below its own: a new upward
//! import fails `cargo test` (and so CI), naming the file, the edge and the layers; a new
//! top-level module fails until it is given a layer here. ARCHITECTURE.md draws the same
//! table. (`quarry ingest`, the `quarry-ingest` crate, is a client of the public API and
//! depends on no crate of the server at all.)

/// Bottom to top. A module may import any module of a lower layer, none of its own layer
/// or above.
const LAYERS: &[(&str, &[&str])] = &[
    // quarry-core.
    // Leaves every layer may use: codes and errors, ids, time, plans, the OS, sockets,
    // the executors' helpers, the per-shard counters.
    ("leaves", &["error", "ids", "names", "access", "scrub", "clock", "plans", "sys", "net", "runtime", "metrics", "version"]),
    // What the services stand on: the provider layer, the records store and the bucket
    // segments are published in.
    ("engines", &["llm", "store", "segments"]),
    ("limits", &["limits"]),
    ("config", &["config"]),
    // quarry-services.
    // Services every other service may call: keys, and collections and their search.
    ("base services", &["auth", "search", "cluster"]),
    ("services", &["agents", "evaluate", "extract", "identity", "research"]),
    // The composition root: builds every service once and lends each what it needs.
    ("app", &["app"]),
    // quarry (the server).
    ("http", &["http"]),
    ("api", &["api"]),
    ("shard", &["shard"]),
    ("entry points", &["cli", "telemetry", "layers"]),
];

/// The crates, bottom to top, and their source roots (from the workspace root): every
/// module of a lower crate sits in a lower layer than every module of a higher one.
const CRATES: &[(&str, &str)] = &[("quarry-core", "core/src"), ("quarry-services", "services/src"), ("quarry", "src")];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::{CRATES, LAYERS};

    fn layer_of(module: &str) -> Option<usize> {
        LAYERS.iter().position(|(_, members)| members.contains(&module))
    }

    /// Each crate's source root.
    fn roots() -> Vec<(&'static str, PathBuf)> {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
        CRATES.iter().map(|(name, dir)| (*name, workspace.join(dir))).collect()
    }

    /// Every `.rs` file under `dir`.
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The top-level modules of one crate: `<root>/<name>.rs` and `<root>/<name>/`.
    fn modules_of(root: &Path) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for entry in std::fs::read_dir(root).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
                out.insert(name);
            }
        }
        out.remove("main");
        out.remove("lib");
        out
    }

    /// The top-level modules of every crate.
    fn top_level_modules() -> BTreeSet<String> {
        roots().iter().flat_map(|(_, root)| modules_of(root)).collect()
    }

    /// The top-level modules `text` names as `crate::<name>`, including each member of a
    /// grouped `crate::{a::X, b}`; comments are left out.
    fn crate_paths(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(at) = rest.find("crate::") {
                let before = rest[..at].chars().next_back();
                rest = &rest[at + "crate::".len()..];
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue; // `quarry_crate::` or the like
                }
                if let Some(group) = rest.strip_prefix('{') {
                    let inner = group.split('}').next().unwrap_or("");
                    out.extend(inner.split(',').map(|p| ident(p.trim())).filter(|i| !i.is_empty()));
                } else {
                    out.push(ident(rest));
                }
            }
        }
        out
    }

    fn ident(s: &str) -> String {
        s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    }

    /// (from, to) → the files that make the edge.
    fn edges() -> BTreeMap<(String, String), Vec<String>> {
        let modules = top_level_modules();
        let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (_, root) in roots() {
            let mut all = Vec::new();
            files(&root, &mut all);
            for path in all {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                let from = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
                // main.rs is the binary (it uses `quarry::`); lib.rs re-exports the crates
                // below; this file's own test text names paths.
                if from == "main" || from == "lib" || from == "layers" {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for to in crate_paths(&text) {
                    if to != from && modules.contains(&to) {
                        edges.entry((from.clone(), to)).or_default().push(rel.clone());
                    }
                }
            }
        }
        for files in edges.values_mut() {
            files.dedup();
        }
        edges
    }

    #[test]
    fn every_top_level_module_has_a_layer() {
        let missing: Vec<String> = top_level_modules().into_iter().filter(|m| layer_of(m).is_none()).collect();
        assert!(missing.is_empty(), "give these modules a layer in src/layers.rs (and ARCHITECTURE.md): {missing:?}");
        let listed: Vec<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
        let unique: BTreeSet<&str> = listed.iter().copied().collect();
        assert_eq!(listed.len(), unique.len(), "a module is in two layers");
    }

    /// The table agrees with the crates: walking it bottom to top never steps down a crate.
    #[test]
    fn each_crate_holds_a_run_of_layers_in_its_order() {
        let crate_of = |module: &str| roots().iter().position(|(_, root)| modules_of(root).contains(module));
        let mut last = (0, "");
        for (layer, members) in LAYERS {
            for m in *members {
                let c = crate_of(m).unwrap_or_else(|| panic!("{m} (layer {layer}) is in no crate's sources"));
                assert!(c >= last.0, "{m} (layer {layer}, crate {}) sits above {} of crate {}", CRATES[c].0, last.1, CRATES[last.0].0);
                last = (c, m);
            }
        }
    }

    #[test]
    fn every_import_points_down_a_layer() {
        let mut wrong = Vec::new();
        for ((from, to), files) in edges() {
            let (Some(a), Some(b)) = (layer_of(&from), layer_of(&to)) else { continue };
            if b >= a {
                wrong.push(format!("{from} ({}) uses {to} ({}) in {}", LAYERS[a].0, LAYERS[b].0, files.join(", ")));
            }
        }
        assert!(
            wrong.is_empty(),
            "imports that do not point down a layer (src/layers.rs; move the type down, or pass \
             what is needed in from above):\n  {}",
            wrong.join("\n  ")
        );
    }

    /// Layers imply no circle; this says so directly, whatever the table holds.
    #[test]
    fn no_import_circle_between_top_level_modules() {
        let edges = edges();
        let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (from, to) in edges.keys() {
            graph.entry(from).or_default().push(to);
        }
        // Depth-first search with colours: 1 = on the path, 2 = done.
        fn visit<'a>(
            n: &'a str,
            g: &BTreeMap<&'a str, Vec<&'a str>>,
            colour: &mut BTreeMap<&'a str, u8>,
            path: &mut Vec<&'a str>,
        ) -> Option<Vec<String>> {
            colour.insert(n, 1);
            path.push(n);
            for &m in g.get(n).map(Vec::as_slice).unwrap_or(&[]) {
                match colour.get(m).copied().unwrap_or(0) {
                    1 => {
                        let start = path.iter().position(|p| *p == m).unwrap();
                        let mut circle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
                        circle.push(m.to_owned());
                        return Some(circle);
                    }
                    0 => {
                        if let Some(c) = visit(m, g, colour, path) {
                            return Some(c);
                        }
                    }
                    _ => {}
                }
            }
            path.pop();
            colour.insert(n, 2);
            None
        }
        let mut colour = BTreeMap::new();
        for &n in graph.keys() {
            if colour.get(n).copied().unwrap_or(0) == 0 {
                if let Some(circle) = visit(n, &graph, &mut colour, &mut Vec::new()) {
                    panic!("an import circle: {}", circle.join(" → "));
                }
            }
        }
    }

    #[test]
    fn the_scanner_reads_grouped_and_plain_paths_and_skips_comments() {
        let text = "use crate::app::App;\nuse crate::{store::Records, auth};\n// crate::http\nlet x = crate::ids::new(); // crate::api\n";
        assert_eq!(crate_paths(text), ["app", "store", "auth", "ids"]);
    }
}
