//! The delivery worker: one task on shard 0 sends what the outbox owes. Every
//! [`POLL`] it reads the pending queue (`store::webhooks`), and starts an attempt for
//! each delivery that is due and not already in flight, up to [`MAX_IN_FLIGHT`] at
//! once. An attempt is one signed POST through the tools' outbound path (the egress
//! policy judges the connect) with a timeout; its outcome is written back: `success`
//! on a 2xx, else another attempt after an exponential backoff (1 s, 2 s, 4 s, …,
//! capped at a minute, with jitter), `failed` after [`MAX_ATTEMPTS`].
//!
//! At-least-once across `kill -9`: a delivery leaves the queue only when its outcome
//! is committed, so a restart sends every one still owed, the one cut off mid-send
//! among them (its receiver may see it twice: it dedupes on the event id).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::{HeaderMap, Method};

use super::sign;
use super::Webhooks;
use crate::agents::tools::outbound::{Outbound, Timeouts};
use crate::runtime::blocking;
use crate::store::{DeliveryRecord, WebhookRecord};

/// How often the queue is read.
pub const POLL: Duration = Duration::from_millis(200);
/// Attempts before a delivery is `failed`.
pub const MAX_ATTEMPTS: u32 = 5;
/// The first retry's wait; each next one doubles, up to [`MAX_BACKOFF`].
pub const BASE_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Connecting, and the whole answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_IN_FLIGHT: usize = 32;
/// The most of a receiver's answer kept on the delivery.
pub const MAX_RESPONSE_BODY: usize = 1024;

#[derive(Default)]
struct State {
    in_flight: HashSet<String>,
    /// Deliveries waiting out a backoff: when each is due.
    waiting: HashMap<String, SystemTime>,
}

/// Runs the worker until the shard stops. Must run on a shard.
pub async fn run(hooks: Arc<Webhooks>, cluster: Arc<crate::cluster::Cluster>) {
    let state = Rc::new(RefCell::new(State::default()));
    // One node of a cluster sends: the one holding the outbox's lease (renewed a
    // third of the way through it), so each delivery has one sender; when it dies,
    // another takes the lease once it lapses and sends what is still owed.
    let renew = cluster.node_timeout() / 3;
    let (mut asked, mut leads) = (None::<std::time::Instant>, false);
    loop {
        if asked.is_none_or(|at| at.elapsed() >= renew) {
            let (c, r) = (cluster.clone(), hooks.records.clone());
            leads = crate::runtime::blocking(move || c.lead(&r, "webhooks/outbox")).await;
            asked = Some(std::time::Instant::now());
        }
        if !leads {
            glommio::timer::sleep(POLL).await;
            continue;
        }
        if let Err(e) = tick(&hooks, &state).await {
            tracing::error!(error = %e, "reading the webhook deliveries owed failed");
        }
        glommio::timer::sleep(POLL).await;
    }
}

async fn tick(hooks: &Arc<Webhooks>, state: &Rc<RefCell<State>>) -> Result<(), crate::store::StoreError> {
    let pending = hooks.records.pending_deliveries()?;
    let now = SystemTime::now();
    state.borrow_mut().waiting.retain(|id, _| pending.iter().any(|(p, _)| p == id));
    for (id, account) in pending {
        {
            let s = state.borrow();
            if s.in_flight.len() >= MAX_IN_FLIGHT || s.in_flight.contains(&id) || s.waiting.get(&id).is_some_and(|due| *due > now) {
                continue;
            }
        }
        let Some(d) = hooks.records.get::<DeliveryRecord>(&account, &id)? else { continue };
        let due = d.next_attempt_at.as_deref().and_then(|t| humantime::parse_rfc3339(t).ok()).unwrap_or(now);
        if due > now {
            state.borrow_mut().waiting.insert(id, due);
            continue;
        }
        state.borrow_mut().in_flight.insert(id.clone());
        let (hooks, state) = (hooks.clone(), state.clone());
        glommio::spawn_local(async move {
            let next = attempt(&hooks, d).await;
            let mut s = state.borrow_mut();
            s.in_flight.remove(&id);
            if let Some(due) = next {
                s.waiting.insert(id, due);
            }
        })
        .detach();
    }
    Ok(())
}

/// One attempt of `d`, its outcome committed; when the next one is due, if any.
async fn attempt(hooks: &Arc<Webhooks>, mut d: DeliveryRecord) -> Option<SystemTime> {
    let hook = match hooks.records.get::<WebhookRecord>(&d.account_id, &d.webhook_id) {
        Ok(Some(h)) => h,
        Ok(None) => return abandon(hooks, d, "Webhook no longer exists.").await,
        Err(e) => {
            tracing::error!(delivery = %d.id, error = %e, "reading a delivery's webhook failed");
            return Some(SystemTime::now() + BASE_BACKOFF);
        }
    };
    // An unsigned delivery is worse than none: a secret that does not open ends it.
    let secret = match hooks.open(&hook) {
        Ok(s) => s,
        Err(e) => return abandon(hooks, d, &e.to_string()).await,
    };
    let Ok(uri) = hook.url.parse::<hyper::Uri>() else { return abandon(hooks, d, "The webhook's url is not a URL.").await };
    let body = Bytes::from(serde_json::to_vec(&d.payload).expect("a stored payload serializes"));
    let t = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (v2, legacy) = sign::headers(secret.expose(), &body, t);
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut put = |name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    };
    put(sign::HEADER_V2, &v2);
    put(sign::HEADER_LEGACY, &legacy);
    put("x-soat-event", &d.event_type);
    put("x-soat-event-id", &d.event_id);
    put("x-soat-delivery", &d.id);
    put("user-agent", concat!("quarry-webhooks/", env!("CARGO_PKG_VERSION")));
    let req = Outbound { method: Method::POST, uri, headers, body };
    let answer = hooks.tools.send(req, Timeouts { connect: TIMEOUT, answer: TIMEOUT }).await;
    let now = crate::clock::now_rfc3339();
    d.attempts += 1;
    d.last_attempt_at = Some(now.clone());
    d.updated_at = now;
    let ok = match answer {
        Ok(a) => {
            d.status_code = Some(a.status.as_u16());
            d.response_body = Some(clip(&String::from_utf8_lossy(&a.body)));
            a.status.is_success()
        }
        Err(e) => {
            d.status_code = None;
            d.response_body = Some(clip(&e.to_string()));
            false
        }
    };
    let next = if ok {
        d.status = "success".into();
        d.next_attempt_at = None;
        None
    } else if d.attempts >= MAX_ATTEMPTS {
        d.status = "failed".into();
        d.next_attempt_at = None;
        None
    } else {
        let due = SystemTime::now() + backoff(d.attempts);
        d.next_attempt_at = Some(humantime::format_rfc3339_millis(due).to_string());
        Some(due)
    };
    save(hooks, d).await;
    next
}

/// Ends `d` `failed` without an attempt: `why` is not something a retry fixes.
async fn abandon(hooks: &Arc<Webhooks>, mut d: DeliveryRecord, why: &str) -> Option<SystemTime> {
    let now = crate::clock::now_rfc3339();
    d.status = "failed".into();
    d.next_attempt_at = None;
    d.last_attempt_at = Some(now.clone());
    d.response_body = Some(why.to_owned());
    d.updated_at = now;
    save(hooks, d).await;
    None
}

async fn save(hooks: &Arc<Webhooks>, d: DeliveryRecord) {
    let (records, id) = (hooks.records.clone(), d.id.clone());
    if let Err(e) = blocking(move || records.record_attempt(&d)).await {
        tracing::error!(delivery = %id, error = %e, "recording a webhook delivery's attempt failed");
    }
}

/// The wait after `attempts` failed ones: doubling from [`BASE_BACKOFF`], capped, plus
/// up to a quarter more so a fleet of retries does not fall in step.
pub fn backoff(attempts: u32) -> Duration {
    let base = BASE_BACKOFF.saturating_mul(1 << attempts.saturating_sub(1).min(16)).min(MAX_BACKOFF);
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    base + base.mul_f64(f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX) / 4.0)
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_RESPONSE_BODY {
        return s.to_owned();
    }
    let mut end = MAX_RESPONSE_BODY;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap() {
        for (n, low) in [(1, 1), (2, 2), (3, 4), (4, 8), (7, 60), (40, 60)] {
            let b = backoff(n);
            assert!(b >= Duration::from_secs(low) && b <= Duration::from_secs(low).mul_f64(1.25), "{n}: {b:?}");
        }
    }
}
