//! A host's memory profile, from whichever events it has: XSpace allocator events
//! ([`crate::base::memory::allocators`]), else PyTorch `[memory]` events ([`crate::base::pytorch::torch_memory`]).

use xlens_model::Profile;

use crate::base::memory::allocators::{xspace_memory_profile, MemoryProfile};
use crate::base::pytorch::torch_memory::torch_memory_profile;

/// The memory profile of one host: from XSpace allocator events, else from PyTorch `[memory]`
/// events.
pub fn memory_profile(p: &Profile) -> MemoryProfile {
    let mp = xspace_memory_profile(p);
    if mp.allocators.is_empty() {
        if let Some(t) = torch_memory_profile(p) {
            return t;
        }
    }
    mp
}
