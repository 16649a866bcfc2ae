//! Differential tests of vllm (see main.rs).
