//! What a credential may read of an account's `/v1` data (its collections, their
//! documents and pages): the one rule every path to that data asks, whether it is a
//! `/v1` route, a builtin search tool, a `document` message, knowledge retrieval or a
//! document id a request names. An account key (`al_…`) reads every collection of its
//! account. An `/api/v1` key (`sk_…`, bound to a project or not) reads none: it acts on
//! the agents platform only, and a run it starts acts with its reach, whoever wrote the
//! agent, the tool or the knowledge it runs with.

/// The reach of a credential over `/v1` data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// An account key: every collection of its account.
    Account,
    /// An `/api/v1` key: no collection, no document.
    Agents,
}

impl Reach {
    /// Whether it may read the account's collections and their documents.
    pub fn reads_collections(self) -> bool {
        self == Reach::Account
    }

    /// What a refusal says, on every surface (code `API_KEY_PROJECT_SCOPE`, 403).
    pub const REFUSED: &'static str =
        "An /api/v1 key (sk_...) reads no /v1 collection or document, on any path (tools, document messages, knowledge); use an account key (al_...).";
}

#[cfg(test)]
mod tests {
    use super::Reach;

    #[test]
    fn only_an_account_key_reads_collections() {
        assert!(Reach::Account.reads_collections());
        assert!(!Reach::Agents.reads_collections());
    }
}
