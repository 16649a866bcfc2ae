//! The CLI's readers, compiled here from their own source files so the fuzz targets run the very
//! code `rigaudit` runs (the CLI is a binary crate; these modules need nothing else of it).
#![allow(dead_code, unused_imports)]

#[path = "../../src/answers.rs"]
pub mod answers;
#[path = "../../src/bundle.rs"]
pub mod bundle;
#[path = "../../src/digest.rs"]
pub mod digest;
#[path = "../../src/fatal.rs"]
pub mod fatal;
#[path = "../../src/host.rs"]
pub mod host;
#[path = "../../src/input.rs"]
pub mod input;
#[path = "../../src/schemas.rs"]
pub mod schemas;
#[path = "../../src/rehash/archive.rs"]
pub mod archive;
#[path = "../../src/rehash/hash.rs"]
pub mod hash;
#[path = "../../src/measure/sse.rs"]
pub mod sse;
