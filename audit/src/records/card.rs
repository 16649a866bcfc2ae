//! The setup card: hardware, engine, NCCL, checkpoint, the exact command per rank, sampling.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The setup card of a page.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Card {
    /// The machines.
    pub hardware: Hardware,
    /// The engine that served the model.
    pub engine: Engine,
    /// The NCCL library the ranks loaded, if any.
    #[serde(default)]
    pub nccl: Option<Nccl>,
    /// The checkpoint served.
    pub checkpoint: Checkpoint,
    /// A recipe the setup follows (repository and commit), if any.
    #[serde(default)]
    pub recipe: Option<SourceRef>,
    /// Number of ranks.
    pub ranks: u32,
    /// The exact command of each rank (argv and env; never a shell string).
    pub commands: Vec<RankCommand>,
    /// Deviations from the stock setup, in words.
    #[serde(default)]
    pub deviations: Vec<String>,
    /// Sampling: the server's defaults and what the measuring tool sends.
    pub sampling: Sampling,
    /// Lines of documents the page cites, with the commit they were read at.
    #[serde(default)]
    pub citations: Vec<Citation>,
    /// When the measurement began, RFC 3339.
    pub measured: String,
}

/// The machines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hardware {
    /// The description as the page gives it.
    pub description: String,
    /// The boxes, one per rank.
    pub boxes: Vec<BoxInfo>,
    /// The link between boxes.
    #[serde(default)]
    pub link: Option<String>,
    /// GPU driver version.
    #[serde(default)]
    pub driver: Option<String>,
    /// Kernel version.
    #[serde(default)]
    pub kernel: Option<String>,
    /// GPU clock cap in MHz.
    #[serde(default)]
    pub gpu_clock_mhz: Option<u32>,
    /// Accelerator model (`GB10`, `cpu`, ...).
    #[serde(default)]
    pub accelerator: Option<String>,
}

/// One box.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoxInfo {
    /// Name used across the bundle (`box-3`, `rank0`).
    pub name: String,
    /// Product name.
    #[serde(default)]
    pub model: Option<String>,
    /// The rank it runs.
    #[serde(default)]
    pub rank: Option<u32>,
    /// CPU cores the box offers the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// Main memory in GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gib: Option<f64>,
    /// The instruction sets of the CPU that engines choose kernels by (`avx2`, `fma`,
    /// `avx512f`, `avx512_vnni`, ...), as `/proc/cpuinfo` names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isa: Option<Vec<String>>,
}

/// The engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Engine {
    /// Engine name.
    pub name: String,
    /// Version as released.
    #[serde(default)]
    pub version: Option<String>,
    /// Source repository.
    #[serde(default)]
    pub repo: Option<String>,
    /// Commit of the source.
    #[serde(default)]
    pub commit: Option<String>,
    /// The release package.
    #[serde(default)]
    pub package: Option<Package>,
    /// The executable inside the package.
    #[serde(default)]
    pub binary: Option<Binary>,
    /// When the package was published, RFC 3339.
    #[serde(default)]
    pub published: Option<String>,
    /// Patches applied on top, if any.
    #[serde(default)]
    pub patches: Option<u32>,
}

/// A release package.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Package {
    /// File name.
    pub file: String,
    /// sha256: full (64 hex digits) or the prefix the page shows (at least 8).
    pub sha256: String,
    /// Where the digest came from.
    #[serde(default)]
    pub sha256_source: Option<String>,
}

/// The executable inside a package.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Binary {
    /// Path of the member inside the package.
    pub path: String,
    /// sha256, full or a prefix of at least 8 hex digits.
    pub sha256: String,
}

/// The NCCL library.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Nccl {
    /// Version, dotted (`2.30.7`).
    pub version: String,
    /// File name of the library.
    pub file: String,
    /// Where it came from.
    #[serde(default)]
    pub source: Option<String>,
    /// Digest per box (or rank).
    pub per_box: Vec<BoxDigest>,
}

/// A digest on one box.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoxDigest {
    /// Box name.
    #[serde(rename = "box")]
    pub box_name: String,
    /// sha256, full or a prefix of at least 8 hex digits.
    pub sha256: String,
}

/// The checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Repository (`owner/name`).
    pub repo: String,
    /// The revision the card pins.
    pub revision: String,
    /// The revision actually present on the boxes, when it differs from the pin.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// Number of weight shards.
    #[serde(default)]
    pub shards: Option<u32>,
    /// The revision file inside the folder.
    #[serde(default)]
    pub revision_file: Option<RevisionFile>,
    /// The files of the checkpoint with their digests, when recorded.
    #[serde(default)]
    pub files: Vec<CheckpointFile>,
    /// A package that ships the checkpoint (for example a PyPI package), when there is one.
    #[serde(default)]
    pub package: Option<String>,
}

/// The file inside a checkpoint folder that names its revision.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RevisionFile {
    /// Path inside the folder.
    pub path: String,
    /// What it says.
    pub content: String,
    /// Who wrote it: `download` (the hub client) or `hand`.
    pub written_by: String,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckpointFile {
    /// Path inside the folder.
    pub path: String,
    /// sha256 (64 hex digits).
    pub sha256: String,
}

/// A repository at a commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceRef {
    /// Repository (`owner/name`).
    pub repo: String,
    /// The commit that ran.
    pub commit: String,
    /// Other commits with the same tree (after a history rewrite, say).
    #[serde(default)]
    pub same_tree: Vec<String>,
}

/// The command one rank ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankCommand {
    /// The rank.
    pub rank: u32,
    /// The box it ran on.
    #[serde(rename = "box", default)]
    pub box_name: Option<String>,
    /// Arguments, the executable first. `<...>` marks a placeholder the page wrote.
    pub argv: Vec<String>,
    /// Environment set for the process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Sampling.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sampling {
    /// The server's defaults (for requests without sampling fields).
    pub defaults: BTreeMap<String, f64>,
    /// Where the defaults come from.
    pub defaults_source: String,
    /// What the measuring tool sends with every request.
    #[serde(default)]
    pub sent: BTreeMap<String, f64>,
}

/// A cited line range of a document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Citation {
    /// Repository of the document.
    pub repo: String,
    /// Path of the document.
    pub path: String,
    /// Line or line range as cited (`160`, `73-79`).
    pub lines: String,
    /// The commit whose line numbers these are.
    pub commit: String,
    /// What the citation supports.
    pub supports: String,
}
