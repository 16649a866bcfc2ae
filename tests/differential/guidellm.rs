//! Differential tests of guidellm (see main.rs).
