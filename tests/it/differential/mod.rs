//! Differential tests (issue 35): the files each tool wrote against the bundled engine, at the
//! versions and options `fixtures/differential/pins.toml` pins, read back by rigaudit, which must
//! recompute every printed figure as that version did and raise nothing the tool's own code
//! contradicts. One module per tool; the fixtures are in `fixtures/differential/<tool>/`.

use crate::common;

mod aiperf;
mod guidellm;
mod llama_bench;
mod llama_server;
mod lm_eval;
mod loadgen;
mod ml_energy;
mod mlperf_endpoints;
mod vllm;
