//! Typed records of every file kind a bundle holds.
//!
//! Each submodule mirrors one JSON Schema in `schemas/`; the schema is the contract, these types are
//! how the checks read a file that already passed it.

pub mod card;
pub mod fit;
pub mod loaded;
pub mod manifest;
pub mod quality;
pub mod speed;

pub use card::Card;
pub use fit::FitResult;
pub use loaded::{LoadedObject, LoadedRank};
pub use manifest::{FileEntry, FileKind, Manifest};
pub use quality::{Answer, AnswerTally, AnswerView, QualityContract, QualitySummary};
pub use speed::{SpeedContract, SpeedRequest, SpeedResult};
