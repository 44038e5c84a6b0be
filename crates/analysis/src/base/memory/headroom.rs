//! The headroom answer: how the peak memory of a program compares with the device's memory, when
//! the profile says what that memory is, stated plainly ("peak 12.1 GiB of 32 GiB; batch could grow
//! ~2.5× if memory scales linearly").
//!
//! * **Peak**: the largest HLO module peak of the memory viewer (device memory, memory space 0),
//!   i.e. XLA's own buffer assignment for one device; else the largest allocator peak of the memory
//!   profile (runtime allocator events).
//! * **Capacity**: the device plane's `memory_size` stat (GPU); else what the allocators report at
//!   their peak as in use plus available (XProf's memory capacity; TPU runtimes write it). Without
//!   either there is no answer rather than a guess.

use xlens_model::Profile;

use crate::base::device::device_info;
use crate::base::fmt::fmt_bytes;
use crate::base::memory::allocators::{allocator_capacity_bytes, MemoryProfile};
use crate::base::memory::heap::MemoryViewer;
use crate::base::memory::profile::memory_profile;

pub use crate::base::memory::heap::Headroom;

/// The device memory per device the profile states, with where it comes from; `mp` is the host's
/// memory profile when already computed (it is computed here otherwise, only if needed).
pub fn device_memory_capacity(p: &Profile, mp: Option<&MemoryProfile>) -> Option<(i64, String)> {
    let d = device_info(p);
    if let Some(m) = d.memory_bytes.filter(|&m| m > 0) {
        return Some((
            i64::try_from(m).unwrap_or(i64::MAX),
            format!("{} {}: device memory_size stat", d.kind.as_str(), d.model),
        ));
    }
    let computed;
    let mp = match mp {
        Some(m) => m,
        None => {
            computed = memory_profile(p);
            &computed
        }
    };
    allocator_capacity_bytes(mp).map(|c| {
        (
            c,
            "allocator events: bytes in use + available at the allocator's peak".to_string(),
        )
    })
}

/// The headroom of `peak_bytes` on a device of `capacity` bytes.
pub fn headroom_of(
    peak_bytes: i64,
    peak_source: &str,
    capacity_bytes: i64,
    capacity_source: &str,
) -> Option<Headroom> {
    if peak_bytes <= 0 || capacity_bytes <= 0 {
        return None;
    }
    let used = peak_bytes as f64 / capacity_bytes as f64;
    let growth = capacity_bytes as f64 / peak_bytes as f64;
    let tail = if peak_bytes > capacity_bytes {
        "the peak exceeds device memory: expect out-of-memory unless the batch shrinks".to_string()
    } else if growth < 1.1 {
        "almost no headroom: the batch cannot grow".to_string()
    } else {
        format!("batch could grow ~{growth:.1}× if memory scales linearly")
    };
    Some(Headroom {
        peak_bytes,
        peak_source: peak_source.to_string(),
        capacity_bytes,
        capacity_source: capacity_source.to_string(),
        used_fraction: used,
        growth_factor: growth,
        statement: format!(
            "peak {} of {} ({:.0}% used); {tail}",
            fmt_gib(peak_bytes),
            fmt_gib(capacity_bytes),
            used * 100.0
        ),
    })
}

/// GiB with one decimal (whole numbers without), else [`fmt_bytes`].
fn fmt_gib(b: i64) -> String {
    let g = b as f64 / (1u64 << 30) as f64;
    if g < 1.0 {
        return fmt_bytes(b);
    }
    let r = (g * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0} GiB")
    } else {
        format!("{r:.1} GiB")
    }
}

/// The headroom answer for one host profile: the largest program peak (memory viewer, device
/// memory) or else the largest allocator peak, against the stated device memory. `None` when the
/// profile states no capacity or has no peak.
/// `viewer` makes the memory viewer's modules (memory space 0), asked for only when the profile
/// states a capacity.
pub fn memory_headroom(
    p: &Profile,
    mp: &MemoryProfile,
    viewer: impl FnOnce() -> MemoryViewer,
) -> Option<Headroom> {
    let (cap, cap_src) = device_memory_capacity(p, Some(mp))?;
    let mv = viewer();
    if let Some(m) = mv
        .modules
        .iter()
        .filter(|m| m.error.is_none())
        .max_by_key(|m| m.peak_heap_bytes)
    {
        if m.peak_heap_bytes > 0 {
            return headroom_of(
                m.peak_heap_bytes,
                &format!("memory viewer: module {} (XLA buffer assignment)", m.name),
                cap,
                &cap_src,
            );
        }
    }
    let a = mp.allocators.iter().max_by_key(|a| a.peak.bytes_in_use)?;
    headroom_of(
        a.peak.bytes_in_use,
        &format!("memory profile: allocator {} peak in use", a.name),
        cap,
        &cap_src,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_reads_plainly() {
        let g = 1i64 << 30;
        let h = headroom_of(12 * g + g / 10, "x", 32 * g, "y").unwrap();
        assert_eq!(
            h.statement,
            "peak 12.1 GiB of 32 GiB (38% used); batch could grow ~2.6× if memory scales linearly"
        );
        let h = headroom_of(33 * g, "x", 32 * g, "y").unwrap();
        assert!(h.statement.contains("exceeds"), "{}", h.statement);
        assert!(headroom_of(0, "x", 1, "y").is_none());
    }
}
