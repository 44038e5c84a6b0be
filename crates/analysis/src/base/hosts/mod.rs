//! Many hosts of one run: per-host step figures and ops across hosts ([`across`]), clock
//! alignment ([`align`]), and one host reduced to a summary ([`summary`]).

pub mod across;
pub mod align;
pub mod summary;
