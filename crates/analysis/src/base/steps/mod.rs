//! Steps: the step annotations a profile carries, a step's row and categories, XProf's step
//! grouping and per-step breakdown, op events binned by step, and which annotations mark a
//! loop's data stage.

pub mod annotations;
pub mod input_marks;
pub mod step_db;
pub mod step_ops;
pub mod step_rows;
