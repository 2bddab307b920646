//! Which query terms a passage holds, without stemming the whole passage: a stem keeps
//! its word's first two letters (Porter2 rewrites only endings; words under three
//! letters pass unchanged) except that "dying", "lying" and "tying" become "die", "lie",
//! "tie" — so y and i compare equal — and only words whose first two letters could begin
//! a wanted term go through the full analyser. Same answer as filtering [`super::terms`], at a
//! fraction of the cost — passages are analysed on every search.

use tantivy::tokenizer::{TokenStream, Tokenizer};

use super::{fold_arabic, terms, QuarryTokenizer};

/// The first two characters of `s`, lower-cased and Arabic-folded, y read as i.
fn head(s: &str) -> String {
    s.chars()
        .flat_map(char::to_lowercase)
        .filter_map(fold_arabic)
        .map(|c| if c == 'y' { 'i' } else { c })
        .take(2)
        .collect()
}

/// The terms of `wanted` (already analysed) that `text` holds, in `wanted`'s order.
pub fn held_terms(text: &str, wanted: &[String]) -> Vec<String> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let heads: Vec<String> = wanted.iter().map(|w| head(w)).collect();
    let mut found = vec![false; wanted.len()];
    let mut tokenizer = QuarryTokenizer::default();
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        let word = &stream.token().text;
        let h = head(word);
        if !heads.iter().any(|p| p.starts_with(&h) || h.starts_with(p.as_str())) {
            continue;
        }
        for t in terms(word) {
            if let Some(i) = wanted.iter().position(|w| *w == t) {
                found[i] = true;
            }
        }
        if found.iter().all(|f| *f) {
            break;
        }
    }
    wanted.iter().zip(found).filter(|(_, f)| *f).map(|(w, _)| w.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(text: &str, wanted: &[String]) -> Vec<String> {
        let held = terms(text);
        wanted.iter().filter(|w| held.contains(w)).cloned().collect()
    }

    #[test]
    fn equals_filtering_the_full_analysis() {
        let texts = [
            "The Running dogs are in the Gardens! Skies, dying flies, early lying ugly news; idly gently.",
            "Cells expressing PD-1 showed reduced T-cell activation in vivo (n=34); p<0.05.",
            "قَالَ رَسُولُ اللَّهِ إِنَّمَا الأَعْمَالُ بِالنِّيَّاتِ والمدرسة الكبرى",
            "Yearly yields of yttrium; Y-chromosome; O'Neil's apostrophes and 'quoted' words.",
            "",
        ];
        let queries = [
            "run garden dog sky die fly early lie ugly news idle gentle",
            "cell express reduced activation vivo",
            "الاعمال بالنيات المدرسه قال",
            "yearly yield yttrium chromosome neil quoted",
        ];
        for t in texts {
            for q in queries {
                let wanted = terms(q);
                assert_eq!(held_terms(t, &wanted), slow(t, &wanted), "text {t:?} query {q:?}");
            }
        }
    }
}
