//! Where this binary's installation is, so that what ships beside it (the models and
//! ONNX Runtime that `ops/setup` puts in `models/`) is found whatever directory the
//! server is started from. A relative `models.dir` or `models.runtime_library` is taken
//! from the installation root; an absolute one is used as given.
//!
//! The root is the nearest directory at or above the executable's that holds
//! `models/models.toml` (which is in the repository, so it is there before `ops/setup`
//! has run): the repository for `target/release/quarry` and `target/<triple>/release/
//! quarry`, the prefix for an install such as `/opt/quarry/bin/quarry`. With none (a
//! binary copied somewhere alone), relative paths are taken from the working directory,
//! as before.

use std::path::{Path, PathBuf};

/// What marks an installation root.
const MARKER: &str = "models/models.toml";

/// How many directories above the executable's are looked at: enough for
/// `target/<triple>/<profile>/deps/` (where test binaries live).
const LEVELS: usize = 5;

/// The installation root of the executable at `exe`, if it has one.
pub fn root_of(exe: &Path) -> Option<PathBuf> {
    exe.parent()?.ancestors().take(LEVELS).find(|dir| dir.join(MARKER).is_file()).map(Path::to_owned)
}

/// The running binary's installation root.
pub fn current() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    root_of(&exe.canonicalize().unwrap_or(exe))
}

/// `setting` as the path used: absolute as given, else from `root` (or from the
/// working directory when there is no installation).
pub fn resolve(root: Option<&Path>, setting: &str) -> PathBuf {
    let path = Path::new(setting);
    match root {
        _ if path.is_absolute() => path.to_owned(),
        Some(root) => root.join(path),
        None => std::env::current_dir().map_or_else(|_| path.to_owned(), |cwd| cwd.join(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_found_above_a_cargo_target_or_an_installed_bin() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("quarry");
        std::fs::create_dir_all(root.join("models")).unwrap();
        std::fs::write(root.join(MARKER), "").unwrap();
        for exe in ["target/release/quarry", "target/x86_64-unknown-linux-gnu/release/quarry", "bin/quarry", "quarry"] {
            assert_eq!(root_of(&root.join(exe)).as_deref(), Some(root.as_path()), "{exe}");
        }
        assert_eq!(root_of(&dir.path().join("elsewhere/bin/quarry")), None);
    }

    #[test]
    fn absolute_settings_are_kept_relative_ones_join_the_root() {
        let root = Path::new("/opt/quarry");
        assert_eq!(resolve(Some(root), "/srv/models"), PathBuf::from("/srv/models"));
        assert_eq!(resolve(Some(root), "models/lib/x.so"), PathBuf::from("/opt/quarry/models/lib/x.so"));
        assert_eq!(resolve(None, "models"), std::env::current_dir().unwrap().join("models"));
    }
}
