//! Structured logs (tracing) to stderr, text or JSON, filtered by `log.level`.

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

pub fn init(log: &LogConfig) {
    // tantivy logs every commit and merge at info; that is the engine's business, so
    // it speaks at warn unless the filter names it.
    let level = if log.level.contains("tantivy") { log.level.clone() } else { format!("{},tantivy=warn", log.level) };
    let filter = EnvFilter::try_new(&level).unwrap_or_else(|e| {
        eprintln!("log.level `{}` is not a valid filter ({e}); using \"info\"", log.level);
        EnvFilter::new("info")
    });
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr);
    let _ = match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
