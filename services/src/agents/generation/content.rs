//! `trace_content_mode: none`: a generation's content (its transcript, its output,
//! its calls' arguments and results) is never written. The store keeps the record
//! without it; the content lives in this process only, for as long as the run needs
//! it to go on (a pause waiting for tool outputs). A restart loses it, so such a run
//! ends `failed` with stop_reason `interrupted` instead of resuming.
//!
//! [`Held`] belongs to the agents service rather than to a shard: a pause may be
//! answered on any shard, which resumes the run there with the content its first
//! shard held. Only generations that keep no content touch it; a save of any other
//! takes no lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::record::{GenerationRecord, RunState};

/// The content of the running `trace_content_mode: none` generations, by id.
#[derive(Default)]
pub struct Held {
    runs: Mutex<HashMap<String, RunState>>,
}

impl Held {
    /// The record as the store gets it: whole, or without its content (which is held).
    pub fn persisted(&self, g: &GenerationRecord) -> GenerationRecord {
        if g.store_content {
            return g.clone();
        }
        // Held until the run's own readers have their answer (see `forget_later`).
        self.runs.lock().expect("held lock").insert(g.id.clone(), g.state.clone());
        let mut out = g.clone();
        strip(&mut out.state);
        out
    }

    /// `g` with its held content back; `false` when this process does not hold it.
    pub fn restore(&self, g: &mut GenerationRecord) -> bool {
        if g.store_content {
            return true;
        }
        match self.runs.lock().expect("held lock").get(&g.id) {
            Some(state) => {
                let (seq, reserved, lease) = (g.state.seq, g.state.reserved, g.state.lease.clone());
                g.state = state.clone();
                g.state.seq = seq.max(g.state.seq);
                g.state.reserved = reserved.max(g.state.reserved);
                g.state.lease = lease;
                true
            }
            None => false,
        }
    }

    /// Forgets what is held for `id` (deleted).
    pub fn forget(&self, id: &str) {
        self.runs.lock().expect("held lock").remove(id);
    }
}

fn strip(s: &mut RunState) {
    s.messages.clear();
    s.raw_messages.clear();
    s.context = None;
    if let Some(o) = &mut s.output {
        o.content.clear();
        o.object = None;
    }
    for c in &mut s.pending {
        c.args = serde_json::Value::Null;
        if c.result.is_some() {
            c.result = Some(serde_json::Value::Null);
        }
    }
}

/// How long a settled run's content stays held for the requests waiting on it.
pub const KEEP_SETTLED: std::time::Duration = std::time::Duration::from_secs(60);

/// Forgets `id`'s content once its waiting readers had time to read it (a settled
/// run; on a shard).
pub fn forget_later(agents: Arc<crate::agents::Service>, id: String) {
    glommio::spawn_local(async move {
        glommio::timer::sleep(KEEP_SETTLED).await;
        agents.content.forget(&id);
    })
    .detach();
}
