//! xlens's integration tests, one binary: each module is one subject.

mod browser;
mod buckets;
mod cli;
mod cloud;
mod export;
mod jax_interop;
mod many_hosts;
mod mcp;
mod python;
mod reruns;
mod serve_access;
mod skill;

/// A loopback port no one listens on now (for a server or emulator a test starts).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("its address").port()
}
