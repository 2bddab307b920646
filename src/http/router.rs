//! Routing: method + path → [`Route`]. A path that exists under another method is a
//! 405 with its `Allow` list; anything else is a 404.

use hyper::Method;

use super::error::{ApiError, Code};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Health,
    Plans,
    Signup,
    Account,
    CreateKey,
    ListKeys,
    RevokeKey(String),
    Metrics,
    /// Fault injection (`debug.panic_route`).
    Panic,
    /// The OpenAI-compatible gateway.
    ChatCompletions,
    Models,
    ListCollections,
    CreateCollection,
    GetCollection(String),
    UpdateCollection(String),
    DeleteCollection(String),
    AddDocument(String),
    ListDocuments(String),
    GetDocument(String, String),
    DeleteDocument(String, String),
    GetPage(String, String, String),
    Search(String),
    Evaluate(String),
}

/// A route's name, for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteName {
    Health,
    Plans,
    Signup,
    Account,
    CreateKey,
    ListKeys,
    RevokeKey,
    Metrics,
    ChatCompletions,
    Models,
    ListCollections,
    CreateCollection,
    GetCollection,
    UpdateCollection,
    DeleteCollection,
    AddDocument,
    ListDocuments,
    GetDocument,
    DeleteDocument,
    GetPage,
    Search,
    Evaluate,
    Unmatched,
}

impl RouteName {
    pub const ALL: &'static [RouteName] = &[
        RouteName::Health,
        RouteName::Plans,
        RouteName::Signup,
        RouteName::Account,
        RouteName::CreateKey,
        RouteName::ListKeys,
        RouteName::RevokeKey,
        RouteName::Metrics,
        RouteName::ChatCompletions,
        RouteName::Models,
        RouteName::ListCollections,
        RouteName::CreateCollection,
        RouteName::GetCollection,
        RouteName::UpdateCollection,
        RouteName::DeleteCollection,
        RouteName::AddDocument,
        RouteName::ListDocuments,
        RouteName::GetDocument,
        RouteName::DeleteDocument,
        RouteName::GetPage,
        RouteName::Search,
        RouteName::Evaluate,
        RouteName::Unmatched,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RouteName::Health => "health",
            RouteName::Plans => "plans",
            RouteName::Signup => "signup",
            RouteName::Account => "account",
            RouteName::CreateKey => "create_key",
            RouteName::ListKeys => "list_keys",
            RouteName::RevokeKey => "revoke_key",
            RouteName::Metrics => "metrics",
            RouteName::ChatCompletions => "chat_completions",
            RouteName::Models => "models",
            RouteName::ListCollections => "list_collections",
            RouteName::CreateCollection => "create_collection",
            RouteName::GetCollection => "get_collection",
            RouteName::UpdateCollection => "update_collection",
            RouteName::DeleteCollection => "delete_collection",
            RouteName::AddDocument => "add_document",
            RouteName::ListDocuments => "list_documents",
            RouteName::GetDocument => "get_document",
            RouteName::DeleteDocument => "delete_document",
            RouteName::GetPage => "get_page",
            RouteName::Search => "search",
            RouteName::Evaluate => "evaluate",
            RouteName::Unmatched => "unmatched",
        }
    }
}

impl Route {
    pub fn name(&self) -> RouteName {
        match self {
            Route::Health => RouteName::Health,
            Route::Plans => RouteName::Plans,
            Route::Signup => RouteName::Signup,
            Route::Account => RouteName::Account,
            Route::CreateKey => RouteName::CreateKey,
            Route::ListKeys => RouteName::ListKeys,
            Route::RevokeKey(_) => RouteName::RevokeKey,
            Route::Metrics => RouteName::Metrics,
            Route::Panic => RouteName::Unmatched,
            Route::ChatCompletions => RouteName::ChatCompletions,
            Route::Models => RouteName::Models,
            Route::ListCollections => RouteName::ListCollections,
            Route::CreateCollection => RouteName::CreateCollection,
            Route::GetCollection(_) => RouteName::GetCollection,
            Route::UpdateCollection(_) => RouteName::UpdateCollection,
            Route::DeleteCollection(_) => RouteName::DeleteCollection,
            Route::AddDocument(_) => RouteName::AddDocument,
            Route::ListDocuments(_) => RouteName::ListDocuments,
            Route::GetDocument(..) => RouteName::GetDocument,
            Route::DeleteDocument(..) => RouteName::DeleteDocument,
            Route::GetPage(..) => RouteName::GetPage,
            Route::Search(_) => RouteName::Search,
            Route::Evaluate(_) => RouteName::Evaluate,
        }
    }

    /// Whether the route needs a key (and so spends from its bucket).
    pub fn authenticated(&self) -> bool {
        !matches!(self, Route::Health | Route::Plans | Route::Signup | Route::Metrics | Route::Panic)
    }

    /// Tokens the call spends from the key's bucket (research and evaluate cost 5).
    pub fn cost(&self) -> u64 {
        match self {
            Route::Evaluate(_) => 5,
            _ => 1,
        }
    }
}

pub fn route(method: &Method, path: &str, panic_route: bool) -> Result<Route, ApiError> {
    let get = *method == Method::GET || *method == Method::HEAD;
    let post = *method == Method::POST;
    let found = match path {
        "/v1/health" => get.then_some(Route::Health).ok_or("GET, HEAD"),
        "/v1/plans" => get.then_some(Route::Plans).ok_or("GET, HEAD"),
        "/v1/signup" => post.then_some(Route::Signup).ok_or("POST"),
        "/v1/account" => get.then_some(Route::Account).ok_or("GET, HEAD"),
        "/v1/keys" if post => Ok(Route::CreateKey),
        "/v1/keys" => get.then_some(Route::ListKeys).ok_or("GET, HEAD, POST"),
        "/metrics" => get.then_some(Route::Metrics).ok_or("GET, HEAD"),
        "/v1/chat/completions" => post.then_some(Route::ChatCompletions).ok_or("POST"),
        "/v1/models" => get.then_some(Route::Models).ok_or("GET, HEAD"),
        "/v1/_panic" if panic_route => get.then_some(Route::Panic).ok_or("GET, HEAD"),
        "/v1/collections" if post => Ok(Route::CreateCollection),
        "/v1/collections" => get.then_some(Route::ListCollections).ok_or("GET, HEAD, POST"),
        _ => match (path.strip_prefix("/v1/keys/"), path.strip_prefix("/v1/collections/")) {
            (Some(prefix), _) if !prefix.is_empty() && !prefix.contains('/') => {
                (*method == Method::DELETE).then(|| Route::RevokeKey(prefix.to_owned())).ok_or("DELETE")
            }
            (_, Some(rest)) => match collection_route(method, rest) {
                Some(found) => found,
                None => return Err(ApiError::new(Code::NotFound, format!("No route {path}."))),
            },
            _ => return Err(ApiError::new(Code::NotFound, format!("No route {path}."))),
        },
    };
    found.map_err(|allow| ApiError {
        allow: Some(allow),
        ..ApiError::new(Code::MethodNotAllowed, format!("{path} does not take {method}; it takes {allow}."))
    })
}

/// Routes under `/v1/collections/`; `None` when the shape matches nothing.
fn collection_route(method: &Method, rest: &str) -> Option<Result<Route, &'static str>> {
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let own = |s: &str| s.to_owned();
    let m = method.clone();
    let get = m == Method::GET || m == Method::HEAD;
    Some(match parts.as_slice() {
        [id] if get => Ok(Route::GetCollection(own(id))),
        [id] if m == Method::PATCH => Ok(Route::UpdateCollection(own(id))),
        [id] if m == Method::DELETE => Ok(Route::DeleteCollection(own(id))),
        [_] => Err("GET, HEAD, PATCH, DELETE"),
        [id, "documents"] if m == Method::POST => Ok(Route::AddDocument(own(id))),
        [id, "documents"] if get => Ok(Route::ListDocuments(own(id))),
        [_, "documents"] => Err("GET, HEAD, POST"),
        [id, "documents", doc] if get => Ok(Route::GetDocument(own(id), own(doc))),
        [id, "documents", doc] if m == Method::DELETE => Ok(Route::DeleteDocument(own(id), own(doc))),
        [_, "documents", _] => Err("GET, HEAD, DELETE"),
        [id, "documents", doc, "pages", n] if get => Ok(Route::GetPage(own(id), own(doc), own(n))),
        [_, "documents", _, "pages", _] => Err("GET, HEAD"),
        [id, "search"] if m == Method::POST => Ok(Route::Search(own(id))),
        [_, "search"] => Err("POST"),
        [id, "evaluate"] if m == Method::POST => Ok(Route::Evaluate(own(id))),
        [_, "evaluate"] => Err("POST"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_method_and_path() {
        assert_eq!(route(&Method::GET, "/v1/health", false).unwrap(), Route::Health);
        assert_eq!(route(&Method::HEAD, "/v1/health", false).unwrap(), Route::Health);
        assert_eq!(route(&Method::POST, "/v1/keys", false).unwrap(), Route::CreateKey);
        assert_eq!(route(&Method::GET, "/v1/keys", false).unwrap(), Route::ListKeys);
        assert_eq!(route(&Method::DELETE, "/v1/keys/al_abcdefg", false).unwrap(), Route::RevokeKey("al_abcdefg".into()));
        assert_eq!(route(&Method::POST, "/v1/chat/completions", false).unwrap(), Route::ChatCompletions);
        assert_eq!(route(&Method::GET, "/v1/models", false).unwrap(), Route::Models);
        assert_eq!(route(&Method::POST, "/v1/collections", false).unwrap(), Route::CreateCollection);
        assert_eq!(route(&Method::PATCH, "/v1/collections/c1", false).unwrap(), Route::UpdateCollection("c1".into()));
        assert_eq!(
            route(&Method::GET, "/v1/collections/c1/documents/d1/pages/0", false).unwrap(),
            Route::GetPage("c1".into(), "d1".into(), "0".into())
        );
        assert_eq!(route(&Method::POST, "/v1/collections/c1/search", false).unwrap(), Route::Search("c1".into()));
        assert_eq!(route(&Method::GET, "/v1/collections/c1/search", false).unwrap_err().allow, Some("POST"));
        assert_eq!(route(&Method::POST, "/v1/collections/c1/evaluate", false).unwrap(), Route::Evaluate("c1".into()));
        assert_eq!(route(&Method::GET, "/v1/collections/c1/evaluate", false).unwrap_err().allow, Some("POST"));
        assert_eq!(route(&Method::GET, "/v1/collections/c1/nope", false).unwrap_err().code, Code::NotFound);
        assert_eq!(route(&Method::GET, "/v1/collections//documents", false).unwrap_err().code, Code::NotFound);
    }

    #[test]
    fn evaluate_costs_five_tokens_and_the_rest_one() {
        assert_eq!(Route::Evaluate("c1".into()).cost(), 5);
        assert_eq!(Route::Search("c1".into()).cost(), 1);
        assert_eq!(Route::Account.cost(), 1);
    }

    #[test]
    fn wrong_method_is_405_with_allow_and_unknown_is_404() {
        let e = route(&Method::DELETE, "/v1/health", false).unwrap_err();
        assert_eq!((e.code, e.allow), (Code::MethodNotAllowed, Some("GET, HEAD")));
        let e = route(&Method::GET, "/v1/keys/al_x", false).unwrap_err();
        assert_eq!(e.allow, Some("DELETE"));
        assert_eq!(route(&Method::GET, "/v1/nope", false).unwrap_err().code, Code::NotFound);
        assert_eq!(route(&Method::DELETE, "/v1/keys/a/b", false).unwrap_err().code, Code::NotFound);
        assert_eq!(route(&Method::DELETE, "/v1/keys/", false).unwrap_err().code, Code::NotFound);
    }
}
