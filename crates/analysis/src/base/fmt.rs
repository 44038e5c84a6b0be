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

/// The most characters of a name in a text table.
pub const NAME_WIDTH: usize = 100;

/// A name as a text table shows it: when longer than `width` characters, a C++ kernel's
/// parameter list as `(…)`, then at most `width` characters (the rest as `…`); and whether it
/// was shortened (the table then says where the whole name is).
pub fn short_name(name: &str, width: usize) -> (String, bool) {
    let mut s = name.to_string();
    if s.chars().count() > width && s.ends_with(')') {
        // The parameter list: from the `(` that closes at the end.
        let mut depth = 0usize;
        let mut open = None;
        for (i, c) in s.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        open = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        // A parameter list follows the function's name at once (not `Memcpy HtoD (…)`).
        let follows_name = |i: usize| s[..i].ends_with(|c: char| !c.is_whitespace());
        if let Some(i) = open.filter(|&i| i > 0 && follows_name(i)) {
            s.truncate(i);
            s.push_str("(…)");
        }
    }
    if s.chars().count() > width {
        s = s.chars().take(width.saturating_sub(1)).collect();
        s.push('…');
    }
    let cut = s != name;
    (s, cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_kernel_names_lose_their_parameter_lists_first() {
        // Names as the sampled PyTorch traces hold them.
        let cat = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)";
        assert_eq!(
            short_name(cat, NAME_WIDTH),
            (
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(…)".to_string(),
                true
            )
        );
        // Short names stay whole, parameter lists and all.
        for n in [
            "ampere_sgemm_128x64_nn",
            "Memcpy HtoD (Pinned -> Device)",
            "permute_pooled_embs_kernel<float>(float const*, long const*, long)",
        ] {
            assert_eq!(short_name(n, NAME_WIDTH), (n.to_string(), false));
        }
        // A long name whose parentheses follow a space is not a function's: cut at the width.
        let spaced = format!("{} (Pinned -> Device)", "m".repeat(100));
        let (s, cut) = short_name(&spaced, NAME_WIDTH);
        assert!(cut && !s.contains('(') && s.chars().count() == NAME_WIDTH);
        // Longer than the width without its parameter list: cut there too, and said to be.
        let long = format!("{}<c10::Half>(int)", "k".repeat(120));
        let (s, cut) = short_name(&long, NAME_WIDTH);
        assert!(cut);
        assert_eq!(s.chars().count(), NAME_WIDTH);
        assert!(s.ends_with('…'));
    }
}
