//! AI providers (`aip_…`, ai-providers.yaml): a kind of upstream, where it is, the
//! model it serves by default, and the secret (`sec_…`) that holds its credential.
//!
//! Each kind is an instance of one AI-Protocol manifest (`providers/*.yaml`):
//! `openai`, `anthropic`, `google` (gemini) their own; `xai`, `groq`, `ollama`,
//! `azure`, `gateway` and `custom` the generic OpenAI-compatible one at the kind's
//! address (azure and custom: `base_url` required); `local` is the model this server
//! supervises (`[llm.local]`); `bedrock` (Bedrock Runtime's Converse, SigV4-signed)
//! and `vertex` (Gemini on Vertex AI, a service-account key's access token) are read
//! in [`clouds`]. A call builds its provider from the record as it stands
//! ([`target`] → `llm::AdHoc`), so a record made or changed at run time is used at
//! once, without a restart.
//!
//! Where a provider is (its `base_url`, else its kind's default, `ollama`'s being
//! the server's `[agents] ollama_base_url`, `http://localhost:11434/v1` unless
//! configured, as SOAT's `OLLAMA_BASE_URL`) is a tenant's choice, judged by the
//! egress policy: on
//! write when the URL says so as written (an address in any spelling, `localhost`),
//! and at every connect, after resolution, by `llm::Direct`'s transports. `local` is
//! the one way to the local model: its address is the server's own configuration.

use serde_json::{Map, Value};

mod clouds;

use super::patch::Patch;
use super::refs;
use super::scope::Scope;
use super::SoatError;
use crate::clock::now_rfc3339;
use crate::ids::random_base62;
use crate::llm::secret::Secret;
use crate::llm::{AdHoc, ChatRequest, Completion, ListedModel, LlmError};
use crate::net::egress::Policy;
use crate::store::owned::Change;
use crate::store::{AiProviderRecord, Records};

/// The kinds SOAT names, and `local`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    OpenAi,
    Anthropic,
    Google,
    Xai,
    Groq,
    Ollama,
    Azure,
    Gateway,
    Custom,
    Local,
    // clouds: the two kinds whose calls are signed ([`clouds`]).
    Bedrock,
    Vertex,
}

impl Kind {
    pub const ALL: [Kind; 12] = [
        Kind::OpenAi,
        Kind::Anthropic,
        Kind::Google,
        Kind::Xai,
        Kind::Groq,
        Kind::Ollama,
        Kind::Azure,
        Kind::Gateway,
        Kind::Custom,
        Kind::Local,
        Kind::Bedrock,
        Kind::Vertex,
    ];

    pub fn parse(s: &str) -> Result<Kind, SoatError> {
        if let Some(k) = Kind::ALL.into_iter().find(|k| k.as_str() == s) {
            return Ok(k);
        }
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        Err(SoatError::invalid("provider", format!("\"{s}\" is no provider kind; one of {}.", names.join(", "))))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OpenAi => "openai",
            Kind::Anthropic => "anthropic",
            Kind::Google => "google",
            Kind::Xai => "xai",
            Kind::Groq => "groq",
            Kind::Ollama => "ollama",
            Kind::Azure => "azure",
            Kind::Gateway => "gateway",
            Kind::Custom => "custom",
            Kind::Local => "local",
            Kind::Bedrock => "bedrock",
            Kind::Vertex => "vertex",
        }
    }

    /// The manifest its calls are mapped by.
    pub fn manifest(self) -> &'static str {
        match self {
            Kind::OpenAi => "openai",
            Kind::Anthropic => "anthropic",
            Kind::Google | Kind::Vertex => "gemini",
            Kind::Bedrock => "bedrock",
            _ => "openai-compatible",
        }
    }

    /// Where it is when the record names no `base_url` (`None`: the manifest's own,
    /// or, for azure and custom, nowhere: the record must name one); `ollama` is the
    /// server's configured Ollama (`[agents] ollama_base_url`).
    fn default_base_url(self, ollama: &str) -> Option<&str> {
        match self {
            Kind::Xai => Some("https://api.x.ai/v1"),
            Kind::Groq => Some("https://api.groq.com/openai/v1"),
            Kind::Ollama => Some(ollama),
            Kind::Gateway => Some("https://ai-gateway.vercel.sh/v1"),
            _ => None,
        }
    }

    fn needs_base_url(self) -> bool {
        matches!(self, Kind::Azure | Kind::Custom)
    }

    /// The hosted API-key kinds cannot answer without a credential; an ollama, a
    /// custom server or the local model may need none.
    fn needs_secret(self) -> bool {
        matches!(self, Kind::OpenAi | Kind::Anthropic | Kind::Google | Kind::Xai | Kind::Groq | Kind::Azure | Kind::Gateway)
    }

    /// Whether it can say which models it serves (azure names deployments, ollama
    /// whatever was pulled: SOAT lists neither).
    fn lists_models(self) -> bool {
        !matches!(self, Kind::Azure | Kind::Ollama)
    }
}

/// `POST /api/v1/ai-providers`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewProvider {
    #[serde(default)]
    pub project_id: Option<String>,
    pub name: String,
    pub provider: String,
    pub default_model: String,
    #[serde(default)]
    pub secret_id: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub config: Option<Map<String, Value>>,
}

/// `PATCH /api/v1/ai-providers/{id}`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderPatch {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub default_model: Option<String>,
    #[serde(default)]
    pub secret_id: Patch<String>,
    #[serde(default)]
    pub base_url: Patch<String>,
    #[serde(default)]
    pub config: Option<Map<String, Value>>,
}

/// What a call through a provider goes to.
pub enum Target {
    /// An upstream built from the record: `up.direct` calls it.
    AdHoc(Box<AdHoc>),
    /// The supervised local model, `local/<name>` on `up.llm`.
    Local { model: String },
    /// A `vertex` provider with a service-account key: `provider` once its access
    /// token is had ([`ready`]).
    Google { provider: Box<AdHoc>, key: Box<crate::llm::cloud::google::ServiceAccount> },
}

fn check(r: &AiProviderRecord, egress: &Policy, ollama: &str) -> Result<Kind, SoatError> {
    let kind = Kind::parse(&r.provider)?;
    let text = |field: &str, v: &str, max: usize| {
        let n = v.trim().chars().count();
        if n == 0 || n > max {
            return Err(SoatError::invalid(field, format!("must be 1 to {max} characters, not blank.")));
        }
        Ok(())
    };
    crate::names::check(&r.name, 200).map_err(|problem| SoatError::invalid("name", problem.to_string()))?;
    text("default_model", &r.default_model, 200)?;
    if let Some(id) = &r.secret_id {
        check_secret_id(id)?;
    }
    clouds::check_config(kind, &r.config)?;
    match (&r.base_url, kind) {
        (Some(_), Kind::Local) => return Err(SoatError::invalid("base_url", "local is the model this server runs; it has no base_url.")),
        (Some(url), _) => check_url(url)?,
        (None, k) if k.needs_base_url() => return Err(SoatError::invalid("base_url", format!("is required for {} providers.", k.as_str()))),
        (None, _) => {}
    }
    let url = r.base_url.as_deref().or(kind.default_base_url(ollama));
    if let Some((url, uri)) = url.and_then(|u| Some((u, u.parse::<hyper::Uri>().ok()?))) {
        egress.check_url(&uri).map_err(|_| SoatError::EgressRefused { base_url: url.to_owned() })?;
    }
    Ok(kind)
}

/// A secret's id has the secrets module's shape, `sec_` and base62; whether it
/// exists is asked only when a call needs it ([`resolve_secret`]).
pub fn check_secret_id(id: &str) -> Result<(), SoatError> {
    let ok = id.strip_prefix("sec_").is_some_and(|rest| !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
    if !ok {
        return Err(SoatError::invalid("secret_id", format!("\"{id}\" is no secret id (sec_...).")));
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), SoatError> {
    let uri: Option<hyper::Uri> = url.parse().ok();
    let ok = uri.is_some_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some());
    if !ok || url.len() > 2048 {
        return Err(SoatError::invalid("base_url", format!("\"{url}\" is no http:// or https:// URL.")));
    }
    Ok(())
}

/// Stores a new provider; `egress` refuses a `base_url` no tenant may reach (an
/// `ollama` without one is at `ollama`, the server's `[agents] ollama_base_url`).
pub fn create(records: &Records, egress: &Policy, ollama: &str, scope: &Scope, new: NewProvider) -> Result<AiProviderRecord, SoatError> {
    let now = now_rfc3339();
    let record = AiProviderRecord {
        id: format!("aip_{}", random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: scope.project_id.clone(),
        name: new.name.trim().to_owned(),
        provider: new.provider,
        default_model: new.default_model.trim().to_owned(),
        secret_id: new.secret_id,
        base_url: new.base_url,
        config: new.config.unwrap_or_default(),
        created_at: now.clone(),
        updated_at: now,
    };
    check(&record, egress, ollama)?;
    records.insert(&record)?;
    Ok(record)
}

/// The scope's project's providers, oldest first.
pub fn list(records: &Records, scope: &Scope) -> Result<Vec<AiProviderRecord>, SoatError> {
    let mut all: Vec<AiProviderRecord> = scope.list(records)?;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

/// The provider when the scope sees it; 404 otherwise (the agents module's check for
/// an agent's `ai_provider_id` as well: map it to its own 404 or 400).
pub fn get(records: &Records, scope: &Scope, id: &str) -> Result<AiProviderRecord, SoatError> {
    scope.get(records, id)?.ok_or_else(|| SoatError::not_found("AI provider", id))
}

/// The provider when it is in the scope's own project: what an agent of that project
/// may name as its `ai_provider_id` (another project's, or another account's, is
/// `NotFound`).
pub fn in_project(records: &Records, scope: &Scope, id: &str) -> Result<AiProviderRecord, SoatError> {
    scope.get::<AiProviderRecord>(records, id)?.filter(|p| p.project_id == scope.project_id).ok_or_else(|| SoatError::not_found("AI provider", id))
}

pub fn update(
    records: &Records,
    egress: &Policy,
    ollama: &str,
    scope: &Scope,
    id: &str,
    patch: ProviderPatch,
) -> Result<AiProviderRecord, SoatError> {
    get(records, scope, id)?;
    let now = now_rfc3339();
    let updated = records.update::<AiProviderRecord, Result<AiProviderRecord, SoatError>>(&scope.account_id, id, |r| {
        let mut next = r.clone();
        if let Some(n) = patch.name {
            next.name = n.trim().to_owned();
        }
        if let Some(k) = patch.provider {
            next.provider = k;
        }
        if let Some(m) = patch.default_model {
            next.default_model = m.trim().to_owned();
        }
        next.secret_id = patch.secret_id.apply(next.secret_id.take());
        next.base_url = patch.base_url.apply(next.base_url.take());
        if let Some(c) = patch.config {
            next.config = c;
        }
        if let Err(e) = check(&next, egress, ollama) {
            return Change::Keep(Err(e));
        }
        next.updated_at = now;
        *r = next;
        Change::Write(Ok(r.clone()))
    })?;
    updated.ok_or_else(|| SoatError::not_found("AI provider", id))?
}

/// Refused with 409 `AI_PROVIDER_HAS_DEPENDENTS` while an agent or a chat uses it, `force`
/// or not (SOAT: live references always block).
pub fn delete(records: &Records, scope: &Scope, id: &str) -> Result<(), SoatError> {
    get(records, scope, id)?;
    let agent_ids = refs::agents_using_provider(records, &scope.account_id, id)?;
    // chats (issue 36): a chat bound to the provider blocks it as an agent does.
    let chat_ids = refs::chats_using_provider(records, &scope.account_id, id)?;
    if !agent_ids.is_empty() || !chat_ids.is_empty() {
        return Err(SoatError::ProviderHasDependents { id: id.to_owned(), agent_ids, chat_ids });
    }
    records.remove::<AiProviderRecord>(&scope.account_id, id)?;
    Ok(())
}

/// What calls through an AI provider need of the server, lent by the caller (the
/// app builds one: `App::upstreams`), so this module depends on the pieces, not on
/// the app that holds them.
pub struct Upstreams<'a> {
    pub secrets: &'a crate::agents::secrets::Secrets,
    pub direct: &'a crate::llm::Direct,
    pub llm: Option<&'a crate::llm::Llm>,
    /// The local model's config while it answers (configured, installed, started).
    pub local: Option<&'a crate::llm::LocalConfig>,
    pub catalog: &'a crate::llm::manifest::Catalog,
    /// Where an `ollama` provider without a `base_url` is (`[agents] ollama_base_url`).
    pub ollama_base_url: &'a str,
}

/// The credential secret `secret_id` of the scope's project holds, decrypted, for
/// the one call that needs it (`agents::secrets::Secrets::reveal`).
pub fn resolve_secret(up: &Upstreams<'_>, scope: &Scope, secret_id: &str) -> Result<Secret, SoatError> {
    use crate::agents::secrets::SecretError;
    up.secrets.reveal(scope.project(), secret_id).map_err(|e| match e {
        SecretError::Unknown(id) | SecretError::NotFound(id) => {
            SoatError::Reference { code: crate::error::Code::SecretNotFound, kind: "secret", field: "secret_id", id }
        }
        SecretError::Store(e) => SoatError::Store(e),
        e => SoatError::Misconfigured(format!("secret_id: {e}")),
    })
}

/// What calls through `r` go to, its credential resolved now (blocking: a store read).
pub fn target(up: &Upstreams<'_>, scope: &Scope, r: &AiProviderRecord) -> Result<Target, SoatError> {
    target_for(up, scope, r, clouds::Purpose::Generate)
}

fn target_for(up: &Upstreams<'_>, scope: &Scope, r: &AiProviderRecord, purpose: clouds::Purpose) -> Result<Target, SoatError> {
    let kind = Kind::parse(&r.provider)?;
    if kind == Kind::Local {
        let local =
            up.local.ok_or_else(|| SoatError::Misconfigured("This server runs no local model ([llm.local], installed by ops/setup).".into()))?;
        return Ok(Target::Local { model: format!("{}/{}", crate::llm::local::PROVIDER, local.name) });
    }
    let token = match &r.secret_id {
        Some(id) => Some(resolve_secret(up, scope, id)?),
        None if kind.needs_secret() => {
            return Err(SoatError::Misconfigured(format!(
                "The {} provider {} has no secret_id; link the secret that holds its API key.",
                kind.as_str(),
                r.id
            )));
        }
        None => None,
    };
    let manifest = up
        .catalog
        .get(kind.manifest())
        .ok_or_else(|| SoatError::Misconfigured(format!("This server has no `{}` manifest.", kind.manifest())))?
        .clone();
    match kind {
        Kind::Bedrock => return clouds::bedrock(up.direct.config(), manifest, r, token, purpose),
        Kind::Vertex => return clouds::vertex(up.direct.config(), &manifest, r, token, purpose),
        _ => {}
    }
    let base_url = r.base_url.clone().or_else(|| kind.default_base_url(up.ollama_base_url).map(str::to_owned));
    Ok(Target::AdHoc(Box::new(AdHoc::new(up.direct.config(), &r.id, manifest, base_url, token, None))))
}

/// A `Target::Google` provider with its access token (cached, else exchanged at the
/// key's token URI).
async fn authorised(up: &Upstreams<'_>, provider: Box<AdHoc>, key: &crate::llm::cloud::google::ServiceAccount) -> Result<AdHoc, LlmError> {
    let token = up.direct.google_token(&provider, key).await?;
    Ok(provider.with_token(token))
}

/// When Vertex refused the access token a call carried (revoked, or the key
/// disabled before it expired), forgets it, so the next call exchanges the key again
/// instead of failing until the token's hour is up.
fn forget_if_refused<T>(up: &Upstreams<'_>, key: &crate::llm::cloud::google::ServiceAccount, r: &Result<T, LlmError>) {
    if let Err(LlmError::Provider { error, .. }) = r {
        if error.class == crate::llm::ErrorClass::Authentication {
            up.direct.forget_google_token(key);
        }
    }
}

/// One generation through provider `r` (its `default_model` when `req.model` is
/// empty); `scope.account_id` is charged the tokens. Must run on a shard.
pub async fn complete(up: &Upstreams<'_>, scope: &Scope, r: &AiProviderRecord, mut req: ChatRequest) -> Result<Completion, CallError> {
    if req.model.is_empty() {
        req.model = r.default_model.clone();
    }
    match target(up, scope, r)? {
        Target::AdHoc(p) => Ok(up.direct.complete(&p, &scope.account_id, req).await?),
        Target::Google { provider, key } => {
            let answer = up.direct.complete(&authorised(up, provider, &key).await?, &scope.account_id, req).await;
            forget_if_refused(up, &key, &answer);
            Ok(answer?)
        }
        Target::Local { model } => {
            let llm = up.llm.ok_or(LlmError::NotConfigured)?;
            req.model = model;
            Ok(llm.complete(&scope.account_id, req).await?)
        }
    }
}

/// One generation through provider `r`, as it streams (see [`complete`]).
pub async fn stream(up: &Upstreams<'_>, scope: &Scope, r: &AiProviderRecord, mut req: ChatRequest) -> Result<crate::llm::ChatStream, CallError> {
    if req.model.is_empty() {
        req.model = r.default_model.clone();
    }
    match target(up, scope, r)? {
        Target::AdHoc(p) => Ok(up.direct.stream(&p, &scope.account_id, req).await?),
        Target::Google { provider, key } => {
            let answer = up.direct.stream(&authorised(up, provider, &key).await?, &scope.account_id, req).await;
            forget_if_refused(up, &key, &answer);
            Ok(answer?)
        }
        Target::Local { model } => {
            let llm = up.llm.ok_or(LlmError::NotConfigured)?;
            req.model = model;
            Ok(llm.stream(&scope.account_id, req).await?)
        }
    }
}

/// Why a call through a provider failed: the record, or the upstream.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Provider(#[from] SoatError),
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// A provider's failure on `/api/v1` is 502 `AI_PROVIDER_ERROR`, its message SOAT's
/// `Provider returned <status>: <message>` when the upstream answered.
impl crate::error::ErrorCode for CallError {
    fn code(&self) -> crate::error::Code {
        match self {
            CallError::Provider(e) => e.code(),
            CallError::Llm(LlmError::NotConfigured) => crate::error::Code::LlmNotConfigured,
            CallError::Llm(LlmError::Refused { .. }) => crate::error::Code::EgressRefused,
            CallError::Llm(_) => crate::error::Code::AiProviderError,
        }
    }

    fn message(&self) -> String {
        match self {
            CallError::Provider(e) => e.message(),
            CallError::Llm(LlmError::Provider { error, .. }) => match error.status {
                Some(status) => format!("Provider returned {status}: {}", error.message),
                None => format!("Provider failed: {}", error.message),
            },
            CallError::Llm(e) => e.to_string(),
        }
    }

    fn meta(&self) -> Option<Map<String, Value>> {
        match self {
            CallError::Provider(e) => e.meta(),
            CallError::Llm(_) => None,
        }
    }
}

/// `GET /api/v1/ai-providers/{id}/models`: what the provider says it serves.
pub async fn models(up: &Upstreams<'_>, scope: &Scope, r: &AiProviderRecord) -> Result<Vec<ListedModel>, SoatError> {
    let kind = Kind::parse(&r.provider)?;
    if !kind.lists_models() {
        return Err(SoatError::ListingUnsupported(format!("{} providers cannot list their models; name the model yourself.", kind.as_str())));
    }
    let p = match target_for(up, scope, r, clouds::Purpose::List)? {
        Target::Local { model } => {
            let name = model.split_once('/').map_or(model.as_str(), |(_, m)| m).to_owned();
            return Ok(vec![ListedModel { id: name, display_name: None }]);
        }
        Target::AdHoc(p) => *p,
        Target::Google { provider, key } => {
            let base_url = provider.base_url().to_owned();
            authorised(up, provider, &key).await.map_err(|e| listing_failed(e, &base_url))?
        }
    };
    up.direct.models(&p).await.map_err(|e| listing_failed(e, p.base_url()))
}

fn listing_failed(e: LlmError, base_url: &str) -> SoatError {
    match e {
        LlmError::InvalidRequest { message, .. } => SoatError::Misconfigured(message),
        LlmError::Refused { .. } => SoatError::EgressRefused { base_url: base_url.to_owned() },
        e => SoatError::ListingFailed(format!("The provider refused the listing: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: &str, base_url: Option<&str>) -> AiProviderRecord {
        AiProviderRecord {
            id: "aip_1".into(),
            account_id: "acct_a".into(),
            project_id: "proj_a".into(),
            name: "p".into(),
            provider: kind.into(),
            default_model: "m".into(),
            secret_id: None,
            base_url: base_url.map(str::to_owned),
            config: Map::new(),
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    #[test]
    fn kinds_map_onto_manifests() {
        assert_eq!(Kind::parse("google").unwrap().manifest(), "gemini");
        assert_eq!(Kind::parse("groq").unwrap().manifest(), "openai-compatible");
        assert_eq!(Kind::parse("custom").unwrap().manifest(), "openai-compatible");
        assert_eq!(Kind::parse("bedrock").unwrap().manifest(), "bedrock");
        assert_eq!(Kind::parse("vertex").unwrap().manifest(), "gemini");
        assert!(Kind::parse("nope").is_err());
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()).unwrap(), k);
        }
    }

    /// `[agents] ollama_base_url`'s default.
    const OLLAMA: &str = "http://localhost:11434/v1";

    fn open() -> Policy {
        Policy::new(vec![crate::net::egress::Rule::parse("127.0.0.0/8").unwrap()])
    }

    #[test]
    fn records_are_checked_for_their_kind() {
        let check = |r: &AiProviderRecord| check(r, &open(), OLLAMA);
        assert!(check(&record("openai", None)).is_ok());
        assert!(check(&record("custom", None)).is_err(), "custom needs a base_url");
        assert!(check(&record("custom", Some("http://127.0.0.1:9/v1"))).is_ok());
        assert!(check(&record("custom", Some("ftp://x"))).is_err());
        assert!(check(&record("custom", Some("not a url"))).is_err());
        assert!(check(&record("local", Some("http://x"))).is_err(), "local has no base_url");
        let mut r = record("openai", None);
        r.secret_id = Some("sec_abc123".into());
        assert!(check(&r).is_ok());
        r.secret_id = Some("secret".into());
        assert!(check(&r).is_err());
        r.secret_id = None;
        r.default_model = " ".into();
        assert!(check(&r).is_err());
    }

    #[test]
    fn a_base_url_the_egress_policy_refuses_as_written_is_refused_on_write() {
        let closed = Policy::new(Vec::new()).with_local_model(Some(18080));
        for url in [
            "http://127.0.0.1:9/v1",
            "http://127.1:9/v1",
            "https://2130706433/v1",
            "http://[::ffff:127.0.0.1]/v1",
            "http://localhost:8000/v1",
            "http://10.0.0.5:8000/v1",
            "http://169.254.169.254/",
        ] {
            let e = check(&record("custom", Some(url)), &closed, OLLAMA).unwrap_err();
            assert!(matches!(&e, SoatError::EgressRefused { base_url } if base_url == url), "{url}: {e:?}");
            assert_eq!(crate::error::ErrorCode::code(&e), crate::error::Code::EgressRefused);
        }
        assert!(matches!(check(&record("ollama", None), &closed, OLLAMA), Err(SoatError::EgressRefused { .. })), "ollama's default is localhost");
        assert!(check(&record("custom", Some("https://vllm.example/v1")), &closed, OLLAMA).is_ok(), "a name is judged at connect time");
        assert!(check(&record("openai", None), &closed, OLLAMA).is_ok() && check(&record("local", None), &closed, OLLAMA).is_ok());
        // Loopback opened, the local model's port stays closed to a tenant's base_url.
        let open = open().with_local_model(Some(18080));
        assert!(check(&record("custom", Some("http://127.0.0.1:9/v1")), &open, OLLAMA).is_ok());
        assert!(matches!(check(&record("custom", Some("http://127.0.0.1:18080/v1")), &open, OLLAMA), Err(SoatError::EgressRefused { .. })));
        assert!(matches!(check(&record("ollama", Some("http://localhost:18080/v1")), &open, OLLAMA), Err(SoatError::EgressRefused { .. })));
    }
}
