//! Reading a generation's events: what the store committed after a reader's last id,
//! then what the live log holds after that, then waiting for more, until the frame
//! that ends the stream (`[DONE]`, or an error frame). The events route, the streamed
//! generate response and every waiting request read through a [`Reader`].

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::event::ends_stream;
use super::live::{self, Event};
use super::record::GenerationRecord;
use crate::store::{Records, StoreError};

/// How often a reader looks again at a generation that runs nowhere it can see yet
/// (between a restart and its take-over, or a submit and its resume).
const POLL: Duration = Duration::from_millis(50);

pub struct Reader {
    records: Arc<Records>,
    account_id: String,
    id: String,
    last: u64,
    queue: VecDeque<Event>,
    ended: bool,
}

impl Reader {
    /// Reads the events of `id` after `after`.
    pub fn new(records: Arc<Records>, account_id: &str, id: &str, after: u64) -> Reader {
        Reader { records, account_id: account_id.to_owned(), id: id.to_owned(), last: after, queue: VecDeque::new(), ended: false }
    }

    /// The next event, or `None` once the stream's last frame was read (or the
    /// generation rests with nothing after `after`, or is gone).
    pub async fn next(&mut self) -> Result<Option<Event>, StoreError> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                self.last = e.0;
                if ends_stream(&e.1) {
                    self.ended = true;
                }
                return Ok(Some(e));
            }
            if self.ended {
                return Ok(None);
            }
            // The live log first: a segment that ends after this commits all its
            // events before it closes, so the store read below then sees them.
            let log = live::get(&self.id);
            // With no live log here, the record before the events: a step commits
            // its events and its status in one transaction, so a status at rest read
            // first means the events read next hold the last one. (Read the other way
            // round, a step committing between the two reads ends the stream short.)
            let record: Option<Option<GenerationRecord>> = match log {
                Some(_) => None,
                None => Some(self.records.get(&self.account_id, &self.id)?),
            };
            let stored = self.records.generation_events(&self.id, self.last)?;
            if !stored.is_empty() {
                self.queue.extend(stored.into_iter().map(|(seq, data)| (seq, Rc::from(data))));
                continue;
            }
            if let Some(log) = log {
                let (events, closed) = log.after(self.last);
                if !events.is_empty() {
                    self.queue.extend(events);
                    continue;
                }
                if !closed {
                    log.wait(self.last).await;
                }
                continue;
            }
            match record.flatten() {
                None => return Ok(None),
                Some(g) if g.status() != super::Status::InProgress => {
                    // At rest with nothing after our id: a reader that already saw the
                    // end (or content that was never written).
                    return Ok(None);
                }
                Some(_) => glommio::timer::sleep(POLL).await,
            }
        }
    }

    /// Reads until the stream's last frame; the generation as it then stands.
    pub async fn rest(mut self) -> Result<Option<GenerationRecord>, StoreError> {
        while self.next().await?.is_some() {}
        self.records.get(&self.account_id, &self.id)
    }
}
