//! xlens-server's integration tests, one binary: each module is one subject.

mod access;
mod capture;
mod common;
mod diff_pages;
mod http;
mod memory_budget;
mod memory_pages;
mod pages;
mod params;
