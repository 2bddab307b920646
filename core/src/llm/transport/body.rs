//! A 2xx answer's body as it arrives, from either path: read on the shard itself
//! ([`native`](super::native)) or handed over by the outbound thread.

use bytes::Bytes;
use tokio::sync::mpsc;

use super::native::NativeBody;

pub enum Body {
    Native(NativeBody),
    Remote(mpsc::Receiver<Result<Bytes, String>>),
}

impl Body {
    /// The next piece; `None` at the end; an error ends the body.
    pub async fn next(&mut self) -> Option<Result<Bytes, String>> {
        match self {
            Body::Native(b) => b.next().await,
            Body::Remote(rx) => rx.recv().await,
        }
    }

    /// Stops reading: the rest of the answer is not wanted and its connection is
    /// closed (unless the body had already ended cleanly).
    pub fn close(&mut self) {
        match self {
            Body::Native(b) => b.close(),
            Body::Remote(rx) => rx.close(),
        }
    }
}
