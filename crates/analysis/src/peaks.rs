//! Peak compute and memory bandwidth per device (in progress).
