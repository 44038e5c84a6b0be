//! Finding one's way in a document: its events, a node by path, a window of events, a node left out.

use super::*;

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

pub(super) fn events(doc: &J) -> Option<&Vec<J>> {
    match doc {
        J::Arr(items) => Some(items),
        J::Obj(fields) => fields.iter().find_map(|(k, v)| match v {
            J::Arr(items) if k == "traceEvents" => Some(items),
            _ => None,
        }),
        _ => None,
    }
}

pub(super) fn get<'a>(obj: &'a J, key: &str) -> Option<&'a J> {
    match obj {
        J::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// Sets `key` of an object (replacing the first such key, else adding it).
pub(super) fn set(obj: &mut J, key: &str, v: J) {
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
pub(super) fn size(v: &J) -> usize {
    1 + match v {
        J::Arr(items) => items.iter().map(size).sum(),
        J::Obj(fields) => fields.iter().map(|(_, x)| size(x)).sum(),
        _ => 0,
    }
}

/// The path (child index at each level) of a node drawn uniformly from the tree.
pub(super) fn random_path(v: &J, rng: &mut Rng) -> Vec<usize> {
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
pub(super) fn node_mut<'a>(v: &'a mut J, path: &[usize]) -> Option<&'a mut J> {
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
pub(super) fn with_random_node(v: &mut J, rng: &mut Rng, f: impl FnOnce(&mut J, &mut Rng)) {
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
pub(super) fn other_type(rng: &mut Rng) -> J {
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
pub(super) fn deep(rng: &mut Rng, depth: usize) -> J {
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
pub(super) fn some_event(rng: &mut Rng, evs: &[J]) -> Option<usize> {
    (!evs.is_empty()).then(|| rng.below(evs.len()))
}

/// A new event of phase `ph` on the process and thread of `like` (when given).
pub(super) fn new_event(rng: &mut Rng, ph: &str, like: Option<&J>) -> J {
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
