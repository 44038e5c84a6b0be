//! The events of a PyTorch (Kineto) trace as Holistic Trace Analysis (HTA 0.5.0) sees them, for
//! the analyses xlens reproduces from it (temporal breakdown, communication/computation overlap):
//! its rules written down in `tests/hta/README.md`, read from HTA's source.
//!
//! * An event counts when it has a category (`cat` stat, which the Chrome importer writes) other
//!   than `Trace`. Its stream is its integer `stream` arg, else -1; its correlation its integer
//!   `correlation` arg, else -1. A "GPU event" is any event with a stream (whatever its category).
//! * When any time is a fraction of a microsecond, starts are rounded up and ends down to whole
//!   microseconds (HTA's nanosecond rounding).
//! * With two or more `ProfilerStep` names, the last step is left out: CPU events from the last
//!   step's start on are dropped, and GPU kernels are kept only when a kept CPU event has their
//!   correlation.
//! * Kernel types by name: communication `nccl…Kernel`; memory `Memcpy…`, `Memset…`, `dma…`;
//!   computation whatever is not `nccl…Kernel`, does not contain `Memcpy` or `Sync` and does not
//!   start with `Memset`; other the rest.

use xlens_model::{Profile, StatValue, StrId};

/// One event as HTA keeps it (times in picoseconds on the profile's axis, after HTA's rounding).
#[derive(Debug, Clone, Copy)]
pub struct HtaEvent {
    pub start_ps: i64,
    pub end_ps: i64,
    pub name: StrId,
    pub cat: StrId,
    pub stream: i64,
    pub correlation: i64,
}

/// HTA's kernel types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelType {
    Communication,
    Memory,
    Computation,
    Other,
}

/// HTA's classification of a kernel by its name.
pub fn kernel_type(name: &str) -> KernelType {
    let nccl = name.starts_with("nccl") && name[4..].contains("Kernel");
    if nccl {
        KernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelType::Memory
    } else if name.contains("Memcpy") || name.starts_with("Memset") || name.contains("Sync") {
        KernelType::Other
    } else {
        KernelType::Computation
    }
}

/// A host's events as HTA loads them.
#[derive(Debug, Default)]
pub struct HtaTrace {
    /// The rank (`distributedInfo`), else 0 as HTA assumes.
    pub rank: i64,
    pub events: Vec<HtaEvent>,
    /// Whether the last profiler step was left out (two or more `ProfilerStep` names).
    pub last_step_dropped: bool,
    /// Whether times were rounded to whole microseconds.
    pub rounded: bool,
    /// What HTA's rules ask of each name, answered once per name.
    pub names: NameKinds,
}

impl HtaTrace {
    /// The GPU events (those with a stream).
    pub fn gpu(&self) -> impl Iterator<Item = &HtaEvent> {
        self.events.iter().filter(|e| e.stream != -1)
    }

    /// [`kernel_type`] of an event's name.
    pub fn kernel_type(&self, e: &HtaEvent) -> KernelType {
        self.names.kernel_type(e.name)
    }
}

/// [`kernel_type`], and whether a name is a profiler step's or a device-wide sync's, for every
/// name of a trace's events: a trace has far fewer names than events, and a lookup here is an
/// index where the rules compare strings.
#[derive(Debug, Default)]
pub struct NameKinds {
    /// By name id: [`KNOWN`] once filled, then the bits below and the kernel type.
    kinds: Vec<u8>,
}

const KNOWN: u8 = 1;
const STEP: u8 = 2;
const SYNC: u8 = 4;
/// The kernel type's place in a kind: two bits.
const TYPE_SHIFT: u8 = 3;

impl NameKinds {
    /// The kinds of the names of `events`.
    pub fn of(p: &Profile, events: &[HtaEvent]) -> NameKinds {
        let mut kinds = vec![0u8; p.strings.len()];
        for e in events {
            let Some(k) = kinds.get_mut(e.name.0 as usize) else {
                continue;
            };
            if *k != 0 {
                continue;
            }
            let name = p.str(e.name);
            let ty = match kernel_type(name) {
                KernelType::Communication => 0,
                KernelType::Memory => 1,
                KernelType::Computation => 2,
                KernelType::Other => 3,
            };
            *k = KNOWN
                | if name.contains("ProfilerStep") {
                    STEP
                } else {
                    0
                }
                | if matches!(name, "Event Sync" | "Context Sync") {
                    SYNC
                } else {
                    0
                }
                | ty << TYPE_SHIFT;
        }
        NameKinds { kinds }
    }

    /// The kind of `name`; `None` for a name not among the events it was made for.
    fn kind(&self, name: StrId) -> Option<u8> {
        self.kinds
            .get(name.0 as usize)
            .copied()
            .filter(|k| k & KNOWN != 0)
    }

    /// [`kernel_type`] of `name` (of an event it was made for; others count as computation, as
    /// an empty name does).
    pub fn kernel_type(&self, name: StrId) -> KernelType {
        match self.kind(name).map(|k| (k >> TYPE_SHIFT) & 3) {
            Some(0) => KernelType::Communication,
            Some(1) => KernelType::Memory,
            Some(3) => KernelType::Other,
            _ => KernelType::Computation,
        }
    }

    /// Whether `name` contains `ProfilerStep`.
    pub fn is_step(&self, name: StrId) -> bool {
        self.kind(name).is_some_and(|k| k & STEP != 0)
    }

    /// [`is_gpu_kernel`] of an event whose name it knows.
    pub fn is_gpu_kernel(&self, e: &HtaEvent) -> bool {
        (e.stream >= 0 && e.correlation >= 0) || self.kind(e.name).is_some_and(|k| k & SYNC != 0)
    }
}

/// One event with a `cat` stat, as HTA's loaders read it: start and duration (ps), name,
/// category, `stream` and `correlation` (-1 when absent).
pub type CatEvent = (i64, i64, StrId, StrId, i64, i64);

/// Every event with a `cat` stat other than `Trace`, in plane and line order: what HTA's
/// loaders keep from a Kineto trace (`TraceAnalysis` and `TraceDiff` alike).
pub fn categorized_events(p: &Profile) -> Vec<CatEvent> {
    let mut raw: Vec<CatEvent> = Vec::new();
    categorized_into(p, &mut raw, |e| e);
    raw
}

/// Appends `each` of every event [`categorized_events`] returns to `out`, in its order, room
/// made first for as many as there can be (the events of the lines that may have a `cat`): the
/// list is written once, where one grown by doubling writes twice as many fresh pages (each a
/// page fault, on a first answer).
fn categorized_into<T>(p: &Profile, out: &mut Vec<T>, mut each: impl FnMut(CatEvent) -> T) {
    let Some(cat_key) = p.key("cat") else {
        return;
    };
    let (stream_key, corr_key) = (p.key("stream"), p.key("correlation"));
    let trace_cat = p.strings.find("Trace");
    let lines = || {
        p.planes
            .iter()
            .flat_map(|plane| plane.lines.iter().map(move |line| (plane, line)))
            .filter(|(_, line)| line.events.may_have_stat(cat_key))
    };
    out.reserve_exact(lines().map(|(_, line)| line.events.len()).sum());
    for (plane, line) in lines() {
        let ev = &line.events;
        for i in 0..ev.len() {
            let (mut cat, mut stream, mut corr) = (None, -1, -1);
            ev.stats(i).select(
                |k| {
                    if k == cat_key {
                        Some(0u8)
                    } else if Some(k) == stream_key {
                        Some(1)
                    } else if Some(k) == corr_key {
                        Some(2)
                    } else {
                        None
                    }
                },
                |slot, v| match (slot, v) {
                    (0, StatValue::Str(s)) => cat = Some(s),
                    (1, StatValue::I64(n)) => stream = n,
                    (2, StatValue::I64(n)) => corr = n,
                    _ => {}
                },
            );
            let Some(cat) = cat else { continue };
            if Some(cat) == trace_cat {
                continue;
            }
            let name = plane
                .metadata_of(line, i)
                .map(|m| m.name)
                .unwrap_or_default();
            out.push(each((ev.start(i), ev.dur(i), name, cat, stream, corr)));
        }
    }
}

/// Loads a host's events by HTA's rules (see the module docs). Empty for profiles without `cat`
/// stats (XSpace files).
pub fn hta_trace(p: &Profile) -> HtaTrace {
    let mut out = HtaTrace {
        rank: rank(p).unwrap_or(0),
        ..HtaTrace::default()
    };
    // Times as the file writes them (less `baseTimeNanoseconds`), which HTA reads.
    let written = p.origin_ps - p.base_time_ps;
    let micros = Micros::of(written);
    // Read once into the list kept (times as read, the end as the start plus the duration),
    // then rounded in place where any time is not whole (rounding changes it).
    let (mut events, mut rounded) = (Vec::new(), false);
    categorized_into(
        p,
        &mut events,
        |(start, dur, name, cat, stream, correlation)| {
            rounded |= micros.round(start, 0, false) != start;
            HtaEvent {
                start_ps: start,
                end_ps: start.saturating_add(dur),
                name,
                cat,
                stream,
                correlation,
            }
        },
    );
    if rounded {
        for e in &mut events {
            let (start, dur) = (e.start_ps, e.end_ps.saturating_sub(e.start_ps));
            (e.start_ps, e.end_ps) = float_rounded(written, start, dur);
        }
    }
    out.rounded = rounded;
    out.events = events;
    out.names = NameKinds::of(p, &out.events);
    drop_last_step(&mut out);
    out
}

/// Times on a profile's axis rounded to whole microseconds since the epoch.
///
/// With `origin` some whole microseconds and `r` picoseconds past one, a time `x` after it is
/// `r + x` rounded to a multiple of 10^6, less `r`: i64 arithmetic, where an i128 division per
/// event was a tenth of the NCCL trace's breakdown (and `r`, an i128 remainder, is found once).
#[derive(Clone, Copy)]
struct Micros {
    origin: i128,
    r: i64,
}

impl Micros {
    const M: i64 = 1_000_000;

    fn of(origin: i128) -> Micros {
        Micros {
            origin,
            r: origin.rem_euclid(i128::from(Self::M)) as i64,
        }
    }

    /// `t + d` picoseconds after the origin (ps since the epoch), rounded up or down to a whole
    /// microsecond since the epoch, as picoseconds after the origin (saturated to i64).
    #[inline]
    fn round(self, t: i64, d: i64, up: bool) -> i64 {
        const M: i64 = Micros::M;
        let r = self.r;
        let fast = t
            .checked_add(d)
            .and_then(|t| t.checked_add(r))
            .and_then(|x| {
                let whole = x.div_euclid(M) + i64::from(up && x.rem_euclid(M) != 0);
                whole.checked_mul(M)?.checked_sub(r)
            });
        fast.unwrap_or_else(|| {
            // Near the ends of i64 (not a real trace): the same in i128.
            let origin = self.origin;
            let (a, m) = (origin + i128::from(t) + i128::from(d), i128::from(M));
            let whole = a.div_euclid(m) + i128::from(up && a.rem_euclid(m) != 0);
            let v = whole * m - origin;
            i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
        })
    }
}

/// HTA's nanosecond rounding of one event, with its arithmetic: the start and duration as the
/// f64 microseconds a JSON reader makes of their text (on the file's own axis, `written` ps),
/// the end their f64 sum, then the start rounded up and the end down to whole microseconds.
/// Times near today's epoch resolve only 0.25 µs as f64, so an end less than 0.125 µs below a
/// whole microsecond becomes that microsecond: rounding the exact times instead put a tenth of
/// the nanosecond-resolution events 1 µs off HTA.
fn float_rounded(written: i128, start: i64, dur: i64) -> (i64, i64) {
    let t = micros_f64(written + i128::from(start));
    let d = micros_f64(i128::from(dur));
    let back = |us: f64| -> i64 {
        let v = (us as i128) * 1_000_000 - written;
        i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
    };
    (back(t.ceil()), back((t + d).floor()))
}

/// `ps` picoseconds as the f64 microseconds a JSON reader makes of their text with six decimals
/// (`-12.000345`): the text written into a buffer on the stack and parsed (correctly rounded),
/// as [`micros_f64_by_format`] does through a formatted string, a heap allocation per time.
fn micros_f64(ps: i128) -> f64 {
    let a = ps.unsigned_abs();
    let Ok(mut w) = u64::try_from(a / 1_000_000) else {
        return micros_f64_by_format(ps);
    };
    let mut f = (a % 1_000_000) as u32;
    let mut buf = [0u8; 32];
    let mut n = buf.len();
    for _ in 0..6 {
        n -= 1;
        buf[n] = b'0' + (f % 10) as u8;
        f /= 10;
    }
    n -= 1;
    buf[n] = b'.';
    loop {
        n -= 1;
        buf[n] = b'0' + (w % 10) as u8;
        w /= 10;
        if w == 0 {
            break;
        }
    }
    if ps < 0 {
        n -= 1;
        buf[n] = b'-';
    }
    std::str::from_utf8(&buf[n..])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

/// [`micros_f64`] through a formatted string (times beyond u64 microseconds, and the tests).
fn micros_f64_by_format(ps: i128) -> f64 {
    let (w, f) = (ps.unsigned_abs() / 1_000_000, ps.unsigned_abs() % 1_000_000);
    let sign = if ps < 0 { "-" } else { "" };
    format!("{sign}{w}.{f:06}").parse().unwrap_or(f64::NAN)
}

#[cfg(test)]
fn to_micros(origin: i128, t: i64, d: i64, up: bool) -> i64 {
    Micros::of(origin).round(t, d, up)
}

/// The rank a trace states (`rank` stat of `/host:CPU`, from `distributedInfo`).
pub fn rank(p: &Profile) -> Option<i64> {
    let key = p.key("rank")?;
    p.plane("/host:CPU")?.stats().get(key)?.as_i64()
}

/// Whether HTA counts an event as running on the GPU (`GPUKernelFilter`): a stream and a
/// correlation, or a device-wide sync.
pub fn is_gpu_kernel(p: &Profile, e: &HtaEvent) -> bool {
    (e.stream >= 0 && e.correlation >= 0) || matches!(p.str(e.name), "Event Sync" | "Context Sync")
}

fn drop_last_step(t: &mut HtaTrace) {
    let kinds = &t.names;
    let is_step = |e: &HtaEvent| kinds.is_step(e.name);
    let mut names: Vec<StrId> = t
        .events
        .iter()
        .filter(|e| is_step(e))
        .map(|e| e.name)
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.len() < 2 {
        return;
    }
    let is_gpu = |e: &HtaEvent| kinds.is_gpu_kernel(e);
    let last_start = t
        .events
        .iter()
        .filter(|e| !is_gpu(e) && is_step(e))
        .map(|e| e.start_ps)
        .max();
    let Some(last_start) = last_start else {
        return;
    };
    t.last_step_dropped = true;
    let is_cpu_kept = |e: &HtaEvent| !is_gpu(e) && e.start_ps < last_start;
    // GPU kernels join the kept CPU events on correlation (an inner join: a kernel appears once
    // per CPU event with its correlation).
    let mut corr: Vec<i64> = t
        .events
        .iter()
        .filter(|e| is_cpu_kept(e))
        .map(|e| e.correlation)
        .collect();
    corr.sort_unstable();
    let mut gpu = Vec::with_capacity(t.events.iter().filter(|e| is_gpu(e)).count());
    for e in t.events.iter().filter(|e| is_gpu(e)) {
        let from = corr.partition_point(|&c| c < e.correlation);
        let n = corr[from..]
            .iter()
            .take_while(|&&c| c == e.correlation)
            .count();
        for _ in 0..n {
            gpu.push(*e);
        }
    }
    // The kept GPU kernels, then the kept CPU events, in their order: the CPU events kept in
    // place, the kernels put before them (no second list of every event).
    t.events.retain(is_cpu_kept);
    t.events.splice(0..0, gpu);
}

/// The union of intervals as sorted disjoint `(start, end)` pairs; touching intervals merge (as
/// HTA's `merge_kernel_intervals`).
pub fn union(mut iv: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(iv.len());
    for (a, b) in iv {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of disjoint intervals.
pub fn total(iv: &[(i64, i64)]) -> i64 {
    iv.iter()
        .map(|(a, b)| b.saturating_sub(*a))
        .fold(0, i64::saturating_add)
}

/// Length of the intersection of two sorted disjoint interval lists.
pub fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut sum) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            sum = i64::saturating_add(sum, hi.saturating_sub(lo));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_to_whole_microseconds_since_the_epoch() {
        // Origin 2.5 us: its t = 0 is 2.5 us, rounded up to 3 us, down to 2 us.
        assert_eq!(to_micros(2_500_000, 0, 0, true), 500_000);
        assert_eq!(to_micros(2_500_000, 0, 0, false), -500_000);
        // 3 us exactly stays.
        assert_eq!(to_micros(2_500_000, 400_000, 100_000, true), 500_000);
        assert_eq!(to_micros(2_500_000, 400_000, 100_000, false), 500_000);
        // -0.1 us since the epoch: up to 0, down to -1 us.
        assert_eq!(to_micros(2_500_000, -2_600_000, 0, true), -2_500_000);
        assert_eq!(to_micros(2_500_000, -2_600_000, 0, false), -3_500_000);
        // An epoch origin (1661203463029566.123 us): 0.877 us later is a whole microsecond.
        let epoch = 1_661_203_463_029_566_123_000;
        assert_eq!(to_micros(epoch, 877_000, 0, true), 877_000);
        assert_eq!(to_micros(epoch, 0, 877_001, false), 877_000);
        assert_eq!(to_micros(epoch, 0, 877_001, true), 1_877_000);
        // Near i64::MAX (origin 999,999 ps): up is past i64 and saturates; down is
        // 9223372036855000000 - 999999.
        let t = i64::MAX - 10;
        assert_eq!(to_micros(999_999, t, 0, true), i64::MAX);
        assert_eq!(to_micros(999_999, t, 0, false), 9_223_372_036_854_000_001);
    }

    #[test]
    fn microseconds_as_a_json_reader_reads_them() {
        // Epoch-scale times (where f64 resolves a quarter microsecond), small and negative
        // ones, and values beyond u64 microseconds.
        let mut x: i128 = 1_712_000_000_123_456_789_012;
        let mut seen = 0;
        for i in 0..20_000i128 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407)
                % 3_000_000_000_000_000_000_000;
            for v in [x, -x, x % 1_000_000_000, i, -i, x * 1_000_000_000_000] {
                assert_eq!(
                    micros_f64(v).to_bits(),
                    micros_f64_by_format(v).to_bits(),
                    "{v}"
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 120_000);
    }

    #[test]
    fn kernel_types_follow_htas_patterns() {
        assert_eq!(
            kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            KernelType::Communication
        );
        assert_eq!(
            kernel_type("ncclDevKernel_SendRecv"),
            KernelType::Communication
        );
        assert_eq!(
            kernel_type("Memcpy DtoD (Device -> Device)"),
            KernelType::Memory
        );
        assert_eq!(kernel_type("Memset (Device)"), KernelType::Memory);
        assert_eq!(kernel_type("dma_copy"), KernelType::Memory);
        assert_eq!(kernel_type("Stream Sync"), KernelType::Other);
        assert_eq!(kernel_type("Context Sync"), KernelType::Other);
        assert_eq!(kernel_type("fooMemcpyKernel"), KernelType::Other);
        assert_eq!(kernel_type("Stream Wait Event"), KernelType::Computation);
        assert_eq!(
            kernel_type("ampere_sgemm_128x128_tn"),
            KernelType::Computation
        );
        // `nccl` without `Kernel`: not communication, and computation unless another rule holds.
        assert_eq!(kernel_type("ncclAllReduce"), KernelType::Computation);
    }

    #[test]
    fn unions_merge_touching_intervals() {
        let u = union(vec![(5, 7), (0, 2), (2, 3), (6, 9), (10, 10)]);
        assert_eq!(u, vec![(0, 3), (5, 9), (10, 10)]);
        assert_eq!(total(&u), 7);
        assert_eq!(overlap(&u, &[(1, 6), (8, 20)]), 2 + 1 + 1);
    }
}
