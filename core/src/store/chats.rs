//! SOAT chats (`chat_…`, chats.yaml): a chat is a stored target for completions, an AI
//! provider of its project (or its project's default model route) with the model and
//! instructions to use. It holds no
//! messages (a completion sends them all each time), so it is one account-owned record
//! (`store::owned`) and nothing more.

use serde::{Deserialize, Serialize};

use super::owned::owned_record;
use super::{Records, StoreError};

pub const CHAT_PREFIX: &str = "chat_";

/// A chat of one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRecord {
    pub id: String,
    pub account_id: String,
    pub project_id: String,
    /// The provider it calls (an AI provider of the same project); `None`: the
    /// project's default model route.
    pub ai_provider_id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The system text of every completion on it, unless a request brings its own.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The model, over the provider's `default_model`.
    #[serde(default)]
    pub model: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

owned_record!(ChatRecord, "soat_chats", "soat_chats_by_account");

impl Records {
    pub(super) fn ensure_chats(&self) -> Result<(), StoreError> {
        self.ensure::<ChatRecord>()
    }
}
