//! The match expressions of manifests' `event_map`, `frame_selector` and
//! `stop_condition`: `exists($.p)`, `$.p == 'v'`, `$.p != null`, `$.p in ['a', 'b']`,
//! a bare `$.p` (present and not null), joined by `&&`, `||`, `!` and parentheses.
//! A path that fans out matches when any element does.

use serde_json::Value;

use super::path::{literal, Path, Shape};

#[derive(Debug, Clone)]
pub enum Expr {
    Exists(Path),
    Eq(Path, Value),
    Ne(Path, Value),
    In(Path, Vec<Value>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Expr {
    pub fn parse(text: &str) -> Result<Expr, String> {
        let mut p = Parser { s: text, at: 0 };
        let e = p.or().map_err(|m| format!("{m} in `{text}`"))?;
        p.ws();
        if p.at != text.len() {
            return Err(format!("unexpected `{}` in `{text}`", &text[p.at..]));
        }
        Ok(e)
    }

    /// Adds the paths the expression reads to `shape`; of `exists` paths only the
    /// presence of a value matters.
    pub fn shape_into(&self, shape: &mut Shape) {
        match self {
            Expr::Exists(p) => shape.add_presence(p),
            Expr::Eq(p, _) | Expr::Ne(p, _) | Expr::In(p, _) => shape.add(p),
            Expr::Not(e) => e.shape_into(shape),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.shape_into(shape);
                b.shape_into(shape);
            }
        }
    }

    pub fn eval(&self, v: &Value) -> bool {
        match self {
            Expr::Exists(p) => p.find(v, &mut |x| !x.is_null()).is_some(),
            Expr::Eq(p, want) => p.find(v, &mut |x| x == want).is_some(),
            // `!= null` is "present and not null"; a missing field is not "!= 'x'".
            Expr::Ne(p, want) => p.find(v, &mut |x| x != want).is_some(),
            Expr::In(p, set) => p.find(v, &mut |x| set.contains(x)).is_some(),
            Expr::Not(e) => !e.eval(v),
            Expr::And(a, b) => a.eval(v) && b.eval(v),
            Expr::Or(a, b) => a.eval(v) || b.eval(v),
        }
    }
}

struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.at..]
    }

    fn ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.s.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        let hit = self.rest().starts_with(token);
        if hit {
            self.at += token.len();
        }
        hit
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        while self.eat("&&") {
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("!") && !self.rest().starts_with('=') {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat("(") {
            let e = self.or()?;
            return if self.eat(")") { Ok(e) } else { Err("missing `)`".into()) };
        }
        if self.eat("exists(") {
            let path = self.path(&[')'])?;
            return if self.eat(")") { Ok(Expr::Exists(path)) } else { Err("missing `)`".into()) };
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let path = self.path(&[' ', '=', '!', ')', '&', '|'])?;
        if self.eat("==") {
            return Ok(Expr::Eq(path, self.value()?));
        }
        if self.eat("!=") {
            return Ok(Expr::Ne(path, self.value()?));
        }
        if self.eat("in") {
            return Ok(Expr::In(path, self.list()?));
        }
        Ok(Expr::Exists(path))
    }

    /// A path runs to the first stop character outside brackets.
    fn path(&mut self, stops: &[char]) -> Result<Path, String> {
        self.ws();
        let mut depth = 0;
        let mut quote = None;
        let start = self.at;
        for (i, c) in self.rest().char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') if depth > 0 => quote = Some(c),
                (None, '[') => depth += 1,
                (None, ']') => depth -= 1,
                (None, c) if depth == 0 && stops.contains(&c) => {
                    self.at = start + i;
                    return Path::parse(&self.s[start..self.at]);
                }
                _ => {}
            }
        }
        self.at = self.s.len();
        Path::parse(&self.s[start..])
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        let rest = self.rest();
        let end = match rest.chars().next() {
            Some(q @ ('\'' | '"')) => rest[1..].find(q).map(|i| i + 2).ok_or("unclosed quote")?,
            _ => rest.find([' ', ')', ',', ']', '&', '|']).unwrap_or(rest.len()),
        };
        let v = literal(&rest[..end]).ok_or_else(|| format!("bad literal `{}`", &rest[..end]))?;
        self.at += end;
        Ok(v)
    }

    fn list(&mut self) -> Result<Vec<Value>, String> {
        if !self.eat("[") {
            return Err("`in` needs a list".into());
        }
        let mut items = Vec::new();
        while !self.eat("]") {
            items.push(self.value()?);
            self.eat(",");
            if self.at >= self.s.len() {
                return Err("unclosed list".into());
            }
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(e: &str, v: &Value) -> bool {
        Expr::parse(e).unwrap().eval(v)
    }

    #[test]
    fn the_shipped_manifests_forms() {
        let delta = json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}});
        assert!(eval("$.type == 'content_block_delta' && $.delta.type == 'text_delta'", &delta));
        assert!(!eval("$.type == 'content_block_delta' && $.delta.type == 'thinking_delta'", &delta));
        assert!(eval("$.type in ['message_start', 'content_block_delta', 'ping']", &delta));
        let chunk = json!({"choices": [{"delta": {"content": "x"}, "finish_reason": null}]});
        assert!(eval("exists($.choices) || exists($.error) || $.type == 'error'", &chunk));
        assert!(!eval("exists($.choices[*].finish_reason)", &chunk));
        assert!(!eval("$.choices[0].finish_reason != null", &chunk));
        assert!(eval("$.choices[0].delta.content", &chunk));
        assert!(eval("!exists($.error)", &chunk));
    }

    #[test]
    fn malformed_expressions_are_refused() {
        assert!(Expr::parse("exists($.a").is_err());
        assert!(Expr::parse("$.a == ").is_err());
        assert!(Expr::parse("$.a in 'x'").is_err());
    }
}
