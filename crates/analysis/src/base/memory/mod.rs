//! Memory: XLA's buffer-assignment heap per module ([`heap`]), the allocator timeline
//! ([`allocators`]; [`profile`] picks XSpace allocator or PyTorch `[memory]` events), and the
//! peak against the device's memory ([`headroom`]).

pub mod allocators;
pub mod headroom;
pub mod heap;
pub mod profile;
