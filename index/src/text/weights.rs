//! The terms a query searches for, each once, with a weight.
//!
//! BM25 sums one score per query term. A long request says its important words more
//! than once and quotes some of them; bm25s (the peer the quality harness runs) counts a
//! term once per time the query says it, and so does [`weighted_terms`]: a term's
//! weight is how often the query's analysed text holds it. A quoted word the parser
//! took as emphasis (`ParsedQuery::emphasis`) counts [`EMPHASIS`] more times, so pages
//! that hold it rank higher while none is dropped.

use super::terms;

/// How many extra times an emphasised (quoted) word counts.
pub const EMPHASIS: f32 = 1.0;

/// The analysed terms of `text` in query order, each once, and the weight of each.
pub fn weighted_terms(text: &str, emphasis: &[String]) -> (Vec<String>, Vec<f32>) {
    let mut out: Vec<String> = Vec::new();
    let mut weights: Vec<f32> = Vec::new();
    for t in terms(text) {
        match out.iter().position(|o| *o == t) {
            Some(i) => weights[i] += 1.0,
            None => {
                out.push(t);
                weights.push(1.0);
            }
        }
    }
    for t in emphasis.iter().flat_map(|e| terms(e)) {
        if let Some(i) = out.iter().position(|o| *o == t) {
            weights[i] += EMPHASIS;
        }
    }
    (out, weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_term_weighs_as_often_as_the_query_says_it_and_more_when_stressed() {
        let (terms, weights) = weighted_terms("Cats and dogs; the cat sat with dogs and a cat.", &[]);
        assert_eq!(terms, ["cat", "dog", "sat"]);
        assert_eq!(weights, [3.0, 2.0, 1.0]);
        let (terms, weights) = weighted_terms("cats chase dogs", &["Dogs".into(), "mice".into()]);
        assert_eq!(terms, ["cat", "chase", "dog"]);
        assert_eq!(weights, [1.0, 1.0, 1.0 + EMPHASIS]);
    }
}
