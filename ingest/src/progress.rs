//! The run's progress on stderr: on a terminal an indicatif bar (bytes of input done, their rate
//! and the ETA, then documents, their rate, pages, and what was passed over or refused); when
//! stderr is a pipe or a log, a plain line every few seconds and one at the end. Reports of
//! single documents go above the bar, so they are never drawn over.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// Plain lines even on a terminal.
    Lines,
    /// Only the reports of refused documents and the summary.
    Off,
}

/// How often a plain line is written.
const LINE_EVERY: Duration = Duration::from_secs(2);

const TEMPLATE: &str = "{spinner} {elapsed_precise} [{bar:28}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta} · {msg}";

pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    started: Instant,
    state: Mutex<State>,
}

/// What the display counts, as documents finish.
#[derive(Default, Clone, Copy)]
pub struct State {
    pub docs: u64,
    pub total_docs: u64,
    pub bytes: u64,
    pub total_bytes: u64,
    pub pages: u64,
    pub present: u64,
    pub unsupported: u64,
    pub failed: u64,
    last_line: Option<Instant>,
    /// `docs` when the last plain line was written.
    printed: Option<u64>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total_docs: u64, total_bytes: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = (mode == ProgressMode::Auto && terminal).then(ProgressDrawTarget::stderr);
        Progress::with_target(target, mode != ProgressMode::Off, total_docs, total_bytes)
    }

    /// A bar drawn to `target` when there is one, else plain lines when `lines`.
    pub fn with_target(target: Option<ProgressDrawTarget>, lines: bool, total_docs: u64, total_bytes: u64) -> Progress {
        let bar = target.map(|target| {
            let bar = ProgressBar::with_draw_target(Some(total_bytes), target);
            bar.set_style(ProgressStyle::with_template(TEMPLATE).expect("the template parses").progress_chars("=> "));
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let state = State { total_docs, total_bytes, ..State::default() };
        Progress { lines: bar.is_none() && lines, bar, started: Instant::now(), state: Mutex::new(state) }
    }

    /// One document finished; `count` says which tally it adds to.
    pub fn done(&self, bytes: u64, pages: u64, count: impl FnOnce(&mut State)) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.docs += 1;
        state.bytes += bytes;
        state.pages += pages;
        count(&mut state);
        if let Some(bar) = &self.bar {
            bar.set_position(state.bytes);
            bar.set_message(self.message(&state));
        } else if self.lines && state.last_line.is_none_or(|t| t.elapsed() >= LINE_EVERY) {
            state.last_line = Some(Instant::now());
            state.printed = Some(state.docs);
            eprintln!("quarry ingest: {}", self.line(&state));
        }
    }

    /// A line about one document, kept above the bar.
    pub fn report(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// The bar's last frame stays; plain mode writes its closing line.
    pub fn finish(&self) {
        let state = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &self.bar {
            Some(bar) => bar.abandon_with_message(self.message(&state)),
            None if self.lines && state.printed != Some(state.docs) => eprintln!("quarry ingest: {}", self.line(&state)),
            None => {}
        }
    }

    fn docs_per_sec(&self, state: &State) -> f64 {
        state.docs as f64 / self.started.elapsed().as_secs_f64().max(1e-3)
    }

    fn message(&self, s: &State) -> String {
        format!(
            "{}/{} docs ({:.1}/s) · {} pages · {} present · {} skipped · {} failed",
            s.docs,
            s.total_docs,
            self.docs_per_sec(s),
            s.pages,
            s.present,
            s.unsupported,
            s.failed
        )
    }

    fn line(&self, s: &State) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = s.total_bytes.saturating_sub(s.bytes) as f64;
        let eta = if s.bytes == 0 { "?".to_owned() } else { format!("{:.0}s", left * elapsed / s.bytes as f64) };
        format!(
            "{}/{} documents ({:.1}/s), {} pages, {} of {}, ETA {eta}; {} present, {} skipped, {} failed",
            s.docs,
            s.total_docs,
            self.docs_per_sec(s),
            s.pages,
            HumanBytes(s.bytes),
            HumanBytes(s.total_bytes),
            s.present,
            s.unsupported,
            s.failed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::InMemoryTerm;

    #[test]
    fn the_bar_shows_documents_pages_bytes_rate_and_eta() {
        let term = InMemoryTerm::new(4, 200);
        let progress = Progress::with_target(Some(ProgressDrawTarget::term_like(Box::new(term.clone()))), true, 4, 4096);
        progress.done(1024, 3, |_| {});
        progress.report("refused b.txt: 400 invalid_document: The document has no text.");
        progress.done(1024, 0, |s| s.failed += 1);
        progress.finish();
        let screen = term.contents();
        assert!(screen.contains("refused b.txt"), "{screen}");
        for part in ["2.00 KiB/4.00 KiB", "ETA", "/s", "2/4 docs", "3 pages", "1 failed"] {
            assert!(screen.contains(part), "{part:?} is not on the screen:\n{screen}");
        }
    }
}
