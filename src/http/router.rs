//! Routing over a table: one [`Route`] row per method and path pattern (its surface,
//! whether it needs a key, what it costs, its handler), matched by `matchit`. A path
//! that exists under other methods is a 405 whose `Allow` lists them; anything else
//! is a 404, both in the error shape of the surface the path belongs to. Metrics
//! name routes by their row.

use futures_util::future::LocalBoxFuture;
use hyper::header::HeaderValue;
use hyper::Method;

use super::call::Call;
use super::response::Reply;
use super::surface::Surface;
use crate::app::App;
use crate::error::{ApiError, Code};

/// A handler that reads the request and may wait (a body, the store, a model).
pub type CallFn = for<'a> fn(Call<'a>) -> LocalBoxFuture<'a, Result<Reply, ApiError>>;

#[derive(Clone, Copy)]
pub enum Handler {
    /// Needs no body, no key and no waiting (health, plans, metrics): served without
    /// the rest of the request's machinery.
    Immediate(fn(&App) -> Reply),
    Call(CallFn),
}

/// One row of the route table.
#[derive(Clone)]
pub struct Route {
    pub method: Method,
    /// A `matchit` pattern: `/v1/collections/{id}`.
    pub path: &'static str,
    /// For metrics and logs; unique in the table.
    pub name: &'static str,
    pub surface: Surface,
    /// Whether the route needs a key (and so spends from its bucket).
    pub auth: bool,
    /// Tokens a call spends from the key's bucket.
    pub cost: u64,
    pub handler: Handler,
}

/// A route's path parameters, by name, in path order.
#[derive(Debug, Default, Clone)]
pub struct Params(Vec<(&'static str, String)>);

impl Params {
    /// The parameter `name`; the table guarantees a handler's own parameters exist.
    pub fn get(&self, name: &str) -> &str {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("no path parameter {name}"))
    }

    /// The first parameter in path order (the record a route names), if any.
    pub fn first(&self) -> Option<(&'static str, &str)> {
        self.0.first().map(|(k, v)| (*k, v.as_str()))
    }

    pub fn take(&mut self, name: &str) -> String {
        let i = self.0.iter().position(|(k, _)| *k == name).unwrap_or_else(|| panic!("no path parameter {name}"));
        self.0.swap_remove(i).1
    }
}

/// The routes of one path pattern.
struct PathRoutes {
    /// (method, row) with HEAD answered by the GET row.
    methods: Vec<(Method, usize)>,
    allow: HeaderValue,
    surface: Surface,
}

/// What a request matched.
pub struct Matched {
    /// The row's index in [`Router::routes`] (metrics count by it).
    pub index: usize,
    pub route: &'static Route,
    pub params: Params,
}

/// The table, with its paths compiled. Built once at start-up and kept for the
/// process's life (`'static`), so matched parameter names borrow from it.
pub struct Router {
    routes: &'static [Route],
    paths: matchit::Router<usize>,
    by_path: Vec<PathRoutes>,
}

impl Router {
    /// Compiles `routes`. A table error (the same method and path twice, a pattern
    /// matchit refuses) is a programming error: it panics at start-up, where every
    /// test run meets it.
    pub fn new(routes: Vec<Route>) -> &'static Router {
        let routes: &'static [Route] = Box::leak(routes.into_boxed_slice());
        let mut paths = matchit::Router::new();
        let mut by_path: Vec<PathRoutes> = Vec::new();
        let mut patterns: Vec<&'static str> = Vec::new();
        for (i, r) in routes.iter().enumerate() {
            let at = match patterns.iter().position(|p| *p == r.path) {
                Some(at) => at,
                None => {
                    paths.insert(r.path, patterns.len()).unwrap_or_else(|e| panic!("route {}: {e}", r.path));
                    patterns.push(r.path);
                    by_path.push(PathRoutes { methods: Vec::new(), allow: HeaderValue::from_static(""), surface: r.surface });
                    patterns.len() - 1
                }
            };
            let entry = &mut by_path[at];
            assert!(!entry.methods.iter().any(|(m, _)| *m == r.method), "route {} {} twice", r.method, r.path);
            assert!(entry.surface == r.surface, "the routes of {} have two surfaces", r.path);
            entry.methods.push((r.method.clone(), i));
            if r.method == Method::GET {
                entry.methods.push((Method::HEAD, i));
            }
        }
        for entry in &mut by_path {
            entry.allow = allow_header(&entry.methods);
        }
        assert!(routes.iter().enumerate().all(|(i, r)| routes[..i].iter().all(|o| o.name != r.name)), "route names repeat");
        Box::leak(Box::new(Router { routes, paths, by_path }))
    }

    pub fn routes(&self) -> &'static [Route] {
        self.routes
    }

    /// The row for `method` and `path`, or the error in the path's surface.
    // The error is the cold path (a 404 or 405), built once per such request.
    #[allow(clippy::result_large_err)]
    pub fn route(&self, method: &Method, path: &str) -> Result<Matched, (Surface, ApiError)> {
        let Ok(found) = self.paths.at(path) else {
            return Err((Surface::of_path(path), ApiError::new(Code::NotFound, format!("No route {path}."))));
        };
        let entry = &self.by_path[*found.value];
        let Some(&(_, index)) = entry.methods.iter().find(|(m, _)| m == method) else {
            let allow = entry.allow.to_str().unwrap_or_default().to_owned();
            let e = ApiError::new(Code::MethodNotAllowed, format!("{path} does not take {method}; it takes {allow}."));
            return Err((entry.surface, ApiError { allow: Some(entry.allow.clone()), ..e }));
        };
        let route = &self.routes[index];
        let params = found.params.iter().map(|(k, v)| (param_name(route, k), v.to_owned())).collect();
        Ok(Matched { index, route, params: Params(params) })
    }
}

/// `Allow`: GET and HEAD first (as clients expect to read it), then the rest in table order.
fn allow_header(methods: &[(Method, usize)]) -> HeaderValue {
    let mut names: Vec<&str> = methods.iter().map(|(m, _)| m.as_str()).collect();
    names.sort_by_key(|m| match *m {
        "GET" => 0,
        "HEAD" => 1,
        _ => 2,
    });
    HeaderValue::from_str(&names.join(", ")).expect("method names are header-safe")
}

/// The `'static` copy of a parameter name, from the row's own pattern.
fn param_name(route: &'static Route, name: &str) -> &'static str {
    let p = route.path;
    let at = p.find(&format!("{{{name}}}")).expect("matchit names parameters of the pattern");
    &p[at + 1..at + 1 + name.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(_: &App) -> Reply {
        super::super::response::json_bytes(hyper::StatusCode::OK, bytes::Bytes::new())
    }

    fn row(method: Method, path: &'static str, name: &'static str) -> Route {
        Route { method, path, name, surface: Surface::of_path(path), auth: false, cost: 1, handler: Handler::Immediate(ok) }
    }

    fn table() -> &'static Router {
        Router::new(vec![
            row(Method::GET, "/v1/health", "health"),
            row(Method::POST, "/v1/keys", "create_key"),
            row(Method::GET, "/v1/keys", "list_keys"),
            row(Method::DELETE, "/v1/keys/{prefix}", "revoke_key"),
            row(Method::GET, "/v1/collections/{id}/documents/{doc}/pages/{n}", "get_page"),
            row(Method::POST, "/v1/chat/completions", "chat"),
        ])
    }

    #[test]
    fn rows_match_method_and_path_with_their_parameters() {
        let t = table();
        assert_eq!(t.route(&Method::GET, "/v1/health").ok().unwrap().route.name, "health");
        assert_eq!(t.route(&Method::HEAD, "/v1/health").ok().unwrap().route.name, "health");
        assert_eq!(t.route(&Method::POST, "/v1/keys").ok().unwrap().route.name, "create_key");
        let m = t.route(&Method::GET, "/v1/collections/c1/documents/d1/pages/0").ok().unwrap();
        assert_eq!((m.params.get("id"), m.params.get("doc"), m.params.get("n")), ("c1", "d1", "0"));
        let mut m = t.route(&Method::DELETE, "/v1/keys/al_abcdefg").ok().unwrap();
        assert_eq!(m.params.take("prefix"), "al_abcdefg");
    }

    #[test]
    fn wrong_method_is_405_with_allow_and_unknown_is_404() {
        let t = table();
        let (_, e) = t.route(&Method::DELETE, "/v1/health").err().unwrap();
        assert_eq!((e.code, e.allow.unwrap().to_str().unwrap()), (Code::MethodNotAllowed, "GET, HEAD"));
        let (_, e) = t.route(&Method::DELETE, "/v1/keys").err().unwrap();
        assert_eq!(e.allow.unwrap(), "GET, HEAD, POST");
        let (surface, e) = t.route(&Method::GET, "/v1/chat/completions").err().unwrap();
        assert_eq!((surface, e.allow.unwrap().to_str().unwrap()), (Surface::OpenAi, "POST"));
        for path in ["/v1/nope", "/v1/keys/a/b", "/v1/keys/", "/v1/collections//documents/d/pages/0"] {
            assert_eq!(t.route(&Method::GET, path).err().unwrap().1.code, Code::NotFound, "{path}");
        }
    }

    #[test]
    #[should_panic(expected = "twice")]
    fn a_row_given_twice_is_refused() {
        Router::new(vec![row(Method::GET, "/v1/health", "a"), row(Method::GET, "/v1/health", "b")]);
    }
}
