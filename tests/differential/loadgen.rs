//! Differential tests of loadgen (see main.rs).
