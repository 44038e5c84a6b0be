//! What every view shares, in one place: URL encoding and page links, number, time and byte
//! formatting, error boxes, JSON for scripts, and the typed table that the browser sorts, filters
//! and pages (`assets/tables.js`). Escaping is maud's: every value spliced into a template is
//! escaped, and only [`maud::PreEscaped`] markup (the graph tool's own SVG) is not.

use maud::{html, Markup, PreEscaped, Render};
use std::borrow::Cow;
use std::fmt::Write;

pub use xlens_analysis::base::fmt::{fmt_bytes, fmt_ps};

/// Percent-encodes a query-string value.
pub fn url_enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// A URL with a query string whose values are encoded: `/?run=R&tool=T&op=…`.
#[derive(Debug, Clone)]
pub struct Url(String);

impl Url {
    /// The page of `tool` on `run`.
    pub fn page(run: &str, tool: &str) -> Url {
        Url(format!("/?run={}&tool={}", url_enc(run), url_enc(tool)))
    }

    /// The JSON API of `tool` on `run`.
    pub fn api(tool: &str, run: &str) -> Url {
        Url(format!("/api/tool/{}?run={}", url_enc(tool), url_enc(run)))
    }

    /// Adds `key=value`.
    pub fn with(mut self, key: &str, value: &str) -> Url {
        let _ = write!(self.0, "&{key}={}", url_enc(value));
        self
    }

    /// Adds `key=value` when `value` is given and not empty.
    pub fn with_opt(self, key: &str, value: Option<&str>) -> Url {
        match value.filter(|v| !v.is_empty()) {
            Some(v) => self.with(key, v),
            None => self,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Render for Url {
    fn render_to(&self, buffer: &mut String) {
        self.0.as_str().render_to(buffer);
    }
}

/// The graph viewer centred on `op` (of `program`, when known).
pub fn graph_link(run: &str, host: &str, op: &str, program: &str) -> Url {
    Url::page(run, "graph_viewer")
        .with("op", op)
        .with_opt("host", Some(host))
        .with_opt("module", Some(program))
}

/// A fraction as a percentage with two decimals: `0.1234` → `12.34%`.
pub fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

/// `x` with `decimals` decimals.
pub fn fixed(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// An error shown in place of what could not be computed.
pub fn error_box(msg: &str) -> Markup {
    html! { div class="error" role="alert" { (msg) } }
}

/// The page body while a run's files come from a bucket: `app.js` polls `/api/downloads` to show
/// each file's progress and reloads the page once the run is loaded.
pub fn fetching(run: &str, host: Option<&str>, source: &str) -> Markup {
    html! {
        div class="fetching" id="fetching" data-run=(run) data-host=[host] role="status" {
            p { "Fetching run " b { (run) } " from " code { (source) } "…" }
            progress id="fetch-progress" {}
            ul id="fetch-files" {}
        }
    }
}

/// JSON safe to embed in a `<script type="application/json">` element.
pub fn script_json<T: serde::Serialize>(v: &T) -> Markup {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    PreEscaped(
        text.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026"),
    )
}

/// One table cell: its content, its class, and the value it sorts by (`data-v`).
pub struct Cell {
    class: Option<&'static str>,
    title: Option<String>,
    sort: Option<String>,
    body: Markup,
}

impl Cell {
    /// Plain text.
    pub fn text(s: impl Render) -> Cell {
        Cell {
            class: None,
            title: None,
            sort: None,
            body: html! { (s) },
        }
    }

    /// Monospace text that may break anywhere (names, shapes, expressions).
    pub fn name(s: impl Render) -> Cell {
        Cell::text(s).class("name")
    }

    /// Markup (links, details).
    pub fn html(m: Markup) -> Cell {
        Cell {
            class: None,
            title: None,
            sort: None,
            body: m,
        }
    }

    /// A number shown as `shown`, sorted by `value`.
    pub fn num(value: impl std::fmt::Display, shown: impl Render) -> Cell {
        Cell {
            class: Some("num"),
            title: None,
            sort: Some(value.to_string()),
            body: html! { (shown) },
        }
    }

    /// An integer, shown as it is.
    pub fn int(v: impl std::fmt::Display + Copy) -> Cell {
        Cell::num(v, v.to_string())
    }

    /// A float with `decimals` decimals.
    pub fn float(v: f64, decimals: usize) -> Cell {
        Cell::num(v, fixed(v, decimals))
    }

    /// A duration in picoseconds, shown for people.
    pub fn time(ps: i64) -> Cell {
        Cell::num(ps, fmt_ps(ps))
    }

    /// A size in bytes, shown for people.
    pub fn bytes(b: i64) -> Cell {
        Cell::num(b, fmt_bytes(b))
    }

    /// A fraction shown as a percentage.
    pub fn pct(f: f64) -> Cell {
        Cell::num(f, pct(f))
    }

    /// A tooltip.
    pub fn title(mut self, t: &str) -> Cell {
        self.title = Some(t.to_string());
        self
    }

    /// Sets the cell's class (`name`, `line`, `num`).
    pub fn class(mut self, c: &'static str) -> Cell {
        self.class = Some(c);
        self
    }
}

impl Render for Cell {
    fn render(&self) -> Markup {
        html! {
            td class=[self.class] title=[self.title.as_deref()] data-v=[self.sort.as_deref()] { (self.body) }
        }
    }
}

/// A row's own attributes.
#[derive(Default)]
pub struct RowAttrs {
    pub class: Option<&'static str>,
    /// `data-b`: the buffer index the memory viewer's script highlights.
    pub data_b: Option<usize>,
}

type CellFn<'a, R> = Box<dyn Fn(&R) -> Cell + 'a>;
type RowFn<'a, R> = Box<dyn Fn(usize, &R) -> RowAttrs + 'a>;

struct Column<'a, R> {
    head: Cow<'static, str>,
    num: bool,
    cell: CellFn<'a, R>,
}

/// A table of typed rows: headers, one function per column from a row to its cell.
/// `sortable` tables sort on a header click and may have a filter box; `paged` ones show
/// `page` rows at a time (both in `assets/tables.js`).
pub struct Table<'a, R> {
    class: &'static str,
    filter: bool,
    page: Option<usize>,
    columns: Vec<Column<'a, R>>,
    row_attrs: Option<RowFn<'a, R>>,
    tail: Option<Markup>,
}

impl<'a, R> Table<'a, R> {
    pub fn new(class: &'static str) -> Self {
        Table {
            class,
            filter: false,
            page: None,
            columns: Vec::new(),
            row_attrs: None,
            tail: None,
        }
    }

    /// A filter box above the table.
    pub fn filter(mut self) -> Self {
        self.filter = true;
        self
    }

    /// Shows `rows` rows at a time.
    pub fn paged(mut self, rows: usize) -> Self {
        self.page = Some(rows);
        self
    }

    /// A column of text (or markup) cells.
    pub fn col(self, head: impl Into<Cow<'static, str>>, cell: impl Fn(&R) -> Cell + 'a) -> Self {
        self.column(head.into(), false, Box::new(cell))
    }

    /// A column of numbers (right-aligned header).
    pub fn num(self, head: impl Into<Cow<'static, str>>, cell: impl Fn(&R) -> Cell + 'a) -> Self {
        self.column(head.into(), true, Box::new(cell))
    }

    fn column(
        mut self,
        head: Cow<'static, str>,
        num: bool,
        cell: Box<dyn Fn(&R) -> Cell + 'a>,
    ) -> Self {
        self.columns.push(Column { head, num, cell });
        self
    }

    /// Attributes of each row (by index).
    pub fn rows_with(mut self, f: impl Fn(usize, &R) -> RowAttrs + 'a) -> Self {
        self.row_attrs = Some(Box::new(f));
        self
    }

    /// A last row, after the typed ones.
    pub fn tail(mut self, m: Markup) -> Self {
        self.tail = Some(m);
        self
    }

    pub fn render(&self, rows: impl IntoIterator<Item = R>) -> Markup {
        html! {
            @if self.filter {
                input type="search" class="table-filter" placeholder="Filter rows" aria-label="filter";
            }
            table class=(self.class) data-page=[self.page] {
                thead { tr { @for c in &self.columns { th class=[c.num.then_some("num")] { (c.head) } } } }
                tbody {
                    @for (i, r) in rows.into_iter().enumerate() {
                        @let a = self.row_attrs.as_ref().map(|f| f(i, &r)).unwrap_or_default();
                        tr class=[a.class] data-b=[a.data_b] {
                            @for c in &self.columns { ((c.cell)(&r)) }
                        }
                    }
                    @if let Some(t) = &self.tail { (t) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlens_analysis::base::fmt::esc;

    #[test]
    fn escaping_and_urls() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(url_enc("a b/c&d"), "a%20b%2Fc%26d");
        assert_eq!(
            graph_link("r 1", "h", "fusion.3", "").as_str(),
            "/?run=r%201&tool=graph_viewer&op=fusion.3&host=h"
        );
        let cell = html! { (Cell::name("<b>")) }.into_string();
        assert_eq!(cell, "<td class=\"name\">&lt;b&gt;</td>");
        let m = script_json(&vec!["</script>"]).into_string();
        assert!(!m.contains('<'), "{m}");
    }

    #[test]
    fn table_renders_typed_rows() {
        struct Row {
            name: &'static str,
            ps: i64,
        }
        let rows = [Row {
            name: "a&b",
            ps: 1_500_000,
        }];
        let t = Table::new("sortable")
            .filter()
            .col("Name", |r: &&Row| Cell::name(r.name))
            .num("Time", |r: &&Row| Cell::time(r.ps))
            .render(rows.iter())
            .into_string();
        assert!(
            t.starts_with("<input type=\"search\" class=\"table-filter\""),
            "{t}"
        );
        assert!(t.contains("<th class=\"num\">Time</th>"), "{t}");
        assert!(
            t.contains(
                "<td class=\"name\">a&amp;b</td><td class=\"num\" data-v=\"1500000\">1.50 µs</td>"
            ),
            "{t}"
        );
    }
}
