//! `[llm]` → [`crate::llm::LlmConfig`]: the manifests (shipped + `manifests_dir`,
//! checked here so a bad one stops start-up), each provider instance with its
//! credential resolved once from `token` or the environment variable its manifest
//! (or `token_env`) names, the aliases, timeouts and TLS roots.

use std::collections::HashMap;
use std::path::Path;

use super::raw::{RawLlm, RawLocal, RawProvider};
use super::{duration, invalid, ConfigError};
use crate::llm::manifest::Catalog;
use crate::llm::secret::Secret;
use crate::llm::{LlmConfig, LocalConfig, ProviderConfig, TlsRoots};

pub fn resolve(raw: RawLlm, env: &HashMap<String, String>, models_dir: &Path) -> Result<LlmConfig, ConfigError> {
    let dir = (!raw.manifests_dir.is_empty()).then(|| Path::new(&raw.manifests_dir));
    let catalog = Catalog::load(dir).map_err(|e| invalid("llm.manifests_dir", &e.to_string()))?;
    let providers = raw.providers.into_iter().map(|(id, p)| provider(&catalog, id, p, env)).collect::<Result<Vec<_>, _>>()?;
    let local = local(raw.local, models_dir)?;
    if local.is_some() && providers.iter().any(|p| p.id == crate::llm::local::PROVIDER) {
        return Err(invalid(
            "llm.providers.local",
            "the id `local` is the supervised local model's; name this provider otherwise or set [llm.local] enabled = false",
        ));
    }
    for (alias, target) in &raw.aliases {
        let known = target
            .split_once('/')
            .is_some_and(|(p, m)| !m.is_empty() && (providers.iter().any(|x| x.id == p) || (local.is_some() && p == crate::llm::local::PROVIDER)));
        if !known {
            return Err(invalid(&format!("llm.aliases.{alias}"), &format!("`{target}` is not provider/model with a configured provider")));
        }
    }
    Ok(LlmConfig {
        catalog,
        providers,
        local,
        aliases: raw.aliases,
        connect_timeout: duration("llm.connect_timeout", &raw.connect_timeout)?,
        read_timeout: duration("llm.read_timeout", &raw.read_timeout)?,
        tls_roots: roots(&raw.tls_roots)?,
        max_retries: u32::try_from(raw.max_retries).ok(),
        max_retry_delay: match raw.max_retry_delay.as_str() {
            "" => None,
            d => Some(duration("llm.max_retry_delay", d)?),
        },
    })
}

fn provider(catalog: &Catalog, id: String, p: RawProvider, env: &HashMap<String, String>) -> Result<ProviderConfig, ConfigError> {
    let key = |f: &str| format!("llm.providers.{id}.{f}");
    let manifest_id = if p.manifest.is_empty() { id.as_str() } else { p.manifest.as_str() };
    let manifest = catalog.get(manifest_id).ok_or_else(|| invalid(&key("manifest"), &format!("no provider manifest `{manifest_id}`")))?.clone();
    if id.contains('/') || id.is_empty() {
        return Err(invalid(&key("manifest"), "a provider id may not contain /"));
    }
    if !p.base_url.is_empty() && !p.base_url.starts_with("http://") && !p.base_url.starts_with("https://") {
        return Err(invalid(&key("base_url"), "must be an http:// or https:// URL"));
    }
    let var = if p.token_env.is_empty() { manifest.token_env.clone() } else { Some(p.token_env.clone()) };
    let token = match p.token.as_str() {
        "" => var.and_then(|v| env.get(&v).filter(|t| !t.is_empty()).cloned()),
        t => Some(t.to_owned()),
    };
    Ok(ProviderConfig {
        manifest,
        base_url: (!p.base_url.is_empty()).then_some(p.base_url),
        token: token.map(Secret::new),
        models: p.models,
        timeout: match p.timeout.as_str() {
            "" => None,
            t => Some(duration(&key("timeout"), t)?),
        },
        id,
    })
}

/// `[llm.local]`, its paths taken from `models.dir`; `None` when disabled.
fn local(raw: RawLocal, models_dir: &Path) -> Result<Option<LocalConfig>, ConfigError> {
    if !raw.enabled {
        return Ok(None);
    }
    let path = |key: &str, v: &str| {
        if v.is_empty() {
            return Err(invalid(&format!("llm.local.{key}"), "must name a file"));
        }
        Ok(models_dir.join(v))
    };
    if raw.name.is_empty() || raw.name.contains(char::is_whitespace) {
        return Err(invalid("llm.local.name", "must be a name without spaces"));
    }
    if !(0..=19).contains(&raw.nice) {
        return Err(invalid("llm.local.nice", "must be 0 to 19"));
    }
    if raw.ctx_size < 256 {
        return Err(invalid("llm.local.ctx_size", "must be at least 256"));
    }
    let threads = match raw.threads {
        0 => crate::sys::allowed_cpus().len().max(1),
        n => n,
    };
    Ok(Some(LocalConfig {
        model: path("model", &raw.model)?,
        runtime: path("runtime", &raw.runtime)?,
        launcher: path("launcher", &raw.launcher)?,
        name: raw.name,
        threads,
        ctx_size: raw.ctx_size,
        port: raw.port,
        nice: raw.nice,
        ready_timeout: duration("llm.local.ready_timeout", &raw.ready_timeout)?,
    }))
}

fn roots(setting: &str) -> Result<TlsRoots, ConfigError> {
    if setting == "bundled" {
        return Ok(TlsRoots::Bundled);
    }
    let bytes = std::fs::read(setting).map_err(|e| invalid("llm.tls_roots", &format!("cannot read {setting}: {e}")))?;
    crate::llm::transport::check_roots(&bytes).map_err(|e| invalid("llm.tls_roots", &e))?;
    Ok(TlsRoots::Pem(bytes))
}
