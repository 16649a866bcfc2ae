//! `rigaudit-engine`: a small serving engine for llama-family GGUF models
//! with an OpenAI-compatible HTTP API, on the CPU or an NVIDIA GPU (`cuda`),
//! bundled so `rigaudit replay` can re-measure a recorded setup on a fresh machine.
//!
//! Modules: [`gguf`] reads the model file, [`tokenizer`] builds a
//! `tokenizers` tokenizer from its metadata, [`kernels`] and [`tiled`] hold the
//! SIMD compute kernels (checked against scalar/f32 references), [`model`] is
//! the batched llama forward pass, [`pool`] the persistent thread pool,
//! [`engine`] the continuous-batching scheduler, [`server`] the HTTP API, [`shapes`] the
//! deliberate reply shapes `serve --reply-shapes` gives chosen requests, and [`synth`] makes
//! random-weights models from a seed.

// Numeric kernels index several arrays in lock-step and take many shape
// arguments; these lints would obscure them.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

pub mod cli;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod engine;
pub mod gguf;
pub mod kernels;
pub mod model;
pub mod pool;
pub mod reference;
pub mod server;
pub mod shapes;
pub mod synth;
pub mod tiled;
pub mod tokenizer;
