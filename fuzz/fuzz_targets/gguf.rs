//! The engine's GGUF reader: any bytes as a model file (header, metadata, tensor table).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rigaudit_engine::gguf::Gguf::parse(data.to_vec());
});
