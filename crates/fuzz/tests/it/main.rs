//! xlens-fuzz's integration tests, one binary: each module is one subject.

mod regressions;
mod smoke;
