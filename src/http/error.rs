//! The one error table of the HTTP API: every stable code, its status, and the body
//! shape `{"error":{"code","message"}}`. Codes from the AgentLex spec's `Error.code`,
//! plus the ones Quarry adds (marked "ours"), documented in the README.

use hyper::StatusCode;
use serde::Serialize;

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
    InvalidFilter => ("invalid_filter", 400),
    InvalidQuestion => ("invalid_question", 400),
    InvalidQuestions => ("invalid_questions", 400),
    InvalidTier => ("invalid_tier", 400),
    InvalidDomain => ("invalid_domain", 400),
    InvalidText => ("invalid_text", 400),
    InvalidPage => ("invalid_page", 400),
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
}

/// An error as the client sees it.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: Code,
    pub message: String,
    /// `retry-after` seconds (429 rate_limited).
    pub retry_after: Option<u64>,
    /// The `Allow` header (405).
    pub allow: Option<&'static str>,
}

impl ApiError {
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError { code, message: message.into(), retry_after: None, allow: None }
    }

    pub fn internal() -> ApiError {
        ApiError::new(Code::Internal, "Something went wrong on our side; it has been logged.")
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    pub fn body(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Inner<'a> {
            code: &'a str,
            message: &'a str,
        }
        #[derive(Serialize)]
        struct Body<'a> {
            error: Inner<'a>,
        }
        serde_json::to_vec(&Body { error: Inner { code: self.code.as_str(), message: &self.message } })
            .expect("error bodies serialize")
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        tracing::error!(error = %e, "records store failed");
        ApiError::internal()
    }
}

impl From<crate::identity::IdentityError> for ApiError {
    fn from(e: crate::identity::IdentityError) -> ApiError {
        use crate::identity::IdentityError as E;
        let code = match &e {
            E::InvalidEmail(_) => Code::InvalidEmail,
            E::EmailTaken => Code::EmailTaken,
            E::SignupClosed => Code::SignupClosed,
            E::KeyNotFound(_) => Code::KeyNotFound,
            E::CannotRevokeCurrent => Code::CannotRevokeCurrent,
            E::UnknownPlan(..) | E::AccountNotFound(_) => Code::NotFound,
            E::KeyLimitReached { .. } => Code::KeyLimitReached,
            E::InvalidPaging(_) => Code::InvalidPaging,
            E::SignupRateLimited { retry_after_secs } => {
                return ApiError { retry_after: Some(*retry_after_secs), ..ApiError::new(Code::RateLimited, e.to_string()) }
            }
            E::Store(_) => {
                tracing::error!(error = %e, "identity service failed");
                return ApiError::internal();
            }
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<crate::limits::meters::Exceeded> for ApiError {
    fn from(e: crate::limits::meters::Exceeded) -> ApiError {
        if e.what == "stored_chars" {
            return ApiError::new(
                Code::StorageExceeded,
                format!("This plan stores at most {} characters; delete documents or move to a larger plan.", e.allowance),
            );
        }
        ApiError::new(
            Code::AllowanceExceeded,
            format!("This month's {} allowance ({}) is spent; it renews on the 1st (UTC), or move to a larger plan.", e.what, e.allowance),
        )
    }
}

impl From<crate::auth::AuthError> for ApiError {
    fn from(e: crate::auth::AuthError) -> ApiError {
        use crate::auth::AuthError as E;
        match e {
            E::Missing => ApiError::new(Code::MissingKey, "No API key: send Authorization: Bearer al_..."),
            E::Invalid => ApiError::new(Code::InvalidKey, "That API key is not valid."),
            E::Store(s) => s.into(),
        }
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

    #[test]
    fn spent_allowances_map_to_their_codes() {
        use crate::limits::meters::Exceeded;
        let e = ApiError::from(Exceeded { what: "search", allowance: 2000 });
        assert_eq!((e.code, e.status().as_u16()), (Code::AllowanceExceeded, 429));
        assert!(e.message.contains("search") && e.message.contains("2000"));
        assert_eq!(ApiError::from(Exceeded { what: "stored_chars", allowance: 5 }).code, Code::StorageExceeded);
    }

    #[test]
    fn body_has_the_spec_shape() {
        let body: serde_json::Value = serde_json::from_slice(&ApiError::new(Code::InvalidKey, "no").body()).unwrap();
        assert_eq!(body, serde_json::json!({"error": {"code": "invalid_key", "message": "no"}}));
    }
}
