//! The flags that say where the card's boxes are and how ssh reaches them (`--box`,
//! `--box-file`, `--ssh-option`, `--ssh-config`), under which the policy file's `[boxes]` and
//! `[ssh]` lie.

use super::boxmap::PolicyBoxes;
use super::target::{parse_box, Target};
use super::words::quote;
use crate::fatal::{fatal, Fatal};
use crate::input::shown;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where the card's boxes are and how ssh reaches them (`replay`, `audit`, `rehash`).
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "Boxes and SSH")]
pub struct SshArgs {
    /// Maps the card's box NAME to a machine reached over ssh: replay runs the ranks the card
    /// places on that box there, rehash reads a `--root NAME=DIR` there (`--box
    /// pgx=auditor@spark-b`, `--box pgx=spark-b:2222`). Repeatable; a box not mapped is here.
    #[arg(long = "box", value_name = "NAME=[USER@]HOST[:PORT]")]
    pub boxes: Vec<String>,
    /// A file of `NAME=[USER@]HOST[:PORT]` lines (`#` starts a comment), read as `--box`es; a
    /// `--box` on the command line wins over the file's line for the same box.
    #[arg(long = "box-file", value_name = "FILE")]
    pub box_file: Option<PathBuf>,
    /// An option for every ssh connection to a box, passed as `-o KEY=VALUE`. Repeatable.
    #[arg(long = "ssh-option", value_name = "KEY=VALUE")]
    pub ssh_options: Vec<String>,
    /// The ssh client configuration file to use (`ssh -F FILE`).
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// The policy file's `[boxes]` and `[ssh]` (`--policy`), under the flags above.
    #[arg(skip)]
    pub policy: Option<PolicyBoxes>,
}

/// The most a `--box-file` may hold.
const BOX_FILE_MAX: u64 = 64 * 1024;

/// One box mapping and where it was given.
#[derive(Debug, Clone)]
pub struct Mapped {
    /// Where the box is.
    pub target: Target,
    /// `--box SPEC`, `FILE:LINE` of a `--box-file`, or `FILE: at /boxes/NAME` of the policy.
    pub from: String,
}

impl SshArgs {
    /// Every box mapping in the order they apply: the policy file's, the `--box-file` lines, the
    /// `--box`es (a later one wins).
    pub fn mapped(&self) -> Result<Vec<Mapped>, Fatal> {
        let mut v = Vec::new();
        if let Some(p) = &self.policy {
            v.extend(p.boxes.iter().map(|(t, ptr)| Mapped {
                target: t.clone(),
                from: format!("{}: at {ptr}", p.file),
            }));
        }
        if let Some(f) = &self.box_file {
            let text = crate::input::read_text(f, BOX_FILE_MAX, "box file")?;
            for (i, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or_default().trim();
                if line.is_empty() {
                    continue;
                }
                let from = format!("{}:{}", f.display(), i + 1);
                let target = parse_box(line).map_err(|e| fatal(format!("{from}: {}", e.0)))?;
                v.push(Mapped { target, from });
            }
        }
        for b in &self.boxes {
            v.push(Mapped {
                target: parse_box(b)?,
                from: format!("--box {}", shown(b)),
            });
        }
        Ok(v)
    }

    /// The mapped boxes by name (a later mapping wins), and a note for each mapping replaced.
    pub fn resolved(&self) -> Result<(BTreeMap<String, Mapped>, Vec<String>), Fatal> {
        let mut by_name: BTreeMap<String, Mapped> = BTreeMap::new();
        let mut notes = Vec::new();
        for m in self.mapped()? {
            let name = m.target.box_name.clone();
            if let Some(old) = by_name.insert(name.clone(), m.clone()) {
                notes.push(format!(
                    "box {}: {} ({}) wins over {} ({})",
                    shown(&name),
                    m.from,
                    m.target,
                    old.from,
                    old.target
                ));
            }
        }
        Ok((by_name, notes))
    }

    /// The mapped boxes by name (a later mapping wins).
    pub fn targets(&self) -> Result<BTreeMap<String, Target>, Fatal> {
        let (by_name, _) = self.resolved()?;
        Ok(by_name.into_iter().map(|(k, m)| (k, m.target)).collect())
    }

    /// Refuses a mapping of a box the card does not name, saying where it was given.
    pub fn check_names(&self, known: &[String]) -> Result<(), Fatal> {
        let (by_name, _) = self.resolved()?;
        match by_name
            .values()
            .find(|m| !known.contains(&m.target.box_name))
        {
            Some(m) => Err(fatal(format!(
                "{}: the card names no box {}; its boxes: {}",
                m.from,
                quote(&m.target.box_name),
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }

    /// What the ssh flags replace of the policy file's `[ssh]`, one note each.
    pub fn overrides(&self) -> Vec<String> {
        let Some(p) = &self.policy else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        if let (Some(flag), Some(file)) = (&self.ssh_config, &p.config) {
            notes.push(format!(
                "--ssh-config {} wins over {}: at /ssh/config ({})",
                flag.display(),
                p.file,
                file.display()
            ));
        }
        let key = |o: &str| o.split('=').next().unwrap_or_default().to_ascii_lowercase();
        for (i, o) in p.options.iter().enumerate() {
            if let Some(flag) = self.ssh_options.iter().find(|f| key(f) == key(o)) {
                notes.push(format!(
                    "--ssh-option {} wins over {}: at /ssh/options/{i} ({})",
                    shown(flag),
                    p.file,
                    shown(o)
                ));
            }
        }
        notes
    }
}
