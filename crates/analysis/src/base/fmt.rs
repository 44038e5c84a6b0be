//! Formatting every view shares: CSV fields, HTML escaping, times and byte sizes.

/// Quotes a CSV field when needed (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Formats picoseconds for people: `12.3 ms`, `450 µs`, `3.20 s`.
pub fn fmt_ps(ps: i64) -> String {
    let v = ps as f64;
    let (div, unit) = if ps.unsigned_abs() >= 1_000_000_000_000 {
        (1e12, "s")
    } else if ps.unsigned_abs() >= 1_000_000_000 {
        (1e9, "ms")
    } else if ps.unsigned_abs() >= 1_000_000 {
        (1e6, "µs")
    } else if ps.unsigned_abs() >= 1_000 {
        (1e3, "ns")
    } else {
        (1.0, "ps")
    };
    let x = v / div;
    if x.abs() >= 100.0 {
        format!("{x:.0} {unit}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1} {unit}")
    } else {
        format!("{x:.2} {unit}")
    }
}

/// Bytes as GiB / MiB / KiB / B, whichever reads best.
pub fn fmt_bytes(b: i64) -> String {
    let a = b.unsigned_abs() as f64;
    let sign = if b < 0 { "-" } else { "" };
    if a >= (1u64 << 30) as f64 {
        format!("{sign}{:.2} GiB", a / (1u64 << 30) as f64)
    } else if a >= (1u64 << 20) as f64 {
        format!("{sign}{:.2} MiB", a / (1u64 << 20) as f64)
    } else if a >= 1024.0 {
        format!("{sign}{:.1} KiB", a / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// Escapes text for HTML/SVG element content and attribute values (also used by the server).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}
