//! `quarry-load`: drive a loopback HTTP/1.1 server with closed-loop keep-alive connections and
//! report throughput and per-request latency.
//!
//! ```text
//! quarry-load -c 64 -d 10s --warmup 2s --pin 1 http://127.0.0.1:7700/v1/health
//! quarry-load -c 16 --requests queries.jsonl -H 'Authorization: Bearer k' http://127.0.0.1:7700
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use quarry_bench::load::duration::parse_duration;
use quarry_bench::load::{self, CpuList, LoadConfig, Report, RequestSpec, Scenario, Target};

#[derive(Parser, Debug)]
#[command(name = "quarry-load", version, about = "Closed-loop HTTP/1.1 load generator for loopback servers")]
struct Args {
    /// Target: http://127.0.0.1:PORT/path (loopback only: 127.0.0.0/8 or ::1).
    url: String,
    /// Keep-alive connections, each with one request outstanding at a time.
    #[arg(short = 'c', long, default_value_t = 64)]
    connections: usize,
    /// Client threads, each running its own event loop.
    #[arg(short = 't', long, default_value_t = 1)]
    threads: usize,
    /// Measured duration (after the warmup): 10s, 500ms, 1m.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    duration: Duration,
    /// Load applied before measuring starts.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    warmup: Duration,
    /// Requests slower than this are counted as timeouts (they still count in latency).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    timeout: Duration,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    method: String,
    /// Request header, "Name: value"; repeatable. Added to every request of a --requests file
    /// that does not set it.
    #[arg(short = 'H', long = "header", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    body: Option<String>,
    /// Request body, read from a file.
    #[arg(long)]
    body_file: Option<PathBuf>,
    /// JSONL file of requests to cycle through: {"method","path","headers","body"} per line.
    #[arg(long, conflicts_with_all = ["method", "body", "body_file"])]
    requests: Option<PathBuf>,
    /// Pin client threads to these CPUs (taskset syntax: 1, 0-3, 0,2).
    #[arg(long, value_parser = CpuList::parse)]
    pin: Option<CpuList>,
    /// Name of the run in the report (default: the URL).
    #[arg(long)]
    label: Option<String>,
    /// Print one JSON object instead of the human line and the Markdown row.
    #[arg(long)]
    json: bool,
    /// Print the Markdown table header before the row.
    #[arg(long)]
    markdown_header: bool,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
        _ => Err(format!("{text:?}: expected \"Name: value\"")),
    }
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("quarry-load: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> Result<ExitCode> {
    let target = Target::parse(&args.url)?;
    let scenario = scenario(&args, &target)?;
    let config = LoadConfig {
        label: args.label.clone().unwrap_or_else(|| target.to_string()),
        target,
        scenario,
        connections: args.connections,
        threads: args.threads,
        duration: args.duration,
        warmup: args.warmup,
        timeout: args.timeout,
        pin: args.pin.clone(),
    };
    eprintln!("{}", announce(&config));
    let report = load::run(config)?;
    print(&args, &report);
    if report.requests == 0 {
        eprintln!("quarry-load: no request completed in the measured window (is the server up?)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn scenario(args: &Args, target: &Target) -> Result<Scenario> {
    if let Some(path) = &args.requests {
        return Ok(Scenario::from_jsonl(path, target.host_header(), &args.headers)?);
    }
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.clone().into_bytes()),
        (None, Some(path)) => Some(std::fs::read(path).with_context(|| format!("reading body file {}", path.display()))?),
        (None, None) => None,
    };
    let spec = RequestSpec { method: args.method.clone(), path: target.path().to_string(), headers: args.headers.clone(), body };
    Ok(Scenario::single(&spec, target.host_header()))
}

fn announce(config: &LoadConfig) -> String {
    let pin = match &config.pin {
        Some(list) => format!(", pinned to CPU {:?}", list.cpus()),
        None => String::new(),
    };
    format!(
        "quarry-load: {} connections on {} thread(s){pin}, {:?} warmup + {:?} against {} ({} request(s) in the scenario)",
        config.connections,
        config.threads.min(config.connections),
        config.warmup,
        config.duration,
        config.target,
        config.scenario.len(),
    )
}

fn print(args: &Args, report: &Report) {
    if args.json {
        println!("{}", report.json());
        return;
    }
    println!("{}", report.human_line());
    if args.markdown_header {
        println!("{}", Report::markdown_header());
    }
    println!("{}", report.markdown_row());
}
