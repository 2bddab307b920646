//! The server crate's layers, and the test that keeps them: every top-level module sits in
//! one layer and may `use crate::…` only modules of layers below its own. A new upward
//! import fails `cargo test` (and so CI), naming the file, the edge and the layers; a new
//! top-level module fails until it is given a layer here. ARCHITECTURE.md draws the same
//! table.

/// Bottom to top. A module may import any module of a lower layer, none of its own layer
/// or above.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaves every layer may use: codes and errors, ids, time, plans, the OS, sockets,
    // the executors' helpers, the per-shard counters.
    ("leaves", &["error", "ids", "clock", "plans", "sys", "net", "runtime", "metrics", "version", "layers"]),
    // What the services stand on: the provider layer and the records store.
    ("engines", &["llm", "store"]),
    ("limits", &["limits"]),
    ("config", &["config"]),
    // Services every other service may call: keys, and collections and their search.
    ("base services", &["auth", "search"]),
    ("services", &["agents", "evaluate", "extract", "identity", "research"]),
    // The composition root: builds every service once and lends each what it needs.
    ("app", &["app"]),
    ("http", &["http"]),
    ("api", &["api"]),
    ("shard", &["shard", "ingest_cli"]),
    ("entry points", &["cli", "telemetry"]),
];

/// `quarry ingest` is a client of the public API, not a part of the server: it may use
/// the leaves only.
const CLIENTS: &[&str] = &["ingest_cli"];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::{CLIENTS, LAYERS};

    fn layer_of(module: &str) -> Option<usize> {
        LAYERS.iter().position(|(_, members)| members.contains(&module))
    }

    fn src() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

    /// The top-level modules of the crate: `src/<name>.rs` and `src/<name>/`.
    fn top_level_modules() -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for entry in std::fs::read_dir(src()).unwrap() {
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
        let mut all = Vec::new();
        files(&src(), &mut all);
        let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for path in all {
            let rel = path.strip_prefix(src()).unwrap().to_string_lossy().into_owned();
            let from = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
            // main.rs is the binary (it uses `quarry::`); this file's own test text names paths.
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

    #[test]
    fn every_import_points_down_a_layer() {
        let mut wrong = Vec::new();
        for ((from, to), files) in edges() {
            let (Some(a), Some(b)) = (layer_of(&from), layer_of(&to)) else { continue };
            let client = CLIENTS.contains(&from.as_str()) && b != 0;
            if b >= a || client {
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
