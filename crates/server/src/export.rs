//! `xlens export --html`: one self-contained HTML file of a run (report, overview, advice, op
//! profile, HLO op stats, the memory viewer of the largest module, and the trace viewer over one
//! window with its events embedded), to attach to a bug or a pull request.
//!
//! The file is the server's own views, rendered here, with the stylesheet and the scripts
//! inlined; nothing is fetched. The trace viewer's requests are answered in the page from the
//! embedded window (every event in it, none merged, and the details of the first
//! [`ExportOptions::max_details`]), through a `fetch` stand-in that runs before the viewer.
//! Links that need a server (another tool's page) scroll to that tool's section when it is in
//! the file, and otherwise say how to open it.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use xlens_analysis::base::context::Run;
use xlens_analysis::tools::{self, overview::Overview};
use xlens_store::Session;

use crate::views::{self, ui::error_box, Cx};

/// What to embed.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The trace window (ps, on the trace's axis); default: the median step of the first host
    /// with steps, else the whole trace.
    pub window_ps: Option<(i64, i64)>,
    /// At most this many trace events: a window holding more is narrowed (said in the file).
    pub max_events: usize,
    /// Details (stats, flows) embedded for at most this many events, the earliest first.
    pub max_details: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            window_ps: None,
            max_events: 200_000,
            max_details: 5_000,
        }
    }
}

/// The file, and what went into its trace window.
#[derive(Debug, Clone)]
pub struct Exported {
    pub html: String,
    /// The trace window embedded (ps).
    pub window_ps: (i64, i64),
    /// How the window was chosen (`median step train 5`, `given`, `whole trace`), and narrowed.
    pub window_note: String,
    /// Events embedded, and events of the whole trace.
    pub events: usize,
    pub total_events: u64,
    /// Events whose details are embedded.
    pub details: usize,
}

/// The sections, in order: (anchor, title, tool).
const SECTIONS: &[(&str, &str, &str)] = &[
    ("report", "Report", "report"),
    ("overview", "Overview", "overview_page"),
    ("op_profile", "Op profile", "op_profile"),
    ("hlo_stats", "HLO op stats", "hlo_stats"),
    (
        "memory_viewer",
        "Memory viewer (largest module)",
        "memory_viewer",
    ),
];

/// Renders one tool's view over `run` (refined as the server does: the memory viewer picks the
/// largest module).
fn section(
    run: &Run,
    session: &str,
    host: Option<&str>,
    tool: &str,
) -> (Markup, Option<tools::ToolOutput>) {
    let view = views::view_for(tool);
    let t = match tools::find(tool) {
        Ok(t) => t,
        Err(e) => return (error_box(&e.to_string()), None),
    };
    let mut params: Vec<(String, String)> = Vec::new();
    let mut out = match t.run_query(run, &params) {
        Ok(o) => o,
        Err(e) => return (error_box(&e.to_string()), None),
    };
    if let Some(p) = view.refine(&out, &params) {
        params.push(p);
        match t.run_query(run, &params) {
            Ok(o) => out = o,
            Err(e) => return (error_box(&e.to_string()), None),
        }
    }
    let cx = Cx {
        session,
        host,
        query: &params,
    };
    (view.render(&out, &cx), Some(out))
}

fn advice_section(o: Option<&Overview>) -> Markup {
    let Some(o) = o else {
        return html! { p class="dim" { "No overview, so no advice." } };
    };
    html! {
        @for h in &o.hosts {
            h3 { "Host " (h.host) }
            @match &h.advice {
                Some(a) => {
                    p class="advice" { b { (a.bottleneck.as_str()) } ": " (a.summary) " " span class="dim" { "(over " (a.basis) ")" } }
                    p { (a.suggestion) }
                    @if let Some(step) = &a.worst_step { p { "Worst step: " (step) } }
                    @if a.step_ranges.len() > 1 {
                        ul { @for r in &a.step_ranges { li { (r.first_step) " to " (r.last_step) " (" (r.steps) " steps): " (r.bottleneck.as_str()) } } }
                    }
                    p class="dim" { @for (i, f) in a.figures.iter().enumerate() { @if i > 0 { " · " } (f.name) " " (format!("{:.1}%", f.percent)) } }
                }
                None => p class="dim" { "No advice for this host (no steps, or nothing stands out)." },
            }
        }
    }
}

/// The embedded scripts, by the name the views load them with.
fn asset(name: &str) -> Option<&'static str> {
    crate::ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, t)| *t)
}

/// Text safe inside a `<script>` element.
fn script_text(s: &str) -> String {
    s.replace("</script", "<\\/script")
        .replace("<!--", "<\\!--")
}

/// Takes the `<script type="module" src="/static/X.js"></script>` tags out of `html`, returning
/// the names in order.
fn take_module_scripts(html: &mut String) -> Vec<String> {
    const OPEN: &str = "<script type=\"module\" src=\"/static/";
    const CLOSE: &str = "\"></script>";
    let mut names = Vec::new();
    while let Some(i) = html.find(OPEN) {
        let rest = &html[i + OPEN.len()..];
        let Some(j) = rest.find(CLOSE) else { break };
        let name = rest[..j].to_string();
        html.replace_range(i..i + OPEN.len() + j + CLOSE.len(), "");
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Answers the trace viewer's requests from the embedded window, and keeps links that need a
/// server inside the file. A classic script, so it runs before the viewer's module.
const OFFLINE_JS: &str = r#"(() => {
  const data = JSON.parse(document.getElementById('xlens-offline').textContent);
  const vp = data.viewport;
  const reply = (obj, status = 200) => Promise.resolve(new Response(JSON.stringify(obj), { status, headers: { 'content-type': 'application/json' } }));
  const nameOf = (e) => vp.names[e.name];
  const overlapping = (s, e) => vp.events.filter((x) => x.start_ps <= e && x.start_ps + x.dur_ps >= s);
  window.fetch = (input) => {
    const url = new URL(typeof input === 'string' ? input : input.url, 'http://offline.invalid/');
    const q = url.searchParams;
    const num = (k, d) => (q.has(k) ? Number(q.get(k)) : d);
    if (url.pathname === '/api/trace/viewport') {
      const s = num('start_ps', vp.start_ps), e = num('end_ps', vp.end_ps), w = Math.max(1, num('width', 1500));
      const counters = vp.counters.map((c) => {
        const keep = [];
        for (let i = 0; i < c.times_ps.length; i++) {
          const t = c.times_ps[i];
          if ((t >= s && t <= e) || (t < s && (i + 1 === c.times_ps.length || c.times_ps[i + 1] >= s))) keep.push(i);
        }
        return { ...c, times_ps: keep.map((i) => c.times_ps[i]), values: keep.map((i) => c.values[i]) };
      });
      return reply({ ...vp, start_ps: s, end_ps: e, width_px: w, ps_per_px: (e - s) / w, events: overlapping(s, e), summaries: [], counters });
    }
    if (url.pathname === '/api/trace/event') {
      const track = Number(q.get('track')), index = Number(q.get('index'));
      const d = data.details[`${track}.${index}`];
      if (d) return reply(d);
      // Past the embedded details: what the viewport itself knows of the event.
      const e = vp.events.find((x) => x.track === track && x.index === index);
      if (!e) return reply({ error: 'this event is outside the exported window' }, 404);
      const t = vp.tracks.find((x) => x.id === track) || {};
      return reply({ track, index, host: t.host || '', plane: t.group || '', line: t.name || '', name: nameOf(e), long_name: '', display_name: nameOf(e),
        start_ps: e.start_ps, dur_ps: e.dur_ps, self_ps: e.dur_ps, depth: e.depth, wall_clock_start_ns: null, step: null, source: null,
        stats: [['note', `stats and flows are embedded for the first ${data.details_count} events of the window only (xlens export --max-details)`]], flows: [] });
    }
    if (url.pathname === '/api/trace/search') {
      const needle = (q.get('q') || '').toLowerCase();
      const all = vp.events.filter((x) => nameOf(x).toLowerCase().includes(needle));
      const limit = num('limit', 500);
      const hits = all.slice(0, limit).map((x) => ({ track: x.track, index: x.index, start_ps: x.start_ps, dur_ps: x.dur_ps, name: nameOf(x) }));
      hits.sort((a, b) => a.start_ps - b.start_ps);
      return reply({ query: q.get('q') || '', total: all.length, shown: hits.length, hits });
    }
    if (url.pathname === '/api/trace/range') {
      const s = num('start_ps', vp.start_ps), e = num('end_ps', vp.end_ps);
      const rows = new Map();
      let events = 0;
      for (const x of overlapping(s, e)) {
        const t = Math.min(e, x.start_ps + x.dur_ps) - Math.max(s, x.start_ps);
        const r = rows.get(nameOf(x)) || { name: nameOf(x), occurrences: 0, time_ps: 0 };
        r.occurrences += 1; r.time_ps += Math.max(0, t); rows.set(r.name, r); events += 1;
      }
      return reply({ start_ps: s, end_ps: e, events, rows: [...rows.values()].sort((a, b) => b.time_ps - a.time_ps) });
    }
    return reply({ error: 'this exported file has no server behind it' }, 404);
  };
  // Links to the server's pages: to the section of that tool when the file has it.
  document.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a[href]');
    if (!a) return;
    const href = a.getAttribute('href');
    if (!href.startsWith('/')) return;
    ev.preventDefault();
    const tool = new URL(href, 'http://offline.invalid/').searchParams.get('tool');
    const target = tool && document.querySelector(`section[data-tool="${CSS.escape(tool)}"]`);
    if (target) target.scrollIntoView();
    else alert('This link opens a page of a running xlens server: run `xlens serve` on the profile to follow it.');
  }, true);
})();"#;

const EXPORT_CSS: &str = "
section.export { border-top: 2px solid var(--line); margin-top: 2em; padding-top: .5em; }
nav.export a { margin-right: 1em; }
.tv-export { display: none; }
section.export .tv { height: 80vh; }
";

/// The HTML file of `run` (one session, narrowed to `host` when given).
pub fn export_html(
    session: &Session,
    run: &Run,
    host: Option<&str>,
    opts: &ExportOptions,
) -> Result<Exported, String> {
    let name = session.name.as_str();
    let mut parts: Vec<(String, String, String, Markup)> = Vec::new();
    let mut overview: Option<tools::ToolOutput> = None;
    for (anchor, title, tool) in SECTIONS {
        let (m, out) = section(run, name, host, tool);
        if *tool == "overview_page" {
            overview = out;
        }
        parts.push((anchor.to_string(), title.to_string(), tool.to_string(), m));
    }
    let ov = overview.as_ref().and_then(|o| o.get::<Overview>());
    // Advice after the overview.
    parts.insert(
        2,
        (
            "advice".into(),
            "Advice".into(),
            "advice".into(),
            advice_section(ov),
        ),
    );

    // The trace window.
    let idx = run.trace_index()?;
    let (mut window, mut note) = match (
        opts.window_ps,
        ov.and_then(xlens_analysis::tools::overview::median_step),
    ) {
        (Some(w), _) => (w, "given".to_string()),
        (None, Some((step, w))) => (w, format!("the median step ({step})")),
        (None, None) => (idx.span, "the whole trace (no steps)".to_string()),
    };
    if window.1 <= window.0 {
        return Err(format!(
            "the trace window ends ({} ps) before it starts ({} ps)",
            window.1, window.0
        ));
    }
    let mut vp = idx.query_all(window.0, window.1);
    if vp.events.len() > opts.max_events {
        let mut starts: Vec<i64> = vp.events.iter().map(|e| e.start_ps).collect();
        starts.sort_unstable();
        let cut = starts[opts.max_events].max(window.0 + 1);
        note.push_str(&format!(
            "; narrowed from {} ps to {} ps to embed at most {} of its {} events",
            window.1 - window.0,
            cut - window.0,
            opts.max_events,
            vp.events.len()
        ));
        window.1 = cut;
        vp = idx.query_all(window.0, window.1);
        // Events that start exactly at the cut may remain past the cap: keep the earliest.
        if vp.events.len() > opts.max_events {
            vp.events.sort_by_key(|e| e.start_ps);
            vp.events.truncate(opts.max_events);
        }
    }
    // The span and event count stay the whole trace's, so times read as on the server ("from
    // trace start") and the status line says how much of the trace the file holds.
    let total_events = vp.total_events;
    let mut order: Vec<usize> = (0..vp.events.len()).collect();
    order.sort_by_key(|&i| vp.events[i].start_ps);
    let mut details = serde_json::Map::new();
    for &i in order.iter().take(opts.max_details) {
        let e = &vp.events[i];
        if let Some(d) = idx.details(e.track, e.index) {
            let v = serde_json::to_value(d).map_err(|e| e.to_string())?;
            details.insert(format!("{}.{}", e.track, e.index), v);
        }
    }
    let n_details = details.len();
    let offline = serde_json::json!({
        "viewport": vp,
        "details": details,
        "details_count": n_details,
    });
    let offline_text = serde_json::to_string(&offline)
        .map_err(|e| e.to_string())?
        .replace("</", "<\\/");
    let events = vp.events.len();
    let trace_intro = html! {
        p class="dim" {
            "Embedded: " (events) " events of the window " (crate::views::ui::fmt_ps(window.1 - window.0))
            " long from " (crate::views::ui::fmt_ps(window.0 - idx.span.0)) " after the trace's start (" (note) "), of "
            (total_events) " events in the whole trace; details of " (n_details) " of them (the earliest). "
            "Zoom and click as in xlens; search and range statistics cover the window."
        }
    };
    parts.push((
        "trace_viewer".into(),
        "Trace viewer".into(),
        "trace_viewer".into(),
        html! { (trace_intro) (views::page::trace_body()) },
    ));

    let hosts: Vec<&str> = session
        .hosts
        .iter()
        .map(|h| h.host.as_str())
        .filter(|h| host.is_none_or(|w| w == *h))
        .collect();
    let body = html! {
        header {
            span class="brand" { "xlens" } " "
            span class="label" { "run " b { (name) } " · " (hosts.len()) " host(s): " (hosts.join(", ")) " · exported by xlens " (env!("CARGO_PKG_VERSION")) }
            nav class="export" {
                @for (anchor, title, _, _) in &parts { a href=(format!("#{anchor}")) { (title) } }
            }
        }
        main class="wide" {
            @for (anchor, title, tool, m) in &parts {
                section class="export" id=(anchor) data-tool=(tool) {
                    h2 { (title) }
                    (m)
                }
            }
        }
    };
    let mut body = body.into_string();
    let mut scripts = vec!["tables.js".to_string()];
    for s in take_module_scripts(&mut body) {
        if !scripts.contains(&s) {
            scripts.push(s);
        }
    }
    scripts.push("app.js".into());
    let mut modules = String::new();
    for s in &scripts {
        let Some(text) = asset(s) else { continue };
        // The modules are inlined one after another: no imports between them.
        let text: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("import "))
            .collect::<Vec<_>>()
            .join("\n");
        modules.push_str(&format!(
            "<script type=\"module\" data-from=\"{s}\">\n{}\n</script>\n",
            script_text(&text)
        ));
    }
    let css = asset("app.css").unwrap_or_default();
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "xlens · " (name) }
                style { (PreEscaped(css)) (PreEscaped(EXPORT_CSS)) }
                script type="application/json" id="xlens-offline" { (PreEscaped(offline_text)) }
                script { (PreEscaped(script_text(OFFLINE_JS))) }
            }
            body { (PreEscaped(body)) (PreEscaped(modules)) }
        }
    };
    Ok(Exported {
        html: page.into_string(),
        window_ps: window,
        window_note: note,
        events,
        total_events,
        details: n_details,
    })
}
