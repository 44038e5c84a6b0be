//! The `xlens` binary: the command line of the `xlens` library.

#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
static ALLOC: xlens::alloc::HugeAlloc = xlens::alloc::HugeAlloc;

/// Only to measure the process allocator against mimalloc (the `mimalloc` feature).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    xlens::main_from(std::env::args_os());
}
