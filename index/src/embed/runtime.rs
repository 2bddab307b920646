//! Loading ONNX Runtime once per process from the shared library ops/setup installs
//! (`load-dynamic`: the path comes from configuration, not from an environment variable).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::EmbedError;

/// The library's path and the process's one ONNX Runtime environment (kept alive here).
static LOADED: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> = OnceLock::new();

/// Loads the library at `path` the first time; later calls check they name the same
/// one. Returns the process's environment, which every session is built in.
pub fn init(path: &Path) -> Result<&'static ort::environment::Environment, EmbedError> {
    let result = LOADED.get_or_init(|| load(path));
    match result {
        Ok((loaded, env)) if loaded == path => Ok(env),
        Ok((loaded, _)) => {
            Err(EmbedError::Runtime { path: path.to_owned(), reason: format!("ONNX Runtime is already loaded from {}", loaded.display()) })
        }
        Err(reason) => Err(EmbedError::Runtime { path: path.to_owned(), reason: reason.clone() }),
    }
}

fn load(path: &Path) -> Result<(PathBuf, ort::environment::Environment), String> {
    if !path.is_file() {
        return Err("no such file; run ops/setup to install ONNX Runtime".into());
    }
    let env = ort::init_from(path).map_err(|e| e.to_string())?.with_name("quarry").build().map_err(|e| e.to_string())?;
    Ok((path.to_owned(), env))
}
