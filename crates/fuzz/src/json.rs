//! Structure-aware JSON mutation for Chrome traces: a JSON tree that keeps numbers and strings
//! as their source text (so a mutation can write `NaN`, `1e999`, a 30-digit integer, a lone
//! surrogate escape), seeds cut down from real traces event by event, and edits a trace importer
//! has to survive: odd numbers, every phase and junk ones, dropped/duplicated/unmatched events,
//! escapes and unicode, deep nesting, very long strings, negative durations, ids as strings or
//! numbers, duplicate and renamed keys, flows and metadata events.

use crate::rng::Rng;

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

/// Number texts on the edges: NaN and infinities (not JSON), huge, negative, fractional,
/// exponents, integers past 64 bits.
pub fn interesting_number(rng: &mut Rng) -> String {
    const FIXED: &[&str] = &[
        "NaN",
        "Infinity",
        "-Infinity",
        "-1",
        "0",
        "-0",
        "1e308",
        "1e309",
        "-1e308",
        "1e-400",
        "0.5",
        "1.5e3",
        "123.4567891234",
        "0.0000001",
        "9007199254740993",
        "4294967295",
        "4294967296",
        "2147483648",
        "-2147483649",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999999999999",
        "1E2",
        "1e",
        "01",
        "-",
        "1.",
        ".5",
        "+1",
        "0x10",
    ];
    match rng.below(4) {
        0 => rng.next_u64().to_string(),
        1 => format!(
            "{}{}.{}",
            if rng.chance(1, 3) { "-" } else { "" },
            rng.below(1 << 20),
            rng.below(1000)
        ),
        _ => rng.pick(FIXED).to_string(),
    }
}

/// Raw string contents (between the quotes) on the edges.
fn interesting_string(rng: &mut Rng) -> String {
    const FIXED: &[&str] = &[
        "",
        "\\\"quoted\\\"",
        "back\\\\slash",
        "\\u0000nul",
        "line\\nbreak\\ttab\\r",
        "\\ud83d\\ude80",
        "\\ud800",
        "\\udc00\\ud800",
        "\\u12",
        "\\x41",
        "\\",
        "漢字",
        "🚀",
        "e\u{301}\u{202e}",
        "ProfilerStep#1",
        "ProfilerStep#-1",
        "ProfilerStep#",
        "ProfilerStep#99999999999999999999",
        "ProfilerStep#abc",
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "aten::mm",
        "nccl:all_reduce",
        "ncclKernel_AllReduce_RING_LL_Sum_float",
        "Memcpy HtoD (Pageable -> Device)",
        "Memset (Device)",
        "Spans",
        "Traces",
        "python3",
        "stream 7",
        "0x1f",
        "123",
        "-5",
        "1e3",
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "cuda_runtime",
        "cpu_op",
        "user_annotation",
        "python_function",
        "ac2g",
        "fwdbwd",
        "Kernel",
        "Memcpy",
        "Memset",
        "nccl",
    ];
    match rng.below(6) {
        0 => "x".repeat(rng.small_len(100_000)),
        1 => "\\u00e9".repeat(rng.small_len(2000)),
        _ => rng.pick(FIXED).to_string(),
    }
}

/// Keys Chrome traces use (and a few that are junk).
const KEYS: &[&str] = &[
    "ph",
    "ts",
    "dur",
    "name",
    "cat",
    "pid",
    "tid",
    "id",
    "id2",
    "bp",
    "args",
    "s",
    "tts",
    "cname",
    "bind_id",
    "flow_in",
    "flow_out",
    "scope",
    "traceEvents",
    "displayTimeUnit",
    "baseTimeNanoseconds",
    "deviceProperties",
    "distributedInfo",
    "schemaVersion",
    "",
    "ph ",
    "PH",
    "\\u0070h",
];

/// Argument keys the importer gives meaning to.
const ARG_KEYS: &[&str] = &[
    "correlation",
    "External id",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "est. achieved occupancy %",
    "stream",
    "device",
    "context",
    "Sequence number",
    "Fwd thread id",
    "name",
    "sort_index",
    "labels",
    "bytes",
    "memory bandwidth (GB/s)",
    "Input Dims",
    "Input type",
    "rank",
    "world_size",
    "backend",
    "Total Allocated",
    "Bytes",
    "Addr",
];

/// Phases: every one the format has, and junk.
const PHASES: &[&str] = &[
    "\"X\"",
    "\"B\"",
    "\"E\"",
    "\"i\"",
    "\"I\"",
    "\"R\"",
    "\"C\"",
    "\"b\"",
    "\"n\"",
    "\"e\"",
    "\"s\"",
    "\"t\"",
    "\"f\"",
    "\"S\"",
    "\"F\"",
    "\"T\"",
    "\"p\"",
    "\"M\"",
    "\"O\"",
    "\"N\"",
    "\"D\"",
    "\"P\"",
    "\"(\"",
    "\")\"",
    "\"\"",
    "\"XX\"",
    "\"x\"",
    "\"\\u0000\"",
    "5",
    "null",
    "[\"X\"]",
    "{}",
];

/// The events array of a trace (`traceEvents`, or the whole document when it is an array).
pub fn events_mut(doc: &mut J) -> Option<&mut Vec<J>> {
    match doc {
        J::Arr(items) => Some(items),
        J::Obj(fields) => fields.iter_mut().find_map(|(k, v)| match v {
            J::Arr(items) if k == "traceEvents" => Some(items),
            _ => None,
        }),
        _ => None,
    }
}

fn events(doc: &J) -> Option<&Vec<J>> {
    match doc {
        J::Arr(items) => Some(items),
        J::Obj(fields) => fields.iter().find_map(|(k, v)| match v {
            J::Arr(items) if k == "traceEvents" => Some(items),
            _ => None,
        }),
        _ => None,
    }
}

fn get<'a>(obj: &'a J, key: &str) -> Option<&'a J> {
    match obj {
        J::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// Sets `key` of an object (replacing the first such key, else adding it).
fn set(obj: &mut J, key: &str, v: J) {
    if let J::Obj(fields) = obj {
        match fields.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = v,
            None => fields.push((key.to_string(), v)),
        }
    }
}

/// A seed made from a real trace: its metadata events (`M`) and `count` other events from
/// `offset`, with its other top-level keys.
pub fn window(doc: &J, offset: usize, count: usize) -> J {
    let mut out = doc.clone();
    if let (Some(all), Some(evs)) = (events(doc), events_mut(&mut out)) {
        let is_meta = |e: &J| matches!(get(e, "ph"), Some(J::Str(p)) if p == "M");
        let mut kept: Vec<J> = all.iter().filter(|e| is_meta(e)).cloned().collect();
        kept.extend(
            all.iter()
                .filter(|e| !is_meta(e))
                .skip(offset)
                .take(count)
                .cloned(),
        );
        *evs = kept;
    }
    out
}

/// Number of nodes in the tree.
fn size(v: &J) -> usize {
    1 + match v {
        J::Arr(items) => items.iter().map(size).sum(),
        J::Obj(fields) => fields.iter().map(|(_, x)| size(x)).sum(),
        _ => 0,
    }
}

/// The path (child index at each level) of a node drawn uniformly from the tree.
fn random_path(v: &J, rng: &mut Rng) -> Vec<usize> {
    let mut n = rng.below(size(v));
    let mut path = Vec::new();
    let mut cur = v;
    loop {
        if n == 0 {
            return path;
        }
        n -= 1;
        let children: Vec<&J> = match cur {
            J::Arr(items) => items.iter().collect(),
            J::Obj(fields) => fields.iter().map(|(_, x)| x).collect(),
            _ => return path,
        };
        let mut next = None;
        for (i, x) in children.into_iter().enumerate() {
            let s = size(x);
            if n < s {
                next = Some((i, x));
                break;
            }
            n -= s;
        }
        match next {
            Some((i, x)) => {
                path.push(i);
                cur = x;
            }
            None => return path,
        }
    }
}

/// The node at `path`.
fn node_mut<'a>(v: &'a mut J, path: &[usize]) -> Option<&'a mut J> {
    let Some((&first, rest)) = path.split_first() else {
        return Some(v);
    };
    let child = match v {
        J::Arr(items) => items.get_mut(first)?,
        J::Obj(fields) => &mut fields.get_mut(first)?.1,
        _ => return None,
    };
    node_mut(child, rest)
}

/// A node drawn uniformly from the tree, for which `f` is then called.
fn with_random_node(v: &mut J, rng: &mut Rng, f: impl FnOnce(&mut J, &mut Rng)) {
    let path = random_path(v, rng);
    if let Some(node) = node_mut(v, &path) {
        f(node, rng);
    }
}

/// Number of nodes below the root (for minimizing).
pub fn node_count(v: &J) -> usize {
    size(v) - 1
}

/// The tree without its `n`-th node below the root (preorder), or `None` past the end.
pub fn without_nth(v: &J, n: usize) -> Option<J> {
    fn go(v: &mut J, n: &mut usize) -> bool {
        let len = match v {
            J::Arr(items) => items.len(),
            J::Obj(fields) => fields.len(),
            _ => return false,
        };
        let mut i = 0;
        while i < len {
            if *n == 0 {
                match v {
                    J::Arr(items) => {
                        items.remove(i);
                    }
                    J::Obj(fields) => {
                        fields.remove(i);
                    }
                    _ => {}
                }
                return true;
            }
            *n -= 1;
            let child = match v {
                J::Arr(items) => &mut items[i],
                J::Obj(fields) => &mut fields[i].1,
                _ => return false,
            };
            if go(child, n) {
                return true;
            }
            i += 1;
        }
        false
    }
    let mut out = v.clone();
    let mut n = n;
    go(&mut out, &mut n).then_some(out)
}

/// A node of some other JSON type.
fn other_type(rng: &mut Rng) -> J {
    match rng.below(9) {
        0 => J::Null,
        1 => J::Bool(rng.chance(1, 2)),
        2 => J::Arr(Vec::new()),
        3 => J::Obj(Vec::new()),
        4 => J::Str(String::new()),
        5 => J::Num(interesting_number(rng)),
        6 => J::Str(interesting_string(rng)),
        7 => J::Raw("[1,[2,{\"a\":null}]]".into()),
        _ => J::Arr(vec![J::Num("1".into()), J::Str("x".into())]),
    }
}

/// Nesting `depth` deep, as text (so the tree itself stays shallow).
fn deep(rng: &mut Rng, depth: usize) -> J {
    let (open, close) = if rng.chance(1, 2) {
        ("[", "]")
    } else {
        ("{\"a\":", "}")
    };
    let mut s = open.repeat(depth);
    s.push('1');
    s.push_str(&close.repeat(depth));
    J::Raw(s)
}

/// An event index, or `None` when there are no events.
fn some_event(rng: &mut Rng, evs: &[J]) -> Option<usize> {
    (!evs.is_empty()).then(|| rng.below(evs.len()))
}

/// A new event of phase `ph` on the process and thread of `like` (when given).
fn new_event(rng: &mut Rng, ph: &str, like: Option<&J>) -> J {
    let pick = |key: &str, rng: &mut Rng| -> J {
        like.and_then(|e| get(e, key))
            .cloned()
            .unwrap_or_else(|| J::Num(rng.below(4).to_string()))
    };
    let ts = match like.and_then(|e| get(e, "ts")) {
        Some(t) if rng.chance(2, 3) => t.clone(),
        _ => J::Num(interesting_number(rng)),
    };
    let mut e = J::Obj(vec![
        ("ph".into(), J::Str(ph.into())),
        ("name".into(), J::Str(interesting_string(rng))),
        ("pid".into(), pick("pid", rng)),
        ("tid".into(), pick("tid", rng)),
        ("ts".into(), ts),
    ]);
    if ph == "X" {
        set(&mut e, "dur", J::Num(interesting_number(rng)));
    }
    e
}

/// Applies one structure-aware edit to a trace document; `other` (another input's tree) feeds
/// splices.
pub fn mutate_tree(rng: &mut Rng, doc: &mut J, other: Option<&J>) {
    match rng.below(22) {
        // Any number: an odd one.
        0 | 1 => with_random_node(doc, rng, |n, rng| {
            if matches!(n, J::Num(_)) || rng.chance(1, 4) {
                *n = J::Num(interesting_number(rng));
            }
        }),
        // Any string: escapes, unicode, long.
        2 => with_random_node(doc, rng, |n, rng| {
            if matches!(n, J::Str(_)) || rng.chance(1, 4) {
                *n = J::Str(interesting_string(rng));
            }
        }),
        // Any node: another type.
        3 => with_random_node(doc, rng, |n, rng| *n = other_type(rng)),
        // Any node: deeply nested.
        4 => {
            let depth = *rng.pick(&[10usize, 100, 127, 128, 129, 200, 1000, 5000]);
            with_random_node(doc, rng, |n, rng| *n = deep(rng, depth));
        }
        // Top-level keys.
        5 => {
            if let J::Obj(_) = doc {
                let (k, v) = match rng.below(7) {
                    0 => (
                        "displayTimeUnit",
                        J::Str(rng.pick(&["ns", "ms", "us", "", "s"]).to_string()),
                    ),
                    1 => ("baseTimeNanoseconds", J::Num(interesting_number(rng))),
                    2 => (
                        "deviceProperties",
                        J::Arr(vec![J::Obj(vec![
                            ("id".into(), J::Num(interesting_number(rng))),
                            ("name".into(), J::Str(interesting_string(rng))),
                            ("totalGlobalMem".into(), J::Num(interesting_number(rng))),
                            ("computeMajor".into(), J::Num(interesting_number(rng))),
                            ("numSms".into(), other_type(rng)),
                        ])]),
                    ),
                    3 => (
                        "distributedInfo",
                        J::Obj(vec![
                            ("rank".into(), J::Num(interesting_number(rng))),
                            ("world_size".into(), other_type(rng)),
                            ("backend".into(), J::Str(interesting_string(rng))),
                            ("pg_config".into(), other_type(rng)),
                        ]),
                    ),
                    4 => ("traceEvents", other_type(rng)),
                    5 => ("schemaVersion", other_type(rng)),
                    _ => ("traceName", J::Str(interesting_string(rng))),
                };
                set(doc, k, v);
            } else if let Some(evs) = events_mut(doc) {
                // A bare events array: wrap it into the object form.
                let evs = std::mem::take(evs);
                *doc = J::Obj(vec![("traceEvents".into(), J::Arr(evs))]);
            }
        }
        // The object form unwrapped into a bare array.
        6 if rng.chance(1, 4) => {
            if let (J::Obj(_), Some(evs)) = (&*doc, events(doc)) {
                *doc = J::Arr(evs.clone());
            }
        }
        _ => mutate_events(rng, doc, other),
    }
}

/// Edits that work on the events.
fn mutate_events(rng: &mut Rng, doc: &mut J, other: Option<&J>) {
    let donor = other
        .and_then(events)
        .and_then(|o| (!o.is_empty()).then(|| o[rng.below(o.len())].clone()));
    let Some(evs) = events_mut(doc) else {
        return;
    };
    let at = rng.below(evs.len() + 1);
    let Some(i) = some_event(rng, evs) else {
        evs.push(new_event(rng, "X", None));
        return;
    };
    match rng.below(18) {
        // Another phase.
        0 | 1 => set(&mut evs[i], "ph", J::Raw(rng.pick(PHASES).to_string())),
        // Drop events.
        2 => {
            let n = rng.small_len(evs.len() - i);
            evs.drain(i..i + n);
        }
        // Duplicate one (maybe many times).
        3 => {
            let copies = if rng.chance(1, 4) {
                rng.small_len(500)
            } else {
                1
            };
            let e = evs[i].clone();
            for _ in 0..copies {
                evs.insert(at.min(evs.len()), e.clone());
            }
        }
        // Unmatched B or E, or an unclosed B.
        4 => {
            let ph = *rng.pick(&["B", "E", "B", "E", "X", "i"]);
            let e = new_event(rng, ph, Some(&evs[i]));
            evs.insert(at, e);
        }
        // Negative or odd durations.
        5 => {
            let d = match rng.below(3) {
                0 => format!("-{}", rng.below(1_000_000)),
                1 => interesting_number(rng),
                _ => "-0.001".to_string(),
            };
            set(&mut evs[i], "dur", J::Num(d));
        }
        // Times: odd numbers, or a string.
        6 => {
            let v = if rng.chance(1, 4) {
                J::Str(interesting_number(rng))
            } else {
                J::Num(interesting_number(rng))
            };
            set(&mut evs[i], "ts", v);
        }
        // Ids as strings instead of numbers, or the other way round.
        7 => {
            let key = *rng.pick(&["pid", "tid", "id", "bind_id", "id2"]);
            let v = match get(&evs[i], key) {
                Some(J::Num(n)) => J::Str(n.clone()),
                Some(J::Str(s)) if s.bytes().all(|c| c.is_ascii_digit()) && !s.is_empty() => {
                    J::Num(s.clone())
                }
                _ => match rng.below(4) {
                    0 => J::Str(interesting_string(rng)),
                    1 => J::Str(format!("0x{:x}", rng.next_u64())),
                    _ => J::Num(interesting_number(rng)),
                },
            };
            set(&mut evs[i], key, v);
        }
        // Keys renamed, deleted or repeated.
        8 => {
            if let J::Obj(fields) = &mut evs[i] {
                if !fields.is_empty() {
                    let k = rng.below(fields.len());
                    match rng.below(3) {
                        0 => fields[k].0 = rng.pick(KEYS).to_string(),
                        1 => {
                            fields.remove(k);
                        }
                        _ => {
                            let (name, _) = fields[k].clone();
                            fields.push((name, other_type(rng)));
                        }
                    }
                }
            }
        }
        // Args the importer reads, with odd values.
        9 | 10 => {
            let key = rng.pick(ARG_KEYS).to_string();
            let v = match rng.below(4) {
                0 => J::Num(interesting_number(rng)),
                1 => J::Str(interesting_string(rng)),
                2 => J::Arr(vec![
                    J::Num(interesting_number(rng)),
                    J::Num(interesting_number(rng)),
                    J::Num(interesting_number(rng)),
                ]),
                _ => other_type(rng),
            };
            match &mut evs[i] {
                J::Obj(fields) => match fields.iter_mut().find(|(k, _)| k == "args") {
                    Some((_, J::Obj(args))) => args.push((key, v)),
                    Some((_, slot)) => *slot = J::Obj(vec![(key, v)]),
                    None => fields.push(("args".into(), J::Obj(vec![(key, v)]))),
                },
                other => *other = J::Obj(vec![("args".into(), J::Obj(vec![(key, v)]))]),
            }
        }
        // Category: the ones the importer gives meaning to, or junk.
        11 => set(&mut evs[i], "cat", J::Str(interesting_string(rng))),
        // Metadata events.
        12 => {
            let name = *rng.pick(&[
                "process_name",
                "thread_name",
                "process_sort_index",
                "thread_sort_index",
                "process_labels",
                "junk",
            ]);
            let mut e = new_event(rng, "M", Some(&evs[i]));
            set(&mut e, "name", J::Str(name.into()));
            let v = if rng.chance(1, 2) {
                J::Str(interesting_string(rng))
            } else {
                J::Num(interesting_number(rng))
            };
            let arg = if rng.chance(3, 4) {
                "name"
            } else {
                "sort_index"
            };
            set(&mut e, "args", J::Obj(vec![(arg.into(), v)]));
            evs.insert(at, e);
        }
        // A flow: start, step and end sharing an id, maybe with a binding point.
        13 => {
            let id = if rng.chance(1, 2) {
                J::Num(rng.below(8).to_string())
            } else {
                J::Str(format!("{}", rng.below(8)))
            };
            let cat = J::Str(
                rng.pick(&["ac2g", "fwdbwd", "async_cpu_to_gpu", "x"])
                    .to_string(),
            );
            for ph in ["s", "t", "f"] {
                if rng.chance(3, 4) {
                    let j = rng.below(evs.len());
                    let mut e = new_event(rng, ph, Some(&evs[j]));
                    set(&mut e, "id", id.clone());
                    set(&mut e, "cat", cat.clone());
                    if ph == "f" && rng.chance(1, 2) {
                        set(&mut e, "bp", J::Str("e".into()));
                    }
                    let k = rng.below(evs.len() + 1);
                    evs.insert(k, e);
                }
            }
        }
        // Async slices and counters.
        14 => {
            let ph = *rng.pick(&["b", "e", "n", "S", "F", "C"]);
            let mut e = new_event(rng, ph, Some(&evs[i]));
            set(&mut e, "id", J::Num(rng.below(4).to_string()));
            if ph == "C" {
                set(
                    &mut e,
                    "args",
                    J::Obj(vec![
                        ("value".into(), J::Num(interesting_number(rng))),
                        ("other".into(), other_type(rng)),
                    ]),
                );
            }
            evs.insert(at, e);
        }
        // An event from another trace.
        15 => {
            if let Some(d) = donor {
                evs.insert(at, d);
            }
        }
        // Move an event.
        16 => {
            let e = evs.remove(i);
            evs.insert(at.min(evs.len()), e);
        }
        // The event itself replaced by something that is not an event.
        _ => evs[i] = other_type(rng),
    }
}

/// Text-level damage JSON parsers have to survive: a closing bracket removed, a quote
/// removed, a stray comma.
pub fn damage_text(rng: &mut Rng, text: &mut Vec<u8>) {
    let targets: &[u8] = match rng.below(4) {
        0 => b"}",
        1 => b"]",
        2 => b"\"",
        _ => b",:",
    };
    let start = rng.below(text.len().max(1));
    let found = text[start.min(text.len())..]
        .iter()
        .position(|c| targets.contains(c))
        .map(|p| p + start)
        .or_else(|| text.iter().rposition(|c| targets.contains(c)));
    if let Some(p) = found {
        if rng.chance(1, 4) {
            text.insert(p, b',');
        } else {
            text.remove(p);
        }
    }
}

/// Tokens for byte-level mutation of JSON.
pub const DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"true",
    b"NaN",
    b"1e999",
    b"-",
    b"\"ph\":\"X\"",
    b"\"ph\":\"B\"",
    b"\"ph\":\"E\"",
    b"\"ph\":\"M\"",
    b"\"ts\":",
    b"\"dur\":",
    b"\"pid\":",
    b"\"tid\":",
    b"\"args\":{",
    b"\"cat\":\"kernel\"",
    b"{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":0,\"tid\":0,\"name\":\"a\"},",
    b"\xff\xfe",
    b"\0",
];

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
