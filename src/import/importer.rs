//! The one shape of every importer: which tool's file it reads (by content, by name, the files
//! that go with a result), and its reading into records checked by the tool's rows. One importer
//! a tool, in the tool's own file (`src/import/<tool>.rs`); [`IMPORTERS`] lists them in the order
//! detection asks them.

use super::*;

/// One tool's importer.
pub trait Importer: Sync {
    /// The format it reads.
    fn format(&self) -> Format;
    /// Whether a file's content is this tool's: its own marks, as its writer puts them.
    fn looks_like(&self, src: &Source) -> bool;
    /// Whether a file of this (lower-case) name is one this tool writes, for a file whose content
    /// says nothing (empty, cut short, not text).
    fn writes_name(&self, _name: &str) -> bool {
        false
    }
    /// Whether a file of this (lower-case) name is read with this tool's results, though its
    /// content alone says no tool's.
    fn goes_with(&self, _name: &str) -> bool {
        false
    }
    /// Reads the sources (their roles set) into what the tool's rows check; `unread` are the files
    /// set aside as unreadable.
    fn import(&self, sources: &mut [Source], unread: &[Unreadable]) -> Result<Imported, Fatal>;
}

/// Every importer, in the order detection asks them: ML.ENERGY's first (its results.json is a
/// vLLM result grown energy figures, named as lm-eval's), vLLM's last (it names its results as
/// the user likes, so only its content tells).
pub const IMPORTERS: &[&dyn Importer] = &[
    &ml_energy::Reader,
    &endpoints::Reader,
    &aiperf::Reader,
    &guidellm::Reader,
    &lm_eval::Reader,
    &loadgen::Reader,
    &llama_bench::Reader,
    &llama_server::Reader,
    &vllm::Reader,
];

/// The importer of a format.
pub fn importer(format: Format) -> &'static dyn Importer {
    *IMPORTERS
        .iter()
        .find(|i| i.format() == format)
        .expect("every format has its importer (a test holds this)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_importer() {
        for f in <Format as clap::ValueEnum>::value_variants() {
            let n = IMPORTERS.iter().filter(|i| i.format() == *f).count();
            assert_eq!(n, 1, "{}", f.name());
        }
    }
}
