//! Policies (issue 37, policies.yaml): which actions on which resources a user or an
//! `/api/v1` key may take, checked at one place for every `/api/v1` route (the
//! dispatch in `http::handler`, through [`authorize`]).
//!
//! A document is SOAT's (`lib/iam.ts`): `{"statement": [{effect, action, resource?,
//! condition?}]}`. An action is `module:Operation` as SOAT's permission catalog names
//! each operation (`catalog.json`, from SOAT's `src/permissions/*.json`); a route row
//! whose operation the catalog lacks (Quarry's own, as `purgeGeneration`) gets
//! `module:Operation` from its path's module and its row name ([`action_of`]). A
//! resource is an SRN, `srn:<project>:<type>:<id>`, globbed with `*` and `?`.
//!
//! Evaluation, as SOAT's: a matching `Deny` in any attached policy denies; else a
//! matching `Allow` allows; else denied. Who is checked:
//!
//! - a user's login token: an `admin` never (SOAT's admin bypass); a `user` against the
//!   policies attached to it (`PUT /users/{id}/policies`);
//! - an `/api/v1` key against the policies attached to it (`policy_ids`);
//! - an account key (`al_…`) never: it is the account's owner.
//!
//! A statement's `condition` (SOAT's `StringEquals`, `StringNotEquals`, `StringLike`)
//! is evaluated against the request's [`Context`]: SOAT's `soat:ResourceType`, and
//! Quarry's keys of the principal (`soat:PrincipalType`, `soat:PrincipalId`,
//! `soat:PrincipalRole`, `soat:Username`), the request (`soat:Action`,
//! `soat:ProjectId`, `soat:ResourceId`, `soat:Method`, `soat:SourceIp`,
//! `soat:UserAgent`) and the time in UTC (`soat:CurrentTime` RFC 3339 to the second,
//! `soat:CurrentDate` `YYYY-MM-DD`, `soat:CurrentHour` `00`–`23`, `soat:CurrentWeekday`
//! `Mon`–`Sun`), and SOAT's `soat:ResourceTag/<key>` of the record a row names when it
//! is an actor, document, file, conversation or session (read only when a condition
//! names a tag). A key the request does not have is absent, as SOAT's: `StringEquals`
//! fails, `StringNotEquals` holds, `StringLike` matches it as `""`.
//!
//! One difference from SOAT, so nothing that works today breaks: a user or key with no
//! policy attached (or whose attached policies were all deleted) is allowed, where SOAT
//! denies a plain user with none. Attaching a policy is what restricts.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Value};

use super::memory::glob;
use super::users::require_admin;
use super::SoatError;
use crate::auth::Principal;
use crate::error::{ApiError, Code};
use crate::ids::random_base62;
use crate::store::{
    ActorRecord, ConversationRecord, DocumentRecord, FileRecord, PolicyRecord, ProjectKeyRecord, Records, SessionRecord, StoreError, UserRecord,
};

pub const POLICY_PREFIX: &str = "pol_";
const MAX_STATEMENTS: usize = 100;
const MAX_ENTRIES: usize = 100;
const MAX_PATTERN: usize = 256;
const OPERATORS: [&str; 3] = ["StringEquals", "StringNotEquals", "StringLike"];

/// `POST /policies` and `PUT /policies/{id}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    pub document: Value,
}

/// SOAT's operation → action catalog.
fn catalog() -> &'static HashMap<String, String> {
    static CATALOG: OnceLock<HashMap<String, String>> = OnceLock::new();
    CATALOG.get_or_init(|| serde_json::from_str(include_str!("catalog.json")).expect("the permission catalog parses"))
}

/// The modules actions may name: the catalog's, and the path modules [`action_of`] derives.
fn known_module(m: &str) -> bool {
    catalog().values().any(|a| a.split(':').next() == Some(m)) || ["generations", "traces", "users", "keys"].contains(&m)
}

/// The SOAT module of an `/api/v1` path's first segment, where SOAT's name differs.
fn module_of(segment: &str) -> &str {
    match segment {
        "evals" => "evaluations",
        "memory-entries" => "memories",
        "sessions" => "agents",
        "webhook-deliveries" => "webhooks",
        "chat" => "chats",
        "audit-log" => "audit",
        s => s,
    }
}

/// `soat_list_projects` → `listProjects`.
fn operation_id(row_name: &str) -> String {
    let mut out = String::new();
    for (i, w) in row_name.trim_start_matches("soat_").split('_').enumerate() {
        let mut c = w.chars();
        if let Some(first) = c.next() {
            if i == 0 {
                out.push(first);
            } else {
                out.extend(first.to_uppercase());
            }
            out.push_str(c.as_str());
        }
    }
    out
}

/// The action a route row stands for: SOAT's catalog entry for its operation, else
/// `module:Operation` from its path and name (`/v1/keys` rows: `keys:CreateKey`).
pub fn action_of(row_name: &str, path: &str) -> String {
    let op = operation_id(row_name);
    if let Some(a) = catalog().get(&op) {
        return a.clone();
    }
    let segment = path.trim_start_matches("/api/v1/").trim_start_matches("/v1/").split('/').next().unwrap_or("");
    let mut pascal = op;
    if let Some(first) = pascal.get(..1).map(str::to_uppercase) {
        pascal.replace_range(..1, &first);
    }
    format!("{}:{pascal}", module_of(segment))
}

/// What a request acts on: `srn:<project>:<type>:<id>`, the project unknown when the
/// request may name it in its body (then a `Deny` for any project applies, and only an
/// `Allow` for every project allows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub project: Option<String>,
    pub kind: String,
    pub id: Option<String>,
}

impl Target {
    /// The target of a row: its first path parameter's record (`{secret_id}` → a
    /// `secret`), else every record of its module's type.
    pub fn of(path: &str, first_param: Option<(&str, &str)>, project: Option<String>) -> Target {
        let (kind, id) = match first_param {
            Some((name, value)) => (name.trim_end_matches("_id").to_owned(), Some(value.to_owned())),
            None => {
                let segment = path.trim_start_matches("/api/v1/").trim_start_matches("/v1/").split('/').next().unwrap_or("");
                (module_of(segment).trim_end_matches('s').replace('-', "_"), None)
            }
        };
        Target { project, kind, id }
    }

    pub fn srn(&self) -> String {
        format!("srn:{}:{}:{}", self.project.as_deref().unwrap_or("*"), self.kind, self.id.as_deref().unwrap_or("*"))
    }
}

/// What a statement's `condition` reads: `soat:…` keys and their string values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context(pub HashMap<String, String>);

/// What the dispatch knows of a request besides its principal and target.
#[derive(Debug, Clone, Default)]
pub struct RequestFacts<'a> {
    pub method: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

impl Context {
    /// The context of `p` taking `action` on `target` at `now` (unix seconds).
    pub fn of(p: &Principal, action: &str, target: &Target, facts: &RequestFacts<'_>, now: u64) -> Context {
        let mut c = Context::request(action, target, facts, now);
        let who = match (&p.user, &p.project_key) {
            (Some(u), _) => [
                ("PrincipalType", "user".to_owned()),
                ("PrincipalId", u.id.clone()),
                ("PrincipalRole", u.role.clone()),
                ("Username", u.username.clone()),
            ]
            .to_vec(),
            (None, Some(k)) => vec![("PrincipalType", "api_key".to_owned()), ("PrincipalId", k.id.clone())],
            (None, None) => vec![("PrincipalType", "account_key".to_owned()), ("PrincipalId", p.prefix.clone())],
        };
        c.0.extend(who.into_iter().map(|(k, v)| (format!("soat:{k}"), v)));
        c
    }

    /// The keys of the request and the time, without the principal's.
    pub fn request(action: &str, target: &Target, facts: &RequestFacts<'_>, now: u64) -> Context {
        let time = humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(now)).to_string();
        const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        let pairs = [
            ("ResourceType", Some(target.kind.clone())),
            ("ResourceId", target.id.clone()),
            ("ProjectId", target.project.clone()),
            ("Action", Some(action.to_owned())),
            ("Method", Some(facts.method.to_owned())),
            ("SourceIp", facts.ip.map(str::to_owned)),
            ("UserAgent", facts.user_agent.map(str::to_owned)),
            ("CurrentDate", time.get(..10).map(str::to_owned)),
            ("CurrentHour", time.get(11..13).map(str::to_owned)),
            ("CurrentWeekday", Some(WEEKDAYS[((now / 86_400) % 7) as usize].to_owned())),
            ("CurrentTime", Some(time.clone())),
        ];
        Context(pairs.into_iter().filter_map(|(k, v)| Some((format!("soat:{k}"), v?))).collect())
    }
}

/// Why a request was refused: the policy that denied it (or the attached ones, none of
/// which allows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub policy_ids: Vec<String>,
    /// Whether a `Deny` statement matched (else no `Allow` did).
    pub explicit: bool,
    pub action: String,
    pub srn: String,
}

impl Denied {
    pub fn error(&self) -> ApiError {
        let named = self.policy_ids.join(", ");
        let message = if self.explicit {
            format!("Policy {named} denies {} on {}.", self.action, self.srn)
        } else {
            format!("No statement of the attached policies ({named}) allows {} on {}.", self.action, self.srn)
        };
        ApiError::new(Code::PolicyDenied, message)
            .with_meta("policy_id", self.policy_ids.first().cloned().unwrap_or_default())
            .with_meta("policy_ids", self.policy_ids.clone())
            .with_meta("action", self.action.clone())
            .with_meta("resource", self.srn.clone())
    }
}

/// The policy ids attached to the caller, `None` when policies do not apply to it.
fn attached(records: &Records, p: &Principal) -> Result<Option<Vec<String>>, StoreError> {
    if let Some(u) = &p.user {
        if u.role == "admin" {
            return Ok(None);
        }
        return Ok(records.get::<UserRecord>(&p.account_id, &u.id)?.map(|u| u.policy_ids));
    }
    match &p.project_key {
        Some(k) => Ok(records.get::<ProjectKeyRecord>(&p.account_id, &k.id)?.map(|k| k.policy_ids)),
        None => Ok(None),
    }
}

/// Whether `p` may take `action` on `target` in `ctx`: `Ok(None)` allowed,
/// `Ok(Some(_))` denied.
pub fn authorize(records: &Records, p: &Principal, action: &str, target: &Target, ctx: &Context) -> Result<Option<Denied>, StoreError> {
    let Some(ids) = attached(records, p)? else { return Ok(None) };
    let mut policies = Vec::new();
    for id in &ids {
        policies.extend(records.get::<PolicyRecord>(&p.account_id, id)?);
    }
    if !reads_tags(&policies) {
        return Ok(evaluate(&policies, action, target, ctx));
    }
    let mut ctx = ctx.clone();
    for (k, v) in tags_of(records, &p.account_id, target)? {
        ctx.0.insert(format!("soat:ResourceTag/{k}"), v);
    }
    Ok(evaluate(&policies, action, target, &ctx))
}

/// Whether a condition of `policies` names a resource tag (only then is the record read).
fn reads_tags(policies: &[PolicyRecord]) -> bool {
    policies
        .iter()
        .flat_map(|p| statements(&p.document))
        .filter_map(|s| s.get("condition")?.as_object())
        .flat_map(|c| c.values().filter_map(Value::as_object))
        .any(|block| block.keys().any(|k| k.starts_with("soat:ResourceTag/")))
}

/// The tags of the record a target names, of the kinds that have tags (actors,
/// documents, files, conversations, sessions); none for any other or an absent record.
fn tags_of(records: &Records, account_id: &str, t: &Target) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
    let Some(id) = &t.id else { return Ok(Default::default()) };
    let tags = match t.kind.as_str() {
        "actor" => records.get::<ActorRecord>(account_id, id)?.map(|r| r.tags),
        "document" => records.get::<DocumentRecord>(account_id, id)?.map(|r| r.tags),
        "file" => records.get::<FileRecord>(account_id, id)?.map(|r| r.tags),
        "conversation" => records.get::<ConversationRecord>(account_id, id)?.map(|r| r.tags),
        "session" => records.get::<SessionRecord>(account_id, id)?.map(|r| r.tags),
        _ => None,
    };
    Ok(tags.unwrap_or_default())
}

/// SOAT's evaluation of `policies` (none: allowed, see the module).
pub fn evaluate(policies: &[PolicyRecord], action: &str, target: &Target, ctx: &Context) -> Option<Denied> {
    if policies.is_empty() {
        return None;
    }
    let denied = |policy_ids: Vec<String>, explicit| Denied { policy_ids, explicit, action: action.to_owned(), srn: target.srn() };
    let mut allowed = false;
    for policy in policies {
        for s in statements(&policy.document) {
            let deny = s.get("effect").and_then(Value::as_str) == Some("Deny");
            if !matches_statement(s, action, target, deny, ctx) {
                continue;
            }
            if deny {
                return Some(denied(vec![policy.id.clone()], true));
            }
            allowed = true;
        }
    }
    (!allowed).then(|| denied(policies.iter().map(|p| p.id.clone()).collect(), false))
}

fn statements(document: &Value) -> &[Value] {
    document.get("statement").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

fn matches_statement(s: &Value, action: &str, target: &Target, deny: bool, ctx: &Context) -> bool {
    if !strings(s.get("action")).any(|a| glob(a, action)) {
        return false;
    }
    let resource_ok = match s.get("resource") {
        None => true,
        r => strings(r).any(|pattern| resource_matches(pattern, target, deny)),
    };
    resource_ok && s.get("condition").is_none_or(|c| condition_holds(c, ctx))
}

/// SOAT's `evaluateCondition`: every key of every operator holds.
fn condition_holds(c: &Value, ctx: &Context) -> bool {
    let Some(ops) = c.as_object() else { return true };
    ops.iter().all(|(op, block)| {
        let Some(block) = block.as_object() else { return true };
        block.iter().all(|(key, expected)| {
            let (actual, expected) = (ctx.0.get(key).map(String::as_str), expected.as_str().unwrap_or_default());
            match op.as_str() {
                "StringEquals" => actual == Some(expected),
                "StringNotEquals" => actual != Some(expected),
                "StringLike" => glob(expected, actual.unwrap_or_default()),
                _ => true,
            }
        })
    })
}

/// Whether an SRN pattern covers `target`; with the project unknown, a `Deny` matches
/// whatever project it names and an `Allow` only when it names every project.
fn resource_matches(pattern: &str, target: &Target, deny: bool) -> bool {
    if pattern == "*" {
        return true;
    }
    let parts: Vec<&str> = pattern.splitn(4, ':').collect();
    let [_, project, kind, id] = parts[..] else { return false };
    let project_ok = match &target.project {
        Some(p) => glob(project, p),
        None => deny || project == "*",
    };
    project_ok && glob(kind, &target.kind) && glob(id, target.id.as_deref().unwrap_or("*"))
}

/// Checks a document as SOAT's `validatePolicyDocument` and `validatePolicyActions` do
/// (every action names a known module), with bounds.
pub fn validate(document: &Value) -> Result<(), SoatError> {
    let Some(doc) = document.as_object() else { return Err(SoatError::invalid("document", "must be an object.")) };
    if let Some(k) = doc.keys().find(|k| *k != "statement") {
        return Err(SoatError::invalid(format!("document.{k}"), "is not a field of a policy document."));
    }
    let Some(list) = doc.get("statement").and_then(Value::as_array) else {
        return Err(SoatError::invalid("document.statement", "must be an array of statements."));
    };
    if list.len() > MAX_STATEMENTS {
        return Err(SoatError::invalid("document.statement", format!("at most {MAX_STATEMENTS} statements.")));
    }
    list.iter().enumerate().try_for_each(|(i, s)| validate_statement(s, &format!("document.statement[{i}]")))
}

fn validate_statement(s: &Value, at: &str) -> Result<(), SoatError> {
    let Some(obj) = s.as_object() else { return Err(SoatError::invalid(at, "must be an object.")) };
    if let Some(k) = obj.keys().find(|k| !["effect", "action", "resource", "condition"].contains(&k.as_str())) {
        return Err(SoatError::invalid(format!("{at}.{k}"), "is not a field of a statement."));
    }
    if !matches!(obj.get("effect").and_then(Value::as_str), Some("Allow" | "Deny")) {
        return Err(SoatError::invalid(format!("{at}.effect"), "must be Allow or Deny."));
    }
    let actions = pattern_list(obj.get("action"), &format!("{at}.action"), true)?;
    for (i, a) in actions.iter().enumerate() {
        if !valid_action(a) {
            return Err(SoatError::invalid(format!("{at}.action[{i}]"), format!("{a:?} is not *, module:* or module:Operation of a known module.")));
        }
    }
    if obj.contains_key("resource") {
        for (i, r) in pattern_list(obj.get("resource"), &format!("{at}.resource"), true)?.iter().enumerate() {
            if !(*r == "*" || (r.starts_with("srn:") && r.splitn(4, ':').count() == 4 && !r.split(':').any(str::is_empty))) {
                return Err(SoatError::invalid(format!("{at}.resource[{i}]"), format!("{r:?} is not * or srn:<project>:<type>:<id>.")));
            }
        }
    }
    if let Some(c) = obj.get("condition") {
        validate_condition(c, &format!("{at}.condition"))?;
    }
    Ok(())
}

fn pattern_list<'a>(v: Option<&'a Value>, at: &str, non_empty: bool) -> Result<Vec<&'a str>, SoatError> {
    let Some(items) = v.and_then(Value::as_array) else { return Err(SoatError::invalid(at, "must be an array of strings.")) };
    if (non_empty && items.is_empty()) || items.len() > MAX_ENTRIES {
        return Err(SoatError::invalid(at, format!("must hold 1 to {MAX_ENTRIES} strings.")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str()
                .filter(|s| !s.is_empty() && s.len() <= MAX_PATTERN)
                .ok_or_else(|| SoatError::invalid(format!("{at}[{i}]"), format!("must be a string of 1 to {MAX_PATTERN} bytes.")))
        })
        .collect()
}

fn valid_action(a: &str) -> bool {
    if a == "*" {
        return true;
    }
    let Some((module, op)) = a.split_once(':') else { return false };
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    word(module) && (op == "*" || word(op)) && known_module(module)
}

fn validate_condition(c: &Value, at: &str) -> Result<(), SoatError> {
    let Some(ops) = c.as_object() else { return Err(SoatError::invalid(at, "must be an object.")) };
    for (op, block) in ops {
        if !OPERATORS.contains(&op.as_str()) {
            return Err(SoatError::invalid(format!("{at}.{op}"), format!("is not an operator; one of {}.", OPERATORS.join(", "))));
        }
        let Some(block) = block.as_object() else { return Err(SoatError::invalid(format!("{at}.{op}"), "must be an object.")) };
        if let Some((k, _)) = block.iter().find(|(k, v)| !k.starts_with("soat:") || !v.is_string()) {
            return Err(SoatError::invalid(format!("{at}.{op}.{k}"), "a key starting with soat: and a string value."));
        }
    }
    Ok(())
}

fn check_text(field: &str, v: &Option<String>) -> Result<(), SoatError> {
    match v {
        Some(s) if s.chars().count() > 1000 => Err(SoatError::invalid(field, "at most 1000 characters.")),
        _ => Ok(()),
    }
}

fn check_body(b: &PolicyBody) -> Result<(), SoatError> {
    check_text("name", &b.name)?;
    check_text("description", &b.description)?;
    validate(&b.document)
}

/// The API's shape of a policy.
pub fn view(p: &PolicyRecord) -> Value {
    json!({
        "id": p.id, "name": p.name, "description": p.description, "document": p.document,
        "created_at": p.created_at, "updated_at": p.updated_at,
    })
}

/// Who may manage policies: an account's admins (`users::require_admin`); the account.
pub fn admin(p: &Principal) -> Result<String, SoatError> {
    require_admin(p)?;
    Ok(p.account_id.clone())
}

pub fn create(records: &Records, account_id: &str, b: PolicyBody) -> Result<PolicyRecord, SoatError> {
    check_body(&b)?;
    let now = crate::clock::now_rfc3339();
    let record = PolicyRecord {
        id: format!("{POLICY_PREFIX}{}", random_base62(16)),
        account_id: account_id.to_owned(),
        name: b.name,
        description: b.description,
        document: b.document,
        created_at: now.clone(),
        updated_at: now,
    };
    records.insert(&record)?;
    Ok(record)
}

/// The account's policies, oldest first; with `user_id`, only those attached to it.
pub fn list(records: &Records, account_id: &str, user_id: Option<&str>) -> Result<Vec<PolicyRecord>, SoatError> {
    let mut all = records.list::<PolicyRecord>(account_id)?;
    if let Some(u) = user_id {
        let ids = records.get::<UserRecord>(account_id, u)?.map(|u| u.policy_ids).unwrap_or_default();
        all.retain(|x| ids.contains(&x.id));
    }
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn get(records: &Records, account_id: &str, id: &str) -> Result<PolicyRecord, SoatError> {
    records.get::<PolicyRecord>(account_id, id)?.ok_or_else(|| SoatError::not_found("policy", id))
}

pub fn update(records: &Records, account_id: &str, id: &str, b: PolicyBody) -> Result<PolicyRecord, SoatError> {
    check_body(&b)?;
    let now = crate::clock::now_rfc3339();
    let changed = records.update::<PolicyRecord, PolicyRecord>(account_id, id, |r| {
        r.name = b.name.or(r.name.take());
        r.description = b.description.or(r.description.take());
        r.document = b.document;
        r.updated_at = now;
        crate::store::owned::Change::Write(r.clone())
    })?;
    changed.ok_or_else(|| SoatError::not_found("policy", id))
}

pub fn delete(records: &Records, account_id: &str, id: &str) -> Result<(), SoatError> {
    if records.remove::<PolicyRecord>(account_id, id)? {
        return Ok(());
    }
    Err(SoatError::not_found("policy", id))
}

/// The policies a request's caller is held to, when any (see [`ceiling`]): what the
/// users it makes or re-policies get (`agents::users`).
pub fn held_to(records: &Records, p: &Principal) -> Result<Option<Vec<String>>, SoatError> {
    Ok(attached(records, p)?.filter(|ids| !ids.is_empty()))
}

/// Whether `asked` is exactly `own` (as sets).
pub fn same_set(own: &[String], asked: &[String]) -> bool {
    let (mut x, mut y) = (own.to_vec(), asked.to_vec());
    x.sort();
    x.dedup();
    y.sort();
    y.dedup();
    x == y
}

/// The policies a scope's caller is held to, when any: a key makes keys no freer than
/// itself (SOAT bounds a key by its user's policies; Quarry's keys have no user), so a
/// caller with policies attached makes and re-policies keys with exactly its own.
pub fn ceiling(records: &Records, scope: &crate::agents::Scope) -> Result<Option<Vec<String>>, StoreError> {
    use crate::agents::KeyRef;
    let ids = match &scope.key {
        KeyRef::Project { id } | KeyRef::Unscoped { id } => records.get::<ProjectKeyRecord>(&scope.account_id, id)?.map(|k| k.policy_ids),
        KeyRef::Account { prefix } if prefix.starts_with(super::users::USER_ID_PREFIX) => {
            records.get::<UserRecord>(&scope.account_id, prefix)?.filter(|u| u.role != "admin").map(|u| u.policy_ids)
        }
        KeyRef::Account { .. } => None,
    };
    Ok(ids.filter(|ids| !ids.is_empty()))
}

/// The policy ids a key made or changed by `scope` gets, when `asked` (`None`: left
/// as they are on an update, none on a create unless the caller is held to some).
pub fn for_key(records: &Records, scope: &crate::agents::Scope, asked: Option<&[String]>) -> Result<Option<Vec<String>>, SoatError> {
    match (ceiling(records, scope)?, asked) {
        (None, Some(a)) => check_ids(records, &scope.account_id, a).map(|()| Some(a.to_vec())),
        (None, None) => Ok(None),
        (Some(own), None) => Ok(Some(own)),
        (Some(own), Some(a)) => {
            if !same_set(&own, a) {
                return Err(SoatError::Forbidden(format!(
                    "This credential is held to the policies {}; the keys it makes or changes carry exactly those.",
                    own.join(", ")
                )));
            }
            Ok(Some(own))
        }
    }
}

/// The ids as a key may name them: each a policy of the account (400 `POLICY_NOT_FOUND`).
pub fn check_ids(records: &Records, account_id: &str, ids: &[String]) -> Result<(), SoatError> {
    if ids.len() > MAX_ENTRIES {
        return Err(SoatError::invalid("policy_ids", format!("at most {MAX_ENTRIES}.")));
    }
    for id in ids {
        if records.get::<PolicyRecord>(account_id, id)?.is_none() {
            return Err(SoatError::Reference { code: Code::PolicyNotFound, kind: "policy", field: "policy_ids", id: id.clone() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
