//! Structure-aware JSON mutation for Chrome traces: a JSON tree that keeps numbers and strings
//! as their source text (so a mutation can write `NaN`, `1e999`, a 30-digit integer, a lone
//! surrogate escape), seeds cut down from real traces event by event, and edits a trace importer
//! has to survive: odd numbers, every phase and junk ones, dropped/duplicated/unmatched events,
//! escapes and unicode, deep nesting, very long strings, negative durations, ids as strings or
//! numbers, duplicate and renamed keys, flows and metadata events.

use crate::rng::Rng;

mod damage;
mod mutate;
mod tree;
mod values;
pub use damage::*;
pub use mutate::*;
pub use tree::*;
pub use values::*;

/// A JSON value; numbers and strings hold their source text (strings without the quotes).
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
    /// Text written as it is (deliberately invalid or deeply nested JSON).
    Raw(String),
}

/// Nesting deeper than this is not parsed into a tree (the input is then mutated as bytes).
const MAX_DEPTH: usize = 64;

/// Parses JSON text into a tree; `None` when it is not JSON (or nests too deeply).
pub fn parse(text: &[u8]) -> Option<J> {
    let mut p = Parser { b: text, pos: 0 };
    let v = p.value(0)?;
    p.ws();
    (p.pos == text.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while matches!(self.b.get(self.pos), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn lit(&mut self, word: &[u8]) -> bool {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// A string's raw text (escapes kept), after the opening quote.
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        loop {
            match *self.b.get(self.pos)? {
                b'"' => break,
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
        let s = std::str::from_utf8(self.b.get(start..self.pos)?).ok()?;
        self.pos += 1;
        Some(s.to_string())
    }

    fn value(&mut self, depth: usize) -> Option<J> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        let c = *self.b.get(self.pos)?;
        match c {
            b'{' => {
                self.pos += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.lit(b"}") {
                    return Some(J::Obj(fields));
                }
                loop {
                    self.ws();
                    if !self.lit(b"\"") {
                        return None;
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.lit(b":") {
                        return None;
                    }
                    let v = self.value(depth + 1)?;
                    fields.push((k, v));
                    self.ws();
                    if self.lit(b",") {
                        continue;
                    }
                    if self.lit(b"}") {
                        return Some(J::Obj(fields));
                    }
                    return None;
                }
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.ws();
                if self.lit(b"]") {
                    return Some(J::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.lit(b",") {
                        continue;
                    }
                    if self.lit(b"]") {
                        return Some(J::Arr(items));
                    }
                    return None;
                }
            }
            b'"' => {
                self.pos += 1;
                Some(J::Str(self.string()?))
            }
            b't' if self.lit(b"true") => Some(J::Bool(true)),
            b'f' if self.lit(b"false") => Some(J::Bool(false)),
            b'n' if self.lit(b"null") => Some(J::Null),
            b'-' | b'0'..=b'9' => {
                let start = self.pos;
                while matches!(
                    self.b.get(self.pos),
                    Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                ) {
                    self.pos += 1;
                }
                let s = std::str::from_utf8(&self.b[start..self.pos]).ok()?;
                Some(J::Num(s.to_string()))
            }
            _ => None,
        }
    }
}

/// Writes the tree as JSON text.
pub fn write(v: &J, out: &mut Vec<u8>) {
    match v {
        J::Null => out.extend_from_slice(b"null"),
        J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        J::Num(s) | J::Raw(s) => out.extend_from_slice(s.as_bytes()),
        J::Str(s) => {
            out.push(b'"');
            out.extend_from_slice(s.as_bytes());
            out.push(b'"');
        }
        J::Arr(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(x, out);
            }
            out.push(b']');
        }
        J::Obj(fields) => {
            out.push(b'{');
            for (i, (k, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(k.as_bytes());
                out.extend_from_slice(b"\":");
                write(x, out);
            }
            out.push(b'}');
        }
    }
}

/// `s` escaped for use as a [`J::Str`].
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_write_round_trip() {
        let text = br#"{"traceEvents":[{"ph":"X","ts":1.5,"dur":2,"name":"a\"b","args":{"x":[1,null,true]}}],"displayTimeUnit":"ns"}"#;
        let doc = parse(text).unwrap();
        let mut out = Vec::new();
        write(&doc, &mut out);
        assert_eq!(out, text.to_vec());
        assert!(parse(b"{\"a\":}").is_none());
        assert!(parse(&[b'['; 100]).is_none());
    }

    #[test]
    fn window_keeps_metadata() {
        let doc = parse(br#"{"traceEvents":[{"ph":"M","name":"process_name"},{"ph":"X"},{"ph":"B"},{"ph":"E"}],"k":1}"#).unwrap();
        let w = window(&doc, 1, 1);
        let mut out = Vec::new();
        write(&w, &mut out);
        assert_eq!(
            out,
            br#"{"traceEvents":[{"ph":"M","name":"process_name"},{"ph":"B"}],"k":1}"#.to_vec()
        );
    }

    #[test]
    fn mutations_run() {
        let mut rng = Rng::new(9);
        let base =
            parse(br#"{"traceEvents":[{"ph":"X","ts":1,"dur":2,"pid":1,"tid":1,"name":"a"}]}"#)
                .unwrap();
        for _ in 0..5000 {
            let mut d = base.clone();
            for _ in 0..3 {
                mutate_tree(&mut rng, &mut d, Some(&base));
            }
            let mut out = Vec::new();
            write(&d, &mut out);
            damage_text(&mut rng, &mut out);
        }
    }
}
