//! `bedrock` and `vertex` providers: where their calls go and how they are
//! authorised, read from the record's `config` and its secret as SOAT reads them.
//!
//! - `bedrock`: Bedrock Runtime's Converse API in `config.region` (default
//!   `us-east-1`), at `https://bedrock-runtime.{region}.amazonaws.com` unless the
//!   record names a `base_url`. The secret is an IAM credential as JSON
//!   (`{"accessKeyId", "secretAccessKey", "sessionToken"?}`), every call signed with
//!   SigV4, or a Bedrock API key (`{"apiKey"}` or the bare key), sent as a bearer token.
//! - `vertex`: Gemini on Vertex AI. The secret is a service-account key file (its
//!   JSON as Google writes it), exchanged at its `token_uri` for an access token; the
//!   project is `config.project`, else the key's `project_id`; the location
//!   `config.location` (default `us-central1`), at
//!   `https://{location}-aiplatform.googleapis.com` (`global`: no prefix) unless the
//!   record names a `base_url`. An API key (`{"apiKey"}` or the bare key) is Vertex's
//!   express mode, project-less, at `https://aiplatform.googleapis.com`.
//!
//! Unlike SOAT, a record without a secret does not fall back to the server's own
//! cloud credentials (its environment, an instance role): a tenant's call uses the
//! tenant's credential or none.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Kind, Target};
use crate::agents::SoatError;
use crate::llm::cloud::google::ServiceAccount;
use crate::llm::cloud::sigv4::{AwsKey, AwsScope};
use crate::llm::manifest::{Auth, Manifest};
use crate::llm::secret::Secret;
use crate::llm::AdHoc;
use crate::store::AiProviderRecord;

const DEFAULT_REGION: &str = "us-east-1";
const DEFAULT_LOCATION: &str = "us-central1";

/// The `config` keys a kind reads, checked on write: each a string of the shape the
/// cloud gives it (they become part of a URL).
pub(super) fn check_config(kind: Kind, config: &Map<String, Value>) -> Result<(), SoatError> {
    let keys: &[&str] = match kind {
        Kind::Bedrock => &["region"],
        Kind::Vertex => &["project", "location"],
        _ => return Ok(()),
    };
    for key in keys {
        let Some(v) = config.get(*key) else { continue };
        let ok = v
            .as_str()
            .is_some_and(|s| (1..=100).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':')));
        if !ok {
            return Err(SoatError::invalid(format!("config.{key}"), "must be a name of letters, digits, '-', '_', '.' or ':' (1 to 100)."));
        }
    }
    Ok(())
}

fn config<'a>(r: &'a AiProviderRecord, key: &str) -> Option<&'a str> {
    r.config.get(key).and_then(Value::as_str)
}

fn missing_secret(r: &AiProviderRecord, what: &str) -> SoatError {
    SoatError::Misconfigured(format!(
        "The {} provider {} has no secret_id; link the secret that holds its {what} (this server does not lend tenants its own cloud credentials).",
        r.provider, r.id
    ))
}

/// A secret's JSON object, when it is one.
fn object(secret: &Secret) -> Option<Map<String, Value>> {
    match serde_json::from_str(secret.expose()) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// The API key a secret holds: `{"apiKey"}` or the bare value.
fn api_key(secret: &Secret) -> Option<Secret> {
    match object(secret) {
        Some(o) => o.get("apiKey").and_then(Value::as_str).filter(|k| !k.is_empty()).map(Secret::new),
        None => Some(secret.clone()).filter(|s| !s.expose().trim().is_empty()),
    }
}

/// What a call through a record is for: a generation, or its model listing (another
/// endpoint: Bedrock's control plane, Vertex's publisher catalogue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    Generate,
    List,
}

/// A `bedrock` record's calls (`ListFoundationModels` at `bedrock.{region}` to list).
pub(super) fn bedrock(
    c: &crate::llm::LlmConfig,
    manifest: Arc<Manifest>,
    r: &AiProviderRecord,
    secret: Option<Secret>,
    purpose: Purpose,
) -> Result<Target, SoatError> {
    let secret = secret.ok_or_else(|| missing_secret(r, "IAM credential or Bedrock API key"))?;
    let region = config(r, "region").unwrap_or(DEFAULT_REGION);
    let (host, manifest) = match purpose {
        Purpose::Generate => ("bedrock-runtime", manifest),
        Purpose::List => ("bedrock", Arc::new(Manifest { models_path: Some("/foundation-models".into()), ..(*manifest).clone() })),
    };
    let base_url = r.base_url.clone().unwrap_or_else(|| format!("https://{host}.{region}.amazonaws.com"));
    let iam = object(&secret).and_then(|o| {
        let text = |k: &str| o.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
        Some(AwsKey {
            access_key_id: text("accessKeyId")?,
            secret_access_key: Secret::new(text("secretAccessKey")?),
            session_token: text("sessionToken").map(Secret::new),
        })
    });
    let p = match iam {
        Some(key) => {
            AdHoc::new(c, &r.id, manifest, Some(base_url), None, None).signed(key, AwsScope { region: region.to_owned(), service: "bedrock".into() })
        }
        None => {
            let key = api_key(&secret).ok_or_else(|| {
                SoatError::Misconfigured(format!(
                    "The secret of bedrock provider {} holds neither accessKeyId and secretAccessKey nor an apiKey.",
                    r.id
                ))
            })?;
            AdHoc::new(c, &r.id, manifest, Some(base_url), Some(key), None)
        }
    };
    Ok(Target::AdHoc(Box::new(p)))
}

/// A `vertex` record's calls; `gemini` is the Gemini manifest their bodies are mapped
/// by. Its listing is the location's publisher catalogue (`/v1beta1/publishers/google/models`).
pub(super) fn vertex(
    c: &crate::llm::LlmConfig,
    gemini: &Arc<Manifest>,
    r: &AiProviderRecord,
    secret: Option<Secret>,
    purpose: Purpose,
) -> Result<Target, SoatError> {
    let secret = secret.ok_or_else(|| missing_secret(r, "service-account key file"))?;
    let Some(key) = ServiceAccount::parse(secret.expose()) else {
        if purpose == Purpose::List {
            return Err(SoatError::ListingUnsupported(
                "A vertex provider in express mode (an API key) cannot list models: the publisher-model listing needs a service-account key.".into(),
            ));
        }
        // Express mode: an API key, no project, the global endpoint.
        let api_key = api_key(&secret).ok_or_else(|| {
            SoatError::Misconfigured(format!("The secret of vertex provider {} holds neither a service-account key file nor an apiKey.", r.id))
        })?;
        let host = r.base_url.as_deref().unwrap_or("https://aiplatform.googleapis.com").trim_end_matches('/');
        let base_url = format!("{host}/v1/publishers/google");
        return Ok(Target::AdHoc(Box::new(AdHoc::new(c, &r.id, gemini.clone(), Some(base_url), Some(api_key), None))));
    };
    key.check().map_err(|e| SoatError::Misconfigured(format!("secret_id: {e}.")))?;
    let project = config(r, "project").or(key.project_id.as_deref()).ok_or_else(|| {
        SoatError::Misconfigured(
            "A 'vertex' AI provider needs a Google Cloud project: set config.project, or link a secret holding the service-account key file.".into(),
        )
    })?;
    let location = config(r, "location").unwrap_or(DEFAULT_LOCATION);
    let host = match (&r.base_url, location) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, "global") => "https://aiplatform.googleapis.com".to_owned(),
        (None, l) => format!("https://{l}-aiplatform.googleapis.com"),
    };
    let (base_url, models_path) = match purpose {
        Purpose::Generate => (format!("{host}/v1/projects/{project}/locations/{location}/publishers/google"), None),
        Purpose::List => (host, Some("/v1beta1/publishers/google/models".to_owned())),
    };
    let manifest = Arc::new(Manifest { id: "vertex".into(), name: "Google Vertex AI".into(), auth: Auth::Bearer, models_path, ..(**gemini).clone() });
    let p = AdHoc::new(c, &r.id, manifest, Some(base_url), None, None);
    Ok(Target::Google { provider: Box::new(p), key: Box::new(key) })
}
