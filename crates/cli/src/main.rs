//! The `xlens` binary: the command line of the `xlens` library.

#[global_allocator]
static ALLOC: xlens::alloc::HugeAlloc = xlens::alloc::HugeAlloc;

fn main() {
    xlens::main_from(std::env::args_os());
}
