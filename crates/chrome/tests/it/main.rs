//! xlens-chrome's integration tests, one binary: each module is one subject.

mod fixtures;
mod samples;
