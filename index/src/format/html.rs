//! HTML: parsed by html5ever (through scraper) as a browser would, then written as the
//! page-text conventions the chunkers read: headings `# …` (one `#` per level), list
//! items `- …` (`1. …` in ordered lists, nested ones indented), tables as pipe rows
//! (a `|---|` row under a header of `<th>`s), `<sup>1</sup>` as `(1)`, `<hr>` as a line
//! `________`, `<pre>` as a fenced block, paragraphs apart by a blank line. Scripts,
//! styles, `<template>`, `<noscript>`, `<head>` and hidden markup (`hidden`,
//! `aria-hidden="true"`, `display:none`, `visibility:hidden`) are dropped; entities
//! come decoded; runs of whitespace become one space as a browser shows them. The
//! text is then split into pages like plain text (`--- page N ---`, form feeds).

use ego_tree::iter::Edge;
use ego_tree::NodeRef;
use scraper::{Html, Node};

use super::{text, Parsed};

pub(super) fn read(input: &str) -> Parsed {
    let doc = Html::parse_document(input);
    let mut w = Writer::default();
    let title = doc.tree.root().descendants().find(|n| n.value().as_element().is_some_and(|e| e.name() == "title"));
    let title = title.map(|n| collapse(&node_text(n)));
    let mut skip: Option<ego_tree::NodeId> = None;
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) if skip.is_none() => match node.value() {
                Node::Text(t) => w.text(&t.text),
                Node::Element(e) if is_dropped(e) => skip = Some(node.id()),
                Node::Element(e) => w.open(e.name(), e),
                _ => {}
            },
            Edge::Close(node) if skip == Some(node.id()) => skip = None,
            Edge::Close(node) if skip.is_none() => {
                if let Node::Element(e) = node.value() {
                    w.close(e.name());
                }
            }
            _ => {}
        }
    }
    let out = w.finish();
    Parsed { pages: text::read(&out), title: title.filter(|t| !t.is_empty()) }
}

fn node_text(node: NodeRef<'_, Node>) -> String {
    node.descendants().filter_map(|n| n.value().as_text().map(|t| t.to_string())).collect()
}

fn collapse(s: &str) -> String {
    s.split(is_space).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// HTML's whitespace, and the no-break space that pages use as spacing.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0C' | '\u{a0}')
}

/// Elements whose content a reader never sees.
fn is_dropped(e: &scraper::node::Element) -> bool {
    const DROPPED: &[&str] = &[
        "script", "style", "template", "noscript", "head", "svg", "math", "canvas", "iframe", "object", "embed", "audio", "video", "select",
        "textarea", "button",
    ];
    if DROPPED.contains(&e.name()) || e.attr("hidden").is_some() {
        return true;
    }
    if e.attr("aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return true;
    }
    e.attr("style").is_some_and(|s| {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        s.contains("display:none") || s.contains("visibility:hidden")
    })
}

const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "center",
    "details",
    "dialog",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hgroup",
    "html",
    "legend",
    "main",
    "nav",
    "p",
    "section",
    "summary",
    "caption",
];

#[derive(Default)]
struct Writer {
    out: String,
    /// Newlines owed before the next text (at most 2: a blank line).
    breaks: u8,
    /// Whitespace seen since the last text.
    space: bool,
    /// What the current line holds after its marker (`- `, `# `): nothing yet?
    line_empty: bool,
    lists: Vec<List>,
    /// Open `<pre>`s.
    pre: u32,
    /// Inside a heading.
    heading: bool,
    /// The open table (tables in its cells only add their text to the cell).
    table: Option<Table>,
    /// Tables open inside the open table.
    nested: u32,
}

struct List {
    ordered: bool,
    next: u64,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
    cell: Option<String>,
}

#[derive(Default)]
struct Row {
    cells: Vec<String>,
    header: bool,
}

impl Writer {
    fn open(&mut self, name: &str, e: &scraper::node::Element) {
        if let Some(table) = self.table.as_mut() {
            if name == "table" {
                self.nested += 1;
            }
            let inner_cell = self.nested > 0 && matches!(name, "tr" | "td" | "th");
            return table.open(if inner_cell { "div" } else { name });
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(2);
                let level = usize::from(name.as_bytes()[1] - b'0');
                self.marker(&format!("{} ", "#".repeat(level)));
                self.heading = true;
            }
            "ul" | "ol" | "menu" => {
                self.block(if self.lists.is_empty() { 2 } else { 1 });
                let next = e.attr("start").and_then(|s| s.trim().parse().ok()).unwrap_or(1);
                self.lists.push(List { ordered: name == "ol", next });
            }
            "li" => self.item(),
            "dt" | "dd" | "tr" => self.block(1),
            "table" => {
                self.block(2);
                self.table = Some(Table::default());
            }
            "pre" => {
                self.block(2);
                if self.pre == 0 {
                    self.marker("```\n");
                }
                self.pre += 1;
            }
            "hr" => {
                self.block(2);
                self.marker("________");
                self.line_empty = false;
                self.block(2);
            }
            "br" => self.line_break(),
            "sup" => self.inline("("),
            _ if BLOCKS.contains(&name) => self.block(2),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        if let Some(table) = self.table.as_mut() {
            if name != "table" {
                let inner_cell = self.nested > 0 && matches!(name, "tr" | "td" | "th");
                return table.close(if inner_cell { "div" } else { name });
            }
            if self.nested > 0 {
                self.nested -= 1;
                return table.close("div");
            }
            let table = self.table.take().expect("an open table");
            return self.write_table(table);
        }
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.heading = false;
                self.block(2);
            }
            "ul" | "ol" | "menu" => {
                self.lists.pop();
                self.block(if self.lists.is_empty() { 2 } else { 1 });
            }
            "li" | "dt" | "dd" => self.block(1),
            "pre" => {
                self.pre = self.pre.saturating_sub(1);
                if self.pre == 0 {
                    if !self.out.ends_with('\n') {
                        self.out.push('\n');
                    }
                    self.out.push_str("```");
                    self.line_empty = false;
                    self.block(2);
                }
            }
            "sup" => self.inline(")"),
            _ if BLOCKS.contains(&name) => self.block(2),
            _ => {}
        }
    }

    fn text(&mut self, t: &str) {
        if let Some(table) = self.table.as_mut() {
            return table.text(t);
        }
        if self.pre > 0 {
            self.flush_breaks();
            self.out.push_str(t);
            self.line_empty = false;
            return;
        }
        for (i, word) in t.split(is_space).enumerate() {
            if i > 0 {
                self.space = true;
            }
            if !word.is_empty() {
                self.word(word);
            }
        }
    }

    fn word(&mut self, word: &str) {
        self.flush_breaks();
        let mid_line = !self.line_empty && !self.out.is_empty() && !self.out.ends_with(['\n', ' ']);
        if std::mem::take(&mut self.space) && mid_line {
            self.out.push(' ');
        }
        self.out.push_str(word);
        self.line_empty = false;
    }

    /// Text that sits between words without adding space (`(`, `)` of a `<sup>`).
    fn inline(&mut self, s: &str) {
        if self.pre > 0 {
            return;
        }
        if s == "(" && self.space && !self.line_empty {
            self.word(s);
            return;
        }
        self.flush_breaks();
        self.out.push_str(s);
        self.line_empty = false;
    }

    /// A block boundary: `n` newlines before the next text (1 inside a list).
    fn block(&mut self, n: u8) {
        if self.pre > 0 {
            return;
        }
        let n = if self.lists.is_empty() { n } else { 1 };
        self.breaks = self.breaks.max(n);
        self.space = false;
    }

    fn line_break(&mut self) {
        if self.pre > 0 {
            self.out.push('\n');
            return;
        }
        self.breaks = (self.breaks + 1).min(2);
        self.space = false;
    }

    /// Writes the owed newlines, then, inside a list item, the item's indent.
    fn flush_breaks(&mut self) {
        if self.breaks == 0 {
            return;
        }
        if !self.out.is_empty() && !self.line_empty {
            for _ in 0..self.breaks {
                self.out.push('\n');
            }
            if !self.lists.is_empty() && !self.heading {
                self.out.push_str(&"  ".repeat(self.lists.len()));
            }
        }
        self.breaks = 0;
    }

    /// Starts a line with `marker` (`# `, `- `, a fence), on a line of its own.
    fn marker(&mut self, marker: &str) {
        if !self.out.is_empty() {
            let owed = if self.line_empty { 0 } else { self.breaks.max(1) };
            for _ in 0..owed {
                self.out.push('\n');
            }
        }
        self.breaks = 0;
        self.space = false;
        self.out.push_str(marker);
        self.line_empty = true;
    }

    fn item(&mut self) {
        let depth = self.lists.len().max(1) - 1;
        let marker = match self.lists.last_mut() {
            Some(List { ordered: true, next }) => {
                *next += 1;
                format!("{}. ", *next - 1)
            }
            _ => "- ".to_owned(),
        };
        self.block(1);
        self.marker(&format!("{}{marker}", "  ".repeat(depth)));
    }

    fn write_table(&mut self, table: Table) {
        let rows: Vec<Row> = table.rows.into_iter().filter(|r| r.cells.iter().any(|c| !c.is_empty())).collect();
        if rows.is_empty() {
            return;
        }
        self.block(2);
        let width = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
        for (i, row) in rows.iter().enumerate() {
            let mut line = String::from("|");
            for j in 0..width {
                line.push(' ');
                line.push_str(row.cells.get(j).map_or("", String::as_str));
                line.push_str(" |");
            }
            if i == 0 {
                self.marker(&line);
                if row.header && rows.len() > 1 {
                    self.out.push('\n');
                    self.out.push_str(&"|---".repeat(width));
                    self.out.push('|');
                }
            } else {
                self.out.push('\n');
                self.out.push_str(&line);
            }
        }
        self.line_empty = false;
        self.block(2);
    }

    fn finish(self) -> String {
        self.out
    }
}

impl Table {
    fn open(&mut self, name: &str) {
        match name {
            "tr" => self.rows.push(Row { cells: Vec::new(), header: true }),
            "td" | "th" => {
                if self.rows.is_empty() {
                    self.rows.push(Row { cells: Vec::new(), header: true });
                }
                let row = self.rows.last_mut().expect("a row");
                row.header &= name == "th";
                self.cell = Some(String::new());
            }
            "br" | "p" | "div" | "li" => self.text(" "),
            "sup" => self.push("("),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "td" | "th" => {
                if let (Some(cell), Some(row)) = (self.cell.take(), self.rows.last_mut()) {
                    row.cells.push(cell.trim().replace('|', "\\|"));
                }
            }
            "sup" => self.push(")"),
            "p" | "div" | "li" => self.text(" "),
            _ => {}
        }
    }

    fn text(&mut self, t: &str) {
        let Some(cell) = self.cell.as_mut() else { return };
        for (i, word) in t.split(is_space).enumerate() {
            if i > 0 && !cell.is_empty() && !cell.ends_with(' ') {
                cell.push(' ');
            }
            cell.push_str(word);
        }
    }

    fn push(&mut self, s: &str) {
        if let Some(cell) = self.cell.as_mut() {
            cell.push_str(s);
        }
    }
}
