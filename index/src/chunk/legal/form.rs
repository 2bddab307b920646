//! The form of a legal document, a closed set: `contract`, `statute`, `regulation`,
//! `opinion`, or `other`. Each form has cues; the form with the most wins if it has at
//! least [`MIN_SCORE`].
//!
//! - contract: `Agreement`, `Party`/`Parties`, definitions, `IN WITNESS WHEREOF`,
//!   `Effective Date`, `hereby`, `terminate`, `governing law`;
//! - statute: U.S.C. / Pub. L. / Stat. citations, `§ N.` section lines, `Act of Congress`,
//!   `be it enacted`, `this title`, `this chapter`;
//! - regulation: C.F.R. citations, dotted `§ 38.48` section lines, `Part`/`Subpart`
//!   headings, `this part`;
//! - opinion: case reporter citations, `v.`, `court`, `affirm`, `reverse`, `remand`,
//!   `plaintiff`, `defendant`, `appellant`, `petitioner`, `opinion`, `held`.

use std::sync::LazyLock;

use regex::Regex;

use super::cite::{citations, Family};
use super::define::definitions;
use super::lines::{lines, LineKind, Number};

const MIN_SCORE: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Contract,
    Statute,
    Regulation,
    Opinion,
    Other,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Contract => "contract",
            Form::Statute => "statute",
            Form::Regulation => "regulation",
            Form::Opinion => "opinion",
            Form::Other => "other",
        }
    }
}

static CONTRACT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:Agreement|Part(?:y|ies)|IN WITNESS WHEREOF|Effective Date|hereby|terminat(?:e|ion)|[Gg]overning [Ll]aw|Disclosing|Receiving|Customer|Supplier|Licensee|Licensor)\b").unwrap()
});
static STATUTE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b(?:Act of Congress|be it enacted|this title|this chapter|enacted)\b").unwrap());
static REGULATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)(?:^\s*(?:#+\s*)?(?:PART|Part|SUBPART|Subpart)\s+[0-9A-Z]+\b|\bthis (?:part|subpart)\b)").unwrap());
static OPINION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:v\.|court|affirm(?:ed)?|revers(?:e|ed)|remand(?:ed)?|plaintiffs?|defendants?|appellants?|appellees?|petitioners?|opinion|we hold|held)(?:\s|$|[,;:])").unwrap()
});

/// The form of a document whose text is `text` (its pages joined).
pub(super) fn form(text: &str) -> Form {
    let mut scores = [
        (Form::Contract, CONTRACT.find_iter(text).count() + 2 * definitions(text).len()),
        (Form::Statute, STATUTE.find_iter(text).count()),
        (Form::Regulation, REGULATION.find_iter(text).count()),
        (Form::Opinion, OPINION.find_iter(text).count()),
    ];
    for c in citations(text) {
        let form = match c.family {
            Family::Statute => Form::Statute,
            Family::Regulation => Form::Regulation,
            Family::Case => Form::Opinion,
            Family::Other => continue,
        };
        scores.iter_mut().filter(|(f, _)| *f == form).for_each(|(_, s)| *s += 2);
    }
    for line in lines(text) {
        if let LineKind::Clause(c) = line.kind {
            if let (Number::Section(n), true) = (&c.number, text[line.range.0..].starts_with('§')) {
                let form = if n.contains('.') { Form::Regulation } else { Form::Statute };
                scores.iter_mut().filter(|(f, _)| *f == form).for_each(|(_, s)| *s += 3);
            }
        }
    }
    let best = scores.iter().max_by_key(|(_, s)| *s).expect("four forms");
    if best.1 >= MIN_SCORE {
        best.0
    } else {
        Form::Other
    }
}
