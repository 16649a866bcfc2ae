//! `rigaudit-engine`: a small CPU serving engine for llama-family GGUF models
//! with an OpenAI-compatible HTTP API, bundled so `rigaudit replay` can
//! re-measure a recorded setup on a fresh machine.

pub mod gguf;
pub mod kernels;
pub mod model;
pub mod pool;
pub mod tiled;
pub mod tokenizer;
pub mod engine;
pub mod server;
