//! A tool's result in the forms users ask for: JSON (compact, or readable with one key per
//! line and arrays on one line), text and CSV, each rendered from the typed result on demand.

use serde::Serialize;
use std::any::Any;

use super::ToolError;

/// What a tool produced. Each form (JSON, text, CSV) is rendered from the tool's typed result
/// when asked for, so a caller that wants one form does not pay for the others, and JSON is
/// written straight from the result (fields in the result's order).
pub struct ToolOutput {
    forms: Box<dyn Forms + Send + Sync>,
}

impl ToolOutput {
    /// A typed result and how to render it as text and CSV.
    pub(crate) fn typed<T: Serialize + Send + Sync + 'static>(
        r: T,
        text: fn(&T) -> String,
        csv: fn(&T) -> Option<String>,
    ) -> ToolOutput {
        ToolOutput {
            forms: Box::new(Typed { r, text, csv }),
        }
    }

    /// The typed result, for views that render it (`None` when `T` is not this tool's result).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.forms.any().downcast_ref::<T>()
    }

    /// The result as a JSON value (for callers that read fields).
    pub fn json(&self) -> Result<serde_json::Value, ToolError> {
        self.forms.json()
    }

    /// The result as JSON text, indented when `pretty`.
    pub fn json_string(&self, pretty: bool) -> Result<String, ToolError> {
        let mut out = Vec::with_capacity(1 << 16);
        self.forms.write_json(&mut out, pretty)?;
        // serde_json writes valid UTF-8 only.
        String::from_utf8(out).map_err(|e| ToolError::Serialize(e.to_string()))
    }

    /// Writes the JSON of [`ToolOutput::json_string`] to `w` as it is made, without holding all
    /// of it (an op profile's JSON can be four times the profile). Errors of `w` come back as
    /// `ToolError::Write`.
    pub fn write_json(&self, w: &mut dyn std::io::Write, pretty: bool) -> Result<(), ToolError> {
        self.forms.write_json(w, pretty)
    }

    /// A human-readable rendering.
    pub fn text(&self) -> String {
        self.forms.text()
    }

    /// The main table as CSV, for tools that have one.
    pub fn csv(&self) -> Option<String> {
        self.forms.csv()
    }

    /// The readable JSON of [`ToolOutput::json_string`] within `bounds` ([`bound_json`]).
    pub fn json_bounded(&self, bounds: Bounds) -> Result<String, ToolError> {
        bound_json(self.json()?, bounds)
    }
}

/// Limits on the size of an answer, for readers with a budget (coding agents): at most `rows`
/// items in each array of objects (a table's first rows; tools list rows in their order of
/// importance), and at most `bytes` of JSON text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    pub rows: Option<usize>,
    pub bytes: Option<usize>,
}

impl Bounds {
    pub fn any(&self) -> bool {
        self.rows.is_some() || self.bytes.is_some()
    }
}

/// The arrays at one place of an answer that its bounds cut (`path`: a JSON pointer with `*` for
/// any index).
#[derive(Serialize, Debug, PartialEq, Eq, schemars::JsonSchema)]
pub struct Cut {
    pub path: String,
    /// Arrays cut there.
    pub arrays: usize,
    /// Their items kept, and all their items.
    pub kept: usize,
    pub total: usize,
}

/// `v` as readable JSON within `bounds`, with a `bounded` object that says what was left out:
/// the limits, the rows kept per array, each place where arrays were cut (and how many items
/// they had), and whether the text fits. Arrays of objects are cut to `bounds.rows` first; while
/// the text is longer than `bounds.bytes`, the rows kept are halved, and once no row is left,
/// arrays of other values are cut the same way. An answer that is not a JSON object is put
/// under `answer`. A value that cannot be cut (a long string) may keep the text over `bytes`,
/// and `fits` says so.
pub fn bound_json(v: serde_json::Value, bounds: Bounds) -> Result<String, ToolError> {
    let mut rows = bounds.rows.unwrap_or(usize::MAX);
    let mut values = usize::MAX;
    loop {
        let mut cuts = Vec::new();
        let cut = cut_arrays(&v, rows, values, &mut String::new(), &mut cuts);
        let mut out = match cut {
            serde_json::Value::Object(m) => m,
            other => {
                let mut m = serde_json::Map::new();
                m.insert("answer".into(), other);
                m
            }
        };
        let mut note = serde_json::json!({
            "max_rows": bounds.rows,
            "max_bytes": bounds.bytes,
            "rows_kept": (rows != usize::MAX).then_some(rows),
            "values_kept": (values != usize::MAX).then_some(values),
            "cut": cuts,
            "fits": true,
        });
        out.insert("bounded".into(), note.clone());
        let text = readable_string(&out)?;
        let Some(limit) = bounds.bytes.filter(|&b| text.len() > b) else {
            return Ok(text);
        };
        // Over the limit: fewer rows, then fewer values, until none is left.
        let longest = |objects: bool| longest_array(&v, objects);
        if rows > 0 {
            rows = rows.min(longest(true)) / 2;
        } else if values > 0 {
            values = values.min(longest(false)) / 2;
        } else {
            note["fits"] = false.into();
            note["bytes"] = text.len().into();
            note["over_by"] = (text.len() - limit).into();
            out.insert("bounded".into(), note);
            return readable_string(&out);
        }
    }
}

fn readable_string(v: &serde_json::Map<String, serde_json::Value>) -> Result<String, ToolError> {
    let mut out = Vec::new();
    write_readable(&mut out, v).map_err(|e| ToolError::Serialize(e.to_string()))?;
    String::from_utf8(out).map_err(|e| ToolError::Serialize(e.to_string()))
}

/// The length of the longest array of objects (`objects`) or of other values in `v`.
fn longest_array(v: &serde_json::Value, objects: bool) -> usize {
    match v {
        serde_json::Value::Array(a) => {
            let own = if a.iter().any(|x| x.is_object()) == objects {
                a.len()
            } else {
                0
            };
            a.iter()
                .map(|x| longest_array(x, objects))
                .fold(own, usize::max)
        }
        serde_json::Value::Object(m) => m
            .values()
            .map(|x| longest_array(x, objects))
            .max()
            .unwrap_or(0),
        _ => 0,
    }
}

/// A copy of `v` with each array of objects cut to `rows` items and each other array to
/// `values`, the cuts added to `cuts` by place (`path`: where `v` is).
fn cut_arrays(
    v: &serde_json::Value,
    rows: usize,
    values: usize,
    path: &mut String,
    cuts: &mut Vec<Cut>,
) -> serde_json::Value {
    let at = path.len();
    let out = match v {
        serde_json::Value::Array(a) => {
            let keep = if a.iter().any(|x| x.is_object()) {
                rows
            } else {
                values
            };
            if a.len() > keep {
                match cuts.iter_mut().find(|c| c.path == *path) {
                    Some(c) => {
                        c.arrays += 1;
                        c.kept += keep;
                        c.total += a.len();
                    }
                    None => cuts.push(Cut {
                        path: path.clone(),
                        arrays: 1,
                        kept: keep,
                        total: a.len(),
                    }),
                }
            }
            path.push_str("/*");
            let items = a
                .iter()
                .take(keep)
                .map(|x| cut_arrays(x, rows, values, path, cuts))
                .collect();
            serde_json::Value::Array(items)
        }
        serde_json::Value::Object(m) => serde_json::Value::Object(
            m.iter()
                .map(|(k, x)| {
                    path.push('/');
                    // JSON pointer escapes.
                    path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    let x = cut_arrays(x, rows, values, path, cuts);
                    path.truncate(at);
                    (k.clone(), x)
                })
                .collect(),
        ),
        other => other.clone(),
    };
    path.truncate(at);
    out
}

trait Forms {
    fn any(&self) -> &dyn Any;
    fn json(&self) -> Result<serde_json::Value, ToolError>;
    fn write_json(&self, w: &mut dyn std::io::Write, pretty: bool) -> Result<(), ToolError>;
    fn text(&self) -> String;
    fn csv(&self) -> Option<String>;
}

struct Typed<T> {
    r: T,
    text: fn(&T) -> String,
    csv: fn(&T) -> Option<String>,
}

impl<T: Serialize + 'static> Forms for Typed<T> {
    fn any(&self) -> &dyn Any {
        &self.r
    }
    fn json(&self) -> Result<serde_json::Value, ToolError> {
        serde_json::to_value(&self.r).map_err(|e| ToolError::Serialize(e.to_string()))
    }
    fn write_json(&self, w: &mut dyn std::io::Write, pretty: bool) -> Result<(), ToolError> {
        let r = if pretty {
            write_readable(w, &self.r)
        } else {
            serde_json::to_writer(&mut *w, &self.r)
        };
        r.map_err(|e| match e.io_error_kind() {
            Some(kind) => ToolError::Write(kind),
            None => ToolError::Serialize(e.to_string()),
        })
    }
    fn text(&self) -> String {
        (self.text)(&self.r)
    }
    fn csv(&self) -> Option<String> {
        (self.csv)(&self.r)
    }
}

/// JSON for people: one object key per line, indented, and arrays on the line they start on
/// (a step's breakdown or a row of numbers stays one line; objects inside arrays still open
/// their keys one per line). Half the size of fully indented JSON for tables of numbers, and
/// written in half the time.
fn write_readable<T: Serialize + ?Sized>(
    w: &mut dyn std::io::Write,
    v: &T,
) -> Result<(), serde_json::Error> {
    v.serialize(&mut serde_json::Serializer::with_formatter(
        w,
        Readable::default(),
    ))
}

#[derive(Default)]
struct Readable {
    /// Objects open around the next key.
    depth: usize,
    /// Whether the innermost open object or array has a value yet.
    has_value: bool,
}

impl serde_json::ser::Formatter for Readable {
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            indent(w, self.depth)?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        indent(w, self.depth)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.has_value = false;
        w.write_all(b"[")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

fn indent<W: ?Sized + std::io::Write>(w: &mut W, depth: usize) -> std::io::Result<()> {
    for _ in 0..depth {
        w.write_all(b"  ")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{bound_json, write_readable, Bounds};
    use serde_json::json;

    #[test]
    fn bounds_cut_rows_then_values_and_say_what_they_left_out() {
        let rows: Vec<_> = (0..50)
            .map(|i| json!({"name": format!("op{i}"), "ps": [i, i + 1, i + 2]}))
            .collect();
        let v = json!({"hosts": [{"ops": rows.clone()}, {"ops": rows[..3]}], "steps": [1, 2, 3]});
        let bounded = |b: Bounds| -> serde_json::Value {
            serde_json::from_str(&bound_json(v.clone(), b).unwrap()).unwrap()
        };
        // Rows: each array of objects to its first 5; arrays of numbers untouched.
        let b = bounded(Bounds {
            rows: Some(5),
            bytes: None,
        });
        assert_eq!(b["hosts"][0]["ops"].as_array().unwrap().len(), 5);
        assert_eq!(b["hosts"][0]["ops"][4]["name"], "op4");
        assert_eq!(b["hosts"][1]["ops"].as_array().unwrap().len(), 3);
        assert_eq!(b["steps"], json!([1, 2, 3]));
        assert_eq!(
            b["bounded"]["cut"],
            json!([{"path": "/hosts/*/ops", "arrays": 1, "kept": 5, "total": 50}])
        );
        assert_eq!(b["bounded"]["fits"], true);
        // Bytes: rows halved until the text fits; then values.
        for limit in [700, 1_000, 2_000] {
            let text = bound_json(
                v.clone(),
                Bounds {
                    rows: None,
                    bytes: Some(limit),
                },
            )
            .unwrap();
            let b: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(text.len() <= limit, "{limit}: {}", text.len());
            assert_eq!(b["bounded"]["fits"], true);
            let kept = b["hosts"][0]["ops"].as_array().unwrap().len();
            assert!(kept < 50, "{limit}: {kept}");
            assert_eq!(b["bounded"]["cut"][0]["total"], 50);
        }
        // Nothing to cut: the answer whole, and a note saying so.
        let b = bounded(Bounds {
            rows: Some(100),
            bytes: Some(1 << 20),
        });
        assert_eq!(b["hosts"][0]["ops"].as_array().unwrap().len(), 50);
        assert_eq!(b["bounded"]["cut"], json!([]));
        // A string longer than the limit cannot be cut: `fits` is false and says by how much.
        let long = json!({"svg": "x".repeat(5_000)});
        let b: serde_json::Value = serde_json::from_str(
            &bound_json(
                long,
                Bounds {
                    rows: None,
                    bytes: Some(1_000),
                },
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(b["bounded"]["fits"], false);
        assert!(b["bounded"]["over_by"].as_u64().unwrap() > 4_000);
    }

    fn to_string_readable(v: &serde_json::Value) -> String {
        let mut out = Vec::new();
        write_readable(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn readable_json_parses_back_and_keeps_arrays_on_one_line() {
        let v = json!({
            "empty_object": {},
            "empty_array": [],
            "numbers": [1, 2.5, -3],
            "rows": [{"a": 1, "b": [true, null]}, {"a": "x\ny"}],
            "nested": {"deeper": {"k": [[1, 2], [], [{}]]}},
            "text": "quote \" and \\ backslash"
        });
        let s = to_string_readable(&v);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert!(s.contains("\n  \"numbers\": [1, 2.5, -3],\n"), "{s}");
        assert!(s.contains("\"empty_object\": {},"), "{s}");
        assert!(s.contains("\"empty_array\": [],"), "{s}");
        // Keys of an object inside an array are indented one level below the array's key.
        assert!(
            s.contains("  \"rows\": [{\n    \"a\": 1,\n    \"b\": [true, null]\n  }, {"),
            "{s}"
        );
        assert!(s.contains("\"k\": [[1, 2], [], [{}]]"), "{s}");
        assert!(s.starts_with("{\n  \"") && s.ends_with("\n}"), "{s}");
    }
}
