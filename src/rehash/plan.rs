//! What one rehash hashes: the jobs planned from the card, the files given on the command line,
//! the roots searched and the bundle's own files, each file once.

use super::*;

/// What the rehash will hash, and what it learnt while planning.
pub(super) struct Plan {
    /// The files to hash, largest first.
    pub(super) jobs: Vec<Job>,
    /// What was measured so far (where it searched, what it could not open, checkpoint folders).
    pub(super) m: Measured,
    /// The manifest to compare checkpoints with (`--compare`), entries filled by hashing when it
    /// is a folder.
    pub(super) reference: Option<FileManifest>,
    /// The card's binary path inside the package.
    pub(super) binary_path: Option<String>,
    /// The digest of each bundle file, by manifest index (filled by [`collate`]).
    pub(super) bundle_digests: Vec<Option<Result<String, String>>>,
    /// Bundle files listed under a second name: (its index, the index of the first name).
    pub(super) aliases: Vec<(usize, usize)>,
    /// Bundle files not read because their path leaves the bundle (a link out, `..`): (its
    /// index, why); each is an error of its digest, never a file merely missing.
    pub(super) bundle_refused: Vec<(usize, String)>,
    /// The NCCL libraries the user named with `--file nccl=PATH` (loaded without `--load-nccl`).
    pub(super) named_nccl: BTreeSet<String>,
}

/// Stage 1: every file to hash, from `--file`, the roots, checkpoint folders, `--compare` and
/// the bundle; the same artifact reached twice is hashed once.
pub(super) fn plan_jobs(
    args: &Args,
    opened: &bundle::Opened,
    card: &Card,
    m: Measured,
) -> Result<Plan, Fatal> {
    // A root on a box mapped with --box (or the policy's [boxes]) is read there over ssh.
    args.ssh
        .check_names(&crate::ssh::target::card_boxes(card))?;
    let boxes = crate::ssh::target::card_boxes(card);
    let slurm_boxes = args.slurm.slurm.then_some(&boxes[..]);
    let (local_roots, remote_roots) = remote::split_roots(&args.roots, &args.ssh, slurm_boxes)?;
    let roots: Vec<Root> = local_roots
        .iter()
        .map(|r| discover::parse_root(r).map_err(fatal))
        .collect::<Result<_, _>>()?;
    let given: Vec<Given> = args
        .files
        .iter()
        .map(|f| parse_file_arg(f, card))
        .collect::<Result<_, _>>()?;
    let mut plan = Plan {
        jobs: Vec::new(),
        m,
        reference: None,
        binary_path: card.engine.binary.as_ref().map(|b| b.path.clone()),
        bundle_digests: Vec::new(),
        aliases: Vec::new(),
        bundle_refused: Vec::new(),
        named_nccl: given
            .iter()
            .filter(|g| g.what == Named::Nccl)
            .map(|g| loc(&g.path, g.box_name.as_ref()).path)
            .collect(),
    };
    plan.m.searched = searched(&roots, &given);
    remote::measure(card, &remote_roots, &args.ssh, &args.slurm, &mut plan.m)?;
    let mut ckpt_dirs = given_jobs(&given, &mut plan);
    let boxes: Vec<String> = card.hardware.boxes.iter().map(|b| b.name.clone()).collect();
    let found = discover::walk(&roots, &boxes).map_err(fatal)?;
    root_jobs(card, &found, &mut plan);
    ckpt_dirs.extend(
        found
            .checkpoints
            .iter()
            .map(|c| (c.path.clone(), c.box_name.clone())),
    );
    checkpoint_jobs(card, ckpt_dirs, &mut plan)?;
    compare_jobs(args, &mut plan)?;
    bundle_jobs(opened, &mut plan);
    dedupe(&mut plan.jobs);
    // Largest first, so the pool ends together.
    plan.jobs.sort_by_key(|j| std::cmp::Reverse(j.size));
    Ok(plan)
}

/// Where the rehash looks, each place once, for the report.
pub(super) fn searched(roots: &[Root], given: &[Given]) -> Vec<String> {
    let mut all: Vec<String> = roots
        .iter()
        .map(|r| match &r.box_name {
            Some(b) => format!("{} (box {b})", r.dir.display()),
            None => r.dir.display().to_string(),
        })
        .chain(
            given
                .iter()
                .map(|g| format!("--file {}={}", g.label, g.path.display())),
        )
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|s| seen.insert(s.clone()));
    all
}

/// Why a path given with `--file` cannot be used, if it cannot.
pub(super) fn unusable(g: &Given) -> Option<String> {
    match (std::fs::metadata(&g.path), g.what) {
        (Ok(md), Named::Checkpoint) if md.is_dir() => None,
        (Ok(md), Named::Checkpoint) => Some(format!("not a folder ({} bytes)", md.len())),
        (Ok(md), _) if md.is_file() => None,
        (Ok(_), _) => Some("not a regular file".into()),
        (Err(e), _) => Some(e.to_string()),
    }
}

/// Files named with `--file`; a path that cannot be opened is an error finding, never skipped.
/// Returns the checkpoint folders named.
pub(super) fn given_jobs(given: &[Given], plan: &mut Plan) -> Vec<(PathBuf, Option<String>)> {
    let mut ckpt_dirs = Vec::new();
    for g in given {
        let at = loc(&g.path, g.box_name.as_ref());
        if let Some(why) = unusable(g) {
            plan.m.missing.push(MissingFile {
                kind: g.label.clone(),
                at,
                why,
            });
            continue;
        }
        let size = size_of(&g.path);
        let plain = |target| Job {
            target,
            path: g.path.clone(),
            size,
            member: None,
        };
        match g.what {
            Named::Package => plan.jobs.push(package_job(
                &g.path,
                g.box_name.as_ref(),
                size,
                plan.binary_path.as_deref(),
            )),
            Named::Binary => plan.jobs.push(plain(Target::Binary(at))),
            Named::Nccl => plan.jobs.push(plain(Target::Nccl(at))),
            Named::Checkpoint => ckpt_dirs.push((g.path.clone(), g.box_name.clone())),
        }
    }
    ckpt_dirs
}

/// What the roots hold of the card's package, binary and NCCL library.
pub(super) fn root_jobs(card: &Card, found: &discover::Found, plan: &mut Plan) {
    if let Some(p) = &card.engine.package {
        for f in found.named(&p.file) {
            let job = package_job(
                &f.path,
                f.box_name.as_ref(),
                size_of(&f.path),
                plan.binary_path.as_deref(),
            );
            plan.jobs.push(job);
        }
    }
    let binary_name = plan
        .binary_path
        .as_deref()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    if let Some(name) = &binary_name {
        for f in found
            .named(name)
            .into_iter()
            .filter(|f| !found.in_checkpoint(f))
        {
            let at = loc(&f.path, f.box_name.as_ref());
            plan.jobs.push(file_job(f, Target::Binary(at)));
        }
    }
    if let Some(n) = &card.nccl {
        for f in found.nccl(&n.file) {
            let at = loc(&f.path, f.box_name.as_ref());
            plan.jobs.push(file_job(f, Target::Nccl(at)));
        }
    }
}

/// Checkpoint folders, each once: every file is a job of its own.
pub(super) fn checkpoint_jobs(
    card: &Card,
    mut dirs: Vec<(PathBuf, Option<String>)>,
    plan: &mut Plan,
) -> Result<(), Fatal> {
    let mut seen_dirs = std::collections::BTreeSet::new();
    dirs.retain(|(d, _)| seen_dirs.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
    for (dir, box_name) in dirs {
        let (files, unreadable) = discover::checkpoint_files(&dir).map_err(fatal)?;
        let ckpt = plan.m.checkpoints.len();
        plan.m.checkpoints.push(CheckpointSeen {
            at: loc(&dir, box_name.as_ref()),
            manifest: FileManifest {
                origin: dir.display().to_string(),
                entries: Vec::new(),
            },
            unreadable,
            revision_file: revision_file(card, &dir),
            hub_revision: hub_revision(&dir),
        });
        for f in files {
            plan.jobs.push(Job {
                target: Target::CkptFile { ckpt, rel: f.rel },
                path: f.path,
                size: f.size,
                member: None,
            });
        }
    }
    Ok(())
}

/// The folder or manifest to compare checkpoints with (`--compare`).
pub(super) fn compare_jobs(args: &Args, plan: &mut Plan) -> Result<(), Fatal> {
    let Some(c) = &args.compare else {
        return Ok(());
    };
    let md = std::fs::metadata(c).at(format_args!("--compare {}", c.display()))?;
    if !md.is_dir() {
        let manifest = read_manifest_file(c).at("--compare")?;
        plan.reference = Some(manifest);
        return Ok(());
    }
    let (files, unreadable) = discover::checkpoint_files(c).map_err(fatal)?;
    if let Some((p, e)) = unreadable.first() {
        return Err(fatal(format!(
            "--compare {}: {p} cannot be read: {e}",
            c.display()
        )));
    }
    plan.reference = Some(FileManifest {
        origin: format!("the folder {}", c.display()),
        entries: Vec::new(),
    });
    for f in files {
        plan.jobs.push(Job {
            target: Target::RefFile { rel: f.rel },
            path: f.path,
            size: f.size,
            member: None,
        });
    }
    Ok(())
}

/// The bundle's own raw files: only those inside the bundle (a link out is not read, and is an
/// error of its digest), each real
/// file hashed once whatever the names it is listed under (the others are `plan.aliases`).
pub(super) fn bundle_jobs(opened: &bundle::Opened, plan: &mut Plan) {
    let mut first_of = std::collections::BTreeMap::new();
    for (idx, e) in opened.manifest.files.iter().enumerate() {
        let p = match crate::input::inside(&opened.root, &e.path) {
            Ok(p) => p,
            Err(why) => {
                plan.bundle_refused.push((idx, why));
                continue;
            }
        };
        if let Some(id) = crate::input::identity(&p) {
            if let Some(&first) = first_of.get(&id) {
                plan.aliases.push((idx, first));
                continue;
            }
            first_of.insert(id, idx);
        }
        if p.is_file() {
            plan.jobs.push(Job {
                target: Target::Bundle { idx },
                size: size_of(&p),
                path: p,
                member: None,
            });
        }
    }
}

/// The same file reached twice (a root and a --file, say) is hashed and reported once.
pub(super) fn dedupe(jobs: &mut Vec<Job>) {
    let mut seen = std::collections::BTreeSet::new();
    jobs.retain(|j| {
        let (kind, box_name) = match &j.target {
            Target::Package(l) => ("package", l.box_name.clone()),
            Target::Binary(l) => ("binary", l.box_name.clone()),
            Target::Nccl(l) => ("nccl", l.box_name.clone()),
            _ => return true,
        };
        seen.insert((
            kind,
            box_name,
            j.path.canonicalize().unwrap_or_else(|_| j.path.clone()),
        ))
    });
}

pub(super) fn file_job(f: &FoundFile, target: Target) -> Job {
    Job {
        target,
        size: size_of(&f.path),
        path: f.path.clone(),
        member: None,
    }
}

pub(super) fn package_job(
    path: &Path,
    box_name: Option<&String>,
    size: u64,
    binary: Option<&str>,
) -> Job {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let member = match (archive::kind_of(&name), binary) {
        (Some(k), Some(b)) => Some((k, b.to_string())),
        _ => None,
    };
    Job {
        target: Target::Package(loc(path, box_name)),
        path: path.to_path_buf(),
        size,
        member,
    }
}
