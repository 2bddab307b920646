//! What can go wrong with a model call, in the AI-Protocol's terms: the 13 error
//! classes of the spec, the standard codes (E1001…) of `schemas/v2/error-codes.yaml`
//! with their retryable and fallbackable flags, and [`LlmError`], this layer's error.

use std::time::Duration;

/// The spec's error classes (`error_handling.error_classes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    InvalidRequest,
    Authentication,
    PermissionDenied,
    NotFound,
    QuotaExhausted,
    RateLimited,
    RequestTooLarge,
    Timeout,
    Conflict,
    Cancelled,
    ServerError,
    Overloaded,
    Other,
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 13] = [
        ErrorClass::InvalidRequest,
        ErrorClass::Authentication,
        ErrorClass::PermissionDenied,
        ErrorClass::NotFound,
        ErrorClass::QuotaExhausted,
        ErrorClass::RateLimited,
        ErrorClass::RequestTooLarge,
        ErrorClass::Timeout,
        ErrorClass::Conflict,
        ErrorClass::Cancelled,
        ErrorClass::ServerError,
        ErrorClass::Overloaded,
        ErrorClass::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::InvalidRequest => "invalid_request",
            ErrorClass::Authentication => "authentication",
            ErrorClass::PermissionDenied => "permission_denied",
            ErrorClass::NotFound => "not_found",
            ErrorClass::QuotaExhausted => "quota_exhausted",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::RequestTooLarge => "request_too_large",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::Other => "other",
        }
    }

    /// The class named `name`; error-codes.yaml calls `other` "unknown".
    pub fn parse(name: &str) -> Option<ErrorClass> {
        if name == "unknown" {
            return Some(ErrorClass::Other);
        }
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The spec's `default_retryable`.
    pub fn retryable(self) -> bool {
        matches!(self, ErrorClass::RateLimited | ErrorClass::Timeout | ErrorClass::Conflict | ErrorClass::ServerError | ErrorClass::Overloaded)
    }

    /// The standard code (error-codes.yaml v2).
    pub fn code(self) -> &'static str {
        match self {
            ErrorClass::InvalidRequest => "E1001",
            ErrorClass::Authentication => "E1002",
            ErrorClass::PermissionDenied => "E1003",
            ErrorClass::NotFound => "E1004",
            ErrorClass::RequestTooLarge => "E1005",
            ErrorClass::RateLimited => "E2001",
            ErrorClass::QuotaExhausted => "E2002",
            ErrorClass::ServerError => "E3001",
            ErrorClass::Overloaded => "E3002",
            ErrorClass::Timeout => "E3003",
            ErrorClass::Conflict => "E4001",
            ErrorClass::Cancelled => "E4002",
            ErrorClass::Other => "E9999",
        }
    }

    /// The standard code's name (`unknown` for `other`).
    pub fn code_name(self) -> &'static str {
        match self {
            ErrorClass::Other => "unknown",
            c => c.as_str(),
        }
    }

    /// Whether another provider may be tried instead (error-codes.yaml).
    pub fn fallbackable(self) -> bool {
        matches!(
            self,
            ErrorClass::Authentication
                | ErrorClass::RateLimited
                | ErrorClass::QuotaExhausted
                | ErrorClass::ServerError
                | ErrorClass::Overloaded
                | ErrorClass::Timeout
        )
    }
}

/// A provider's refusal or failure, classified, with the raw fields kept.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    pub class: ErrorClass,
    /// The HTTP status, when the failure was an HTTP answer.
    pub status: Option<u16>,
    pub message: String,
    /// The envelope's `type`, `code` and `status` as the provider sent them.
    pub raw_type: Option<String>,
    pub raw_code: Option<String>,
    pub raw_status: Option<String>,
    /// From `Retry-After` or a provider-declared retry delay.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> ProviderError {
        ProviderError { class, status: None, message: message.into(), raw_type: None, raw_code: None, raw_status: None, retry_after: None }
    }
}

/// This layer's error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// No provider is configured at all.
    #[error("no language-model provider is configured")]
    NotConfigured,
    /// The model names no configured provider or alias.
    #[error("model `{0}` is not served here: use provider/model or a configured alias")]
    UnknownModel(String),
    /// The request breaks a rule before anything is sent.
    #[error("{field}: {message}")]
    InvalidRequest { field: String, message: String },
    /// The provider refused or failed, after any retries.
    #[error("{provider} answered {}: {}", .error.class.as_str(), .error.message)]
    Provider { provider: String, error: ProviderError, attempts: u32 },
    /// The provider could not be reached (connect, TLS, reset before an answer).
    #[error("{provider} could not be reached: {message}")]
    Unreachable { provider: String, message: String, attempts: u32 },
    /// The provider's stream broke or was malformed after it started.
    #[error("{provider}'s stream failed: {message}")]
    Stream { provider: String, message: String },
    /// The outbound runtime is gone (shutting down).
    #[error("the outbound runtime is not running")]
    TransportDown,
    /// A tenant's provider points where the egress policy refuses to connect: nothing
    /// was sent, and the message says only that (never a connection's error).
    #[error("{}", crate::net::egress::REFUSED)]
    Refused { provider: String },
}
