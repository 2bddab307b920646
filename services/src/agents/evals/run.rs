//! Eval runs, executed by this server (evaluations.yaml `startEvalRun`): each item of
//! the eval's dataset runs through the agent version under test as a real generation
//! (`generation::service::start`, pinned to that version, its idempotency key the run
//! and the item, so a restart finds the same generation rather than a second), then
//! is scored by the run's frozen scorers, the judge through a completion
//! (`agents::chats`). A run's record and each item's result are in the store as they
//! happen: after `kill -9`, [`resume`] takes over every unsettled run at shard start
//! and runs only the items without a result. Nothing a client sends sets a run's
//! `status` or `passed`; only [`EvalRunRecord::clears`]'s `executed` runs gate a release.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::datasets::{self, not_found, store};
use super::record::{DatasetItemRecord, EvalResultRecord, ScoreOut};
use super::scorers::{self, Answer, Scorer};
use crate::agents::agent::record::{AgentRecord, EvalRunRecord, RunStatus, VersionRecord};
use crate::agents::chats::{self, CompletionIn, MessageIn, Prepared};
use crate::agents::generation::record::{GenerationRecord, BOOT};
use crate::agents::generation::request::GenerateBody;
use crate::agents::generation::run::Host;
use crate::agents::generation::service::{self as generation, StartArgs, Started};
use crate::agents::generation::Status;
use crate::agents::Scope;
use crate::error::{ApiError, Code, ErrorCode};
use crate::llm::request::{Block, ChatRequest, Message, Role};
use crate::runtime::blocking;
use crate::store::owned::Change;
use crate::store::webhooks::Raised;
use crate::store::{Records, StoreError};

pub const RUN_PREFIX: &str = "evrun_";
pub const RESULT_PREFIX: &str = "evres_";
/// The most items a `wait: true` run takes (SOAT's cap).
pub const MAX_WAIT_ITEMS: usize = 25;
/// The items of one run in flight at once.
pub const CONCURRENCY: usize = 4;

/// `startEvalRun`'s body; `status` and `passed` are not fields of it (400).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    #[serde(default)]
    pub wait: Option<bool>,
    #[serde(default)]
    pub agent_version: Option<i64>,
    #[serde(default)]
    pub baseline_run_id: Option<String>,
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::SoatValidation, message).at(field.to_owned())
}

fn now() -> String {
    crate::clock::now_rfc3339()
}

/// The result's id for one run and item: the same whenever it is computed.
pub fn result_id(run_id: &str, item_id: &str) -> String {
    let mut h = Sha256::new();
    for part in [run_id, item_id] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let d = h.finalize();
    format!("{RESULT_PREFIX}{}", d[..12].iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// The run record a start writes, checked: the eval runnable, its dataset not empty
/// (at most [`MAX_WAIT_ITEMS`] when waited for), the version archived, the baseline
/// a settled run of the same eval.
fn prepare(records: &Records, scope: &Scope, eval_id: &str, body: &StartRun) -> Result<EvalRunRecord, ApiError> {
    let eval = super::defs::get(records, scope, eval_id)?;
    let scope = scope.within(&eval.project_id);
    let Some(dataset_id) = &eval.dataset_id else {
        return Err(invalid("dataset_id", "The eval names no dataset; give it a dataset_id and scorers (PUT /api/v1/evals/{eval_id}) first."));
    };
    if eval.scorers.is_empty() {
        return Err(invalid("scorers", "The eval has no scorers; give it some (PUT /api/v1/evals/{eval_id}) first."));
    }
    let items =
        datasets::items(records, &scope, dataset_id).map_err(|_| invalid("dataset_id", format!("The eval's dataset {dataset_id} is gone.")))?;
    if items.is_empty() {
        return Err(invalid("dataset_id", format!("The dataset {dataset_id} has no items to run.")));
    }
    if body.wait == Some(true) && items.len() > MAX_WAIT_ITEMS {
        return Err(invalid(
            "wait",
            format!("A run with wait: true takes at most {MAX_WAIT_ITEMS} items; the dataset has {}. Start it without wait.", items.len()),
        ));
    }
    let agent: Option<AgentRecord> = records.agent(&scope.account_id, &eval.agent_id).map_err(store)?;
    let agent = agent
        .filter(|a| a.project_id == eval.project_id)
        .ok_or_else(|| invalid("agent_id", format!("The eval's agent {} is gone.", eval.agent_id)))?;
    let version = match body.agent_version {
        Some(v) => {
            let v = u64::try_from(v).ok().filter(|v| *v >= 1).ok_or_else(|| invalid("agent_version", "agent_version must be at least 1."))?;
            let archived = v == agent.version || records.agent_version::<VersionRecord>(&agent.id, v).map_err(store)?.is_some();
            if !archived {
                return Err(invalid("agent_version", format!("agent_version: agent {} has no version {v}.", agent.id)));
            }
            v
        }
        None => agent.active_release.as_ref().map_or(agent.version, |r| r.stable_version),
    };
    if let Some(b) = &body.baseline_run_id {
        let found: Option<EvalRunRecord> = records.get(&scope.account_id, b).map_err(store)?;
        if !found.is_some_and(|r| r.eval_id == eval.id && r.status.terminal()) {
            return Err(invalid("baseline_run_id", format!("baseline_run_id: {b} is not a finished run of eval {}.", eval.id)));
        }
    }
    Ok(EvalRunRecord {
        id: format!("{RUN_PREFIX}{}", crate::ids::random_base62(16)),
        account_id: scope.account_id.clone(),
        project_id: eval.project_id.clone(),
        eval_id: eval.id.clone(),
        agent_version: version,
        status: RunStatus::Queued,
        passed: None,
        created_at: now(),
        executed: true,
        agent_id: agent.id,
        baseline_run_id: body.baseline_run_id.clone(),
        aggregate_scores: None,
        item_count: items.len() as u64,
        completed_count: 0,
        errored_count: 0,
        started_at: None,
        finished_at: None,
        item_ids: items.into_iter().map(|i| i.id).collect(),
        scorers: eval.scorers,
        pass_threshold: eval.pass_threshold,
        started_by: Some(scope.principal_id().to_owned()),
        lease: Some(BOOT.clone()),
        error: None,
    })
}

/// Starts a run: recorded `queued`, then executed on this shard in the background
/// (or before answering, with `wait: true`).
pub async fn start(host: Rc<Host>, scope: &Scope, eval_id: &str, body: StartRun) -> Result<EvalRunRecord, ApiError> {
    let records = host.agents.records.clone();
    let wait = body.wait == Some(true);
    let (r, s, e) = (records.clone(), scope.clone(), eval_id.to_owned());
    let run = blocking(move || {
        let run = prepare(&r, &s, &e, &body)?;
        r.insert(&run).map_err(store)?;
        Ok::<_, ApiError>(run)
    })
    .await?;
    if !wait {
        glommio::spawn_local(execute(host, run.clone())).detach();
        return Ok(run);
    }
    execute(host, run.clone()).await;
    let (r, a, id) = (records, run.account_id.clone(), run.id.clone());
    blocking(move || r.get::<EvalRunRecord>(&a, &id)).await.map_err(store)?.ok_or_else(|| not_found("eval run", &run.id))
}

/// Runs what is left of `run` and settles it. Takes the run for this boot first; a
/// run already settled (canceled, say) is left alone.
pub async fn execute(host: Rc<Host>, run: EvalRunRecord) {
    let (r, a, id) = (host.agents.records.clone(), run.account_id.clone(), run.id.clone());
    let taken = blocking(move || {
        r.update(&a, &id, |x: &mut EvalRunRecord| {
            if x.status.terminal() {
                return Change::Keep(None);
            }
            if x.status == RunStatus::Queued {
                x.status = RunStatus::Running;
                x.started_at = Some(now());
            }
            x.lease = Some(BOOT.clone());
            Change::Write(Some(x.clone()))
        })
    })
    .await;
    let run = match taken {
        Ok(Some(Some(run))) => run,
        Ok(_) => return,
        Err(e) => return tracing::error!(run = %run.id, error = %e, "taking an eval run failed"),
    };
    let run = &run;
    futures_util::stream::iter(run.item_ids.clone())
        .for_each_concurrent(CONCURRENCY, |item_id| {
            let host = host.clone();
            async move { one_item(&host, run, &item_id).await }
        })
        .await;
    settle(&host, run).await;
}

/// One item: skipped when its result is recorded or the run has ended; else run,
/// scored and recorded (once: the result's id is the run's and the item's).
async fn one_item(host: &Rc<Host>, run: &EvalRunRecord, item_id: &str) {
    let records = host.agents.records.clone();
    let (r, a, run_id, rid) = (records.clone(), run.account_id.clone(), run.id.clone(), result_id(&run.id, item_id));
    let looked = blocking(move || -> Result<(bool, Option<RunStatus>), StoreError> {
        let done = r.get::<EvalResultRecord>(&a, &rid)?.is_some();
        Ok((done, r.get::<EvalRunRecord>(&a, &run_id)?.map(|x| x.status)))
    })
    .await;
    match looked {
        Ok((false, Some(RunStatus::Running))) => {}
        Ok(_) => return,
        Err(e) => return tracing::error!(run = %run.id, error = %e, "reading an eval run failed"),
    }
    let item: Option<DatasetItemRecord> = records.get(&run.account_id, item_id).ok().flatten();
    let result = match item {
        Some(item) => match run_item(host, run, &item).await {
            Some(result) => result,
            // The run ended while the item waited for a slot: nothing to record.
            None => return,
        },
        None => result_of(
            run,
            item_id,
            None,
            Outcome::Errored { generation_id: None, output: None, why: "The dataset item was deleted before it ran.".into() },
        ),
    };
    let r = records.clone();
    if let Err(e) = blocking(move || record(&r, &result)).await {
        tracing::error!(run = %run.id, error = %e, "recording an eval result failed");
    }
}

enum Outcome {
    Scored {
        generation_id: String,
        output: String,
        scores: Vec<ScoreOut>,
    },
    Errored {
        generation_id: Option<String>,
        output: Option<String>,
        why: String,
    },
    /// The run ended (canceled) before the item could start.
    Stopped,
}

fn result_of(run: &EvalRunRecord, item_id: &str, item: Option<&DatasetItemRecord>, outcome: Outcome) -> EvalResultRecord {
    let (generation_id, output, scores, error) = match outcome {
        Outcome::Scored { generation_id, output, scores } => (Some(generation_id), Some(output), scores, None),
        Outcome::Errored { generation_id, output, why } => (generation_id, output, Vec::new(), Some(why)),
        Outcome::Stopped => unreachable!("a stopped item records nothing"),
    };
    EvalResultRecord {
        id: result_id(&run.id, item_id),
        account_id: run.account_id.clone(),
        project_id: run.project_id.clone(),
        eval_run_id: run.id.clone(),
        dataset_item_id: Some(item_id.to_owned()),
        input: item.map(|i| i.input.clone()).unwrap_or_default(),
        expected_output: item.and_then(|i| i.expected_output.clone()),
        generation_id,
        output,
        passed: error.is_none() && scores.iter().all(|s| s.passed),
        scores,
        error,
        created_at: now(),
    }
}

/// The item's generation on the version under test, rested, and its scores.
async fn run_item(host: &Rc<Host>, run: &EvalRunRecord, item: &DatasetItemRecord) -> Option<EvalResultRecord> {
    match generate_and_score(host, run, item).await {
        Outcome::Stopped => None,
        outcome => Some(result_of(run, &item.id, Some(item), outcome)),
    }
}

/// How long an item the account's running cap refused waits before it asks again.
const CAP_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

/// Starts the item's generation; one the account's running cap refuses is asked again
/// once a slot may be free (the cap is the server's, not the item's failing), until
/// the run ends. `None`: the run ended first.
async fn start_item(host: &Rc<Host>, run: &EvalRunRecord, args: StartArgs) -> Option<Result<GenerationRecord, ApiError>> {
    loop {
        match generation::start(host.clone(), args.clone()).await {
            Ok(Started::New { record, .. }) | Ok(Started::Replay(record)) => return Some(Ok(record)),
            Err(e) if e.code == Code::TooManyConcurrent => {
                glommio::timer::sleep(e.retry_after.map_or(CAP_RETRY, |s| CAP_RETRY.min(std::time::Duration::from_secs(s)))).await;
                let (r, a, id) = (host.agents.records.clone(), run.account_id.clone(), run.id.clone());
                let status = blocking(move || r.get::<EvalRunRecord>(&a, &id)).await.ok().flatten().map(|x| x.status);
                if status != Some(RunStatus::Running) {
                    return None;
                }
            }
            Err(e) => return Some(Err(e)),
        }
    }
}

async fn generate_and_score(host: &Rc<Host>, run: &EvalRunRecord, item: &DatasetItemRecord) -> Outcome {
    let scope = Scope::of_run(&run.account_id, &run.project_id, run.started_by.as_deref());
    let errored = |generation_id: Option<String>, output: Option<String>, why: String| Outcome::Errored { generation_id, output, why };
    let raw = json!({ "messages": item.input });
    let body: GenerateBody = match serde_json::from_value(raw.clone()) {
        Ok(b) => b,
        Err(e) => return errored(None, None, format!("The item's input is not a generation's messages: {e}.")),
    };
    // The fingerprint binds the run and the version too: no request a client could
    // send matches it, so a key a client claimed first fails the item, never scores it.
    let fingerprint = generation::fingerprint(&run.agent_id, &json!({ "item": raw, "eval_run_id": run.id, "agent_version": run.agent_version }));
    let key = format!("{}:{}", run.id, item.id);
    let args = StartArgs {
        scope: scope.clone(),
        agent_id: run.agent_id.clone(),
        body,
        idempotency: Some((key, fingerprint)),
        initiator: None,
        version: Some(run.agent_version),
    };
    let g = match start_item(host, run, args).await {
        None => return Outcome::Stopped,
        Some(Ok(record)) => record,
        Some(Err(e)) => return errored(None, None, format!("The item's generation could not start: {}", e.message)),
    };
    let g: GenerationRecord = match crate::agents::conversation::rested(host, &g, 0).await {
        Ok(g) => g,
        Err(e) => return errored(Some(g.id.clone()), None, e.message),
    };
    if g.agent_version != Some(run.agent_version) {
        return errored(Some(g.id.clone()), None, "The item's generation ran another agent version.".into());
    }
    let output = g.state.output.as_ref();
    if g.status() != Status::Completed {
        let why = match &g.error {
            Some(e) => format!("The generation ended {}: {}", g.status().as_str(), e.message),
            None => format!("The generation ended {} (a pause for tool outputs is not answered in a run).", g.status().as_str()),
        };
        return errored(Some(g.id.clone()), output.map(|o| o.content.clone()), why);
    }
    let text = output.map(|o| o.content.clone()).unwrap_or_default();
    let answer = Answer {
        text: &text,
        object: output.and_then(|o| o.object.as_ref()),
        expected: item.expected_output.as_deref(),
        input: &item.input,
        metadata: item.metadata.as_ref(),
    };
    let schema = g.state.config.output_schema.as_ref();
    let mut scores = Vec::with_capacity(run.scorers.len());
    for s in &run.scorers {
        match scorers::score(s, &answer, schema) {
            Some(out) => scores.push(out),
            None => match asked(host, &scope, run, s, item, &answer).await {
                Ok(out) => scores.push(out),
                Err(why) => return errored(Some(g.id.clone()), Some(text.clone()), why),
            },
        }
    }
    Outcome::Scored { generation_id: g.id.clone(), output: text, scores }
}

/// The outcome of a scorer that asks: the judge, the embedder or a tool. A call that
/// fails errs the item, never scores 0.
async fn asked(
    host: &Rc<Host>,
    scope: &Scope,
    run: &EvalRunRecord,
    s: &Scorer,
    item: &DatasetItemRecord,
    a: &Answer<'_>,
) -> Result<ScoreOut, String> {
    match s {
        Scorer::LlmJudge { .. } => judge(host, scope, s, item, a.text).await,
        Scorer::EmbeddingSimilarity { pass_threshold } => similarity(host, a, *pass_threshold).await,
        Scorer::Tool { .. } => by_tool(host, scope, run, s, item, a).await,
        _ => unreachable!("the other scorers are deterministic"),
    }
}

/// `embedding_similarity`: the output and the reference embedded by the server's
/// default embedder (the one its collections and `/api/v1/embeddings` use), as
/// passages, and their cosine.
async fn similarity(host: &Rc<Host>, a: &Answer<'_>, pass_threshold: f64) -> Result<ScoreOut, String> {
    let expected = a.expected.unwrap_or_default();
    let req =
        crate::agents::embeddings::EmbedIn { input: None, inputs: Some(vec![a.text.to_owned(), expected.to_owned()]), model: None, input_type: None };
    let e = crate::agents::embeddings::embed(req, host.agents.search.embedders(), &host.embedders)
        .await
        .map_err(|e| format!("The embedder could not score the item: {e}"))?;
    match e.embeddings.as_deref() {
        Some([output, reference]) => Ok(scorers::similar(scorers::cosine(output, reference), pass_threshold)),
        _ => Err("The embedder answered no pair of vectors.".into()),
    }
}

/// A `tool` scorer: its tool called with the item's variables (`input`, `output`,
/// `object`, `expected`, `item.metadata`) over the scorer's `preset_parameters`, in
/// the eval's project, as the run's starter; its answer read as a verdict.
async fn by_tool(
    host: &Rc<Host>,
    scope: &Scope,
    run: &EvalRunRecord,
    s: &Scorer,
    item: &DatasetItemRecord,
    a: &Answer<'_>,
) -> Result<ScoreOut, String> {
    let Scorer::Tool { name, tool_id, action, preset_parameters, pass_threshold } = s else { unreachable!("a tool scorer") };
    let mut input = preset_parameters.clone().unwrap_or_default();
    input.insert("input".into(), Value::Array(item.input.clone()));
    input.insert("output".into(), Value::from(a.text));
    input.insert("object".into(), a.object.cloned().unwrap_or(Value::Null));
    input.insert("expected".into(), a.expected.map_or(Value::Null, Value::from));
    input.insert("item".into(), json!({"id": item.id, "metadata": item.metadata}));
    let agents = &host.agents;
    let (r, account) = (agents.records.clone(), run.account_id.clone());
    let plan = blocking(move || r.account(&account)).await.map_err(|e| e.to_string())?.map(|a| a.plan).unwrap_or_default();
    let env = crate::agents::tools::call::Env {
        search: &agents.search,
        records: &agents.records,
        embedders: &host.embedders,
        caller: crate::search::Caller { account_id: &run.account_id, plan: agents.plan(&plan), reach: scope.reach() },
        timeouts: crate::agents::tools::outbound::Timeouts::default(),
    };
    let call = crate::agents::tools::call::CallInput {
        action: action.clone(),
        input,
        context: BTreeMap::new(),
        idempotency_key: Some(format!("{}:{}:{name}", run.id, item.id)),
    };
    let answer =
        agents.tools.call(&env, scope, tool_id, call).await.map_err(|e| format!("The scorer tool {tool_id} of {name} failed: {}", e.message()))?;
    scorers::tool_verdict(name, &answer, *pass_threshold)
}

/// The judge's verdict: the rendered prompt alone, no tools, through the scorer's
/// provider (and model), else the project's default model route.
async fn judge(host: &Rc<Host>, scope: &Scope, s: &Scorer, item: &DatasetItemRecord, output: &str) -> Result<ScoreOut, String> {
    let Scorer::LlmJudge { prompt, pass_threshold, ai_provider_id, model } = s else { unreachable!("only the judge has no deterministic score") };
    let text = scorers::render(prompt, &item.input, output, item.expected_output.as_deref());
    let records = &host.agents.records;
    let prepared = match ai_provider_id {
        Some(p) => {
            let message = MessageIn { role: "user".into(), content: Some(text), document_id: None };
            let req = CompletionIn {
                ai_provider_id: Some(p.clone()),
                chat_id: None,
                model: model.clone(),
                instructions: None,
                messages: vec![message],
                stream: None,
            };
            chats::prepare(records, scope, req).map_err(|e| format!("The judge could not be called: {e}"))?
        }
        None => {
            let (targets, retry_on) = chats::route_targets(records, scope).map_err(|e| format!("The judge could not be called: {e}"))?;
            let request = ChatRequest { messages: vec![Message { role: Role::User, content: vec![Block::Text(text)] }], ..ChatRequest::default() };
            Prepared { scope: scope.clone(), targets, retry_on, request, stream: false }
        }
    };
    let up = host.agents.upstreams();
    let (_, completion) = chats::complete(&up, &prepared).await.map_err(|e| format!("The judge's call failed: {}", e.message()))?;
    scorers::verdict(&completion.output.text, *pass_threshold)
}

/// Records a result once, and counts it on its run.
fn record(records: &Records, result: &EvalResultRecord) -> Result<(), StoreError> {
    match records.insert(result) {
        Ok(()) => {}
        Err(StoreError::Conflict { .. }) => return Ok(()),
        Err(e) => return Err(e),
    }
    records.update(&result.account_id, &result.eval_run_id, |x: &mut EvalRunRecord| {
        match result.error {
            Some(_) => x.errored_count += 1,
            None => x.completed_count += 1,
        }
        Change::Write(())
    })?;
    Ok(())
}

/// The run's results, oldest first.
pub fn results_of(records: &Records, account_id: &str, run_id: &str) -> Result<Vec<EvalResultRecord>, StoreError> {
    let mut all: Vec<EvalResultRecord> = records.list(account_id)?.into_iter().filter(|r: &EvalResultRecord| r.eval_run_id == run_id).collect();
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    Ok(all)
}

pub fn remove_results(records: &Records, account_id: &str, run_id: &str) -> Result<(), ApiError> {
    for r in results_of(records, account_id, run_id).map_err(store)? {
        records.remove::<EvalResultRecord>(account_id, &r.id).map_err(store)?;
    }
    Ok(())
}

/// Per-scorer mean and pass rate, the run's pass rate, over the scored results.
fn rollup(results: &[&EvalResultRecord]) -> (BTreeMap<String, (f64, f64)>, Option<f64>) {
    let scored: Vec<&&EvalResultRecord> = results.iter().filter(|r| r.error.is_none()).collect();
    let mut by: BTreeMap<String, Vec<&ScoreOut>> = BTreeMap::new();
    for r in &scored {
        for s in &r.scores {
            by.entry(s.scorer.clone()).or_default().push(s);
        }
    }
    let scorers = by
        .into_iter()
        .map(|(name, v)| {
            let n = v.len() as f64;
            (name, (v.iter().map(|s| s.score).sum::<f64>() / n, v.iter().filter(|s| s.passed).count() as f64 / n))
        })
        .collect();
    let rate = (!scored.is_empty()).then(|| scored.iter().filter(|r| r.passed).count() as f64 / scored.len() as f64);
    (scorers, rate)
}

/// The results that were scored and still name their item.
fn comparable(rs: &[EvalResultRecord]) -> Vec<&EvalResultRecord> {
    rs.iter().filter(|r| r.error.is_none() && r.dataset_item_id.is_some()).collect()
}

/// `aggregate_scores`, with the baseline's deltas over the items scored in both runs.
fn aggregate(results: &[EvalResultRecord], baseline: Option<(&str, &[EvalResultRecord])>) -> (Value, Option<f64>) {
    let all: Vec<&EvalResultRecord> = results.iter().collect();
    let (scorers, rate) = rollup(&all);
    let mut out = json!({
        "scorers": scorers.iter().map(|(k, (mean, pass))| (k.clone(), json!({"mean": mean, "pass_rate": pass}))).collect::<serde_json::Map<_, _>>(),
        "pass_rate": rate,
        "scored_item_count": results.iter().filter(|r| r.error.is_none()).count(),
    });
    if let Some((run_id, base)) = baseline {
        let key = |r: &&EvalResultRecord| r.dataset_item_id.clone();
        let (here, there) = (comparable(results), comparable(base));
        let there_ids: Vec<Option<String>> = there.iter().map(key).collect();
        let here_ids: Vec<Option<String>> = here.iter().map(key).collect();
        let both_here: Vec<&EvalResultRecord> = here.iter().copied().filter(|r| there_ids.contains(&r.dataset_item_id)).collect();
        let both_there: Vec<&EvalResultRecord> = there.iter().copied().filter(|r| here_ids.contains(&r.dataset_item_id)).collect();
        let ((s_here, r_here), (s_there, r_there)) = (rollup(&both_here), rollup(&both_there));
        let deltas: serde_json::Map<String, Value> = s_here
            .iter()
            .filter_map(|(k, (m, p))| s_there.get(k).map(|(bm, bp)| (k.clone(), json!({"mean_delta": m - bm, "pass_rate_delta": p - bp}))))
            .collect();
        out["baseline"] = json!({
            "run_id": run_id,
            "compared_item_count": both_here.len(),
            "added_item_count": here.len() - both_here.len(),
            "removed_item_count": there.len() - both_there.len(),
            "pass_rate_delta": r_here.zip(r_there).map(|(a, b)| a - b),
            "scorers": deltas,
        });
    }
    (out, rate)
}

/// Settles a run still running: `completed` with its aggregate and verdict (the pass
/// rate against the eval's threshold; `null` without one), or `failed` when some item
/// has no result (a store write failed).
async fn settle(host: &Rc<Host>, run: &EvalRunRecord) {
    let (r, run) = (host.agents.records.clone(), run.clone());
    let id = run.id.clone();
    let settled = blocking(move || -> Result<(), StoreError> {
        let results = results_of(&r, &run.account_id, &run.id)?;
        let base = match &run.baseline_run_id {
            Some(b) => Some((b.clone(), results_of(&r, &run.account_id, b)?)),
            None => None,
        };
        let (aggregate, rate) = aggregate(&results, base.as_ref().map(|(b, rs)| (b.as_str(), rs.as_slice())));
        let errored = results.iter().filter(|x| x.error.is_some()).count() as u64;
        let missing = run.item_ids.len().saturating_sub(results.len());
        let agent_gone = r.agent::<AgentRecord>(&run.account_id, &run.agent_id)?.is_none();
        r.update_raising(&run.account_id, &run.project_id, &run.id, |x: &mut EvalRunRecord| {
            if x.status != RunStatus::Running {
                return Change::Keep(((), Vec::new()));
            }
            x.errored_count = errored;
            x.completed_count = results.len() as u64 - errored;
            x.finished_at = Some(now());
            let failed = if missing > 0 {
                Some(format!("{missing} items have no recorded result."))
            } else if agent_gone {
                Some(format!("The agent {} under test was deleted while the run ran; its results judge no version.", x.agent_id))
            } else {
                None
            };
            if let Some(why) = failed {
                x.status = RunStatus::Failed;
                x.error = Some(why);
            } else {
                x.status = RunStatus::Completed;
                x.passed = x.pass_threshold.map(|t| rate.is_some_and(|rate| rate >= t));
                x.aggregate_scores = Some(aggregate);
            }
            Change::Write(((), vec![raised(x)]))
        })?;
        Ok(())
    })
    .await;
    if let Err(e) = settled {
        tracing::error!(run = %id, error = %e, "settling an eval run failed");
    }
}

/// The event a settled run raises (evaluations.md): `eval_run.completed` with its
/// verdict and aggregates inline (a gate that must call again to learn its answer can
/// fail open), or `eval_run.failed`.
fn raised(x: &EvalRunRecord) -> Raised {
    let what = if x.status == RunStatus::Completed { "completed" } else { "failed" };
    let mut data = json!({"eval_id": x.eval_id, "eval_run_id": x.id, "agent_id": x.agent_id, "agent_version": x.agent_version, "passed": x.passed, "aggregate_scores": x.aggregate_scores});
    if let Some(e) = &x.error {
        data["error"] = json!({"code": "EVAL_RUN_FAILED", "message": e});
    }
    Raised { event_type: format!("eval_run.{what}"), resource_type: "eval_run", resource_id: x.id.clone(), data }
}

/// The run `run_id` of eval `eval_id` the scope sees, or 404.
pub fn get(records: &Records, scope: &Scope, eval_id: &str, run_id: &str) -> Result<EvalRunRecord, ApiError> {
    let eval = super::defs::get(records, scope, eval_id)?;
    let run: Option<EvalRunRecord> = records.get(&scope.account_id, run_id).map_err(store)?;
    run.filter(|r| r.eval_id == eval.id).ok_or_else(|| not_found("eval run", run_id))
}

/// The eval's runs, newest first.
pub fn list(records: &Records, scope: &Scope, eval_id: &str) -> Result<Vec<EvalRunRecord>, ApiError> {
    let eval = super::defs::get(records, scope, eval_id)?;
    let mut runs: Vec<EvalRunRecord> = records.list(&scope.account_id).map_err(store)?;
    runs.retain(|r| r.eval_id == eval.id);
    runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    Ok(runs)
}

pub fn results(records: &Records, scope: &Scope, eval_id: &str, run_id: &str) -> Result<Vec<EvalResultRecord>, ApiError> {
    let run = get(records, scope, eval_id, run_id)?;
    results_of(records, &scope.account_id, &run.id).map_err(store)
}

/// `cancelEvalRun`: a queued or running run ends `canceled` (400 once it has ended);
/// items in flight finish, and nothing more starts.
pub fn cancel(records: &Records, scope: &Scope, eval_id: &str, run_id: &str) -> Result<EvalRunRecord, ApiError> {
    let run = get(records, scope, eval_id, run_id)?;
    let results = results_of(records, &scope.account_id, &run.id).map_err(store)?;
    let errored = results.iter().filter(|x| x.error.is_some()).count() as u64;
    let changed = records
        .update(&scope.account_id, &run.id, |x: &mut EvalRunRecord| {
            if x.status.terminal() {
                let why =
                    format!("Eval run {} has already finished (status {}).", x.id, serde_json::to_value(x.status).expect("a status serializes"));
                return Change::Keep(Err(ApiError::new(Code::SoatValidation, why)));
            }
            x.status = RunStatus::Canceled;
            x.finished_at = Some(now());
            x.errored_count = errored;
            x.completed_count = results.len() as u64 - errored;
            Change::Write(Ok(x.clone()))
        })
        .map_err(store)?;
    changed.ok_or_else(|| not_found("eval run", run_id))?
}

/// The spec's `EvalRun`.
pub fn view(r: &EvalRunRecord) -> Value {
    json!({
        "id": r.id, "eval_id": r.eval_id, "project_id": r.project_id, "agent_version": r.agent_version,
        "status": r.status, "baseline_run_id": r.baseline_run_id, "trigger_id": null,
        "aggregate_scores": r.aggregate_scores, "passed": r.passed, "item_count": r.item_count,
        "completed_count": r.completed_count, "errored_count": r.errored_count,
        "started_at": r.started_at, "finished_at": r.finished_at, "created_at": r.created_at,
    })
}

/// After a restart: each unsettled run another boot held, this shard's share by a
/// hash of its id, executes again from the items without a result.
pub async fn resume(host: Rc<Host>, shard: usize, shards: usize) {
    let (r, cluster) = (host.agents.records.clone(), host.agents.cluster.clone());
    // With shared records, a run a live node holds is that node's (issue 40).
    let (all, live) =
        match blocking(move || -> Result<_, crate::store::StoreError> { Ok((r.all::<EvalRunRecord>()?, cluster.live_boots(&r)?)) }).await {
            Ok(found) => found,
            Err(e) => return tracing::error!(error = %e, "reading eval runs to resume failed"),
        };
    let mine = |r: &EvalRunRecord| crate::agents::generation::recover::mine(&r.id, shard, shards);
    let held = |r: &EvalRunRecord| r.lease.as_ref().is_some_and(|l| l == BOOT.as_str() || live.contains(l));
    for run in all.into_iter().filter(|r| r.executed && !r.status.terminal() && !held(r) && mine(r)) {
        tracing::info!(run = %run.id, "an eval run resumes after a restart");
        glommio::spawn_local(execute(host.clone(), run)).detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(item: &str, passed: bool, error: bool, score: f64) -> EvalResultRecord {
        EvalResultRecord {
            id: result_id("evrun_x", item),
            account_id: "a".into(),
            project_id: "p".into(),
            eval_run_id: "evrun_x".into(),
            dataset_item_id: Some(item.into()),
            input: Vec::new(),
            expected_output: None,
            generation_id: None,
            output: None,
            scores: if error { Vec::new() } else { vec![ScoreOut { scorer: "contains".into(), score, passed, reasoning: None }] },
            passed: passed && !error,
            error: error.then(|| "boom".into()),
            created_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_result_id_is_the_same_for_one_run_and_item_and_differs_otherwise() {
        assert_eq!(result_id("evrun_a", "dsit_1"), result_id("evrun_a", "dsit_1"));
        assert_ne!(result_id("evrun_a", "dsit_1"), result_id("evrun_a", "dsit_2"));
        assert_ne!(result_id("evrun_ad", "sit_1"), result_id("evrun_a", "dsit_1"));
    }

    #[test]
    fn errored_items_are_left_out_of_the_pass_rate_and_the_baseline_compares_the_intersection() {
        let now = [result("i1", true, false, 1.0), result("i2", false, false, 0.0), result("i3", false, true, 0.0), result("i4", true, false, 1.0)];
        let (agg, rate) = aggregate(&now, None);
        assert_eq!(rate, Some(2.0 / 3.0));
        assert_eq!(agg["scored_item_count"], 3);
        assert_eq!(agg["scorers"]["contains"]["pass_rate"], json!(2.0 / 3.0));
        let before = [result("i1", false, false, 0.0), result("i2", false, false, 0.0), result("i5", true, false, 1.0)];
        let (agg, _) = aggregate(&now, Some(("evrun_b", &before)));
        let b = &agg["baseline"];
        assert_eq!(
            (b["compared_item_count"].as_u64(), b["added_item_count"].as_u64(), b["removed_item_count"].as_u64()),
            (Some(2), Some(1), Some(1))
        );
        assert_eq!(b["pass_rate_delta"], json!(0.5));
        let (_, none) = aggregate(&[result("i1", false, true, 0.0)], None);
        assert_eq!(none, None, "nothing scorable");
    }
}
