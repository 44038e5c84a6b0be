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
    use super::write_readable;
    use serde_json::json;

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
