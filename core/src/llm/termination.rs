//! Why a generation stopped: the spec's standard reasons, with the provider's raw
//! reason kept beside it.

/// `streaming_events.termination_reasons.standard_reasons`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    Refusal,
    PauseTurn,
    Other,
}

impl Reason {
    pub fn parse(s: &str) -> Option<Reason> {
        Some(match s {
            "end_turn" => Reason::EndTurn,
            "max_tokens" => Reason::MaxTokens,
            "stop_sequence" => Reason::StopSequence,
            "tool_use" => Reason::ToolUse,
            "refusal" => Reason::Refusal,
            "pause_turn" => Reason::PauseTurn,
            "other" => Reason::Other,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::EndTurn => "end_turn",
            Reason::MaxTokens => "max_tokens",
            Reason::StopSequence => "stop_sequence",
            Reason::ToolUse => "tool_use",
            Reason::Refusal => "refusal",
            Reason::PauseTurn => "pause_turn",
            Reason::Other => "other",
        }
    }
}

/// The standard reason and what the provider said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    pub reason: Reason,
    pub raw: String,
}
