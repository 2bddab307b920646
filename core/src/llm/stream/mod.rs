//! Streaming: SSE framing ([`sse`]), the manifest's event map ([`map`]), the typed
//! standard events ([`event`]) and their assembly into deltas and a whole output
//! ([`assemble`]). [`Decoder`] chains them for one response body.

pub mod assemble;
pub mod event;
pub mod map;
pub mod sse;

use std::sync::Arc;

use serde_json::Value;

use self::assemble::{Assembler, Delta, ToolRelease};
use self::event::StreamEvent;
use self::sse::{SseDecoder, SseError, SseItem};
use super::manifest::Manifest;

/// One streamed response body, from bytes to deltas.
pub struct Decoder {
    manifest: Arc<Manifest>,
    sse: SseDecoder,
    pub assembler: Assembler,
    /// The done signal or the manifest's stop condition was seen.
    pub complete: bool,
}

impl Decoder {
    pub fn new(manifest: Arc<Manifest>) -> Decoder {
        let release = match manifest.format {
            super::manifest::PayloadFormat::Anthropic => ToolRelease::WhenClosed,
            _ => ToolRelease::AsTheyStream,
        };
        let sse = SseDecoder::new(manifest.sse.clone());
        Decoder { manifest, sse, assembler: Assembler::new(release), complete: false }
    }

    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, SseError> {
        let items = self.sse.push(bytes)?;
        self.items(items)
    }

    pub fn finish(&mut self) -> Result<Vec<Delta>, SseError> {
        let items = self.sse.finish()?;
        let mut out = self.items(items)?;
        out.extend(self.assembler.finish());
        Ok(out)
    }

    fn items(&mut self, items: Vec<SseItem>) -> Result<Vec<Delta>, SseError> {
        let mut out = Vec::new();
        for item in items {
            match item {
                SseItem::Done => self.complete = true,
                SseItem::Data(data) => {
                    let frame = self.manifest.frame_shape.parse(&data).map_err(|e| SseError(format!("a data payload is not JSON ({e})")))?;
                    out.extend(self.frame(&frame));
                }
            }
        }
        Ok(out)
    }

    /// The deltas of one decoded frame.
    pub fn frame(&mut self, frame: &Value) -> Vec<Delta> {
        let map = &self.manifest.events;
        if map.stops(frame) {
            self.complete = true;
        }
        let mut out = Vec::new();
        for raw in map.apply(frame) {
            for e in StreamEvent::from_raw(raw, &self.manifest.classification) {
                out.extend(self.assembler.apply(e));
            }
        }
        out
    }
}
