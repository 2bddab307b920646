//! `/api/v1/ai-providers`.
