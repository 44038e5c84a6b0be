use super::micros::*;
use super::*;

/// Records everything a parse hands over, to compare parses; the strings the second thread
/// numbered are kept to check every `args` pair it read ahead against [`value_of`].
#[derive(Default)]
pub(super) struct Record(pub(super) Vec<String>, Vec<String>);

impl Sink for Record {
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        if let Some(Args {
            pairs,
            pre: Some(pre),
        }) = args
        {
            assert_eq!(pairs.len(), pre.len());
            let s = |i: u32| Cow::Borrowed(self.1[i as usize].as_str());
            for ((k, v), a) in pairs.iter().zip(pre) {
                assert_eq!(s(a.key), *k);
                let got = match a.value {
                    PreValue::None => Value::None,
                    PreValue::I64(x) => Value::I64(x),
                    PreValue::U64(x) => Value::U64(x),
                    PreValue::F64(x) => Value::F64(x),
                    PreValue::Str(i) => Value::Str(s(i)),
                };
                assert_eq!(got, value_of(v.get()), "{k}: {}", v.get());
            }
        }
        self.0.push(show(e, args));
    }
    fn strings(&mut self, new: &[Cow<'_, str>]) {
        self.1.extend(new.iter().map(|x| x.to_string()));
    }
    fn field(&mut self, key: &str, value: &RawValue) {
        self.0.push(format!("field {key} {}", value.get()));
    }
}

/// What a parse on one thread hands over, and its error.
fn run(text: &str) -> (Vec<String>, Option<String>) {
    let mut rec = Record::default();
    let r = parse_text(text, &mut rec);
    (rec.0, r.err().map(|e| e.to_string()))
}

/// Fields before and after the events, `args` with nested objects written over several lines
/// (so `},` + line break + `{` occurs inside events too), and strings holding `},{`.
pub(super) const TRICKY: &str = r#"{
  "schemaVersion": 1,
  "distributedInfo": {"rank": 3, "world_size": 8},
  "traceEvents": [
  {
    "ph": "X", "name": "a},{b", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3,
    "args": {"nested": [
      {"x": 1},
      {"y": "}, {"}
    ], "k": "v"}
  },
  {
    "ph": "B", "name": "esc\"aped\u00e9", "pid": "p", "tid": 1, "ts": 11
  },
  {"ph": "E", "pid": "p", "tid": 1, "ts": 12},
  {
    "ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 13,
    "args": {"Bytes": -16, "Total Allocated": 1024}
  },
  {"ph": "X", "name": "last", "pid": 1, "tid": 2, "ts": 20, "dur": 1}
  ],
  "deviceProperties": [
    {"id": 0, "name": "GPU"},
    {"id": 1, "name": "GPU"}
  ],
  "baseTimeNanoseconds": 1700000000000000000,
  "ignored": {"a": [1, 2, {"b": 3}]}
}
"#;

/// The search for a place to cut the events array (where the chunks and the segments of a
/// file being read start) lands on a `{` from anywhere in it, and on each event's start
/// after a line break, not on the objects nested in `args` on the same line. (Whether a cut
/// is an element's start is checked where the parts are joined: `chunks` and `reading`
/// test every `{`.)
#[test]
fn the_search_for_a_cut_finds_the_starts_of_events() {
    assert_eq!(run(TRICKY).1, None);
    let starts: std::collections::BTreeSet<usize> = (0..TRICKY.len())
        .filter_map(|f| find_split(TRICKY, f))
        .collect();
    assert!(starts.iter().all(|&i| TRICKY[i..].starts_with('{')));
    for event in [
        "{\n    \"ph\": \"B\"",
        "{\n    \"ph\": \"i\"",
        "{\"ph\": \"E\"",
    ] {
        assert!(
            starts.iter().any(|&i| TRICKY[i..].starts_with(event)),
            "{event}: {starts:?}"
        );
    }
    assert!(!starts.iter().any(|&i| TRICKY[i..].starts_with("{\"x\"")));
}

/// Events a [`Skip`] leaves out: skimmed (strings and brackets that look like structure
/// inside them included), unless they hold a `stream` or are not plain.
#[test]
fn skipped_events_keep_their_times() {
    const SKIPPY: &str = r#"[
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 2, "args": {"Input Dims": [[1, 2], []], "s": "}]{[:,", "o": {"p": [{}]}}},
  {"ph": "X", "cat": "cpu_op", "name": "triton", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"stream": 0}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 7, "dur": 1, "args": {"stream": 7, "correlation": 3}},
  {"cat": "cpu_op", "ph": "X", "ts": "8.5", "name": "quoted time"},
  {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 7, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "no time", "pid": 1, "tid": 1},
  {"ph": "X", "cat": "cpu_op", "name": "last", "ts": 9.25, "dur": 0.5}
]
"#;
    let skip = Skip {
        complete_cats: &["cpu_op"],
        flow_cats: &["ac2g"],
        args_kept: None,
    };
    let (want, err) = with_skip(Some(skip), || run(SKIPPY));
    assert_eq!(err, None);
    let skipped: Vec<&String> = want.iter().filter(|e| e.starts_with("skipped")).collect();
    assert_eq!(skipped.len(), 5, "{want:#?}");
    assert!(
        skipped[0].contains(r#"Some("5") Some("2")"#),
        "{}",
        skipped[0]
    );
    // Skimmed: no name read (nor anything else but the phase, category and times).
    assert!(skipped[0].contains(r#"Some("X") None Some("cpu_op") None None"#));
    assert!(skipped[1].contains(r#"Some("\"8.5\"")"#), "{}", skipped[1]);
    assert!(skipped[2].contains(r#"Some("f")"#), "{}", skipped[2]);
    // Without a time it is read in full first (and the importer counts it as timeless).
    assert!(skipped[3].contains(r#"Some("no time")"#), "{}", skipped[3]);
    assert!(
        skipped[4].contains(r#"Some("9.25") Some("0.5")"#),
        "{}",
        skipped[4]
    );
    assert!(want
        .iter()
        .any(|e| !e.starts_with("skipped") && e.contains("triton")));
    // A repeated time is an error, skipped or not.
    let twice = SKIPPY.replace(r#""ts": 9.25"#, r#""ts": 9.25, "ts": 1"#);
    let full = run(&twice).1;
    assert!(
        full.as_deref()
            .is_some_and(|e| e.contains("duplicate field")),
        "{full:?}"
    );
    assert_eq!(with_skip(Some(skip), || run(&twice)).1, full);
}

#[test]
fn text_checked_in_halves_is_checked_as_a_whole() {
    // Large enough for two threads; a four-byte character straddles the cut.
    let mut text = "{\"ph\": \"X\", \"name\": \"a\u{e9}\"}, ".repeat(PARALLEL_MIN / 28 + 1);
    let half = text.len() / 2;
    // The cut of the longer text (`half + 2`) falls within the character inserted at `at`.
    let at = (half - 1..=half + 1)
        .find(|&i| text.is_char_boundary(i))
        .expect("a character boundary near the middle");
    text.insert(at, '\u{1f600}');
    let bytes = text.as_bytes().to_vec();
    assert!(bytes.len() >= PARALLEL_MIN && !text.is_char_boundary(bytes.len() / 2));
    assert_eq!(utf8(&bytes, 2).ok(), Some(text.as_str()));
    // A bad byte anywhere (first half, at the cut, second half, last) is named as one
    // thread names it.
    for bad in [
        10,
        bytes.len() / 2 - 1,
        bytes.len() / 2,
        bytes.len() * 3 / 4,
        bytes.len() - 1,
    ] {
        let mut b = bytes.clone();
        b[bad] = 0xff;
        let want = std::str::from_utf8(&b).unwrap_err();
        assert_eq!(utf8(&b, 2).unwrap_err(), want, "a bad byte at {bad}");
        // At the bad byte, or at the start of the character it broke.
        assert!(want.valid_up_to() <= bad && bad - want.valid_up_to() < 4);
    }
}

/// The text of a real trace (a committed fixture: rank 0 of a two-rank job, 1.8 MB).
pub(super) fn real_trace() -> String {
    use std::io::Read;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/pytorch/two_ranks/hta-trace_filter-sampled_rank-0.json.gz"
    );
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("fixture"))
        .read_to_string(&mut text)
        .expect("gunzip");
    text
}

/// An event and its `args` as text, to compare readings.
fn show(e: &RawEvent<'_>, args: Option<Args<'_, '_>>) -> String {
    let r = |v: Option<Raw<'_>>| v.map(|v| v.get().to_string());
    format!(
        "{}{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        if e.skipped { "skipped " } else { "" },
        e.ph,
        e.name,
        e.cat,
        r(e.pid),
        r(e.tid),
        r(e.ts),
        r(e.dur),
        r(e.id),
        r(e.id2),
        e.bp,
        args.map(|a| a
            .pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", v.get()))
            .collect::<Vec<_>>())
    )
}

/// Compares the plain reader with serde_json's reading on the object at `text[at]`: where
/// the plain reader reads it, serde_json reads the same event and ends at the same place;
/// where serde_json fails, the plain reader does not read it. Returns whether it was read
/// plainly.
fn same_as_serde(text: &str, at: usize, skip: Option<Skip>) -> bool {
    let mut pairs = vec![(Cow::Borrowed("before"), Raw("1"))];
    let mut e = RawEvent::default();
    let plain = plain::event(text, at, skip, &mut pairs, &mut e).map(|end| (e, end));
    let mut c = Cursor { text, pos: at };
    let general = with_skip(skip, || c.value::<OwnedEvent<'_>>());
    match (plain, general) {
        (None, _) => {
            assert_eq!(pairs.len(), 1, "pairs left behind at {at}");
            false
        }
        (Some((e, end)), Ok(g)) => {
            assert_eq!(end, c.pos, "end of the event at {at}: {}", &text[at..]);
            assert_eq!(
                show(&e, Args::of(&e, &pairs)),
                show(&g.event, Args::of(&g.event, &g.pairs)),
                "{}",
                &text[at..end]
            );
            assert_eq!(&pairs[..1], &[(Cow::Borrowed("before"), Raw("1"))]);
            true
        }
        (Some((e, _)), Err(err)) => {
            panic!(
                "read plainly but not by serde_json ({err}): {}",
                show(&e, Args::of(&e, &pairs))
            )
        }
    }
}

/// Whether [`skim`] leaves out the event at `text[at]`; when it does and serde_json reads
/// the event, both must agree on where it ends, that it is left out, and its phase,
/// category and times. (Inside values the skim checks only strings and brackets, as it
/// always has: what serde_json rejects there it may pass.)
fn skim_as_serde(text: &str, at: usize, skip: Skip) -> bool {
    // The import's way (the first members by `worth_skimming`, the rest by `skim_members`)
    // finds what a skim from the start does.
    fn sum<'a>(k: &Skimmed<'a>) -> (usize, [Option<&'a str>; 4], bool) {
        (k.end, [k.ph, k.cat, k.ts, k.dur], k.read_in_full)
    }
    if let Some((i, first)) = worth_skimming(text, at, &skip) {
        assert_eq!(
            skim_members(text, i, first, true).as_ref().map(sum),
            skim(text, at).as_ref().map(sum),
            "{}",
            &text[at..]
        );
    }
    let Some(k) = skim(text, at) else {
        return false;
    };
    let Some(e) = skipped_of(&k, skip) else {
        return false;
    };
    let mut c = Cursor { text, pos: at };
    let Ok(g) = with_skip(Some(skip), || c.value::<OwnedEvent<'_>>()) else {
        return false;
    };
    assert_eq!(k.end, c.pos, "end of the event at {at}: {}", &text[at..]);
    assert!(g.event.skipped, "{}", &text[at..k.end]);
    assert_eq!(
        (&e.ph, &e.cat, e.ts, e.dur),
        (&g.event.ph, &g.event.cat, g.event.ts, g.event.dur),
        "{}",
        &text[at..k.end]
    );
    true
}

/// What a skim found, to compare two skims.
type Summed<'a> = (usize, [Option<&'a str>; 4], bool);

fn summed<'a>(k: &Skimmed<'a>) -> Summed<'a> {
    (k.end, [k.ph, k.cat, k.ts, k.dur], k.read_in_full)
}

/// The skim by layout answers as the member-by-member one: on every event of the committed
/// traces in turn (the layout answering for nearly all of those left out, once it has seen
/// one of their kind), and on every one-byte change of an event in the plain form, read by
/// the layout of the event unchanged.
#[test]
fn skims_by_layout_answer_as_member_by_member() {
    let skip = Skip {
        complete_cats: &["cpu_op", "python_function"],
        flow_cats: &["ac2g", "fwdbwd", "async_cpu_to_gpu"],
        args_kept: None,
    };
    let (mut looked, mut quick) = (0, 0);
    for t in fixture_traces() {
        let mut layouts = layout::Skims::default();
        for at in event_starts(&t) {
            let Some((i, first)) = worth_skimming(&t, at, &skip) else {
                continue;
            };
            looked += 1;
            let slow = skim_members(&t, i, first, true).as_ref().map(summed);
            if let Some(q) = layouts.quick(&t, i, first) {
                quick += 1;
                assert_eq!(Some(summed(&q)), slow, "{}", &t[at..]);
            }
            let got = layouts.skim(&t, i, first);
            assert_eq!(got.as_ref().map(summed), slow, "{}", &t[at..]);
        }
    }
    assert!(
        looked >= 100 && quick * 100 >= looked * 80,
        "{quick} of {looked}"
    );
    let events = [
        concat!(
            r#"{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: "#,
            r#"DivBackward1", "pid": 2910249, "tid": 2919752,"#,
            "\n    ",
            r#""ts": 4458676522690.655, "dur": 156.777, "args": {"External id": 2049, "#,
            r#""Input Dims": [[2, 3], []], "s": "x]y", "n": -1.5e3, "b": true, "z": null}}"#
        ),
        r#"{"ph": "f", "id": 57532, "pid": 2910249, "tid": 2919752, "ts": 4458676981028.392, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#,
    ];
    let next = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}"#;
    let (mut tried, mut quick) = (0, 0);
    for ev in events {
        let base = format!("{ev},\n  {next}");
        let (i, first) = worth_skimming(&base, 0, &skip).expect("left out");
        let mut layouts = layout::Skims::default();
        assert!(layouts.skim(&base, i, first).is_some());
        assert!(layouts.quick(&base, i, first).is_some(), "{base}");
        for at in 0..ev.len() {
            for c in [
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', b'\n',
                0x1f, b'x', b'e',
            ] {
                let mut m = base.as_bytes().to_vec();
                m[at] = c;
                let Ok(m) = String::from_utf8(m) else {
                    continue;
                };
                let Some((i, first)) = worth_skimming(&m, 0, &skip) else {
                    continue;
                };
                tried += 1;
                if let Some(q) = layouts.quick(&m, i, first) {
                    quick += 1;
                    let slow = skim_members(&m, i, first, true).as_ref().map(summed);
                    assert_eq!(Some(summed(&q)), slow, "{m}");
                }
            }
        }
    }
    // Changes to values leave the layout; changes between them do not.
    assert!(quick * 3 > tried && quick < tried, "{quick} of {tried}");
}

/// Every event of the committed traces that the skim leaves out is left out by serde_json
/// too, with the same end and times; so are odd forms and every one-byte change of one.
#[test]
fn skimmed_events_read_as_serde_json_reads_them() {
    let skip = Skip {
        complete_cats: &["cpu_op", "python_function"],
        flow_cats: &["ac2g", "fwdbwd", "async_cpu_to_gpu"],
        args_kept: None,
    };
    let (mut events, mut skimmed) = (0, 0);
    for t in fixture_traces() {
        for at in event_starts(&t) {
            events += 1;
            skimmed += usize::from(skim_as_serde(&t, at, skip));
        }
    }
    // Operator events and flows are most of a trace.
    assert!(skimmed * 100 >= events * 30, "{skimmed} of {events}");
    let cases = [
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2}"#,
        r#"{"ph":"X","cat":"cpu_op","ts":"1.5","dur":2,"args":{"a":[[], [1, 2], {"b": "]}:["}]}}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"k": "stream"}}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"stream": 1}}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "ts": 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "t\u0073": 1}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": [1]}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1,}"#,
        r#"{"ph": "X", "cat": "cpu_op" "ts": 1}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"a": [}}"#,
        r#"{"ph": "f", "cat": "ac2g", "id": 3, "ts": 4, "bp": "e"}"#,
    ];
    let mut read = 0;
    for c in cases {
        read += usize::from(skim_as_serde(c, 0, skip));
    }
    assert!(read >= 3, "{read}");
    let ev = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 12.5, "dur": 3, "args": {"Input Dims": [[2, 3], []], "s": "x]y", "n": -1.5e3, "b": true, "z": null}}"#;
    assert!(skim_as_serde(ev, 0, skip));
    // An escape, valid or not, in a name or in the args, and other forms a skim does not
    // check: read in full, which checks them.
    for e in [
        r#"{"ph": "X", "cat": "cpu_op", "name": "a\"b", "ts": 1, "dur": 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "name": "a\qb", "ts": 1, "dur": 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2, "args": {"s": "x\"y"}}"#,
        r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2, "args": {"s": ["x\qy"]}}"#,
        // A control character, a scalar that is not JSON.
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\u{1}b\", \"ts\": 1, \"dur\": 2}",
        r#"{"ph": "X", "cat": "cpu_op", "pid": NaN, "ts": 1, "dur": 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "pid": tru, "ts": 1, "dur": 2}"#,
        r#"{"ph": "X", "cat": "cpu_op", "pid": 01, "ts": 1, "dur": 2}"#,
    ] {
        let k = skim(e, 0).expect("well formed as far as a skim looks");
        assert!(skipped_of(&k, skip).is_none(), "{e}");
    }
    let mut read = 0;
    for cut in 0..ev.len() {
        skim_as_serde(&ev[..cut], 0, skip);
    }
    for i in 0..ev.len() {
        for c in [
            b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', 0x1f,
        ] {
            let mut m = ev.as_bytes().to_vec();
            m[i] = c;
            if let Ok(m) = String::from_utf8(m) {
                read += usize::from(skim_as_serde(&m, 0, skip));
            }
        }
    }
    assert!(read > 100, "{read}");
}

/// The text of each committed PyTorch trace (`fixtures/pytorch/*.json.gz`).
fn fixture_traces() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch");
    let mut texts = Vec::new();
    for f in std::fs::read_dir(&dir).expect("fixtures").flatten() {
        let p = f.path();
        if p.to_string_lossy().ends_with(".json.gz") {
            let mut t = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).expect("open")),
                &mut t,
            )
            .expect("gunzip");
            texts.push(t);
        }
    }
    assert!(texts.len() >= 3, "{} traces", texts.len());
    texts
}

/// The objects of the events array of a trace (file text), by serde_json's reading.
fn event_starts(text: &str) -> Vec<usize> {
    let mut c = Cursor {
        text,
        pos: text.find("\"traceEvents\"").map_or(0, |i| i + 13),
    };
    c.pos += text[c.pos..].find('[').expect("an events array") + 1;
    c.ws();
    let mut starts = Vec::new();
    while c.peek() == Some(b'{') {
        starts.push(c.pos);
        c.value::<IgnoredAny>().expect("an event");
        if !c.after_element(b']').expect("the array goes on") {
            break;
        }
    }
    starts
}

/// An event read by the plain reader (by layout where one applies), against the same read
/// member by member: the same end, fields and args, or both `None`.
fn plain_by_layout_as_by_members(text: &str, at: usize, skip: Option<Skip>) {
    let (mut e1, mut p1) = (RawEvent::default(), Vec::new());
    let (mut e2, mut p2) = (RawEvent::default(), Vec::new());
    let r1 = plain::event_by_members(text, at, skip, &mut p1, &mut e1);
    let r2 = plain::event(text, at, skip, &mut p2, &mut e2);
    assert_eq!(r1, r2, "{}", &text[at..]);
    if r1.is_some() {
        assert_eq!(
            (show(&e1, Args::of(&e1, &p1)), e1.args_left_out),
            (show(&e2, Args::of(&e2, &p2)), e2.args_left_out),
            "{}",
            &text[at..]
        );
    }
}

/// `text` with each byte in `at` replaced by each of a few bytes that matter to JSON (those
/// changes that leave it UTF-8).
fn one_byte_changes(text: &str, at: std::ops::Range<usize>) -> Vec<String> {
    let mut out = Vec::new();
    for i in at {
        for c in [
            b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', b'\n', 0x1f,
            b'x', b'e', b'n',
        ] {
            let mut m = text.as_bytes().to_vec();
            m[i] = c;
            out.extend(String::from_utf8(m).ok());
        }
    }
    out
}

/// The plain reader by layout reads as member by member: every event of the committed
/// traces in turn, with and without a partial read's skip (the layouts reading most of
/// them), and every one-byte change of a kernel event and of a flow event read by the
/// layout of the event unchanged.
#[test]
fn plain_reads_by_layout_as_member_by_member() {
    let skip = Skip {
        complete_cats: &["cpu_op", "python_function"],
        flow_cats: &["ac2g", "fwdbwd"],
        args_kept: Some(&["stream", "correlation"]),
    };
    let mut events = 0;
    let before = plain::BY_LAYOUT.with(std::cell::Cell::get);
    for t in fixture_traces() {
        for at in event_starts(&t) {
            for s in [None, Some(skip)] {
                events += 1;
                plain_by_layout_as_by_members(&t, at, s);
            }
        }
    }
    // The fixtures are short: many kinds seen once, and many metadata events (`M`, read
    // member by member).
    let by_layout = plain::BY_LAYOUT.with(std::cell::Cell::get) - before;
    assert!(by_layout * 100 >= events * 35, "{by_layout} of {events}");
    let ev = concat!(
        r#"{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int, at::detail::Array<char*, 2>)", "pid": 0, "tid": 7,"#,
        "\n    ",
        r#""ts": 4458676983543.183, "dur": 41.407,"#,
        "\n    ",
        r#""args": {"External id": 12353, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 57541, "registers per thread": 40, "shared memory": 400, "blocks per SM": 4.740741, "grid": [512, 1, 1], "block": [512, 1, 1], "est. achieved occupancy %": 100}"#,
        "\n  }"
    );
    let flow = r#"{"ph": "f", "id": 57532, "pid": 2910249, "tid": 2919752, "ts": 4458676981028.392, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#;
    let next =
        r#"{"ph": "X", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}"#;
    let (mut tried, mut layout_read) = (0, 0);
    for (ev, s) in [(ev, None), (ev, Some(skip)), (flow, None)] {
        let base = format!("{ev},\n  {next}");
        // The layout of the event unchanged.
        let (mut e, mut p) = (RawEvent::default(), Vec::new());
        assert!(plain::event(&base, 0, s, &mut p, &mut e).is_some());
        for m in one_byte_changes(&base, 0..ev.len()) {
            tried += 1;
            let n = plain::BY_LAYOUT.with(std::cell::Cell::get);
            plain_by_layout_as_by_members(&m, 0, s);
            layout_read += plain::BY_LAYOUT.with(std::cell::Cell::get) - n;
            // Back to the layout of the event unchanged.
            let (mut e, mut p) = (RawEvent::default(), Vec::new());
            plain::event(&base, 0, s, &mut p, &mut e);
        }
    }
    assert!(
        layout_read * 3 > tried && layout_read < tried,
        "{layout_read} of {tried}"
    );
}

/// `args` read by the layout of the last of their kind read as member by member: two
/// operator events of one kind whose `args` share their first six members (as PyTorch
/// writes them, with and without `Fwd thread id` and `Sequence number`), in turn, then every
/// one-byte change of the `args` of each, read after the other (whose layout is then the
/// kind's).
#[test]
fn args_read_by_layout_as_member_by_member() {
    let head = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
    "ts": 1661203462598738, "dur": 19,
    "args": {"#;
    let a = format!(
        "{head}{}",
        r#"
      "Trace name": "PyTorch Profiler", "Trace iteration": 0,
      "External id": 1,
      "Profiler Event Index": 0, "Input Dims": [[], [4, 8]], "Input type": ["", "float"], "Module Hierarchy": "", "Call stack": ""
    }
  }"#
    );
    let b = format!(
        "{head}{}",
        r#"
      "Trace name": "PyTorch Profiler", "Trace iteration": 0,
      "External id": 2,
      "Profiler Event Index": 1, "Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"], "Fwd thread id": 0, "Sequence number": 7, "Module Hierarchy": "", "Call stack": ""
    }
  }"#
    );
    let skip = Skip {
        complete_cats: &["kernel"],
        flow_cats: &[],
        args_kept: Some(&["External id", "Sequence number"]),
    };
    let followed = || plain::ARGS_FOLLOWED.with(std::cell::Cell::get);
    let before = followed();
    for s in [None, Some(skip)] {
        for ev in [&a, &b, &a, &a, &b, &b, &a] {
            plain_by_layout_as_by_members(ev, 0, s);
        }
    }
    // All six shared members of each but the first few, and all of the repeated ones.
    assert!(followed() - before >= 2 * 40, "{}", followed() - before);
    let (mut tried, before) = (0, followed());
    for (ev, other) in [(&a, &b), (&b, &a)] {
        let from = ev.find("\"args\"").expect("args");
        for m in one_byte_changes(ev, from..ev.len()) {
            for s in [None, Some(skip)] {
                tried += 1;
                // The kind's layouts: those of the other event, then of this one.
                for ev in [other, other, ev, ev] {
                    let (mut e, mut p) = (RawEvent::default(), Vec::new());
                    plain::event(ev, 0, s, &mut p, &mut e);
                }
                plain_by_layout_as_by_members(&m, 0, s);
            }
        }
    }
    assert!(
        followed() - before > tried,
        "{} of {tried}",
        followed() - before
    );
}

#[test]
fn plain_events_read_as_serde_json_reads_them() {
    let mut texts: Vec<String> = vec![TRICKY.to_string()];
    texts.extend(fixture_traces());
    let skip = Skip {
        complete_cats: &["cpu_op", "python_function"],
        flow_cats: &["ac2g", "fwdbwd"],
        args_kept: None,
    };
    let (mut events, mut plain) = (0, 0);
    for t in &texts {
        for at in event_starts(t) {
            for s in [None, Some(skip)] {
                events += 1;
                plain += usize::from(same_as_serde(t, at, s));
            }
        }
    }
    // Real traces' events are nearly all plain (TRICKY's escaped name is not).
    assert!(plain * 100 >= events * 95, "{plain} of {events}");
    // Forms left to serde_json, and bad input: never read plainly unless serde_json reads
    // the same.
    let cases = [
        r#"{"ph": "X", "name": "esc\"aped", "ts": 1}"#,
        r#"{"ph": "X", "ts": 1, "ts": 2}"#,
        r#"{"ph": "X", "ts": 1, "other": 1, "other": 2}"#,
        r#"{"ph": "X", "args": {"a": 1, "a": 2}, "ts": 0}"#,
        r#"{"ph": "X", "args": {}, "ts": 0}"#,
        r#"{"ph": "X", "args": null, "ts": null, "name": null}"#,
        r#"{"ph": 5}"#,
        r#"{"ph": "X", "args": 5}"#,
        r#"{"ph": "X", "args": {"k": [1, {"a": "\u00e9\n"}, -0.5e-3, true, false, null]}}"#,
        r#"{"ts": 01}"#,
        r#"{"ts": 1.}"#,
        r#"{"ts": -}"#,
        r#"{"ts": 1e}"#,
        r#"{"ts": 1E+5, "dur": -0, "id": "0x1"}"#,
        r#"{"ts": tru}"#,
        r#"{"ts": NaN}"#,
        r#"{"ts": 1,}"#,
        r#"{"ts" 1}"#,
        r#"{"ts": 1 "dur": 2}"#,
        r#"{"name": "tab	in it"}"#,
        r#"{"args": {"s": "bad \x escape"}}"#,
        r#"{"args": {"s": "\u12g4"}}"#,
        r#"{}"#,
        r#"{ }"#,
        r#"{"ph":"X","cat":"cpu_op","ts":1,"args":{"stream":7}}"#,
        r#"{"ph":"X","cat":"cpu_op","ts":1,"args":{"Input Dims":[[1]]}}"#,
        r#"{"args": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}"#,
    ];
    let mut plain_cases = 0;
    for c in cases {
        for s in [None, Some(skip)] {
            plain_cases += usize::from(same_as_serde(c, 0, s));
        }
    }
    assert!(plain_cases >= 16, "{plain_cases}");
    // Every cut and every one-byte change of an event with nested args.
    let ev = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": "t", "ts": 12.5, "dur": 3, "args": {"Input Dims": [[2, 3], []], "s": "x\"y", "n": -1.5e3, "b": true, "z": null}}"#;
    let mut read = 0;
    for cut in 0..ev.len() {
        same_as_serde(&ev[..cut], 0, None);
    }
    for i in 0..ev.len() {
        for c in [
            b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'e', b' ', b'-', b'.', b'n',
            0x1f,
        ] {
            let mut m = ev.as_bytes().to_vec();
            m[i] = c;
            if let Ok(m) = String::from_utf8(m) {
                for s in [None, Some(skip)] {
                    read += usize::from(same_as_serde(&m, 0, s));
                }
            }
        }
    }
    assert!(read > 100, "{read}");
}

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_string()).unwrap()
}

#[test]
fn microseconds_become_picoseconds_without_rounding() {
    let cases = [
        ("1661203463029566", Some(1_661_203_463_029_566_000_000)),
        ("1661203463029566.123", Some(1_661_203_463_029_566_123_000)),
        ("0.0000005", Some(1)),
        ("0.0000004", Some(0)),
        ("12.5", Some(12_500_000)),
        ("-3.25", Some(-3_250_000)),
        ("\"42.000001\"", Some(42_000_001)),
        ("1.5e3", Some(1_500_000_000)),
        ("1e400", None),
        ("\"abc\"", None),
        ("99999999999999999999", None),
        (
            "9223372036854775807",
            Some(9_223_372_036_854_775_807_000_000),
        ),
        ("null", None),
    ];
    for (text, want) in cases {
        assert_eq!(micros_to_ps(Raw::from(&*raw(text))), want, "{text}");
    }
}

/// The one-pass reading of plain decimals gives what the general one gives.
#[test]
fn plain_decimals_read_as_any_form_does() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut read, mut words, mut short) = (0, 0, 0);
    for _ in 0..20_000 {
        // JSON numbers: no leading zero, at least one digit after a point.
        let int_digits = 1 + (next() % 20) as usize;
        let frac_digits = 1 + (next() % 10) as usize;
        let digits = |n: usize, r: &mut dyn FnMut() -> u64| -> String {
            (0..n)
                .map(|_| char::from(b'0' + (r() % 10) as u8))
                .collect()
        };
        let mut t = digits(int_digits, &mut next);
        if t.len() > 1 && t.starts_with('0') {
            t.replace_range(..1, "1");
        }
        if next() % 3 > 0 {
            t.push('.');
            t.push_str(&digits(frac_digits, &mut next));
        }
        let r = raw(&t);
        if let Some(v) = micros_in_words(r.get().as_bytes()) {
            words += 1;
            assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
        }
        if let Some(v) = short_micros(r.get().as_bytes()) {
            short += 1;
            assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
        }
        if let Some(v) = plain_micros_to_ps(r.get().as_bytes()) {
            read += 1;
            assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
        }
    }
    assert!(read > 10_000, "{read}");
    // Times as profilers write them: 9 to 16 digits, a point and 1 to 6 digits; durations,
    // up to 8 digits and up to 6 after a point.
    assert!(words > 1_000, "{words}");
    assert!(short > 1_000, "{short}");
}

#[test]
fn ids_are_numbers_or_strings() {
    assert_eq!(Key::of(Some(Raw::from(&*raw("7")))), Key::Num(7));
    assert_eq!(Key::of(Some(Raw::from(&*raw("\"7\"")))), Key::Num(7));
    assert_eq!(
        Key::of(Some(Raw::from(&*raw("\"Spans\"")))),
        Key::Str("Spans".into())
    );
    assert_eq!(Key::of(None), Key::Num(0));
}
