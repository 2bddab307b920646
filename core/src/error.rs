//! Errors as a client sees them: every stable code, its status, and [`ErrorCode`], the
//! one trait each layer's error implements so that it carries its own code and status.
//! This module depends on nothing else in the crate; the route's surface (`http::surface`)
//! renders an [`ApiError`] in that surface's body shape (AgentLex, OpenAI, SOAT, the
//! retrieval plugin). Codes are the AgentLex spec's `Error.code`, plus the ones Quarry
//! adds (marked "ours"), documented in docs/errors.md.

use std::borrow::Cow;

use hyper::header::HeaderValue;
use hyper::StatusCode;

macro_rules! codes {
    ($($variant:ident => ($text:literal, $status:literal)),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Code { $($variant),+ }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text),+ }
            }

            pub fn status(self) -> StatusCode {
                let code = match self { $(Code::$variant => $status),+ };
                StatusCode::from_u16(code).expect("the table holds valid statuses")
            }
        }
    };
}

codes! {
    InvalidJson => ("invalid_json", 400),
    InvalidEmail => ("invalid_email", 400),
    InvalidName => ("invalid_name", 400),
    InvalidSettings => ("invalid_settings", 400),
    InvalidDocument => ("invalid_document", 400),
    InvalidQuery => ("invalid_query", 400),
    QueryTooLong => ("query_too_long", 400),
    // ours: a search names a reranker this server does not configure.
    UnknownReranker => ("unknown_reranker", 400),
    InvalidFilter => ("invalid_filter", 400),
    InvalidQuestion => ("invalid_question", 400),
    InvalidQuestions => ("invalid_questions", 400),
    InvalidTier => ("invalid_tier", 400),
    InvalidDomain => ("invalid_domain", 400),
    InvalidText => ("invalid_text", 400),
    InvalidPage => ("invalid_page", 400),
    // ours: a Quarry-After header that names no write of the collection.
    InvalidSeq => ("invalid_seq", 400),
    CannotRevokeCurrent => ("cannot_revoke_current", 400),
    MissingKey => ("missing_key", 401),
    InvalidKey => ("invalid_key", 401),
    // ours: public signup turned off by auth.signup = "closed".
    SignupClosed => ("signup_closed", 403),
    NotFound => ("not_found", 404),
    CollectionNotFound => ("collection_not_found", 404),
    DocumentNotFound => ("document_not_found", 404),
    PageNotFound => ("page_not_found", 404),
    KeyNotFound => ("key_not_found", 404),
    SampleNotFound => ("sample_not_found", 404),
    // ours: the path exists but not for this method; the response has `Allow`.
    MethodNotAllowed => ("method_not_allowed", 405),
    // ours: signup for an email that has an account, without one of its keys.
    EmailTaken => ("email_taken", 409),
    // ours: the account holds its plan's max_keys active keys; revoke one first.
    KeyLimitReached => ("key_limit_reached", 409),
    // ours: GET /v1/keys's limit is not 1-200, or its after names no key of the account.
    InvalidPaging => ("invalid_paging", 400),
    EmbedderMismatch => ("embedder_mismatch", 409),
    // ours: settings.embedder names a model this server does not load.
    UnknownEmbedder => ("unknown_embedder", 400),
    // ours: a PATCH would change the embedder of a collection that holds documents.
    EmbedderLocked => ("embedder_locked", 409),
    BodyTooLarge => ("body_too_large", 413),
    DocumentTooLarge => ("document_too_large", 413),
    // ours: the request body did not arrive within http.body_read_timeout.
    BodyTimeout => ("body_timeout", 408),
    AllowanceExceeded => ("allowance_exceeded", 429),
    StorageExceeded => ("storage_exceeded", 429),
    RateLimited => ("rate_limited", 429),
    TooManyConcurrent => ("too_many_concurrent", 429),
    Internal => ("internal", 500),
    SampleUnreadable => ("sample_unreadable", 500),
    // ours: the gateway's model names no configured provider or alias.
    ModelNotFound => ("model_not_found", 404),
    // ours: a chat request breaks a rule (range, shape) before anything is sent.
    InvalidLlmRequest => ("invalid_request", 400),
    // ours: the provider refused the request as invalid (its message is passed on).
    LlmRejected => ("llm_rejected", 400),
    // ours: the provider rate-limited us after our retries; retry-after is passed on.
    LlmRateLimited => ("llm_rate_limited", 429),
    // ours: the provider did not answer in time.
    LlmTimeout => ("llm_timeout", 504),
    LlmError => ("llm_error", 502),
    LlmUnreachable => ("llm_unreachable", 502),
    LlmNotConfigured => ("llm_not_configured", 503),
    LlmBusy => ("llm_busy", 503),
    // ours: the shard is at http.max_connections_per_shard.
    Overloaded => ("overloaded", 503),
    // ours: the shared records store (PostgreSQL) cannot be reached; nothing was written.
    StoreUnavailable => ("store_unavailable", 503),
    // ours: hyper could not parse the request (request line, a non-ASCII target byte,
    // a malformed or repeated Content-Length); the connection is closed.
    BadRequest => ("bad_request", 400),
    // ours: the request head exceeds http.max_header_bytes or http.max_headers.
    HeadersTooLarge => ("headers_too_large", 431),
    // ours: the request target is longer than hyper accepts.
    UriTooLong => ("uri_too_long", 414),
    // SOAT (/api/v1): codes of its registry (error-codes.json), rendered upper case by
    // `Code::soat`; on the other surfaces they read as written here.
    // A request body or parameter SOAT refuses (an unknown field, a bad limit).
    SoatValidation => ("validation_failed", 400),
    // A project-scoped key (sk_) used for another project, or off /api/v1.
    ApiKeyProjectScope => ("api_key_project_scope", 403),
    // What no key of this kind may do on /api/v1 (a project key creating a project).
    SoatForbidden => ("forbidden", 403),
    // A body names a policy; Quarry has none.
    PolicyNotFound => ("policy_not_found", 400),
    // policies (issue 37): an attached policy denies the route's action (meta: policy_id,
    // action, resource); SOAT answers FORBIDDEN.
    PolicyDenied => ("policy_denied", 403),
    // exceptions (issue 37): acknowledging or resolving a resolved exception.
    ExceptionAlreadyResolved => ("exception_already_resolved", 409),
    // activity (issue 37): a cursor this server did not hand out.
    ActivityInvalidCursor => ("activity_invalid_cursor", 400),
    // A body names a model route or guardrail that is not in the project.
    ModelRouteNotFound => ("model_route_not_found", 400),
    GuardrailNotFound => ("guardrail_not_found", 400),
    // A record of /api/v1 absent, or of another account or project.
    SoatNotFound => ("resource_not_found", 404),
    // A body names an AI provider that is not in the project.
    AiProviderNotFound => ("ai_provider_not_found", 400),
    // A provider record lacks what its kind needs (a secret to list models, a base_url).
    AiProviderMisconfigured => ("ai_provider_misconfigured", 400),
    // Agents still name the provider (meta: agent_count, agent_ids).
    AiProviderHasDependents => ("ai_provider_has_dependents", 409),
    // azure, ollama, bedrock, vertex, local: no listing through this server.
    ModelListingUnsupported => ("model_listing_unsupported", 400),
    // The provider refused the listing or answered with something else than JSON.
    ModelListingFailed => ("model_listing_failed", 502),
    // The project still holds records (meta: counts by kind); ?force=true deletes them.
    ProjectHasDependents => ("project_has_dependents", 409),
    // A provider's upstream failed during a call made through /api/v1.
    AiProviderError => ("ai_provider_error", 502),
    // SOAT agents (services/src/agents/agent): the spec's codes, named by `Code::soat`.
    ForcedToolChoiceCannotStop => ("forced_tool_choice_cannot_stop", 400),
    InvalidToolContextKey => ("invalid_tool_context_key", 400),
    LiteralCredential => ("literal_credential", 400),
    ReservedTagKey => ("reserved_tag_key", 400),
    // createAgent and updateAgent name a provider not in the project: the spec's 404
    // (the registry's AI_PROVIDER_NOT_FOUND is a 400, kept for restores and routes).
    AgentAiProviderNotFound => ("agent_ai_provider_not_found", 404),
    ToolNotFound => ("tool_not_found", 400),
    VersionConflict => ("version_conflict", 409),
    AgentHasDependents => ("agent_has_dependents", 409),
    NoActiveRelease => ("no_active_release", 409),
    PromotionGateUnmet => ("promotion_gate_unmet", 409),
    ModelRouteHasDependents => ("model_route_has_dependents", 409),
    GuardrailHasReferences => ("guardrail_has_references", 409),
    // SOAT secrets and tools (/api/v1/secrets, /api/v1/tools): each has its registry name
    // in `Code::soat`.
    SecretNotFound => ("secret_not_found", 400),
    SecretNotDecryptable => ("secret_not_decryptable", 500),
    // An AI provider names the secret as its secret_id (meta: ai_provider_ids).
    SecretHasDependents => ("secret_has_dependents", 409),
    InvalidTemplateToken => ("invalid_template_token", 400),
    MissingToolContextKey => ("missing_tool_context_key", 400),
    ToolCallNotSupported => ("tool_call_not_supported", 422),
    ToolHttpError => ("tool_http_error", 502),
    // ours: a tenant's tool, MCP server or AI provider points at an address the egress
    // policy refuses (loopback, private, reserved…; `[egress] allow` opens one). Never
    // carries a connection's error or a target's answer: nothing was sent.
    EgressRefused => ("egress_refused", 403),
    PipelineInvalidStep => ("pipeline_invalid_step", 400),
    PipelineStepFailed => ("pipeline_step_failed", 422),
    PipelineDepthExceeded => ("pipeline_depth_exceeded", 422),
    // SOAT generations (services/src/agents/generation): the spec's codes, named by `Code::soat`.
    IdempotencyKeyReused => ("idempotency_key_reused", 409),
    GenerationNotAwaitingToolOutputs => ("generation_not_awaiting_tool_outputs", 409),
    OutputSchemaValidationFailed => ("output_schema_validation_failed", 502),
    TextEncodedToolCall => ("text_encoded_tool_call", 502),
    SystemMessageNotAllowed => ("system_message_not_allowed", 400),
    InvalidOutputSchema => ("invalid_output_schema", 400),
    OutputSchemaStreamingUnsupported => ("output_schema_streaming_unsupported", 400),
    // A generation that was running when the server died and could not be resumed,
    // or a pause that expired unanswered.
    GenerationInterrupted => ("generation_interrupted", 500),
    ApprovalExpired => ("approval_expired", 409),
    // guardrails and approvals (issue 37): SOAT's approval codes; ours for what a
    // guardrail stops (a blocked input or output, a tripped class-B guard).
    ApprovalAlreadyResolved => ("approval_already_resolved", 409),
    ApprovalReasonRequired => ("approval_reason_required", 400),
    ApprovalInvalidEdit => ("approval_invalid_edit", 400),
    GuardrailBlocked => ("guardrail_blocked", 422),
    GuardrailTripwire => ("guardrail_tripwire", 422),
    // sessions (services/src/agents/session.rs): SOAT's codes, named by `Code::soat`.
    GenerationAlreadyInProgress => ("generation_already_in_progress", 409),
    SessionClosed => ("session_closed", 409),
    SessionExpired => ("session_expired", 410),
    // SOAT users (/api/v1/users): the one-time bootstrap already ran; a username taken
    // on this appliance; a login's wrong username or password (one answer for both).
    BootstrapAlreadyCompleted => ("bootstrap_already_completed", 409),
    UsernameTaken => ("username_taken", 409),
    InvalidCredentials => ("invalid_credentials", 401),
    // SOAT files: a file's bytes on disk no longer match their checksum (never served).
    FileCorrupt => ("file_corrupt", 500),
    // ours: a presigned upload's token was used already, or is past its expiry.
    UploadTokenUsed => ("upload_token_used", 409),
    UploadTokenExpired => ("upload_token_expired", 410),
    // actors (issue 36, services/src/agents/actors.rs): SOAT's codes, named by `Code::soat`.
    // A session names an actor not in its project.
    ActorNotFound => ("actor_not_found", 400),
    // An actor links an agent (or a chat) not in its project.
    AgentNotFound => ("agent_not_found", 400),
    ChatNotFound => ("chat_not_found", 400),
    // The actor wrote messages of a conversation; it cannot be deleted.
    ActorHasMessages => ("actor_has_messages", 409),
    // ours: another actor of the project holds this external_id.
    ExternalIdTaken => ("external_id_taken", 409),
    // single_session_per_actor: the actor has an open session with the agent (meta: session_id).
    SingleSessionConflict => ("single_session_conflict", 409),
    // chats (issue 36): ChatNotFound above, a chat_id naming no chat the caller sees.
    // embeddings (issue 36): this server loads no embedder (QUARRY_EMBEDDER=none).
    EmbeddingNotConfigured => ("embedding_not_configured", 503),
    // evaluations (issue 37): a dataset's or eval's name taken in its project; a
    // generation curated into a dataset that has not completed, or whose content is gone.
    NameConflict => ("name_conflict", 409),
    GenerationNotCompleted => ("generation_not_completed", 409),
    GenerationContentUnavailable => ("generation_content_unavailable", 409),
    // quotas (issue 37): a model call (or a generation's start) would pass an enforced
    // quota (meta: quota_id, metric, limit, window, resets_at); a quota like another.
    QuotaExceeded => ("quota_exceeded", 429),
    QuotaConflict => ("quota_conflict", 409),
    // ours: an enforced cost_usd quota applies and the price book prices no part of
    // the model's call (meta: quota_id, provider, model): a cost it cannot bound.
    QuotaUnpriced => ("quota_unpriced", 409),
}

/// An error as the client sees it.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// `retry-after` seconds (429 rate_limited).
    pub retry_after: Option<u64>,
    /// The `Allow` header (405).
    pub allow: Option<HeaderValue>,
    /// The request field at fault, as a path (`queries[0].top_k`), when one is: the
    /// retrieval plugin reports it as `loc`, OpenAI's envelope as `param`.
    pub field: Option<Cow<'static, str>>,
    /// Structured context SOAT's body carries in `error.meta` (a version conflict's
    /// `current_version`, a delete's dependent counts): a JSON object, or `None`.
    pub meta: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), retry_after: None, allow: None, field: None, meta: None }
    }

    pub fn internal() -> ApiError {
        ApiError::new(Code::Internal, "Something went wrong on our side; it has been logged.")
    }

    /// The same error, naming the request field at fault.
    pub fn at(mut self, field: impl Into<Cow<'static, str>>) -> ApiError {
        self.field = Some(field.into());
        self
    }

    /// The same error with `key: value` in its `meta` (SOAT's `error.meta`).
    pub fn with_meta(mut self, key: &str, value: impl Into<serde_json::Value>) -> ApiError {
        self.meta.get_or_insert_with(Box::default).insert(key.to_owned(), value.into());
        self
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }
}

impl Code {
    /// SOAT's registry code for this one (its `error-codes.json` names): SOAT's own
    /// codes by name, the rest by status.
    pub fn soat(self) -> &'static str {
        match self {
            Code::SoatValidation => return "VALIDATION_FAILED",
            Code::ApiKeyProjectScope => return "API_KEY_PROJECT_SCOPE",
            Code::SoatNotFound => return "RESOURCE_NOT_FOUND",
            // evaluations (issue 37)
            Code::NameConflict => return "NAME_CONFLICT",
            Code::GenerationNotCompleted => return "GENERATION_NOT_COMPLETED",
            Code::GenerationContentUnavailable => return "GENERATION_CONTENT_UNAVAILABLE",
            Code::AiProviderNotFound => return "AI_PROVIDER_NOT_FOUND",
            Code::AiProviderMisconfigured => return "AI_PROVIDER_MISCONFIGURED",
            Code::AiProviderHasDependents => return "AI_PROVIDER_HAS_DEPENDENTS",
            Code::ModelListingUnsupported => return "MODEL_LISTING_UNSUPPORTED",
            Code::ModelListingFailed => return "MODEL_LISTING_FAILED",
            Code::ProjectHasDependents => return "PROJECT_HAS_DEPENDENTS",
            Code::AiProviderError => return "AI_PROVIDER_ERROR",
            Code::PolicyNotFound => return "POLICY_NOT_FOUND",
            // policies (issue 37)
            Code::PolicyDenied => return "FORBIDDEN",
            Code::ExceptionAlreadyResolved => return "EXCEPTION_ALREADY_RESOLVED",
            Code::ActivityInvalidCursor => return "ACTIVITY_INVALID_CURSOR",
            Code::ModelRouteNotFound => return "MODEL_ROUTE_NOT_FOUND",
            Code::GuardrailNotFound => return "GUARDRAIL_NOT_FOUND",
            _ => {}
        }
        if let Some(agents) = soat_agents_code(self) {
            return agents;
        }
        if let Some(name) = soat_tools_code(self) {
            return name;
        }
        // SOAT users.
        match self {
            Code::BootstrapAlreadyCompleted => return "BOOTSTRAP_ALREADY_COMPLETED",
            Code::UsernameTaken => return "NAME_CONFLICT",
            // embeddings (issue 36); chats' CHAT_NOT_FOUND is with the actors' codes.
            Code::EmbeddingNotConfigured => return "EMBEDDING_NOT_CONFIGURED",
            // quotas (issue 37)
            Code::QuotaExceeded => return "QUOTA_EXCEEDED",
            Code::QuotaConflict => return "QUOTA_CONFLICT",
            Code::QuotaUnpriced => return "QUOTA_UNPRICED",
            _ => {}
        }
        match self.status().as_u16() {
            400 | 413 | 422 => "VALIDATION_FAILED",
            401 => "UNAUTHORIZED",
            403 => "FORBIDDEN",
            404 => "RESOURCE_NOT_FOUND",
            429 => "QUOTA_EXCEEDED",
            502 | 504 => "AI_PROVIDER_ERROR",
            500 => "INTERNAL_ERROR",
            _ => "REQUEST_REJECTED",
        }
    }
}

/// The agents module's own registry codes.
fn soat_agents_code(code: Code) -> Option<&'static str> {
    Some(match code {
        Code::ForcedToolChoiceCannotStop => "FORCED_TOOL_CHOICE_CANNOT_STOP",
        Code::InvalidToolContextKey => "INVALID_TOOL_CONTEXT_KEY",
        Code::LiteralCredential => "LITERAL_CREDENTIAL",
        Code::ReservedTagKey => "RESERVED_TAG_KEY",
        Code::AgentAiProviderNotFound => "AI_PROVIDER_NOT_FOUND",
        Code::ToolNotFound => "TOOL_NOT_FOUND",
        Code::VersionConflict => "VERSION_CONFLICT",
        Code::AgentHasDependents => "AGENT_HAS_DEPENDENTS",
        Code::NoActiveRelease => "NO_ACTIVE_RELEASE",
        Code::PromotionGateUnmet => "PROMOTION_GATE_UNMET",
        Code::ModelRouteHasDependents => "MODEL_ROUTE_HAS_DEPENDENTS",
        Code::GuardrailHasReferences => "GUARDRAIL_HAS_REFERENCES",
        _ => return None,
    })
}

/// The secrets' and tools' codes, named as SOAT's registry names them.
fn soat_tools_code(code: Code) -> Option<&'static str> {
    Some(match code {
        Code::SecretNotFound => "SECRET_NOT_FOUND",
        Code::SecretNotDecryptable => "SECRET_NOT_DECRYPTABLE",
        Code::SecretHasDependents => "SECRET_HAS_DEPENDENTS",
        Code::InvalidTemplateToken => "INVALID_TEMPLATE_TOKEN",
        Code::MissingToolContextKey => "MISSING_TOOL_CONTEXT_KEY",
        Code::ToolCallNotSupported => "TOOL_CALL_NOT_SUPPORTED",
        Code::ToolHttpError => "TOOL_HTTP_ERROR",
        Code::EgressRefused => "EGRESS_REFUSED",
        Code::PipelineInvalidStep => "PIPELINE_INVALID_STEP",
        Code::PipelineStepFailed => "PIPELINE_STEP_FAILED",
        Code::PipelineDepthExceeded => "PIPELINE_DEPTH_EXCEEDED",
        Code::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
        Code::GenerationNotAwaitingToolOutputs => "GENERATION_NOT_AWAITING_TOOL_OUTPUTS",
        Code::OutputSchemaValidationFailed => "OUTPUT_SCHEMA_VALIDATION_FAILED",
        Code::TextEncodedToolCall => "TEXT_ENCODED_TOOL_CALL",
        Code::SystemMessageNotAllowed => "SYSTEM_MESSAGE_NOT_ALLOWED",
        Code::InvalidOutputSchema => "INVALID_OUTPUT_SCHEMA",
        Code::OutputSchemaStreamingUnsupported => "OUTPUT_SCHEMA_STREAMING_UNSUPPORTED",
        Code::GenerationInterrupted => "GENERATION_INTERRUPTED",
        Code::ApprovalExpired => "APPROVAL_EXPIRED",
        // guardrails and approvals (issue 37)
        Code::ApprovalAlreadyResolved => "APPROVAL_ALREADY_RESOLVED",
        Code::ApprovalReasonRequired => "APPROVAL_REASON_REQUIRED",
        Code::ApprovalInvalidEdit => "APPROVAL_INVALID_EDIT",
        Code::GuardrailBlocked => "GUARDRAIL_BLOCKED",
        Code::GuardrailTripwire => "GUARDRAIL_TRIPWIRE",
        // sessions
        Code::GenerationAlreadyInProgress => "GENERATION_ALREADY_IN_PROGRESS",
        Code::SessionClosed => "SESSION_CLOSED",
        Code::SessionExpired => "SESSION_EXPIRED",
        // actors
        Code::ActorNotFound => "ACTOR_NOT_FOUND",
        Code::AgentNotFound => "AGENT_NOT_FOUND",
        Code::ChatNotFound => "CHAT_NOT_FOUND",
        Code::ActorHasMessages => "ACTOR_HAS_MESSAGES",
        Code::SingleSessionConflict => "SINGLE_SESSION_CONFLICT",
        _ => return None,
    })
}

/// What every layer's error implements: its stable code (and so its status) and the
/// message a client may read. An error whose code is [`Code::Internal`] is logged
/// in full where it becomes an [`ApiError`], and the client sees a generic message.
pub trait ErrorCode: std::fmt::Display {
    fn code(&self) -> Code;

    /// What the client reads; the error's own text unless a layer words it for clients.
    fn message(&self) -> String {
        self.to_string()
    }

    /// `retry-after` seconds, for errors that have one.
    fn retry_after(&self) -> Option<u64> {
        None
    }

    /// Structured context for SOAT's `error.meta` (an object), for errors that have it.
    fn meta(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        None
    }
}

impl<E: ErrorCode> From<E> for ApiError {
    fn from(e: E) -> ApiError {
        let code = e.code();
        if code == Code::Internal {
            tracing::error!(error = %e, "internal error");
            return ApiError::internal();
        }
        // The shared store out of reach is always worth a retry, whichever layer's
        // error carried it up.
        let retry_after = e.retry_after().or((code == Code::StoreUnavailable).then_some(1));
        ApiError { retry_after, meta: e.meta().map(Box::new), ..ApiError::new(code, e.message()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_unique_and_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "{} twice", c.as_str());
            assert!(c.as_str().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert!(c.status().is_client_error() || c.status().is_server_error());
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("disk on fire at /x")]
    struct Broken;

    impl ErrorCode for Broken {
        fn code(&self) -> Code {
            Code::Internal
        }
    }

    #[test]
    fn internal_errors_keep_their_detail_from_the_client() {
        let e = ApiError::from(Broken);
        assert_eq!(e.code, Code::Internal);
        assert!(!e.message.contains("/x"), "{}", e.message);
    }
}
