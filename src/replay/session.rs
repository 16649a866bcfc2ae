//! One session of a replay: its ranks started, measured into a folder, stopped whatever happens;
//! a confirming session and more rounds of runs made the same way.

use super::*;

/// What one session of a replay needs: the processes to start and the plan to measure with.
pub(super) struct Session<'a> {
    pub(super) launches: &'a [command::Launch],
    pub(super) launchers: &'a [remote::Launcher],
    pub(super) rank0: u32,
    pub(super) base_url: &'a str,
    pub(super) a: &'a Args,
    pub(super) contract: &'a rigaudit_audit::records::SpeedContract,
    pub(super) contract_text: &'a str,
    pub(super) contract_origin: String,
    pub(super) quality: &'a [measure::quality::QualityPlan],
    pub(super) tokenizer: Option<&'a tokenizers::Tokenizer>,
    pub(super) card: &'a serde_json::Value,
    pub(super) id: String,
    pub(super) title: String,
    /// A block of `ab`: the machine-speed reference probed once a measurement rather than before
    /// every step, and a prompt of a depth sized once a started server (kept in [`Started`]).
    pub(super) ab_block: bool,
}

/// A session's ranks, started and ready: stopped by [`Session::stop`] (or when dropped).
pub(crate) struct Started {
    running: Arc<Mutex<launch::Running>>,
    start_lines: Vec<String>,
    server_pids: Vec<u32>,
    inventory: Option<crate::loaded::Inventory>,
    /// The tokenizer the server serves (the bundled engine's `/tokenizer.json`), read once at the
    /// start when the bundle gives none, so that every measurement on these ranks sizes prompts
    /// alike without fetching it again.
    served: Option<tokenizers::Tokenizer>,
    /// The prompts sized on these ranks, by depth (`ab`'s blocks reuse them).
    sized: measure::SizedPrompts,
}

impl Session<'_> {
    /// Starts the ranks, measures into `out`, stops every rank (also when measuring fails). With
    /// `loaded`, what each rank's server mapped is read once it is ready and again after the last
    /// request, and hashed after every rank has stopped ([`crate::loaded`]).
    pub(super) fn run(
        &self,
        out: &Path,
        logs: &Path,
        notes: &mut Vec<String>,
        loaded: Option<&mut Vec<LoadedRank>>,
    ) -> Result<measure::Measured, Fatal> {
        let started = self.start(logs, notes, loaded.is_some())?;
        let measured = self.measure_on(&started, out, notes);
        self.stop(started, notes, loaded);
        measured
    }

    /// Starts the ranks and waits until the server answers; with `read_loaded`, reads what each
    /// rank's server mapped once it is ready.
    pub(super) fn start(
        &self,
        logs: &Path,
        notes: &mut Vec<String>,
        read_loaded: bool,
    ) -> Result<Started, Fatal> {
        let running = launch::start_ranks(
            self.launches,
            self.launchers,
            logs,
            &launch::Ready {
                url: format!("{}/models", self.base_url),
                timeout: Duration::from_secs(self.a.ready_timeout),
            },
        )?;
        let start_lines = running.start_lines(self.rank0);
        let server_pids = running.pids();
        let mut inventory = read_loaded.then(|| {
            let lines: Vec<Vec<String>> = self
                .launches
                .iter()
                .map(|l| running.start_lines(l.rank))
                .collect();
            crate::loaded::Inventory::new(self.inventory_targets(&server_pids, &lines))
        });
        if let Some(inv) = inventory.as_mut() {
            inv.read("ready");
        }
        notes.extend(running.notes().iter().cloned());
        let served = if self.tokenizer.is_none() {
            measure::served_tokenizer(self.base_url, self.a.request_timeout)
        } else {
            None
        };
        Ok(Started {
            running: Arc::new(Mutex::new(running)),
            start_lines,
            server_pids,
            inventory,
            served,
            sized: Default::default(),
        })
    }

    /// Measures the started ranks with the session's contract and questions into `out`.
    pub(super) fn measure_on(
        &self,
        started: &Started,
        out: &Path,
        notes: &mut Vec<String>,
    ) -> Result<measure::Measured, Fatal> {
        let watch = Arc::clone(&started.running);
        let plan = measure::Plan {
            base_url: self.base_url.to_string(),
            contract: self.contract.clone(),
            contract_text: self.contract_text.to_string(),
            contract_origin: self.contract_origin.clone(),
            quality: self.quality.to_vec(),
            tokenizer: self.tokenizer.or(started.served.as_ref()).cloned(),
            card: Some(self.card.clone()),
            start_lines: started.start_lines.clone(),
            out: out.to_path_buf(),
            timeout: self.a.request_timeout,
            progress: !self.a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            alive: Some(Box::new(move || {
                let mut r = watch.lock().unwrap_or_else(|p| p.into_inner());
                r.exited()
                    .map(|(rank, why)| format!("rank {rank} exited: {why}"))
            })),
            notes: notes.clone(),
            id: Some(self.id.clone()),
            title: Some(self.title.clone()),
            server_pids: started.server_pids.clone(),
            load_guard: !self.a.no_load_guard,
            gpu: self.gpu_choice(notes),
            reference_once: self.ab_block,
            sized: self.ab_block.then(|| Arc::clone(&started.sized)),
        };
        measure::measure(&plan)
    }

    /// Reads what the servers mapped at the end (when read at the start), stops every rank, and
    /// hashes what they mapped into `loaded`.
    pub(super) fn stop(
        &self,
        mut started: Started,
        notes: &mut Vec<String>,
        loaded: Option<&mut Vec<LoadedRank>>,
    ) {
        if let Some(inv) = started.inventory.as_mut() {
            inv.read("end");
        }
        // Under Slurm each rank first gets SIGTERM from the scheduler (srun would SIGKILL it).
        notes.extend(slurm::term_steps(self.launchers));
        // Stop every rank before anything else can fail.
        let stop_notes = started
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .stop();
        notes.extend(stop_notes);
        if let (Some(inv), Some(loaded)) = (started.inventory, loaded) {
            *loaded = inv.finish();
        }
    }

    /// The ranks whose mappings are read: a rank here by its server's pid, a rank on a box over
    /// ssh or in a Slurm step of its own by the pid its start printed among its first lines
    /// (`lines`), read on its box or node; a task of a PMIx step is listed with why it is not.
    pub(super) fn inventory_targets(
        &self,
        pids: &[u32],
        lines: &[Vec<String>],
    ) -> Vec<crate::loaded::Target> {
        use crate::loaded::{remote as read_on_box, Place};
        let card: Option<rigaudit_audit::records::Card> =
            serde_json::from_value(self.card.clone()).ok();
        let box_of = |rank| match &card {
            Some(c) => remote::box_or_rank(c, rank),
            None => format!("rank {rank}"),
        };
        let boxes = self.a.boxes.ssh.targets().ok();
        let reach = crate::ssh::client::Ssh::new(&self.a.boxes.ssh)
            .ok()
            .map(|s| Arc::new(crate::rehash::reach::Reach::Ssh(s)));
        let on_box = |name: &str, lines: &[String]| -> Result<Place, String> {
            let target = boxes.as_ref().and_then(|b| b.get(name)).cloned();
            let pid = read_on_box::pid_of(lines);
            match (target, pid, &reach) {
                (Some(target), Some(pid), Some(reach)) => Ok(Place::OnBox(read_on_box::OnBox {
                    reach: Arc::clone(reach),
                    target,
                    pid,
                })),
                _ => Err(format!("runs on box {name} over ssh, and its server's pid there was not printed: what it mapped is not read")),
            }
        };
        let mut targets = Vec::new();
        for (((l, how), pid), lines) in self
            .launches
            .iter()
            .zip(self.launchers)
            .zip(pids)
            .zip(lines)
        {
            let place = match how {
                remote::Launcher::Local => Place::Here(*pid),
                remote::Launcher::Ssh { box_name, .. } => {
                    on_box(box_name, lines).unwrap_or_else(Place::NotRead)
                }
                remote::Launcher::Slurm {
                    node,
                    job,
                    tasks: None,
                    box_name,
                } => match read_on_box::pid_of(lines) {
                    Some(pid) => Place::OnBox(read_on_box::OnBox {
                        reach: Arc::new(crate::rehash::reach::Reach::Job(job.clone())),
                        target: crate::ssh::Target {
                            box_name: box_name.clone(),
                            user: None,
                            host: node.clone(),
                            port: None,
                        },
                        pid,
                    }),
                    None => Place::NotRead(format!("runs as a Slurm step on node {node}, and its pid there was not printed: what it mapped is not read")),
                },
                remote::Launcher::Slurm { node, .. } => Place::NotRead(format!(
                    "runs as a task of the PMIx step on node {node}: what a task of a shared step mapped is not read (ranks here, over ssh and in steps of their own are)"
                )),
            };
            targets.push(crate::loaded::Target {
                rank: l.rank,
                box_name: box_of(l.rank),
                place,
            });
        }
        targets
    }
}

impl Session<'_> {
    /// `--gpu` when every rank runs here; off (and a note why) when one runs on another machine,
    /// whose GPU this machine's NVML cannot see.
    pub(super) fn gpu_choice(&self, notes: &mut Vec<String>) -> measure::gpu::Choice {
        let elsewhere = self
            .launchers
            .iter()
            .any(|l| !matches!(l, remote::Launcher::Local));
        if !elsewhere || self.a.gpu == measure::gpu::Choice::Off {
            return self.a.gpu;
        }
        notes.push(
            "gpu: not read: ranks run on other machines (ssh or Slurm), whose GPUs NVML here cannot see (--gpu applies to ranks on this machine)".into(),
        );
        measure::gpu::Choice::Off
    }

    /// One `--runs auto` round: a session of its own measuring only the parts of `plan` with its
    /// runs, no quality, into `OUT/more-ROUND`; the bundle it wrote.
    pub(super) fn top_up(
        &self,
        plan: &BTreeMap<&'static str, u32>,
        round: usize,
        out: &Path,
        notes: &mut Vec<String>,
    ) -> Result<rigaudit_audit::Bundle, Fatal> {
        let contract = auto::topped_contract(self.contract, plan);
        let text = serde_json::to_string_pretty(&contract).unwrap_or_default();
        let more = Session {
            contract: &contract,
            contract_text: &text,
            quality: &[],
            contract_origin: format!("{} (--runs auto, round {round})", self.contract_origin),
            id: format!("{}-more-{round}", self.id),
            title: self.title.clone(),
            ..*self
        };
        crate::progress::say(format_args!(
            "rigaudit: --runs auto: round {round}, more runs of {plan:?}"
        ));
        let dir = out.join(format!("more-{round}"));
        let measured = more.run(&dir.join("bundle"), &dir.join("engine-logs"), notes, None)?;
        Ok(bundle::load(&bundle::open(&measured.dir)?))
    }
}

pub(super) fn free_port() -> Result<u16, Fatal> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").at("cannot find a free loopback port")?;
    l.local_addr()
        .map(|a| a.port())
        .at("cannot find a free loopback port")
}

pub(super) fn is_model_placeholder(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (n.contains("model") || n.contains("checkpoint") || n.contains("gguf"))
        && !n.contains("name")
        && !n.contains("folder")
}

/// The value after `--flag` or `--flag=`, in argv (the one argv flag lookup, `setup::flag`).
pub(super) fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    rigaudit_audit::setup::flag(argv, &[flag]).map(String::from)
}

/// The manifest's entry of the bundle's raw file of a kind (and test), when it lists one.
pub(super) fn listed<'a>(
    o: &'a bundle::Opened,
    kind: FileKind,
    test: Option<&str>,
) -> Option<&'a rigaudit_audit::records::FileEntry> {
    o.manifest
        .files
        .iter()
        .find(|f| f.kind == kind && test.is_none_or(|t| f.test.as_deref() == Some(t)))
}

/// The path of the bundle's raw file of a kind (and test): `Ok(None)` when the manifest lists
/// none, `Err` naming the file when the path it lists is refused (absolute, or leaving the bundle).
pub(super) fn raw_file(
    o: &bundle::Opened,
    kind: FileKind,
    test: Option<&str>,
) -> Result<Option<PathBuf>, Fatal> {
    let Some(f) = listed(o, kind, test) else {
        return Ok(None);
    };
    crate::input::inside(&o.root, &f.path)
        .map(Some)
        .map_err(|why| {
            fatal(format!(
                "{}: the {} bundle.json lists is refused: {why}; list it by its path inside the bundle folder",
                crate::input::shown_path(&o.root),
                kind.name()
            ))
        })
}
