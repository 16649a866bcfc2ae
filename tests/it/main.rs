//! rigaudit's integration tests: one binary (`cargo test --test it`), one module per subject, the
//! shared helpers in `common/`. Each module drives the built `rigaudit` binary as a user would.
//!
//! A test whose verdict depends on how fast the machine is sits in a `quiet` module of its file:
//! `scripts/test.sh` runs the rest of the suite first (`--skip ::quiet::`), then the `quiet` tests
//! alone, one at a time, so that nothing else in the suite loads the machine under them.

#[macro_use]
mod common;

mod ab;
mod attest;
mod audit;
mod ci;
mod coverage;
mod diff;
mod differential;
mod help;
mod hostile;
mod import;
mod lies;
mod llamacpp;
mod measure;
mod mistakes;
mod noise;
mod published;
mod rehash;
mod replay;
mod reports;
mod slurm;
mod ssh;
mod text_report;
mod tree;
mod url;
mod verify;
mod wheel;
