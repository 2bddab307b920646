//! SOAT's pattern match for actions and SRN parts: `*` any run of characters, `?` one.

/// Whether `pattern` matches the whole of `value`.
pub fn matches(pattern: &str, value: &str) -> bool {
    let (p, v): (Vec<char>, Vec<char>) = (pattern.chars().collect(), value.chars().collect());
    let (mut pi, mut vi, mut star, mut mark) = (0, 0, None, 0);
    while vi < v.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == v[vi]) {
            pi += 1;
            vi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = vi;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            vi = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_marks_match_as_globs() {
        assert!(matches("*", "files:ListFiles"));
        assert!(matches("files:*", "files:ListFiles"));
        assert!(!matches("files:*", "filesx:ListFiles"));
        assert!(matches("files:Get?ile", "files:GetFile"));
        assert!(matches("proj_*", "proj_abc"));
        assert!(!matches("proj_a", "proj_ab"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
    }
}
