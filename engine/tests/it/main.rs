//! The engine's integration tests: one binary (`cargo test -p rigaudit-engine --test it`), one
//! module per subject, the shared helpers (the model, a started engine, a small HTTP client) in
//! `common/`.

mod common;

mod fidelity;
mod gpu;
mod logprobs;
mod model;
mod nccl;
mod server;
mod shapes;
mod synth;
mod tensor_parallel;
