//! A gate's policy (`--policy FILE`), read and checked once per run, then handed to what it tunes:
//! replay's, diff's and noise's decision rule, diff's setup subjects, the boxes and ssh options,
//! and the report it judges (`Report::apply_policy`).

use crate::fatal::{fatal, Fatal};
use crate::ssh::boxmap::PolicyBoxes;
use crate::ssh::SshArgs;
use crate::{diff, input, noise, replay, schemas};
use rigaudit_audit::policy::Policy;
use std::path::Path;

/// A policy file, read and checked.
pub struct Loaded {
    /// What the file says.
    pub rules: Policy,
    /// Its `[boxes]` and `[ssh]`, checked as the flags are.
    pub boxes: PolicyBoxes,
}

/// Reads `--policy`: a TOML file of at most a few MiB that follows `schemas/policy.schema.json`,
/// whose check ids are in the catalogue and whose boxes and ssh options are well formed.
pub fn load(path: Option<&Path>) -> Result<Option<Loaded>, Fatal> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = input::read_text(path, input::CONTRACT_MAX, "policy")?;
    let value: serde_json::Value = toml::from_str(&text)
        .map_err(|e| fatal(format!("{}: not a policy: {e}", path.display())))?;
    schemas::follows(schemas::policy(), &value).map_err(|list| {
        fatal(format!(
            "{}: does not follow the policy schema (rigaudit schema policy): {list}",
            path.display()
        ))
    })?;
    let mut rules: Policy = serde_json::from_value(value)
        .map_err(|e| fatal(format!("{}: not a policy: {e}", path.display())))?;
    let unknown = rules.unknown_checks();
    if !unknown.is_empty() {
        return Err(fatal(format!(
            "{}: no such check in the catalogue: {} (rigaudit checks lists them)",
            path.display(),
            unknown.join(", ")
        )));
    }
    let problems = rules.decide.problems();
    if !problems.is_empty() {
        return Err(fatal(format!(
            "{}: at /decide: the decision rule cannot work: {}",
            path.display(),
            problems.join("; ")
        )));
    }
    rules.file = path.display().to_string();
    let boxes = PolicyBoxes::from_policy(&rules)?;
    Ok(Some(Loaded { rules, boxes }))
}

impl Loaded {
    /// The policy's boxes and ssh options under the command line's.
    pub fn tune_boxes(&self, ssh: &mut SshArgs) {
        ssh.policy = Some(self.boxes.clone());
    }

    /// The policy's decision rule over replay's options.
    pub fn tune_replay(&self, a: &mut replay::Args) {
        a.rule = self.rules.decide;
    }

    /// The policy's decision rule over ab's options.
    pub fn tune_ab(&self, a: &mut crate::ab::Args) {
        a.rule = self.rules.decide;
    }

    /// The policy's decision rule over noise's options.
    pub fn tune_noise(&self, a: &mut noise::Args) {
        a.rule = self.rules.decide;
    }

    /// The policy's decision rule and setup subjects over diff's options.
    pub fn tune_diff(&self, a: &mut diff::Args) {
        a.rule = self.rules.decide;
        if let Some(s) = &self.rules.diff.setup_fails_on {
            let names: Vec<&str> = s.iter().map(|x| x.name()).collect();
            a.setup_fails_on = Some(if names.is_empty() {
                "none".into()
            } else {
                names.join(",")
            });
        }
    }
}
