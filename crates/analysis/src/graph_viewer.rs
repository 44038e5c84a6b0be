//! The graph viewer (in progress).
