//! A bundle's recorded command prepared once and launched again and again (`rigaudit ab`): its
//! placeholders filled, every rank resolved under replay's safety rules and placed (here, over
//! ssh or under Slurm), the contract and questions read; each [`Prepared::block`] is one session
//! of replay's: start the ranks, measure, stop every rank; or [`Prepared::start`] once, then
//! [`Prepared::held_block`] block after block and [`Prepared::stop`].

use super::*;
use rigaudit_audit::records::card::Card;
use rigaudit_audit::records::SpeedContract;
pub(crate) use session::Started;

/// A side ready to launch.
pub(crate) struct Prepared {
    /// The bundle's id.
    pub(crate) id: String,
    /// Each rank's command as it runs (placeholders filled, the engine resolved).
    pub(crate) shown: Vec<Vec<String>>,
    title: String,
    launches: Vec<command::Launch>,
    launchers: Vec<remote::Launcher>,
    rank0: u32,
    base_url: String,
    a: Args,
    inputs: Inputs,
}

/// Reads the bundle at `path`, lets `edit` change its card's commands (the user's `--arg-a`),
/// fills its placeholders and resolves and places its ranks as replay does; nothing is started.
pub(crate) fn prepare(
    path: &Path,
    a: &Args,
    edit: &dyn Fn(&mut Card),
    notes: &mut Vec<String>,
) -> Result<Prepared, Fatal> {
    let mut say = |s: String| crate::progress::say(format_args!("rigaudit: {s}"));
    a.boxes.ssh.targets()?;
    crate::ssh::client::Ssh::new(&a.boxes.ssh)?;
    let rec = super::Recorded::open(path)?;
    let (opened, recorded) = (&rec.opened, &rec.bundle);
    let mut card = recorded
        .card
        .as_ref()
        .ok_or_else(|| {
            fatal(format!(
                "{}: the bundle has no readable card, so there is no recorded command to launch",
                path.display()
            ))
        })?
        .value
        .clone();
    edit(&mut card);
    let ready = ready(&card, a, notes, &mut say)?;
    let mut inputs = plan(&rec, ready.model_file.as_deref(), notes)?;
    // The blocks' cards record the commands as edited.
    if let Ok(commands) = serde_json::to_value(&card.commands) {
        inputs.card["commands"] = commands;
    }
    Ok(Prepared {
        id: opened.manifest.id.clone(),
        shown: ready
            .resolved
            .launches
            .iter()
            .map(|l| l.shown.clone())
            .collect(),
        title: opened.manifest.title.clone(),
        rank0: ready.rank0,
        launches: ready.planned.launches,
        launchers: ready.planned.launchers,
        base_url: ready.base_url,
        a: a.clone(),
        inputs,
    })
}

impl Prepared {
    /// The recorded speed contract and its text.
    pub(crate) fn contract(&self) -> (&SpeedContract, &str) {
        (&self.inputs.contract, &self.inputs.contract_text)
    }

    /// The card as the side runs it (its commands as edited), for judging what its servers
    /// mapped.
    pub(crate) fn card(&self) -> Option<Card> {
        serde_json::from_value(self.inputs.card.clone()).ok()
    }

    /// Whether the bundle records quality tests to ask again.
    pub(crate) fn has_quality(&self) -> bool {
        !self.inputs.quality.is_empty()
    }

    /// Whether every rank runs on this machine (no ssh box, no Slurm node): what lets `ab` keep
    /// both sides' servers up at once.
    pub(crate) fn all_here(&self) -> bool {
        self.launchers
            .iter()
            .all(|l| matches!(l, remote::Launcher::Local))
    }

    /// The address its server answers at.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// One block: the ranks started, `contract` measured once (and the recorded questions asked
    /// when `quality`), every rank stopped, the bundle written under `dir/bundle` and the
    /// engines' logs under `dir/engine-logs`.
    pub(crate) fn block(
        &self,
        contract: (&SpeedContract, &str),
        quality: bool,
        (dir, tag): (&Path, &str),
        notes: &mut Vec<String>,
        loaded: Option<&mut Vec<LoadedRank>>,
    ) -> Result<measure::Measured, Fatal> {
        let session = self.session(contract, quality, tag);
        let measured = session.run(&dir.join("bundle"), &dir.join("engine-logs"), notes, loaded)?;
        notes.extend(slurm::job_ended(&self.launchers));
        Ok(measured)
    }

    /// Starts the side's ranks once, to be measured block after block ([`Prepared::held_block`])
    /// and stopped by [`Prepared::stop`]; the engines' logs under `logs`. With `read_loaded`, what
    /// the servers mapped is read once they are ready.
    pub(crate) fn start(
        &self,
        logs: &Path,
        notes: &mut Vec<String>,
        read_loaded: bool,
    ) -> Result<Started, Fatal> {
        let contract = self.contract();
        self.session(contract, false, "start")
            .start(logs, notes, read_loaded)
    }

    /// One block on ranks already started: `contract` measured once (and the questions asked when
    /// `quality`), the bundle written under `dir/bundle`.
    pub(crate) fn held_block(
        &self,
        started: &Started,
        contract: (&SpeedContract, &str),
        quality: bool,
        (dir, tag): (&Path, &str),
        notes: &mut Vec<String>,
    ) -> Result<measure::Measured, Fatal> {
        self.session(contract, quality, tag)
            .measure_on(started, &dir.join("bundle"), notes)
    }

    /// Stops ranks started by [`Prepared::start`]; what they mapped into `loaded` when it was read
    /// at the start.
    pub(crate) fn stop(
        &self,
        started: Started,
        notes: &mut Vec<String>,
        loaded: Option<&mut Vec<LoadedRank>>,
    ) {
        let contract = self.contract();
        self.session(contract, false, "stop")
            .stop(started, notes, loaded);
    }

    /// The session of one block, tagged `tag`.
    fn session<'s>(
        &'s self,
        (contract, text): (&'s SpeedContract, &'s str),
        quality: bool,
        tag: &str,
    ) -> Session<'s> {
        Session {
            launches: &self.launches,
            launchers: &self.launchers,
            rank0: self.rank0,
            base_url: &self.base_url,
            a: &self.a,
            contract,
            contract_text: text,
            contract_origin: format!("{} ({tag})", self.inputs.contract_origin),
            quality: if quality { &self.inputs.quality } else { &[] },
            tokenizer: self.inputs.tokenizer.as_ref(),
            card: &self.inputs.card,
            id: format!("{}-{tag}", self.id),
            title: format!("{} ({tag})", self.title),
            // A block's reference is read once, before its first step (between blocks), and its
            // prompts are sized once a started server.
            ab_block: true,
        }
    }
}
