//! The byte walker over the top-level object and its `traceEvents` array, handing each event
//! to the importer as it meets it.

use super::*;

/// A position in the text, and the small steps of reading JSON structure by hand (values
/// themselves are read by serde_json).
pub(super) struct Cursor<'a> {
    pub(super) text: &'a str,
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn ws(&mut self) {
        self.pos = stops::ws(self.text.as_bytes(), self.pos);
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    pub(super) fn error(&self, category: Category, message: impl Into<String>) -> ParseError {
        error_at(self.text, self.pos, category, message)
    }

    /// One JSON value starting here (after white space), borrowed from the text.
    pub(super) fn value<T: Deserialize<'a>>(&mut self) -> Result<T, ParseError> {
        let base = self.pos;
        let mut it = serde_json::Deserializer::from_str(&self.text[base..]).into_iter::<T>();
        match it.next() {
            Some(Ok(v)) => {
                self.pos = base + it.byte_offset();
                Ok(v)
            }
            Some(Err(e)) => Err(from_serde(self.text, base, &e)),
            None => {
                self.pos = self.text.len();
                Err(self.error(Category::Eof, "EOF while parsing a value"))
            }
        }
    }

    /// The event that starts here, into `e`: skimmed past when `skip` leaves it out (returns
    /// `true`), else read, its `args` pairs appended to `pairs`.
    pub(super) fn event(
        &mut self,
        skip: Option<Skip>,
        pairs: &mut Vec<Pair<'a>>,
        e: &mut RawEvent<'a>,
    ) -> Result<bool, ParseError> {
        if let Some(skip) = skip {
            // The members after those `worth_skimming` read.
            if let Some((i, k)) = worth_skimming(self.text, self.pos, &skip) {
                if let Some(k) = layout::skim(self.text, i, k) {
                    if skipped_event(&k, skip, e) {
                        self.pos = k.end;
                        return Ok(true);
                    }
                }
            }
        }
        *e = RawEvent::default();
        if let Some(end) = plain::event(self.text, self.pos, skip, pairs, e) {
            self.pos = end;
            return Ok(false);
        }
        let mut o: OwnedEvent<'a> = self.value()?;
        if let Some((from, to)) = o.event.args {
            let base = pairs.len() as u32;
            pairs.extend(o.pairs.drain(from as usize..to as usize));
            o.event.args = Some((base, base + (to - from)));
        }
        *e = o.event;
        Ok(false)
    }

    /// The rest of the top-level object after the events array (from its `,` or `}`): the
    /// fields the importer wants, up to the end of the file.
    pub(super) fn object_tail(&mut self) -> Result<Vec<Field<'a>>, ParseError> {
        let mut fields = Vec::new();
        while self.after_element(b'}')? {
            let key = self.key()?;
            let name = key.clone();
            self.member(&name, &mut fields, key)?;
        }
        self.end()?;
        Ok(fields)
    }

    /// After an element of an array (or a member of an object): `true` at a `,` (skipped, with
    /// the white space after it), `false` at `close` (skipped).
    pub(super) fn after_element(&mut self, close: u8) -> Result<bool, ParseError> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.ws();
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            None => Err(self.error(
                Category::Eof,
                if close == b']' {
                    "EOF while parsing a list"
                } else {
                    "EOF while parsing an object"
                },
            )),
            Some(_) => Err(self.error(
                Category::Syntax,
                if close == b']' {
                    "expected `,` or `]`"
                } else {
                    "expected `,` or `}`"
                },
            )),
        }
    }

    /// `"key" :` of an object member.
    pub(super) fn key(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(if self.peek().is_none() {
                self.error(Category::Eof, "EOF while parsing an object")
            } else {
                self.error(Category::Syntax, "key must be a string")
            });
        }
        let k: Borrowed<'a> = self.value()?;
        self.ws();
        match self.peek() {
            Some(b':') => {
                self.pos += 1;
                self.ws();
                Ok(k.0)
            }
            None => Err(self.error(Category::Eof, "EOF while parsing an object")),
            Some(_) => Err(self.error(Category::Syntax, "expected `:`")),
        }
    }

    /// The top-level member `key`'s value: kept raw when the importer wants it, else skipped.
    pub(super) fn member(
        &mut self,
        key: &str,
        out: &mut Vec<Field<'a>>,
        owned_key: Cow<'a, str>,
    ) -> Result<(), ParseError> {
        if KEPT_FIELDS.contains(&key) {
            let v: &'a RawValue = self.value()?;
            out.push((owned_key, v));
        } else {
            self.value::<IgnoredAny>()?;
        }
        Ok(())
    }

    /// Only white space is left.
    pub(super) fn end(&mut self) -> Result<(), ParseError> {
        self.ws();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error(Category::Syntax, "trailing characters")),
        }
    }
}

/// Top-level fields other than `traceEvents` that the importer reads.
pub(super) const KEPT_FIELDS: &[&str] = &[
    "deviceProperties",
    "distributedInfo",
    "baseTimeNanoseconds",
    "displayTimeUnit",
    "schemaVersion",
    "traceName",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "hip_driver_version",
    "with_flops",
    "with_modules",
    "with_stack",
];

/// The first thread: the whole structure, events to the sink as they come.
pub(super) struct Walker<'a, 's> {
    pub(super) c: Cursor<'a>,
    pub(super) sink: &'s mut dyn Sink,
    /// Chunks of the events array the two threads parse, from the first's start on.
    pub(super) chunks: Option<&'s chunks::Chunks<'a>>,
    pub(super) skip: Option<Skip>,
    /// The `args` pairs of the event being handed over.
    pub(super) pairs: Vec<Pair<'a>>,
    /// The event being handed over.
    pub(super) ev: RawEvent<'a>,
    /// Where the rest of the events array comes from a file being inflated, and from where
    /// ([`reading`]).
    pub(super) feed: Option<(usize, &'s mut dyn reading::Feed<'a>)>,
}

impl<'a, 's> Walker<'a, 's> {
    pub(super) fn new(text: &'a str, sink: &'s mut dyn Sink, skip: Option<Skip>) -> Self {
        Walker {
            c: Cursor { text, pos: 0 },
            sink,
            chunks: None,
            skip,
            pairs: Vec::new(),
            ev: RawEvent::default(),
            feed: None,
        }
    }

    /// The walker of a head that ends at `at`, the rest of the text coming from `feed`.
    pub(super) fn fed(
        head: &'a str,
        sink: &'s mut dyn Sink,
        feed: &'s mut dyn reading::Feed<'a>,
        skip: Option<Skip>,
    ) -> Self {
        let mut w = Walker::new(head, sink, skip);
        w.feed = Some((head.len(), feed));
        w
    }

    pub(super) fn top(mut self) -> Result<bool, ParseError> {
        self.c.ws();
        match self.c.peek() {
            Some(b'[') => {
                self.c.pos += 1;
                if self.events(false)? {
                    return Ok(true);
                }
                self.c.end().map(|()| false)
            }
            Some(b'{') => {
                self.c.pos += 1;
                self.c.ws();
                let mut seen_events = false;
                if self.c.peek() == Some(b'}') {
                    self.c.pos += 1;
                } else {
                    loop {
                        let key = self.c.key()?;
                        if key == "traceEvents" && !seen_events {
                            seen_events = true;
                            if self.c.peek() != Some(b'[') {
                                return Err(self.c.error(
                                    Category::Data,
                                    "`traceEvents` is not an array of trace events",
                                ));
                            }
                            self.c.pos += 1;
                            if self.events(true)? {
                                return Ok(true);
                            }
                        } else {
                            let mut kept = Vec::new();
                            let name = key.clone();
                            self.c.member(&name, &mut kept, key)?;
                            for (k, v) in kept {
                                self.sink.field(&k, v);
                            }
                        }
                        if !self.c.after_element(b'}')? {
                            break;
                        }
                    }
                }
                self.c.end()?;
                if !seen_events {
                    return Err(ParseError {
                        category: Category::Data,
                        message: "no `traceEvents` array: not a Chrome trace (PyTorch profiler traces have one)".into(),
                        line: 0,
                        column: 0,
                    });
                }
                Ok(false)
            }
            None => Err(self.c.error(Category::Eof, "EOF while parsing a value")),
            Some(_) => Err(self.c.error(
                Category::Syntax,
                "expected a Chrome trace: an object with `traceEvents`, or an array of events",
            )),
        }
    }

    /// The events array, from just after its `[`. Returns `true` when another part (the chunks
    /// or the feed) read it to its end, and what follows to the end of the file.
    pub(super) fn events(&mut self, in_object: bool) -> Result<bool, ParseError> {
        self.c.ws();
        if self.c.peek() == Some(b']') {
            self.c.pos += 1;
            return Ok(false);
        }
        loop {
            if let Some(at) = self.feed.as_ref().map(|f| f.0) {
                if self.c.pos == at {
                    return self.take_over_feed(in_object);
                }
                if self.c.pos > at {
                    // Not an element of this array: the head ends within an event, and its
                    // read fails (the file is then read whole).
                    self.feed = None;
                }
            }
            if let Some(ch) = self.chunks {
                if self.c.pos >= ch.first() {
                    self.chunks = None;
                    if self.c.pos > ch.first() {
                        // Not an element of this array: read on alone.
                        ch.stop();
                    } else {
                        match ch.hand_on(self.sink, in_object)? {
                            chunks::Outcome::Finished => return Ok(true),
                            chunks::Outcome::From(at) => self.c.pos = at,
                        }
                    }
                }
            }
            self.pairs.clear();
            let skipped = self.c.event(self.skip, &mut self.pairs, &mut self.ev)?;
            let e = &self.ev;
            let args = if skipped {
                None
            } else {
                Args::of(e, &self.pairs)
            };
            self.sink.event(e, args);
            if !self.c.after_element(b']')? {
                return Ok(false);
            }
        }
    }

    /// Reads the rest of the events array from this thread's feed: its segments while the file
    /// is being inflated, then the rest of the file, whole once inflated.
    pub(super) fn take_over_feed(&mut self, in_object: bool) -> Result<bool, ParseError> {
        let Some((_, feed)) = self.feed.take() else {
            return Ok(false);
        };
        // The head is read: its text may be unmapped from here on ([`reading`]), so nothing of
        // it is kept.
        self.c = Cursor { text: "", pos: 0 };
        self.ev = RawEvent::default();
        self.pairs.clear();
        loop {
            match feed.next()? {
                reading::Fed::Segment(text) => self.segment(text)?,
                reading::Fed::Rest(text) => {
                    return rest(
                        text,
                        &mut *self.sink,
                        self.skip,
                        Some(in_object),
                        feed.lent(),
                    )
                    .map(|()| true);
                }
            }
        }
    }

    /// The events array from here (an element's start) to its end, then the rest of the file:
    /// the fields of the top-level object after the array (`in_object`), or nothing.
    pub(super) fn after_events(&mut self, in_object: bool) -> Result<(), ParseError> {
        if self.events(in_object)? {
            return Ok(());
        }
        self.c.ws();
        let at = self.c.pos;
        let tail = self.c.peek().is_some().then(|| self.c.object_tail());
        finish_array(self.sink, self.c.text, in_object, tail, at)
    }

    /// Reads the elements of the events array in `text` (a [`reading::Fed::Segment`]) to the sink; an
    /// error unless the last one ends exactly at its end with a comma.
    pub(super) fn segment(&mut self, text: &str) -> Result<(), ParseError> {
        let mut c = Cursor { text, pos: 0 };
        let mut pairs = Vec::new();
        let mut e = RawEvent::default();
        while c.pos < text.len() {
            pairs.clear();
            let skipped = c.event(self.skip, &mut pairs, &mut e)?;
            let args = if skipped { None } else { Args::of(&e, &pairs) };
            self.sink.event(&e, args);
            if !c.after_element(b']')? {
                return Err(c.error(Category::Syntax, "the events array ended inside a segment"));
            }
        }
        Ok(())
    }
}

/// The rest of a `.json.gz` file, whole in `text` once inflated: from the start of an element
/// of the events array (and then what follows the array; `in_object` when the array is a member
/// of the top-level object), or the whole file (`None`). Read as a file read whole is, in the
/// chunks the `lent` thread cut of it, on both threads (or on this one alone where it cut none).
pub(super) fn rest<'a>(
    text: &'a str,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    in_object: Option<bool>,
    lent: &chunks::Lent<'a>,
) -> Result<(), ParseError> {
    let mut w = Walker::new(text, sink, skip);
    lent.run(text, |ch| {
        w.chunks = ch;
        match in_object {
            Some(in_object) => w.after_events(in_object),
            None => w.top().map(|_| ()),
        }
    })
}

/// After the events array, which ended at `at` in `text` (after its `]` and white space), read
/// apart from the walker's text (by the chunks, or from the feed): the fields of the top-level object after it (`tail`, read
/// with it) to `sink`, or what is wrong there.
pub(super) fn finish_array<'a>(
    sink: &mut dyn Sink,
    text: &str,
    in_object: bool,
    tail: Option<Result<Vec<Field<'a>>, ParseError>>,
    at: usize,
) -> Result<(), ParseError> {
    match (in_object, tail) {
        (true, Some(Ok(fields))) => {
            for (k, v) in fields {
                sink.field(&k, v);
            }
            Ok(())
        }
        (true, Some(Err(e))) => Err(e),
        (false, None) => Ok(()),
        (true, None) => Err(error_at(
            text,
            at,
            Category::Eof,
            "EOF while parsing an object",
        )),
        (false, Some(_)) => Err(error_at(text, at, Category::Syntax, "trailing characters")),
    }
}
