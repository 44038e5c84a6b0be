//! Timeline events by name, plane, line, time window and duration, and their aggregates: what
//! XProf's agent CLI answers with `list_xplane_events` and `aggregate_xplane_events`. An event's
//! name is its metadata's name (on TPU `XLA Ops`, the whole HLO expression), or, for a name of
//! digits only, its `msg`/`message`/`annotation`/`label` stat, as XProf names them; times are on
//! the session's axis, as `trace_viewer --start-ps/--end-ps` and the verdict's window use.

use regex::Regex;
use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::Run;
use crate::base::tool::{PerHost, Tool, ToolError};
use xlens_model::{Plane, Profile, StatValue};

/// The selection and grouping.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct EventsParams {
    /// Events whose name matches this regular expression (a search: `^` and `$` anchor it).
    #[arg(long)]
    pub name: Option<String>,
    /// Only planes whose name matches this regular expression (e.g. `TPU:0$`, `/host:CPU`).
    #[arg(long)]
    pub plane: Option<String>,
    /// Only lines (threads, streams) whose name matches this regular expression.
    #[arg(long)]
    pub line: Option<String>,
    /// Only events starting at or after this time (ps, on the session's axis).
    #[arg(long)]
    pub start_ps: Option<i64>,
    /// Only events ending at or before this time (ps).
    #[arg(long)]
    pub end_ps: Option<i64>,
    /// Only events at least this long (ps).
    #[arg(long)]
    pub min_dur_ps: Option<i64>,
    /// Only events at most this long (ps).
    #[arg(long)]
    pub max_dur_ps: Option<i64>,
    /// Aggregate by these, comma-separated, in order: event, plane, line (default event).
    #[arg(long)]
    pub group_by: Option<String>,
    /// List at most this many matching events, in file order (default 100).
    #[arg(long)]
    pub limit: Option<usize>,
}

/// One matching event.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EventRow {
    pub plane: String,
    pub line: String,
    pub name: String,
    pub start_ps: i64,
    pub dur_ps: i64,
}

/// The matching events of one group.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Aggregate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plane: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    pub count: u64,
    pub total_duration_ps: i64,
    pub avg_duration_ps: f64,
    pub min_duration_ps: i64,
    pub p50_duration_ps: f64,
    pub p90_duration_ps: f64,
    pub p99_duration_ps: f64,
    pub max_duration_ps: i64,
    /// Sample standard deviation (0 for one event).
    pub std_dev_ps: f64,
}

/// One host's events.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Events {
    /// Events on the lines of the planes selected (matching or not).
    pub scanned: u64,
    pub matched: u64,
    /// The first matching events (`--limit`), in file order.
    pub events: Vec<EventRow>,
    /// One row per group, by total duration (largest first; ties in the order first seen).
    pub aggregates: Vec<Aggregate>,
    pub groups: usize,
}

pub struct EventsTool;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Event,
    Plane,
    Line,
}

fn regex(what: &str, s: &Option<String>) -> Result<Option<Regex>, ToolError> {
    s.as_deref()
        .filter(|s| !s.is_empty())
        .map(|s| {
            Regex::new(s).map_err(|e| ToolError::Params(format!("events: --{what} `{s}`: {e}")))
        })
        .transpose()
}

fn group_keys(s: &Option<String>) -> Result<Vec<Key>, ToolError> {
    let mut keys = Vec::new();
    for k in s.as_deref().unwrap_or("event").split(',').map(str::trim) {
        let key = match k {
            "event" | "name" => Key::Event,
            "plane" => Key::Plane,
            "line" => Key::Line,
            "" => continue,
            other => {
                return Err(ToolError::Params(format!(
                    "events: --group-by `{other}`: use event, plane, line (comma-separated)"
                )))
            }
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        keys.push(Key::Event);
    }
    Ok(keys)
}

/// The name XProf gives event `i` of `line`.
fn event_name<'p>(p: &'p Profile, plane: &'p Plane, line: &xlens_model::Line, i: usize) -> &'p str {
    let name = plane.metadata_of(line, i).map_or("", |m| p.str(m.name));
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return name;
    }
    let st = line.events.stats(i);
    for k in ["msg", "message", "annotation", "label"] {
        if let Some(StatValue::Str(s) | StatValue::Ref(s)) = p.key(k).and_then(|k| st.get(k)) {
            let s = p.str(s);
            if !s.is_empty() {
                return s;
            }
        }
    }
    name
}

/// Value at quantile `q` of sorted `v`, interpolated linearly between neighbours.
fn quantile(v: &[i64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] as f64 + (pos - lo as f64) * (v[hi] as f64 - v[lo] as f64)
}

/// The statistics of a group's durations (at least one).
fn aggregate(key: GroupKey, mut d: Vec<i64>) -> Aggregate {
    d.sort_unstable();
    let n = d.len();
    let total: i64 = d.iter().fold(0i64, |a, x| a.saturating_add(*x));
    let mean = total as f64 / n as f64;
    let std = if n > 1 {
        let m = d.iter().map(|x| *x as i128).sum::<i128>() as f64 / n as f64;
        (d.iter().map(|x| (*x as f64 - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    Aggregate {
        event: key.0.map(str::to_string),
        plane: key.1.map(str::to_string),
        line: key.2.map(str::to_string),
        count: n as u64,
        total_duration_ps: total,
        avg_duration_ps: mean,
        min_duration_ps: d[0],
        p50_duration_ps: quantile(&d, 0.5),
        p90_duration_ps: quantile(&d, 0.9),
        p99_duration_ps: quantile(&d, 0.99),
        max_duration_ps: d[n - 1],
        std_dev_ps: std,
    }
}

/// A group's event name, plane and line, each where `--group-by` names it.
type GroupKey<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>);

/// The parameters, checked and compiled.
pub struct Selection {
    name_re: Option<Regex>,
    plane_re: Option<Regex>,
    line_re: Option<Regex>,
    keys: Vec<Key>,
    params: EventsParams,
}

impl Selection {
    pub fn new(params: &EventsParams) -> Result<Selection, ToolError> {
        if let (Some(s), Some(e)) = (params.start_ps, params.end_ps) {
            if s > e {
                return Err(ToolError::Params(format!(
                    "events: --start-ps {s} is after --end-ps {e}"
                )));
            }
        }
        Ok(Selection {
            name_re: regex("name", &params.name)?,
            plane_re: regex("plane", &params.plane)?,
            line_re: regex("line", &params.line)?,
            keys: group_keys(&params.group_by)?,
            params: params.clone(),
        })
    }
}

/// The events of `p` that `sel` selects.
pub fn events(p: &Profile, sel: &Selection) -> Events {
    let Selection {
        name_re,
        plane_re,
        line_re,
        keys,
        params,
    } = sel;
    let limit = params.limit.unwrap_or(100);
    let mut out = Events {
        scanned: 0,
        matched: 0,
        events: Vec::new(),
        aggregates: Vec::new(),
        groups: 0,
    };
    // Group key -> (its index in first-seen order, durations).
    let mut groups: HashMap<GroupKey, (usize, Vec<i64>)> = HashMap::new();
    for plane in &p.planes {
        let pname = p.str(plane.name);
        if plane_re.as_ref().is_some_and(|r| !r.is_match(pname)) {
            continue;
        }
        for line in &plane.lines {
            let ev = &line.events;
            out.scanned += ev.len() as u64;
            let lname = p.str(line.name);
            if line_re.as_ref().is_some_and(|r| !r.is_match(lname)) {
                continue;
            }
            for i in 0..ev.len() {
                let (start, dur) = (ev.start(i), ev.dur(i));
                if params.start_ps.is_some_and(|s| start < s)
                    || params.end_ps.is_some_and(|e| start.saturating_add(dur) > e)
                    || params.min_dur_ps.is_some_and(|m| dur < m)
                    || params.max_dur_ps.is_some_and(|m| dur > m)
                {
                    continue;
                }
                let name = event_name(p, plane, line, i);
                if name_re.as_ref().is_some_and(|r| !r.is_match(name)) {
                    continue;
                }
                out.matched += 1;
                if out.events.len() < limit {
                    out.events.push(EventRow {
                        plane: pname.to_string(),
                        line: lname.to_string(),
                        name: name.to_string(),
                        start_ps: start,
                        dur_ps: dur,
                    });
                }
                let key = (
                    keys.contains(&Key::Event).then_some(name),
                    keys.contains(&Key::Plane).then_some(pname),
                    keys.contains(&Key::Line).then_some(lname),
                );
                let n = groups.len();
                groups
                    .entry(key)
                    .or_insert_with(|| (n, Vec::new()))
                    .1
                    .push(dur);
            }
        }
    }
    let mut rows: Vec<(usize, Aggregate)> = groups
        .into_iter()
        .map(|(key, (seen, d))| (seen, aggregate(key, d)))
        .collect();
    rows.sort_by(|a, b| {
        b.1.total_duration_ps
            .cmp(&a.1.total_duration_ps)
            .then(a.0.cmp(&b.0))
    });
    out.groups = rows.len();
    out.aggregates = rows.into_iter().map(|r| r.1).collect();
    out
}

impl Tool for EventsTool {
    const NAME: &'static str = "events";
    const TITLE: &'static str = "Events";
    const DESCRIPTION: &'static str = "Timeline events by name regex, plane, line, time window and duration: the first matches and per-group count, total, mean, min, p50/p90/p99, max and std dev, as XProf's `list_xplane_events` and `aggregate_xplane_events`.";
    type Params = EventsParams;
    type Output = PerHost<Events>;

    fn run(run: &Run, params: &EventsParams) -> Result<Self::Output, ToolError> {
        // A bad argument is an error of the call, not of each host.
        let sel = Selection::new(params)?;
        Ok(PerHost::of(Self::NAME, run, |a| events(a.profile(), &sel)))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

/// The aggregates as CSV.
fn render_csv(e: &Events) -> String {
    let mut out = String::from("event,plane,line,count,total_duration_ps,avg_duration_ps,min_duration_ps,p50_duration_ps,p90_duration_ps,p99_duration_ps,max_duration_ps,std_dev_ps\n");
    for a in &e.aggregates {
        let f = |s: &Option<String>| crate::base::fmt::csv_field(s.as_deref().unwrap_or(""));
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            f(&a.event),
            f(&a.plane),
            f(&a.line),
            a.count,
            a.total_duration_ps,
            a.avg_duration_ps,
            a.min_duration_ps,
            a.p50_duration_ps,
            a.p90_duration_ps,
            a.p99_duration_ps,
            a.max_duration_ps,
            a.std_dev_ps
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_by_hand() {
        let a = aggregate((Some("x"), None, None), vec![4, 1, 3, 2]);
        assert_eq!((a.count, a.total_duration_ps), (4, 10));
        assert_eq!((a.min_duration_ps, a.max_duration_ps), (1, 4));
        assert_eq!(a.avg_duration_ps, 2.5);
        // Interpolated: position 0.5 * 3 = 1.5 between 2 and 3; 0.9 * 3 = 2.7 between 3 and 4.
        assert_eq!(a.p50_duration_ps, 2.5);
        assert!((a.p90_duration_ps - 3.7).abs() < 1e-12);
        // Sample standard deviation of 1..4: sqrt(5/3).
        assert!((a.std_dev_ps - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        let one = aggregate((None, None, None), vec![7]);
        assert_eq!((one.p99_duration_ps, one.std_dev_ps), (7.0, 0.0));
    }

    #[test]
    fn bad_selections_are_refused() {
        let p = |f: fn(&mut EventsParams)| {
            let mut x = EventsParams::default();
            f(&mut x);
            Selection::new(&x).err().map(|e| e.to_string())
        };
        assert!(p(|x| x.name = Some("(".into())).unwrap().contains("--name"));
        assert!(p(|x| x.group_by = Some("host".into()))
            .unwrap()
            .contains("--group-by"));
        assert!(p(|x| {
            x.start_ps = Some(5);
            x.end_ps = Some(1);
        })
        .is_some());
        assert!(p(|x| x.group_by = Some("line, event,line".into())).is_none());
    }
}
