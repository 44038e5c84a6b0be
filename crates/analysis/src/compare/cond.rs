//! `--fail-if` conditions: `METRIC OP VALUE`, checked against a [`Diff`].
//!
//! * `METRIC`: `step_time.mean`, `step_time.median`, `step_time.p90` (time), `peak_memory`
//!   (bytes), `duty_cycle`, `flop_utilization` (percent), `breakdown.<category id>` (time per
//!   step, e.g. `breakdown.input`), `op:<glob>` (the summed time of the ops whose key or name
//!   matches the glob, `*` and `?` wildcards, e.g. `op:*fusion*`), `ops.added`, `ops.removed`,
//!   `ops.slower` (counts).
//! * `OP`: `>`, `>=`, `<`, `<=`.
//! * `VALUE` with a sign is a change from BASE to NEW: `+3%` relative to BASE, `+100MiB`,
//!   `-2ms`, `+5` absolute (units: `B`, `KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`; `ns`, `us`, `µs`,
//!   `ms`, `s`). Without a sign it is NEW's own value: `duty_cycle < 50`, `peak_memory > 30GiB`.
//! * A change of `step_time.mean` holds only when the 95% bootstrap interval of the change is
//!   on the same side of zero as well (`> +3%` needs NEW to be slower beyond noise), so noise
//!   does not fail a build.

use serde::Serialize;

use super::Diff;

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub text: String,
    pub metric: String,
    pub op: Cmp,
    pub value: f64,
    /// `+x%` / `-x%`.
    pub relative: bool,
    /// Signed: a change, not NEW's value.
    pub change: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
}

fn signed(s: String, v: f64) -> String {
    if v >= 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// A metric's value in its unit (times in picoseconds, memory in bytes).
fn show_value(metric: &str, v: f64) -> String {
    if metric.starts_with("step_time.")
        || metric.starts_with("breakdown.")
        || metric.starts_with("op:")
    {
        crate::base::fmt::fmt_ps(v as i64)
    } else if metric == "peak_memory" {
        crate::base::fmt::fmt_bytes(v as i64)
    } else if metric.starts_with("ops.") {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl Cmp {
    fn symbol(self) -> &'static str {
        match self {
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
        }
    }

    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

/// Why a condition could not be read.
#[derive(Debug, thiserror::Error)]
#[error("--fail-if `{text}`: {why}")]
pub struct CondError {
    pub text: String,
    pub why: String,
}

/// What a condition found.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CondResult {
    pub condition: String,
    pub holds: bool,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// What was compared with the value: the change (relative in percent, or absolute) or NEW.
    pub compared: Option<f64>,
    pub evidence: String,
}

fn unit(s: &str) -> Option<f64> {
    Some(match s {
        "" => 1.0,
        "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        // Times are in picoseconds.
        "ps" => 1.0,
        "ns" => 1e3,
        "us" | "µs" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        _ => return None,
    })
}

/// Parses `METRIC OP VALUE` (spaces optional).
pub fn parse(text: &str) -> Result<Cond, CondError> {
    let err = |why: &str| CondError {
        text: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    let pos = t
        .find(['<', '>'])
        .ok_or_else(|| err("no comparison (`>`, `>=`, `<`, `<=`)"))?;
    let metric = t[..pos].trim().to_string();
    let rest = &t[pos..];
    let (op, rest) = if let Some(r) = rest.strip_prefix(">=") {
        (Cmp::Ge, r)
    } else if let Some(r) = rest.strip_prefix("<=") {
        (Cmp::Le, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Cmp::Gt, r)
    } else if let Some(r) = rest.strip_prefix('<') {
        (Cmp::Lt, r)
    } else {
        return Err(err("no comparison"));
    };
    let v = rest.trim();
    let change = v.starts_with('+') || v.starts_with('-');
    let relative = v.ends_with('%');
    let num_end = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || ((c == '+' || c == '-') && i == 0)))
        .map_or(v.len(), |(i, _)| i);
    let number: f64 = v[..num_end]
        .parse()
        .map_err(|_| err("the value is not a number (e.g. `+3%`, `+100MiB`, `2ms`, `50`)"))?;
    let suffix = v[num_end..].trim();
    let value = if relative {
        if suffix != "%" {
            return Err(err("a relative value ends with `%` alone"));
        }
        if !change {
            return Err(err("a relative value needs a sign: `+3%` or `-3%`"));
        }
        number
    } else {
        number
            * unit(suffix)
                .ok_or_else(|| err("unknown unit (B, KB, MB, GB, KiB, MiB, GiB, ns, us, ms, s)"))?
    };
    if metric.is_empty() {
        return Err(err("no metric"));
    }
    let known = matches!(
        metric.as_str(),
        "step_time.mean"
            | "step_time.median"
            | "step_time.p90"
            | "peak_memory"
            | "duty_cycle"
            | "flop_utilization"
            | "ops.added"
            | "ops.removed"
            | "ops.slower"
    ) || metric.starts_with("breakdown.")
        || metric.starts_with("op:");
    if !known {
        return Err(err(
            "unknown metric (step_time.mean|median|p90, peak_memory, duty_cycle, flop_utilization, breakdown.<category>, op:<glob>, ops.added|removed|slower)",
        ));
    }
    Ok(Cond {
        text: t.to_string(),
        metric,
        op,
        value,
        relative,
        change,
    })
}

/// `*` and `?` glob match.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0usize, 0usize, None, 0usize);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The metric's value on each side.
fn values(d: &Diff, metric: &str) -> Result<(Option<f64>, Option<f64>, String), String> {
    let st = &d.step_time;
    let steps = |b: i64, n: i64| {
        (
            (st.base.count > 0).then_some(b as f64),
            (st.new.count > 0).then_some(n as f64),
            String::new(),
        )
    };
    Ok(match metric {
        "step_time.mean" => steps(st.base.mean_ps, st.new.mean_ps),
        "step_time.median" => steps(st.base.median_ps, st.new.median_ps),
        "step_time.p90" => steps(st.base.p90_ps, st.new.p90_ps),
        "peak_memory" => (d.peak_memory.base, d.peak_memory.new, String::new()),
        "duty_cycle" => (
            d.duty_cycle_percent.base,
            d.duty_cycle_percent.new,
            String::new(),
        ),
        "flop_utilization" => (
            d.flop_utilization_percent.base,
            d.flop_utilization_percent.new,
            String::new(),
        ),
        "ops.added" => (Some(0.0), Some(d.ops.added as f64), String::new()),
        "ops.removed" => (Some(0.0), Some(d.ops.removed as f64), String::new()),
        "ops.slower" => (Some(0.0), Some(d.ops.slower as f64), String::new()),
        m if m.starts_with("breakdown.") => {
            let id = &m["breakdown.".len()..];
            let c = d.breakdown.iter().find(|c| c.id == id).ok_or_else(|| {
                format!(
                    "no breakdown category `{id}` (categories: {})",
                    d.breakdown
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            steps(c.base_ps, c.new_ps)
        }
        m => {
            let pat = m.strip_prefix("op:").unwrap_or(m);
            let rows: Vec<_> = d
                .ops
                .rows
                .iter()
                .filter(|r| {
                    glob(pat, &r.key)
                        || glob(pat, &r.name)
                        || r.new_name.as_deref().is_some_and(|n| glob(pat, n))
                })
                .collect();
            let b: i64 = rows.iter().map(|r| r.base_ps).fold(0, i64::saturating_add);
            let n: i64 = rows.iter().map(|r| r.new_ps).fold(0, i64::saturating_add);
            let mut names: Vec<&str> = rows.iter().take(5).map(|r| r.name.as_str()).collect();
            if rows.len() > 5 {
                names.push("…");
            }
            (
                Some(b as f64),
                Some(n as f64),
                format!("{} ops match ({})", rows.len(), names.join(", ")),
            )
        }
    })
}

/// Checks `c` against `d`.
pub fn check(c: &Cond, d: &Diff) -> CondResult {
    let (base, new, note) = match values(d, &c.metric) {
        Ok(v) => v,
        Err(e) => {
            return CondResult {
                condition: c.text.clone(),
                holds: false,
                base: None,
                new: None,
                compared: None,
                evidence: e,
            }
        }
    };
    let compared = if c.change {
        match (base, new) {
            (Some(b), Some(n)) if c.relative => (b != 0.0).then(|| (n - b) / b.abs() * 100.0),
            (Some(b), Some(n)) => Some(n - b),
            _ => None,
        }
    } else {
        new
    };
    let mut holds = compared.is_some_and(|x| c.op.holds(x, c.value));
    let show = |v: f64| show_value(&c.metric, v);
    let mut evidence = format!(
        "BASE {}, NEW {}",
        base.map_or("–".to_string(), show),
        new.map_or("–".to_string(), show),
    );
    match compared {
        Some(x) if c.change && c.relative => evidence.push_str(&format!(
            "; change {x:+.2}% {} {:+}%",
            c.op.symbol(),
            c.value
        )),
        Some(x) if c.change => evidence.push_str(&format!(
            "; change {} {} {}",
            signed(show(x), x),
            c.op.symbol(),
            signed(show(c.value), c.value)
        )),
        Some(x) => evidence.push_str(&format!(
            "; NEW {} {} {}",
            show(x),
            c.op.symbol(),
            show(c.value)
        )),
        None => evidence.push_str(" (not available on both sides)"),
    }
    if c.change && c.metric == "step_time.mean" {
        let st = &d.step_time;
        let beyond_noise = match (st.ci95_pct, c.op) {
            (Some((lo, _)), Cmp::Gt | Cmp::Ge) => lo > 0.0,
            (Some((_, hi)), Cmp::Lt | Cmp::Le) => hi < 0.0,
            (None, _) => true,
        };
        if let Some((lo, hi)) = st.ci95_pct {
            evidence.push_str(&format!("; 95% CI of the change {lo:+.2}% … {hi:+.2}%"));
        }
        if holds && !beyond_noise {
            holds = false;
            evidence.push_str(" holds 0: within noise, not failing");
        }
    }
    if !note.is_empty() {
        evidence.push_str(&format!("; {note}"));
    }
    CondResult {
        condition: c.text.clone(),
        holds,
        base,
        new,
        compared,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_examples() {
        let c = parse("step_time.mean > +3%").unwrap();
        assert_eq!(
            (c.op, c.value, c.relative, c.change),
            (Cmp::Gt, 3.0, true, true)
        );
        let c = parse("peak_memory > +100MiB").unwrap();
        assert_eq!(c.value, 100.0 * 1024.0 * 1024.0);
        assert!(c.change && !c.relative);
        let c = parse("op:fusion.* > +10%").unwrap();
        assert_eq!(c.metric, "op:fusion.*");
        let c = parse("duty_cycle<50").unwrap();
        assert_eq!((c.op, c.value, c.change), (Cmp::Lt, 50.0, false));
        let c = parse("step_time.p90 >= -2ms").unwrap();
        assert_eq!(c.value, -2e9);
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        for bad in [
            "step_time.mean",
            "nonsense > 3",
            "peak_memory > +3furlongs",
            "duty_cycle > 50%",
            "step_time.mean > abc",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn globs() {
        assert!(glob("fusion.*", "fusion.12"));
        assert!(glob("*fusion*", "jit_step/fusion"));
        assert!(!glob("fusion.*", "jit_step/fusion"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "abbc"));
    }
}
