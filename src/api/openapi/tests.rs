use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::DOCUMENTS;
use crate::api::routes::table;
use crate::config::Config;
use crate::error::Code;

use quarry_test_support::prerequisite;

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/// A path with its parameters by position only (`/v1/keys/{}`): a route's and its
/// document's names may differ.
fn shape(path: &str) -> String {
    path.split('/').map(|s| if s.starts_with('{') && s.ends_with('}') { "{}" } else { s }).collect::<Vec<_>>().join("/")
}

fn parsed() -> Vec<(&'static str, Value)> {
    DOCUMENTS.iter().map(|(at, doc)| (*at, serde_json::from_str(doc).unwrap_or_else(|e| panic!("{at}: {e}")))).collect()
}

/// Every operation of `doc`: (METHOD, path as written, the operation).
fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for (method, op) in item.as_object().expect("a path item is an object") {
            if METHODS.contains(&method.as_str()) {
                out.push((method.to_uppercase(), path.clone(), op));
            }
        }
    }
    out
}

/// (METHOD, shape) → whether the route needs a key, for every row of the default table.
fn routes() -> BTreeMap<(String, String), bool> {
    table(&Config::defaults()).iter().map(|r| ((r.method.as_str().to_owned(), shape(r.path)), r.auth)).collect()
}

#[test]
fn every_route_is_in_exactly_one_document() {
    let docs = parsed();
    let mut wrong = Vec::new();
    for (method, path) in routes().keys() {
        let homes: Vec<&str> =
            docs.iter().filter(|(_, d)| operations(d).iter().any(|(m, p, _)| m == method && shape(p) == *path)).map(|(at, _)| *at).collect();
        if homes.len() != 1 {
            wrong.push(format!("{method} {path}: in {homes:?}"));
        }
    }
    assert!(wrong.is_empty(), "routes not documented exactly once:\n{}", wrong.join("\n"));
}

#[test]
fn every_documented_operation_is_routed() {
    let routes = routes();
    let mut unrouted = Vec::new();
    for (at, doc) in parsed() {
        for (method, path, _) in operations(&doc) {
            if !routes.contains_key(&(method.clone(), shape(&path))) {
                unrouted.push(format!("{at}: {method} {path}"));
            }
        }
    }
    assert!(unrouted.is_empty(), "documented but not in the route table:\n{}", unrouted.join("\n"));
}

/// A public row is documented with no security requirement, a keyed one with one.
#[test]
fn every_operation_says_whether_it_needs_a_key_as_its_route_does() {
    let routes = routes();
    let mut wrong = Vec::new();
    for (at, doc) in parsed() {
        let default = doc.get("security").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
        for (method, path, op) in operations(&doc) {
            let keyed = op.get("security").map_or(default, |s| s.as_array().is_some_and(|s| !s.is_empty()));
            if let Some(&auth) = routes.get(&(method.clone(), shape(&path))) {
                if auth != keyed {
                    wrong.push(format!("{at}: {method} {path}: the route {} a key, the document says it {}", need(auth), need(keyed)));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn need(yes: bool) -> &'static str {
    if yes {
        "needs"
    } else {
        "needs no"
    }
}

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r);
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_document_is_openapi_3_with_its_references_inside_and_unique_operation_ids() {
    for (at, doc) in parsed() {
        let version = doc["openapi"].as_str().unwrap_or_default();
        assert!(version.starts_with("3.0.") || version.starts_with("3.1."), "{at}: openapi {version:?}");
        assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string(), "{at}: info");
        let mut found = Vec::new();
        refs(&doc, &mut found);
        for r in found {
            let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("{at}: {r} points outside the document"));
            assert!(doc.pointer(pointer).is_some(), "{at}: {r} resolves to nothing");
        }
        let mut ids = BTreeSet::new();
        for (method, path, op) in operations(&doc) {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{at}: {method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "{at}: operationId {id} twice");
        }
    }
}

/// Whether the AgentLex surface (`/v1/…` but the gateway, `/metrics`, the documents,
/// the console) can answer `code`. No wildcard: a new code does not compile until it
/// is placed here, and so in the document's enum or deliberately out of it.
fn on_agentlex(code: Code) -> bool {
    use Code::*;
    match code {
        InvalidJson | InvalidEmail | InvalidName | InvalidSettings | InvalidDocument | InvalidQuery | QueryTooLong | UnknownReranker
        | InvalidFilter | InvalidQuestion | InvalidQuestions | InvalidTier | InvalidDomain | InvalidText | InvalidPage | InvalidSeq | CannotRevokeCurrent
        | MissingKey | InvalidKey | SignupClosed | NotFound | CollectionNotFound | DocumentNotFound | PageNotFound | KeyNotFound | SampleNotFound
        | MethodNotAllowed | EmailTaken | KeyLimitReached | InvalidPaging | EmbedderMismatch | UnknownEmbedder | EmbedderLocked | BodyTooLarge
        | DocumentTooLarge | BodyTimeout | AllowanceExceeded | StorageExceeded | RateLimited | TooManyConcurrent | Internal | SampleUnreadable
        | LlmError | LlmUnreachable | LlmNotConfigured | LlmBusy | Overloaded | StoreUnavailable | BadRequest | HeadersTooLarge | UriTooLong => true,
        // An sk_ key presented off /api/v1.
        ApiKeyProjectScope => true,
        // The gateway's envelope (src/api/openai/envelope.rs) is the only source of these.
        ModelNotFound | InvalidLlmRequest | LlmRejected | LlmRateLimited | LlmTimeout => false,
        // /api/v1's own.
        SoatValidation
        | SoatForbidden
        | PolicyNotFound
        // policies (issue 37)
        | PolicyDenied
        | ExceptionAlreadyResolved
        | ActivityInvalidCursor
        | ModelRouteNotFound
        | GuardrailNotFound
        | SoatNotFound
        | AiProviderNotFound
        | AiProviderMisconfigured
        | AiProviderHasDependents
        | ModelListingUnsupported
        | ModelListingFailed
        | ProjectHasDependents
        | AiProviderError
        | ForcedToolChoiceCannotStop
        | InvalidToolContextKey
        | LiteralCredential
        | ReservedTagKey
        | AgentAiProviderNotFound
        | ToolNotFound
        | VersionConflict
        | AgentHasDependents
        | NoActiveRelease
        | PromotionGateUnmet
        | ModelRouteHasDependents
        | GuardrailHasReferences
        | SecretNotFound
        | SecretNotDecryptable
        | SecretHasDependents
        | InvalidTemplateToken
        | MissingToolContextKey
        | ToolCallNotSupported
        | ToolHttpError
        | PipelineInvalidStep
        | PipelineStepFailed
        | PipelineDepthExceeded
        | IdempotencyKeyReused
        | GenerationNotAwaitingToolOutputs
        | OutputSchemaValidationFailed
        | TextEncodedToolCall
        | SystemMessageNotAllowed
        | InvalidOutputSchema
        | OutputSchemaStreamingUnsupported
        | GenerationInterrupted
        | ApprovalExpired
        // guardrails and approvals (issue 37)
        | ApprovalAlreadyResolved
        | ApprovalReasonRequired
        | ApprovalInvalidEdit
        | GuardrailBlocked
        | GuardrailTripwire
        // sessions
        | GenerationAlreadyInProgress
        | SessionClosed
        | SessionExpired
        | BootstrapAlreadyCompleted
        | UsernameTaken
        | InvalidCredentials
        | FileCorrupt
        | UploadTokenUsed
        | UploadTokenExpired
        // actors
        | ActorNotFound
        | AgentNotFound
        | ChatNotFound
        | ActorHasMessages
        | ExternalIdTaken
        | SingleSessionConflict
        // chats and embeddings (issue 36)
        | EmbeddingNotConfigured
        // evaluations (issue 37)
        | NameConflict
        | GenerationNotCompleted
        | GenerationContentUnavailable
        // quotas (issue 37)
        | QuotaExceeded
        | QuotaConflict
        | QuotaUnpriced
        | EgressRefused => false,
    }
}

#[test]
fn the_agentlex_error_enum_is_every_code_that_surface_answers() {
    let doc: Value = serde_json::from_str(super::AGENTLEX).expect("JSON");
    let listed: BTreeSet<&str> = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
        .as_array()
        .expect("Error.code has an enum")
        .iter()
        .map(|c| c.as_str().expect("codes are strings"))
        .collect();
    let answered: BTreeSet<&str> = Code::ALL.iter().filter(|c| on_agentlex(**c)).map(|c| c.as_str()).collect();
    let missing: Vec<_> = answered.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&answered).collect();
    assert!(missing.is_empty() && extra.is_empty(), "not in the enum: {missing:?}; in it but not answered on AgentLex: {extra:?}");
}

/// Each document against the OpenAPI Initiative's JSON Schema of its version
/// (vendored in tests/data/specs; origin in NOTICE).
#[test]
fn every_document_validates_against_the_openapi_schema_of_its_version() {
    for (at, doc) in parsed() {
        let version = if doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1.")) { "3.1" } else { "3.0" };
        let path = format!("{}/tests/data/specs/oas-{version}.schema.json", env!("CARGO_MANIFEST_DIR"));
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("the vendored OpenAPI schema")).expect("JSON");
        let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{path}: {e}"));
        let errors: Vec<String> = validator.iter_errors(&doc).take(20).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{at} is not valid OpenAPI {version}:\n{}", errors.join("\n"));
    }
    // And the check can fail: an operation whose responses is a string is not OpenAPI.
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{}/tests/data/specs/oas-3.1.schema.json", env!("CARGO_MANIFEST_DIR"))).unwrap())
            .unwrap();
    let mut wrong = parsed().remove(0).1;
    wrong["paths"]["/v1/health"]["get"]["responses"] = Value::String("none".into());
    assert!(!jsonschema::validator_for(&schema).unwrap().is_valid(&wrong));
}

/// agents.json's error schemas list every code the SOAT surface renders: SOAT's
/// registry name of each of ours (`Code::soat`), whatever reaches /api/v1.
#[test]
fn the_soat_error_enum_is_every_code_that_surface_renders() {
    let doc: Value = serde_json::from_str(super::AGENTS).expect("JSON");
    let rendered: BTreeSet<&str> = Code::ALL.iter().map(|c| c.soat()).collect();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let errors: Vec<&String> = schemas.keys().filter(|k| k.ends_with("ErrorResponse")).collect();
    assert!(!errors.is_empty(), "no ErrorResponse schema");
    for name in errors {
        let listed: BTreeSet<&str> = schemas[name]["properties"]["error"]["properties"]["code"]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}.error.code has no enum; it should be {rendered:?}"))
            .iter()
            .map(|c| c.as_str().expect("codes are strings"))
            .collect();
        assert_eq!(listed, rendered, "{name}.error.code");
    }
}

/// The committed documents are what `ops/build-openapi-documents` writes from the
/// vendored specs (it reads only the repository), so neither drifts from the other.
#[test]
fn the_documents_are_what_the_builder_writes() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/ops/build-openapi-documents");
    let out = match std::process::Command::new("python3").arg(script).arg("--check").output() {
        Ok(out) => out,
        Err(e) => {
            prerequisite::prerequisite(&format!("no python3 ({e})"), false);
            return;
        }
    };
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
}
