//! Memory extraction (SOAT v0.28's `knowledge_config.extraction`): after a turn
//! settles `completed`, one model call on the agent's own provider (or the extraction
//! settings' `ai_provider_id` / `model`) reads the turn's transcript and answers a JSON
//! array of atomic facts; each is written into the agent's write store as an entry with
//! `source_type: extraction`, the generation and its conversation as provenance,
//! through the entries' near-duplicate rule (a duplicate is `skipped`). The
//! generation's `extraction` summary counts them.
//!
//! Durable: the step that settles the generation records the extraction `pending`
//! and queues it (`store::generations`' extraction queue) in the same transaction; the
//! run goes on to extract after its readers have their answer, and the summary and the
//! queue's entry go in one transaction. A restart resumes every pending extraction
//! ([`adopt`]); a fact written before the crash is found again as a near-duplicate
//! and skipped, not written twice.
//!
//! On a cluster (issue 40) an extraction is held, like its run, by the boot named in
//! the generation's lease: a live node's are left to it, and every node keeps
//! looking (with the runs' adopt loop) for those whose holder stopped heartbeating,
//! claiming each by compare-and-set on the lease; the summary lands only while the
//! stored lease is still its runner's, so a holder that comes back changes nothing.

use std::rc::Rc;

use super::record::{Block, ExtractionSummary, GenerationRecord, Role, BOOT};
use super::run::Host;
use crate::agents::agent::config::Extraction;
use crate::agents::memory::entries::{self, Action, NewEntry};
use crate::agents::tools::call::Env;
use crate::agents::tools::outbound::Timeouts;
use crate::agents::Scope;
use crate::error::ErrorCode;
use crate::llm::request::{self as llm, ChatRequest};
use crate::runtime::blocking;

/// At most this many facts are taken from one turn (SOAT's bound).
pub const MAX_CANDIDATES: usize = 20;

const INSTRUCTIONS: &str = "Extract discrete, atomic facts from this conversation that are worth remembering long-term.\n\
Skip transient information such as greetings, acknowledgments, and small talk.\n\
Each fact must be a single, self-contained sentence.";

/// Whether `g`'s turn extracts: its agent's write store and `extraction` enabled, and
/// the turn neither streamed nor ran without stored content.
pub fn wanted(g: &GenerationRecord) -> bool {
    let k = g.state.config.knowledge_config.as_ref();
    k.is_some_and(|k| k.extracts()) && !g.state.input.stream
}

/// The extractions under way in this process (by generation id).
static EXTRACTING: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<String>>> = std::sync::LazyLock::new(Default::default);

fn extracting() -> std::sync::MutexGuard<'static, std::collections::HashSet<String>> {
    EXTRACTING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unmarks its extraction when the task ends, however it ends.
struct Extracting(String);

impl Drop for Extracting {
    fn drop(&mut self) {
        extracting().remove(&self.0);
    }
}

/// Runs `g`'s pending extraction on this shard, in the background; `g`'s lease must
/// be this boot's. Marked as under way here before this returns, so a run that
/// spawns it at its settle is never without a mark the adopt loop sees.
pub fn spawn(host: Rc<Host>, g: GenerationRecord) {
    extracting().insert(g.id.clone());
    let mark = Extracting(g.id.clone());
    glommio::spawn_local(async move {
        let _mark = mark;
        run(&host, g).await
    })
    .detach();
}

/// This shard's share of `pending` (the extractions not done) no live boot holds, claimed for
/// this boot and started: at shard start, those the last boot left; on a cluster,
/// once per `node_timeout`, also those of nodes that died. `live` are the boots
/// that still heartbeat (this one among them). How many started.
pub async fn adopt(host: &Rc<Host>, shard: usize, shards: usize, pending: Vec<GenerationRecord>, live: &std::collections::HashSet<String>) -> usize {
    let mut started = 0;
    for g in pending.into_iter().filter(|g| super::recover::mine(&g.id, shard, shards)) {
        let held = g.state.lease.as_ref().is_some_and(|l| {
            if l == BOOT.as_str() {
                extracting().contains(&g.id) || super::run::running_here(&g.id)
            } else {
                live.contains(l)
            }
        });
        if held {
            continue;
        }
        let (records, old) = (host.agents.records.clone(), g.state.lease.clone());
        let (account, id) = (g.account_id.clone(), g.id.clone());
        let claimed = blocking(move || {
            records.claim_extraction::<GenerationRecord>(&account, &id, |stored| {
                let same = stored.state.lease == old;
                stored.state.lease = Some(BOOT.clone());
                same
            })
        })
        .await;
        match claimed {
            Ok(Some(g)) if !extracting().contains(&g.id) => {
                started += 1;
                spawn(host.clone(), g);
            }
            Ok(_) => {}
            Err(e) => tracing::error!(generation = %g.id, error = %e, "taking over a memory extraction failed"),
        }
    }
    started
}

async fn run(host: &Rc<Host>, g: GenerationRecord) {
    let summary = extract(host, &g).await.unwrap_or_else(|error| {
        tracing::warn!(generation = %g.id, %error, "memory extraction failed");
        ExtractionSummary { error: Some(error), ..ExtractionSummary::default() }
    });
    let (records, account, id, lease) = (host.agents.records.clone(), g.account_id.clone(), g.id.clone(), g.state.lease.clone());
    let saved = blocking(move || {
        records.finish_extraction::<GenerationRecord>(&account, &id, |stored| stored.state.lease == lease, |g| g.extraction = Some(summary))
    })
    .await;
    match saved {
        Ok(Some(false)) => tracing::warn!(generation = %g.id, "a memory extraction was taken over by another node; its summary is theirs to record"),
        Ok(_) => {}
        Err(e) => tracing::error!(generation = %g.id, error = %e, "recording a memory extraction failed"),
    }
}

/// The extraction itself: the model's facts, each written.
async fn extract(host: &Rc<Host>, g: &GenerationRecord) -> Result<ExtractionSummary, String> {
    let config = &g.state.config;
    let k = config.knowledge_config.as_ref().ok_or("the agent has no knowledge_config")?;
    let store = k.write_memory_store_id.clone().ok_or("the agent has no write_memory_store_id")?;
    let settings = match &k.extraction {
        Some(Extraction::Custom(s)) => s.clone(),
        _ => Default::default(),
    };
    let transcript = transcript(g);
    if transcript.is_empty() {
        return Ok(ExtractionSummary::default());
    }
    let scope = Scope::of_run(&g.account_id, &g.project_id, g.started_by_principal_id.as_deref());
    let agents = host.agents.clone();
    let provider_id = settings.ai_provider_id.clone().or_else(|| g.ai_provider_id.clone()).or_else(|| config.ai_provider_id.clone());
    let provider_id = provider_id.ok_or("no AI provider to extract with")?;
    let (records, s) = (agents.records.clone(), scope.clone());
    let provider = blocking(move || crate::agents::providers::in_project(&records, &s, &provider_id)).await.map_err(|e| e.to_string())?;
    let prompt = format!(
        "{}\nRespond with a JSON array of strings and nothing else. Respond with [] when there is nothing worth remembering.\n\nConversation:\n{transcript}",
        settings.prompt.as_deref().unwrap_or(INSTRUCTIONS)
    );
    let model = settings.model.clone().or_else(|| if settings.ai_provider_id.is_some() { None } else { config.model.clone() });
    let req = ChatRequest {
        model: model.unwrap_or_default(),
        messages: vec![llm::Message { role: llm::Role::User, content: vec![llm::Block::Text(prompt)] }],
        ..ChatRequest::default()
    };
    let answer = crate::agents::providers::complete(&agents.upstreams(), &scope, &provider, req).await.map_err(|e| e.message())?;
    let facts = candidates(&answer.output.text);
    let (records, account) = (agents.records.clone(), g.account_id.clone());
    let plan = blocking(move || records.account(&account)).await.map_err(|e| e.to_string())?.map(|a| a.plan).unwrap_or_default();
    let env = Env {
        search: &agents.search,
        records: &agents.records,
        embedders: &host.embedders,
        caller: crate::search::Caller { account_id: &g.account_id, plan: agents.plan(&plan), reach: scope.reach() },
        timeouts: Timeouts::default(),
    };
    let mut summary = ExtractionSummary { candidates: facts.len() as u64, ..ExtractionSummary::default() };
    let write_scope = Scope { key: crate::agents::KeyRef::Project { id: "extraction".into() }, ..scope.clone() };
    for fact in facts {
        let new = NewEntry {
            memory_id: store.clone(),
            content: fact,
            source_type: Some("extraction".into()),
            tags: None,
            metadata: None,
            duplicate_threshold: None,
            source_generation_id: Some(g.id.clone()),
            source_conversation_id: g.state.input.conversation_id.clone(),
        };
        match entries::create(&env, &write_scope, new).await {
            Ok((_, Action::Created)) => summary.created += 1,
            Ok((_, Action::Skipped)) => summary.skipped += 1,
            Err(e) => return Err(format!("writing an extracted fact failed: {e}")),
        }
    }
    Ok(summary)
}

/// The turn's user and assistant text, one `role: text` line each.
fn transcript(g: &GenerationRecord) -> String {
    let mut lines: Vec<String> = Vec::new();
    for m in &g.state.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            _ => continue,
        };
        let text: String = m.content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect();
        if !text.trim().is_empty() {
            lines.push(format!("{role}: {text}"));
        }
    }
    lines.join("\n")
}

/// The facts of a model's answer: the first JSON array in it, its strings (or
/// `{content}` objects) trimmed, empty ones dropped, at most [`MAX_CANDIDATES`].
pub fn candidates(text: &str) -> Vec<String> {
    let (Some(start), Some(end)) = (text.find('['), text.rfind(']')) else { return Vec::new() };
    if end <= start {
        return Vec::new();
    }
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(&text[start..=end]) else { return Vec::new() };
    items
        .iter()
        .filter_map(|v| v.as_str().or_else(|| v.get("content").and_then(|c| c.as_str())))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .take(MAX_CANDIDATES)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::candidates;
    use crate::agents::generation::reads::{self, tests::generation};
    use crate::agents::generation::record::{ExtractionSummary, GenerationRecord};
    use crate::agents::scope::testing::a;

    /// Issue 40: of two nodes claiming a dead holder's extraction, one gets it; the
    /// dead holder, come back, cannot record its summary, and the new one's lands once.
    #[test]
    fn an_extraction_is_claimed_by_one_node_and_recorded_by_its_holder_only() {
        let (_d, r) = reads::tests::store();
        let s = a();
        let mut g = generation("gen_1", &s, "agent_a", "trace_1", "2026-01-01T00:00:01Z");
        g.state.lease = Some("boot_dead".into());
        g.extraction = Some(ExtractionSummary { pending: true, ..ExtractionSummary::default() });
        r.create_generation(&g, None, None).unwrap();
        r.save_step(&g, &[], 0, |_| true).unwrap();
        let pending = || r.pending_extractions::<GenerationRecord>().unwrap().len();
        assert_eq!(pending(), 1);
        let claim = |by: &str| {
            r.claim_extraction::<GenerationRecord>(&s.account_id, "gen_1", |g| {
                let same = g.state.lease.as_deref() == Some("boot_dead");
                g.state.lease = Some(by.into());
                same
            })
            .unwrap()
        };
        assert_eq!(claim("boot_b").map(|g| g.state.lease), Some(Some("boot_b".into())));
        assert!(claim("boot_c").is_none(), "the lease moved on: the second claim loses");
        let finish = |by: &str, created: u64| {
            r.finish_extraction::<GenerationRecord>(
                &s.account_id,
                "gen_1",
                |g| g.state.lease.as_deref() == Some(by),
                |g| g.extraction = Some(ExtractionSummary { created, ..ExtractionSummary::default() }),
            )
            .unwrap()
        };
        assert_eq!(finish("boot_dead", 9), Some(false), "the replaced holder is fenced");
        assert_eq!(pending(), 1, "and the extraction is still queued");
        assert_eq!(finish("boot_b", 2), Some(true));
        assert_eq!(pending(), 0);
        let stored = reads::get_generation(&r, &s, "gen_1").unwrap();
        assert_eq!(stored.extraction.map(|e| (e.created, e.pending)), Some((2, false)));
        assert!(claim("boot_c").is_none(), "a done extraction is not claimed");
    }

    #[test]
    fn facts_are_read_leniently_from_the_first_array() {
        assert_eq!(
            candidates("Here: [\"Alice renewed for 2 years.\", {\"content\": \" Bob left \"}, 3, \"\"] done"),
            ["Alice renewed for 2 years.", "Bob left"]
        );
        assert!(candidates("nothing").is_empty() && candidates("[not json]").is_empty() && candidates("][").is_empty());
        assert_eq!(candidates(&serde_json::to_string(&vec!["x"; 30]).unwrap()).len(), 20);
    }
}
