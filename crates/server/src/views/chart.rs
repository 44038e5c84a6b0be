//! The server-drawn SVG charts' one toolkit: a frame with a byte-scaled y axis, step paths and
//! filled areas through its points, the peak marker, and stacked bars as one path per series.
//! The memory viewer, the memory profile and the overview's step chart draw with it.

use maud::{html, Markup, PreEscaped};
use std::fmt::Write;

use super::ui::fmt_bytes;

/// Chart width in SVG units (the SVG scales to the page).
pub const W: f64 = 1000.0;
/// Room left of the plot for the y axis labels.
pub const LEFT: f64 = 78.0;
pub const RIGHT: f64 = 12.0;

/// A plot area: `top` to `top + height` in SVG units, values 0 to `max` upwards.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub top: f64,
    pub height: f64,
    pub max: f64,
}

impl Frame {
    /// Plot width.
    pub fn width(&self) -> f64 {
        W - LEFT - RIGHT
    }

    /// The y of value `v`.
    pub fn y(&self, v: f64) -> f64 {
        self.top + self.height - v / self.max * self.height
    }

    /// The bottom (value 0).
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }

    /// Four gridlines labelled in bytes.
    pub fn byte_axis(&self) -> Markup {
        self.axis(|v| fmt_bytes(v as i64))
    }

    /// Four gridlines labelled by `label` of their value.
    pub fn axis(&self, label: impl Fn(f64) -> String) -> Markup {
        html! {
            @for k in 0..=4 {
                @let frac = k as f64 / 4.0;
                @let y = self.bottom() - frac * self.height;
                line class="grid" x1=(LEFT) x2=(W - RIGHT) y1=(f1(y)) y2=(f1(y)) {}
                text class="tick" x=(LEFT - 4.0) y=(f1(y + 4.0)) text-anchor="end" {
                    (label(self.max * frac))
                }
            }
        }
    }

    /// A path of `class` through `pts`, holding each value until the next point.
    pub fn step_line(&self, class: &str, pts: &[(f64, f64)]) -> Markup {
        html! { path class=(class) d=(step_path(pts)) {} }
    }

    /// The area under a step path through `pts`, down to 0.
    pub fn step_area(&self, class: &str, pts: &[(f64, f64)]) -> Markup {
        let Some(first) = pts.first() else {
            return html! {};
        };
        let d = format!("{}V{:.1}H{:.1}Z", step_path(pts), self.bottom(), first.0);
        html! { path class=(class) d=(d) {} }
    }

    /// The peak: a dashed line at `x` from the frame's top to `line_bottom`, a dot at value
    /// `v` with `title`, and `label` beside it (on the side with room).
    pub fn peak(&self, x: f64, v: f64, line_bottom: f64, title: &str, label: &str) -> Markup {
        let y = self.y(v);
        let right_half = x > W / 2.0;
        html! {
            line class="mv-peakline" x1=(f1(x)) x2=(f1(x)) y1=(self.top) y2=(f1(line_bottom)) {}
            circle class="mv-peak" cx=(f1(x)) cy=(f1(y)) r="4" { title { (title) } }
            text class="mv-peaklabel" x=(f1(if right_half { x - 8.0 } else { x + 8.0 }))
                y=(f1((y + 14.0).min(self.bottom() - 4.0)))
                text-anchor=(if right_half { "end" } else { "start" }) { (label) }
        }
    }
}

/// One decimal, as the charts' coordinates are written.
pub fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// A step path through `(x, y)` points (the value holds until the next point).
pub fn step_path(pts: &[(f64, f64)]) -> String {
    let mut d = String::new();
    for (i, (x, y)) in pts.iter().enumerate() {
        if i == 0 {
            let _ = write!(d, "M{x:.1},{y:.1}");
        } else {
            let _ = write!(d, "H{x:.1}V{y:.1}");
        }
    }
    d
}

/// Stacked bars, one per column, as one path per series (so a chart of thousands of columns
/// stays a handful of elements): `values[i][s]` is series `s` of column `i`, stacked upwards
/// in series order within `frame`, the columns sharing the plot's width from x = `LEFT`.
pub fn stacked_bars(frame: &Frame, values: &[&[i64]], series: usize, colors: &[&str]) -> Markup {
    let n = values.len().max(1) as f64;
    let step = frame.width() / n;
    let w = (step * 0.85).max(step.min(1.0));
    let mut paths = vec![String::new(); series];
    for (i, col) in values.iter().enumerate() {
        let x = LEFT + i as f64 * step;
        let mut acc = 0i64;
        for (s, d) in paths.iter_mut().enumerate() {
            let v = col.get(s).copied().unwrap_or(0).max(0);
            if v == 0 {
                continue;
            }
            let y0 = frame.y(acc as f64);
            acc += v;
            let y1 = frame.y(acc as f64);
            let _ = write!(d, "M{x:.2},{y0:.2}V{y1:.2}h{w:.2}V{y0:.2}Z",);
        }
    }
    html! {
        @for (s, d) in paths.iter().enumerate() {
            @if !d.is_empty() {
                path class="sc-series" data-s=(s) fill=(colors.get(s % colors.len().max(1)).copied().unwrap_or("#888")) d=(PreEscaped(d)) {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_paths_and_areas() {
        assert_eq!(step_path(&[(0.0, 5.0), (2.0, 3.0)]), "M0.0,5.0H2.0V3.0");
        let f = Frame {
            top: 10.0,
            height: 100.0,
            max: 50.0,
        };
        assert_eq!(f.y(50.0), 10.0);
        let a = f.step_area("a", &[(1.0, 5.0), (2.0, 3.0)]).into_string();
        assert!(a.contains("d=\"M1.0,5.0H2.0V3.0V110.0H1.0Z\""), "{a}");
    }

    #[test]
    fn stacked_bars_are_one_path_per_series() {
        let f = Frame {
            top: 0.0,
            height: 100.0,
            max: 10.0,
        };
        let rows: Vec<Vec<i64>> = (0..2000).map(|i| vec![i % 5, 3, 0]).collect();
        let cols: Vec<&[i64]> = rows.iter().map(Vec::as_slice).collect();
        let m = stacked_bars(&f, &cols, 3, &["#000", "#111", "#222"]).into_string();
        assert_eq!(m.matches("<path").count(), 2, "empty series draw nothing");
    }
}
