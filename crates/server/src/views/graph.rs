//! The graph viewer: a search form (submitted with the page's run / host selectors, with the
//! profile's op names as suggestions) and the server-laid-out SVG; selecting an op draws it
//! (`assets/graph.js`). With no op asked for, the modules by op time with their most expensive
//! ops, as links.

use maud::{html, Markup, PreEscaped};
use xlens_analysis::tools::graph_viewer::{GraphViewer, Landing};

use super::ui::{fmt_ps, graph_link};
use super::Cx;

pub fn view(g: &GraphViewer, cx: &Cx) -> Markup {
    let none = Landing::default();
    let land = g.landing.as_ref().unwrap_or(&none);
    let link = |op: &str, module: &str| graph_link(cx.session, cx.host.unwrap_or(""), op, module);
    html! {
        section class="graph" data-module=(g.module.as_deref().unwrap_or("")) {
            h1 { "Graph viewer" }
            div class="graph-form" {
                input type="hidden" name="module" form="nav" value="";
                label {
                    "HLO op "
                    input type="search" name="op" form="nav" value=(g.query.as_deref().unwrap_or(""))
                        placeholder="e.g. fusion.3" aria-label="HLO op name" list="graph-ops";
                }
                " "
                label { "Radius " input type="number" name="radius" form="nav" min="0" max="16" value=(g.radius) style="width:4em"; }
                " "
                button type="submit" form="nav" { "Show" }
                datalist id="graph-ops" { @for n in &land.op_names { option value=(n) {} } }
            }
            @for m in &g.messages { p class="dim" { (m) } }
            @if let (Some(m), Some(f)) = (&g.module, &g.focus) {
                p {
                    b { (f) } " in module " code { (m) } " · " (g.nodes.len()) " ops, " (g.edges.len())
                    " edges · radius " (g.radius) " · select an op to centre on it"
                }
                @if !g.also_in.is_empty() {
                    p class="dim" {
                        "Also in: "
                        @for a in &g.also_in { a href="#" data-op=(a.name) data-module=(a.module) { (a.module) } " " }
                    }
                }
                // The SVG is the tool's own drawing (its text escaped there).
                div class="graph-svg" { (PreEscaped(&g.svg)) }
            }
            @if !g.candidates.is_empty() {
                h3 { (g.candidates.len()) " of " (g.candidate_count) " ops whose name contains it" }
                ul class="candidates" {
                    @for c in &g.candidates {
                        li {
                            a href="#" data-op=(c.name) data-module=(c.module) { (c.name) } " "
                            span class="dim" { (c.opcode) " · " (c.module) }
                        }
                    }
                }
            }
            @if g.query.is_none() && !land.modules.is_empty() {
                h3 { "Modules by op time, with their most expensive ops" }
                p class="dim" {
                    "From host " (land.host) "'s op table: " (land.modules.len()) " modules ran ops. Click an op to draw its neighbourhood."
                }
                ol class="graph-modules" {
                    @for m in &land.modules {
                        li {
                            b { (m.name) } " "
                            span class="dim" { (fmt_ps(m.time_ps)) " of op self time · " (m.op_count) " ops" }
                            ul {
                                @for o in &m.top_ops {
                                    li {
                                        a href=(link(&o.name, &m.name)) data-op=(o.name) data-module=(m.name) { (o.name) } " "
                                        span class="dim" { (o.opcode) " · " (fmt_ps(o.total_time_ps)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @if g.query.is_none() && !land.idle_modules.is_empty() {
                h3 { "Modules without op time in this profile" }
                p class="dim" { "Each links to the root of its entry computation." }
                ul class="graph-idle" {
                    @for m in &land.idle_modules {
                        li { a href=(link(&m.root, &m.name)) data-op=(m.root) data-module=(m.name) { (m.name) } " " span class="dim" { "root " (m.root) } }
                    }
                }
            }
        }
        script type="module" src="/static/graph.js" {}
    }
}
