//! The README's five-minute tour, run command by command against the real binary and the real local model.
//!
//! The README's five-minute tour, run as written: every ```sh block under its heading
//! ("## A five-minute tour"), split into commands (a command ends where `bash -n` finds
//! it complete), run one by one in one bash (so `KEY=$(...)` and the `field` function
//! carry from command to command) against the real binary on a fresh data directory
//! with the local model on and the default embedder, as `ops/run` serves it. Only the
//! server's address is substituted for the README's `localhost:4400`.
//!
//! Every command must exit 0; an answer that is JSON must not be an error body; each
//! variable a command assigns must be set. The key outputs are checked: the search's
//! first result has a citation and passages with offsets, the research's answer cites
//! sources that exist (and says how many claims were verified), the agent's generation
//! completes with text.
//!
//! Bounded: `DEADLINE` for the whole tour, model load included (the tour itself waits
//! for `/v1/health` to say `"llm":true`). Runs alone (nextest's threads-required, as
//! every `real_local_model` test). Skipped when the weights are not installed, unless
//! $CI is set.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::local::{installed, repo, LocalServer};

const DEADLINE: Duration = Duration::from_secs(480);
const TOUR_HEADING: &str = "## A five-minute tour";
const END: &str = "<<<quarry-readme-tour-end";

/// The ```sh blocks of the tour's section of README.md, in order.
fn tour_blocks(readme: &str) -> Vec<String> {
    let start = readme.find(&format!("\n{TOUR_HEADING}\n")).unwrap_or_else(|| panic!("README.md has no {TOUR_HEADING:?} section"));
    let section = &readme[start + 1 + TOUR_HEADING.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in section.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```sh block in the tour");
    blocks
}

/// Whether `bash -n` reads `text` as complete commands.
fn complete(text: &str) -> bool {
    Command::new("bash").args(["-n", "-c", text]).stderr(Stdio::null()).status().expect("bash runs").success()
}

/// A block's commands: lines joined until bash reads them as a whole command (backslash
/// continuations, quotes across lines, function bodies); comment and blank lines between
/// commands are left out.
fn commands(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut acc = String::new();
    for line in block.lines() {
        if acc.is_empty() && (line.trim().is_empty() || line.trim_start().starts_with('#')) {
            continue;
        }
        acc.push_str(line);
        acc.push('\n');
        if !line.ends_with('\\') && complete(&acc) {
            out.push(std::mem::take(&mut acc).trim_end().to_owned());
        }
    }
    assert!(acc.is_empty(), "an incomplete command at the end of a tour block: {acc}");
    out
}

/// One bash that runs the commands in turn, its output (stderr merged) read as lines.
struct Shell {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Shell {
    fn start() -> Shell {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash starts");
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // A failure inside a pipe counts (curl refused, then python reading nothing).
        writeln!(stdin, "exec 2>&1; set -o pipefail").unwrap();
        Shell { child, stdin, lines }
    }

    /// Runs `command`, returns its exit status and output; panics past `until`.
    fn run(&mut self, command: &str, until: Instant) -> (i32, String) {
        writeln!(self.stdin, "{command}\nprintf '\\n{END} %d\\n' $?").unwrap();
        self.stdin.flush().unwrap();
        let mut output = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rc) = line.strip_prefix(END).map(str::trim) {
                        // The printf's leading newline ends the command's last line.
                        if output.last().is_some_and(|l: &String| l.is_empty()) {
                            output.pop();
                        }
                        return (rc.parse().unwrap(), output.join("\n"));
                    }
                    output.push(line);
                }
                Err(_) => panic!("the tour passed its deadline ({DEADLINE:?}) in:\n{command}\noutput so far:\n{}", output.join("\n")),
            }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `[n]` markers of a text.
fn markers(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(']') {
            out.push(digits.parse().unwrap());
        }
    }
    out
}

fn check_search(out: &Value) {
    let results = out["results"].as_array().unwrap_or_else(|| panic!("the search answered no results: {out}"));
    let top = results.first().unwrap_or_else(|| panic!("the search found nothing: {out}"));
    let citation = top["citation"].as_str().unwrap_or_default();
    assert!(
        citation.len() == 11 && citation.starts_with("AL-") && citation[3..].chars().all(|c| c.is_ascii_hexdigit()),
        "the first result's citation is {citation:?}: {top}"
    );
    let passage = &top["passages"][0];
    assert!(passage["text"].is_string() && passage["offsets"]["end"].as_u64() > passage["offsets"]["start"].as_u64(), "{top}");
    assert!(passage["matched"].as_array().is_some_and(|m| !m.is_empty()), "the first passage holds no query term: {top}");
}

fn check_research(out: &Value) {
    let answer = out["answer"].as_str().unwrap_or_else(|| panic!("the research answered no text: {out}"));
    let sources = out["sources"].as_array().unwrap_or_else(|| panic!("the research answered no sources: {out}"));
    let cited = markers(answer);
    assert!(!cited.is_empty(), "the answer cites nothing: {answer}");
    assert!(cited.iter().all(|n| *n >= 1 && *n <= sources.len()), "a marker of {answer:?} resolves to none of {} sources", sources.len());
    assert!(answer.chars().filter(char::is_ascii_alphabetic).count() > 0, "the answer is only its markers: {answer}");
    assert!(sources.iter().any(|s| s["cited"] == true), "no source is marked cited: {out}");
    let v = &out["verification"];
    let quotes = v["verified"].as_u64().unwrap_or(0);
    let claims = v["claims"].as_array().map_or(0, |c| c.iter().filter(|c| c["status"] == "supported").count());
    eprintln!("research: {answer:?}; {quotes} quotation(s) verified, {claims} claim(s) supported; {}", v["summary"]);
}

fn check_generation(out: &Value) {
    assert_eq!(out["status"], "completed", "{out}");
    let text = out["output"]["content"].as_str().unwrap_or_default();
    assert!(!text.trim().is_empty(), "the generation completed without text: {out}");
    eprintln!("agent: {text:?}");
}

#[test]
fn real_local_model_readme_tour() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let blocks = tour_blocks(&readme);
    let commands: Vec<String> = blocks.iter().flat_map(|b| commands(b)).collect();
    // What the tour promises, present before anything runs (so an edit that drops a part
    // fails here, weights or not).
    for part in ["/v1/signup", "/search", "/v1/health", "/research", "/api/v1/ai-providers", "/api/v1/agents", "generate?wait=true"] {
        assert!(commands.iter().any(|c| c.contains(part)), "the tour lost its {part} step: {commands:#?}");
    }
    if !installed() {
        return;
    }
    let started = Instant::now();
    let until = started + DEADLINE;
    // ops/run's defaults but the data directory and address (and niceness: the test has
    // the machine to itself).
    let s = LocalServer::start("[llm.local]\nnice = 0\n", &[("QUARRY_EMBEDDER", "multilingual-e5-small")]);
    let addr = s.addr.to_string();
    let mut shell = Shell::start();
    for (i, command) in commands.iter().enumerate() {
        let command = command.replace("localhost:4400", &addr).replace("127.0.0.1:4400", &addr);
        assert!(!command.contains(":4400"), "an address the test does not substitute: {command}");
        let t = Instant::now();
        let (rc, output) = shell.run(&command, until);
        eprintln!(
            "{:>6.1}s command {} ({:.1}s): {}",
            started.elapsed().as_secs_f64(),
            i + 1,
            t.elapsed().as_secs_f64(),
            command.lines().next().unwrap()
        );
        assert_eq!(rc, 0, "the tour's command failed ({rc}):\n{command}\noutput:\n{output}");
        let json: Option<Value> = serde_json::from_str(&output).ok();
        if let Some(v) = &json {
            assert!(v.get("error").is_none(), "the tour's command answered an error:\n{command}\n{output}");
        }
        // A `NAME=$(...)` assignment must leave NAME set.
        if let Some((name, _)) = command.split_once("=$(").filter(|(n, _)| n.chars().all(|c| c.is_ascii_uppercase() || c == '_')) {
            let (_, value) = shell.run(&format!("printf '%s' \"${name}\""), until);
            assert!(!value.trim().is_empty() && !value.contains(char::is_whitespace), "{name} is {value:?} after:\n{command}");
        }
        let out = || json.clone().unwrap_or_else(|| panic!("not JSON, from:\n{command}\n{output}"));
        if command.contains("/search ") {
            check_search(&out());
        } else if command.contains("/research ") {
            check_research(&out());
        } else if command.contains("/generate") {
            check_generation(&out());
        }
    }
    eprintln!("the tour took {:?}", started.elapsed());
}

/// A heading's anchor as GitHub makes it: lower case, spaces to `-`, punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The README's links, and those of the pages it leads to (docs/, bench/README.md), name
/// files of the repository and headings those files have: the reference sections moved
/// out of the README, and a moved heading must not leave a link behind.
#[test]
fn readme_and_docs_links_resolve() {
    let root = repo();
    let mut pages = vec![root.join("README.md"), root.join("bench/README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "md") {
            pages.push(path);
        }
    }
    assert!(pages.len() >= 8, "docs/ holds the reference pages: {pages:?}");
    let mut bad = Vec::new();
    let mut links = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        // Links outside code blocks.
        let prose: String = text.split("```").step_by(2).collect();
        for (_, rest) in prose.match_indices("](").map(|(i, _)| prose.split_at(i + 2)) {
            let Some(target) = rest.split(')').next() else { continue };
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            links += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            if !file.exists() {
                bad.push(format!("{}: {target} (no such file)", page.display()));
            } else if !fragment.is_empty() {
                let headings = std::fs::read_to_string(&file).unwrap();
                let found = headings
                    .lines()
                    .filter_map(|l| l.trim_start_matches('#').strip_prefix(' ').filter(|_| l.starts_with('#')))
                    .any(|h| anchor(h) == fragment);
                if !found {
                    bad.push(format!("{}: {target} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(links > 20, "only {links} links found");
    assert!(bad.is_empty(), "links that lead nowhere:\n{}", bad.join("\n"));
}
