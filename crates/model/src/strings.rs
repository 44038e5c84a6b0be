//! String interning: every name in a profile is stored once and referred to by a [`StrId`].

use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Index of an interned string in a [`Strings`] table. `StrId(0)` is always the empty string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StrId(pub u32);

impl StrId {
    pub const EMPTY: StrId = StrId(0);
}

/// An append-only string interner backed by one contiguous arena.
pub struct Strings {
    arena: String,
    /// `ends[i]` is the end offset in `arena` of string `i`; string `i` starts at `ends[i-1]`.
    ends: Vec<usize>,
    table: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl Default for Strings {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Strings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Strings")
            .field("len", &self.len())
            .field("bytes", &self.arena.len())
            .finish()
    }
}

impl Strings {
    pub fn new() -> Self {
        let mut s = Strings {
            arena: String::new(),
            ends: Vec::new(),
            table: HashTable::new(),
            hasher: Default::default(),
        };
        s.intern("");
        s
    }

    /// Number of distinct strings, including the empty string.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes held by the arena (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.arena.capacity() + self.ends.capacity() * 8 + self.table.capacity() * 4
    }

    fn slice(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.arena[start..self.ends[i]]
    }

    /// The string behind `id`. An id from another table yields the empty string rather than panicking.
    pub fn get(&self, id: StrId) -> &str {
        if (id.0 as usize) < self.ends.len() {
            self.slice(id.0)
        } else {
            ""
        }
    }

    /// Interns `s`, returning its id (the same id for equal strings).
    pub fn intern(&mut self, s: &str) -> StrId {
        let hash = self.hasher.hash_one(s);
        let Strings {
            arena,
            ends,
            table,
            hasher,
        } = self;
        let lookup = |i: &u32| {
            let i = *i as usize;
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &arena[start..ends[i]] == s
        };
        if let Some(&i) = table.find(hash, lookup) {
            return StrId(i);
        }
        let id = ends.len() as u32;
        arena.push_str(s);
        ends.push(arena.len());
        let (arena_ref, ends_ref) = (&*arena, &*ends);
        table.insert_unique(hash, id, |i| {
            let i = *i as usize;
            let start = if i == 0 { 0 } else { ends_ref[i - 1] };
            hasher.hash_one(&arena_ref[start..ends_ref[i]])
        });
        StrId(id)
    }

    /// Looks `s` up without interning it.
    pub fn find(&self, s: &str) -> Option<StrId> {
        let hash = self.hasher.hash_one(s);
        self.table
            .find(hash, |i| self.slice(*i) == s)
            .map(|&i| StrId(i))
    }

    /// Iterates over all strings with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &str)> {
        (0..self.ends.len() as u32).map(move |i| (StrId(i), self.slice(i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_deduplicates() {
        let mut s = Strings::new();
        assert_eq!(s.intern(""), StrId::EMPTY);
        let a = s.intern("XLA Ops");
        let b = s.intern("Steps");
        assert_ne!(a, b);
        assert_eq!(s.intern("XLA Ops"), a);
        assert_eq!(s.get(a), "XLA Ops");
        assert_eq!(s.get(b), "Steps");
        assert_eq!(s.find("Steps"), Some(b));
        assert_eq!(s.find("nope"), None);
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(StrId(99)), "");
        // Many strings force the table to grow and rehash.
        let ids: Vec<_> = (0..10_000).map(|i| s.intern(&format!("op.{i}"))).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(s.get(*id), format!("op.{i}"));
            assert_eq!(s.find(&format!("op.{i}")), Some(*id));
        }
    }
}
