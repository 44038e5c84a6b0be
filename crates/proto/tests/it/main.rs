//! xlens-proto's integration tests, one binary: each module is one subject.

mod decode;
