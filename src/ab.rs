//! `rigaudit ab A [B]`: two setups measured in one session, interleaved in ABBA quartets (the
//! order shuffled by a recorded seed), each block the contract's steps once on a side's recorded
//! command run with replay's launcher, safety rules and placement (both servers started afresh
//! each quartet where both run here, [`servers`]; else one launch a block); looks at the paired
//! changes after quartets 3, 4, 6, 8, 12, ... and stops once every row is decided or the budget is
//! spent. The statistics are [`rigaudit_audit::decide::paired`]'s, the rows
//! [`rigaudit_audit::ab`]'s; this module launches, times and writes.

mod servers;

pub use servers::Launches;

use crate::bundle;
use crate::fatal::{fatal, At, Fatal};
use crate::replay::prepared::{self, Prepared};
use crate::replay::{self, remote};
use rigaudit_audit::ab::{self as rows, Block, Looked, Looks, Side};
use rigaudit_audit::decide::{paired, DecisionRule};
use rigaudit_audit::records::card::Card;
use rigaudit_audit::records::SpeedContract;
use rigaudit_audit::replay as audit_replay;
use rigaudit_audit::{Findings, Report, Severity};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Options of `rigaudit ab`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Side A: a bundle folder (with bundle.json) or a packed bundle.
    pub a: PathBuf,
    /// Side B: another bundle; without it, A again, made different with --set-b / --arg-b.
    pub b: Option<PathBuf>,
    /// Fills a placeholder of side A's command (`--set-a 'model file=/data/a.gguf'`). Repeatable.
    #[arg(long = "set-a", value_name = "NAME=VALUE")]
    pub set_a: Vec<String>,
    /// Fills a placeholder of side B's command. Repeatable.
    #[arg(long = "set-b", value_name = "NAME=VALUE")]
    pub set_b: Vec<String>,
    /// Appends one flag to side A's recorded command, or replaces its value where the command has
    /// it: `--arg-a=--threads=1`, `--arg-a=--no-mmap`. Repeatable; every rank.
    #[arg(
        long = "arg-a",
        value_name = "FLAG[=VALUE]",
        allow_hyphen_values = true
    )]
    pub arg_a: Vec<String>,
    /// The same for side B: `--arg-b=--decode-delay-us=500`.
    #[arg(
        long = "arg-b",
        value_name = "FLAG[=VALUE]",
        allow_hyphen_values = true
    )]
    pub arg_b: Vec<String>,
    /// The most time the blocks may take together (`90s`, `10m`, `1h`); the comparison stops
    /// earlier once every figure is decided.
    #[arg(long, default_value = "10m", value_parser = replay::auto::parse_budget, value_name = "TIME")]
    pub budget: Duration,
    /// The seed of the block order (default: drawn, and recorded in the report).
    #[arg(long)]
    pub seed: Option<u64>,
    /// The band of every speed figure, in percent (default: what the run resolves, from the pair
    /// spread measured, at most 10 %).
    #[arg(long, value_name = "PCT")]
    pub band: Option<f64>,
    /// A speed contract both sides measure with (default: side A's).
    #[arg(long, value_name = "FILE")]
    pub contract: Option<PathBuf>,
    /// Do not ask the bundles' quality questions (by default each side's first block asks them,
    /// paired per question).
    #[arg(long)]
    pub no_quality: bool,
    /// How often a side's server starts: `each-quartet`, both sides' servers started at each
    /// quartet's start and kept up through its blocks where every rank runs on this machine (each
    /// launch warmed up once); `once`, kept up through the whole comparison (for engines slow to
    /// start; a state a server keeps while it runs is then its side's); or `each-block`.
    #[arg(long, value_enum, default_value_t = Launches::EachQuartet)]
    pub launches: Launches,
    /// Folder for the blocks' bundles and the engines' logs (default: `ab-<A id>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The engine to run (as replay's `--engine`).
    #[arg(long, default_value = "bundled", value_name = "bundled|PATH")]
    pub engine: String,
    /// Run an executable whose digest does not match the card's (as replay's).
    #[arg(long)]
    pub trust_executable: bool,
    /// Pass a recorded environment variable replay's allow-list refuses (as replay's). Repeatable.
    #[arg(long = "allow-env", value_name = "NAME")]
    pub allow_env: Vec<String>,
    /// Seconds the engine may take to answer `/v1/models` after each launch.
    #[arg(long, default_value_t = 300)]
    pub ready_timeout: u64,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 600)]
    pub request_timeout: u64,
    /// Measure without the foreign-load guard.
    #[arg(long)]
    pub no_load_guard: bool,
    /// The decision rule (the policy's `[decide]`): its multiplicity control is used.
    #[arg(skip)]
    pub rule: DecisionRule,
    /// No progress bar: the global `--quiet`, set by `main`.
    #[arg(skip)]
    pub quiet: bool,
    /// Where ranks run (`--box`, `--ssh-option`, ...), as replay's.
    #[command(flatten)]
    pub boxes: remote::BoxArgs,
}

/// One block as `OUT/ab.json` records it.
#[derive(Debug, Clone, Serialize)]
struct Ran {
    side: Side,
    seconds: f64,
    dir: String,
    machine_gbps: Option<f64>,
    failed: Option<String>,
    #[serde(skip)]
    block: Block,
    /// What the side's servers mapped (each side's first block only).
    #[serde(skip)]
    loaded: Vec<rigaudit_audit::records::LoadedRank>,
}

/// The sides, prepared, with what they measure.
struct Sides {
    a: Prepared,
    b: Prepared,
    contract: (SpeedContract, String),
    /// The contract without warm-ups: what a block measures on a server kept up since an
    /// earlier block of its side warmed it.
    warmed: (SpeedContract, String),
    quality: bool,
    /// Both servers, while kept up.
    held: Option<servers::Held>,
    /// How often they start.
    launches: Launches,
}

/// Runs the comparison and builds its report. `Err` when a side cannot be prepared or its first
/// block fails (exit 2).
pub fn run(args: &Args, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let seed = args.seed.unwrap_or_else(drawn_seed);
    let mut notes = Vec::new();
    // Both sides are read and their commands checked before anything is written.
    let mut sides = prepare_sides(args, &mut notes)?;
    let out = out_dir(args)?;
    let started = Instant::now();
    sides.held = servers::hold(args.launches, &sides, (&out, 0), &mut notes)?;
    let kept_up = sides.held.is_some();
    let mut ran: Vec<Ran> = Vec::new();
    // On an error the held servers are dropped, which stops them.
    let (looked, stop) = interleave(args, &mut sides, seed, &out, &mut ran, &mut notes, started)?;
    release(&mut sides, &mut ran, &mut notes);
    let kept_up = kept_up.then_some(args.launches);
    write_record(&out, seed, &ran, &stop, kept_up)?;
    let name = format!("{} vs {}", sides.a.id, sides.b.id);
    let setup = setup_changes(&ran, &sides, args, &mut notes);
    let mut comparisons = looked.rows.clone();
    comparisons.extend(quality_rows(&ran, &sides, args));
    let mut session = session_lines(&ran, seed, &looked, &stop, started);
    session.append(&mut notes);
    let mut found = rows::report(comparisons, &session);
    found.merge(what_ran(&mut ran, &sides, args.trust_executable));
    let mut report = Report::new("ab", &name, fail_on, found);
    report.setup_changes = setup;
    report.decision_rule = rule_lines(&looked, args);
    Ok(report)
}

/// What each side's servers mapped in its first block, judged against that side's card
/// (`loaded.*`), the inventory labelled by side.
fn what_ran(ran: &mut [Ran], sides: &Sides, executable_trusted: bool) -> Findings {
    let mut found = Findings::default();
    for r in ran.iter_mut().take(2) {
        let (prepared, name) = match r.side {
            Side::A => (&sides.a, "A"),
            Side::B => (&sides.b, "B"),
        };
        let mut ranks = std::mem::take(&mut r.loaded);
        for rank in &mut ranks {
            rank.side = Some(name.into());
        }
        let card = prepared.card();
        let card_file = format!("side {name}'s card");
        let card = card.as_ref().map(|c| (c, card_file.as_str()));
        found.merge(rigaudit_audit::loaded::judged(
            card,
            ranks,
            executable_trusted,
        ));
    }
    found
}

/// Stops the servers kept up, if any; what they mapped, when read (the first quartet's), goes to
/// each side's first block.
fn release(sides: &mut Sides, ran: &mut [Ran], notes: &mut Vec<String>) {
    let Some(held) = sides.held.take() else {
        return;
    };
    let (a, b) = servers::release(held, sides, notes);
    for (side, loaded) in [(Side::A, a), (Side::B, b)] {
        let first = ran.iter_mut().find(|r| r.side == side);
        if let (Some(first), false) = (first, loaded.is_empty()) {
            first.loaded = loaded;
        }
    }
}

/// Why the comparison stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Stop {
    /// Every row decided at a look.
    Settled,
    /// The budget would be spent before another quartet.
    Budget,
    /// Interrupted, or too many blocks failed.
    Halted(String),
}

/// The blocks, quartet after quartet, with a look at each quartet of the schedule; the last look's
/// rows and why it stopped.
fn interleave(
    args: &Args,
    sides: &mut Sides,
    seed: u64,
    out: &Path,
    ran: &mut Vec<Ran>,
    notes: &mut Vec<String>,
    started: Instant,
) -> Result<(Looked, Stop), Fatal> {
    let mut looks: Option<Looks> = None;
    for q in 0.. {
        let order = rows::quartet_order(seed, q + 1);
        if q > 0 && sides.held.is_some() && args.launches.renews_at(q) {
            release(sides, ran, notes);
            sides.held = servers::hold(args.launches, sides, (out, q), notes)?;
        }
        for (i, side) in order[4 * q..].iter().enumerate() {
            let r = one_block(sides, *side, 4 * q + i, out, notes);
            if r.failed.is_some() && !ran.iter().any(|x| x.side == *side && x.failed.is_none()) {
                return Err(fatal(format!(
                    "side {side:?}'s first block failed: {}",
                    r.failed.unwrap_or_default()
                )));
            }
            ran.push(r);
        }
        let units = q + 1;
        let more = more_quartets(args, ran, started);
        let lk = looks.get_or_insert_with(|| Looks::new(units + more, args.band));
        if units >= lk.planned && more > 0 {
            lk.extend(units + more);
        }
        let planned = lk.planned;
        let stop = next_stop(args, ran, started, units, planned);
        let schedule = paired::look_schedule(planned);
        if schedule.contains(&units) || stop.is_some() {
            let l = looks.as_mut().map(|lk| {
                rows::judge_look(&blocks(ran), lk, stop.is_some(), args.rule.multiplicity)
            });
            let l = l.unwrap_or_default();
            if l.settled {
                return Ok((l, Stop::Settled));
            }
            if let Some(s) = stop {
                return Ok((l, s));
            }
        }
    }
    unreachable!("the loop returns")
}

/// Why the comparison stops after `units` quartets, if it does: interrupted, failing, or no time
/// for another quartet (or the planned quartets done).
fn next_stop(
    args: &Args,
    ran: &[Ran],
    started: Instant,
    units: usize,
    planned: usize,
) -> Option<Stop> {
    if crate::interrupt::interrupted() {
        return Some(Stop::Halted("interrupted".into()));
    }
    let failed = ran
        .iter()
        .rev()
        .take(4)
        .filter(|r| r.failed.is_some())
        .count();
    if failed == 4 {
        return Some(Stop::Halted("a whole quartet's blocks failed".into()));
    }
    let per_quartet = started.elapsed() / units as u32;
    let left = args.budget.saturating_sub(started.elapsed());
    (left < per_quartet || units >= planned.max(paired::FIRST_LOOK)).then_some(Stop::Budget)
}

/// Quartets the rest of the budget affords at the pace of the blocks so far (each side's first,
/// which warms its server up and asks the questions, left out).
fn more_quartets(args: &Args, ran: &[Ran], started: Instant) -> usize {
    let plain: Vec<f64> = ran.iter().skip(2).map(|r| r.seconds).collect();
    let per_block = if plain.is_empty() {
        started.elapsed().as_secs_f64() / ran.len().max(1) as f64
    } else {
        plain.iter().sum::<f64>() / plain.len() as f64
    };
    let left = args.budget.as_secs_f64() - started.elapsed().as_secs_f64();
    (left.max(0.0) / (4.0 * per_block.max(0.1))) as usize
}

/// One block of `side`, the `index`-th: measured on its side's server kept up, or launched,
/// measured and stopped; its figures recomputed from what it wrote (none when it failed, with why).
fn one_block(sides: &Sides, side: Side, index: usize, out: &Path, notes: &mut Vec<String>) -> Ran {
    let prepared = match side {
        Side::A => &sides.a,
        Side::B => &sides.b,
    };
    let tag = format!("{:03}-{}", index + 1, side_name(side));
    let dir = out.join("blocks").join(&tag);
    let first = index < 4 && !(index == 3 || index == 2);
    let quality = sides.quality && first;
    crate::progress::say(format_args!("rigaudit: ab: block {tag}"));
    let t = Instant::now();
    let mut block_notes = Vec::new();
    // A side's first block on a server just started warms it up (blocks 1 and 2 of a quartet
    // are one of each); with a launch a block, each side's first block reads what its server
    // mapped (servers kept up are read when the first pair starts and when it stops).
    let contract = match &sides.held {
        Some(_) if !sides.launches.fresh_at(index) => &sides.warmed,
        _ => &sides.contract,
    };
    let contract = (&contract.0, contract.1.as_str());
    let mut loaded = Vec::new();
    let read = (index < 2).then_some(&mut loaded);
    let at = (dir.as_path(), tag.as_str());
    let measured = match &sides.held {
        Some(held) => prepared.held_block(held.of(side), contract, quality, at, &mut block_notes),
        None => prepared.block(contract, quality, at, &mut block_notes, read),
    };
    let seconds = t.elapsed().as_secs_f64();
    for n in block_notes {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    let (figures, gbps, failed) = match measured {
        Ok(m) if m.stopped.is_none() => match bundle::open(&m.dir) {
            Ok(o) => {
                let (f, g) = figures_of(&bundle::load(&o));
                (f, g, None)
            }
            Err(e) => (Default::default(), None, Some(e.0)),
        },
        Ok(m) => (Default::default(), None, m.stopped),
        Err(e) => (Default::default(), None, Some(e.0)),
    };
    Ran {
        side,
        seconds,
        dir: crate::input::shown_path(&dir),
        machine_gbps: gbps,
        failed,
        block: Block { side, figures },
        loaded,
    }
}

/// A block's figures, recomputed from its records, and the median of its machine-speed probes.
fn figures_of(
    b: &rigaudit_audit::Bundle,
) -> (std::collections::BTreeMap<String, Option<f64>>, Option<f64>) {
    let (Some(c), Some(r)) = (&b.speed_contract, &b.speed_result) else {
        return (Default::default(), None);
    };
    let figures = rigaudit_audit::figures::recompute(&c.value, &r.value);
    let gbps = r.value.machine_reference.as_ref().and_then(|m| m.median());
    (figures, gbps)
}

/// The blocks measured so far, in order.
fn blocks(ran: &[Ran]) -> Vec<Block> {
    ran.iter().map(|r| r.block.clone()).collect()
}

/// A seed from the clock, when none is given (the report records it).
fn drawn_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `--out`, else `ab-<A's folder name>`, made and made absolute.
fn out_dir(args: &Args) -> Result<PathBuf, Fatal> {
    let out = args.out.clone().unwrap_or_else(|| {
        let name = args.a.file_name().map_or("bundle".into(), |n| {
            n.to_string_lossy().trim_end_matches(".tar.gz").to_string()
        });
        PathBuf::from(format!("ab-{name}"))
    });
    std::fs::create_dir_all(&out).at(out.display())?;
    Ok(out.canonicalize().unwrap_or(out))
}

/// Replay's options for one side: its `--set` values, the shared launch options.
fn replay_args(args: &Args, sets: &[String]) -> replay::Args {
    replay::Args {
        engine: args.engine.clone(),
        sets: sets.to_vec(),
        trust_executable: args.trust_executable,
        base_url: None,
        ready_timeout: args.ready_timeout,
        request_timeout: args.request_timeout,
        out: None,
        rule: args.rule,
        quiet: args.quiet,
        verbose: false,
        no_load_guard: args.no_load_guard,
        gpu: crate::measure::gpu::Choice::Off,
        allow_env: args.allow_env.clone(),
        confirm: false,
        runs: replay::auto::RunsMode::Recorded,
        budget: args.budget,
        boxes: args.boxes.clone(),
    }
}

/// One `--arg-a`/`--arg-b` as a flag and its value: `--x=1` is (`--x`, `1`), `--y` is (`--y`,
/// none). `Err` unless it is a long or short flag.
pub fn parse_arg(s: &str) -> Result<(String, Option<String>), Fatal> {
    let (flag, value) = match s.split_once('=') {
        Some((f, v)) => (f.to_string(), Some(v.to_string())),
        None => (s.to_string(), None),
    };
    let word = flag.trim_start_matches('-');
    let ok = flag.starts_with('-')
        && !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(fatal(format!(
            "--arg-a/--arg-b {s}: expected FLAG or FLAG=VALUE with FLAG like --name or -n"
        )));
    }
    Ok((flag, value))
}

/// `argv` with `flag` set: its value replaced where argv has it (`--x v` or `--x=v`), else the
/// flag (and its value) appended.
pub fn set_flag(argv: &mut Vec<String>, flag: &str, value: Option<&str>) {
    let eq = format!("{flag}=");
    if let Some(i) = argv.iter().position(|a| a.starts_with(&eq)) {
        argv[i] = match value {
            Some(v) => format!("{flag}={v}"),
            None => flag.to_string(),
        };
        return;
    }
    if let Some(i) = argv.iter().position(|a| a == flag) {
        let has_value = argv.get(i + 1).is_some_and(|n| !n.starts_with('-'));
        match (value, has_value) {
            (Some(v), true) => argv[i + 1] = v.to_string(),
            (Some(v), false) => argv.insert(i + 1, v.to_string()),
            (None, _) => {}
        }
        return;
    }
    argv.push(flag.to_string());
    argv.extend(value.map(str::to_string));
}

/// The edit `--arg-a`/`--arg-b` make to every rank's command.
fn editor(flags: Vec<(String, Option<String>)>) -> impl Fn(&mut Card) {
    move |card: &mut Card| {
        for c in &mut card.commands {
            for (f, v) in &flags {
                set_flag(&mut c.argv, f, v.as_deref());
            }
        }
    }
}

/// Both sides prepared (A's contract for both unless `--contract`), questions asked only when
/// both sides record them.
fn prepare_sides(args: &Args, notes: &mut Vec<String>) -> Result<Sides, Fatal> {
    let parse =
        |v: &[String]| -> Result<Vec<_>, Fatal> { v.iter().map(|s| parse_arg(s)).collect() };
    let (flags_a, flags_b) = (parse(&args.arg_a)?, parse(&args.arg_b)?);
    let b_path = args.b.clone().unwrap_or_else(|| args.a.clone());
    let side = |path: &Path, sets: &[String], flags, notes: &mut Vec<String>| {
        prepared::prepare(path, &replay_args(args, sets), &editor(flags), notes)
            .map_err(|e| fatal(format!("{}: {}", crate::input::shown_path(path), e.0)))
    };
    let a = side(&args.a, &args.set_a, flags_a, notes)?;
    let b = side(&b_path, &args.set_b, flags_b, notes)?;
    if args.b.is_none() && args.set_b.is_empty() && args.arg_b.is_empty() {
        notes.push("A and B are one setup (no B, --set-b or --arg-b): an A/A comparison, which measures this machine's pair spread".into());
    }
    let contract = match &args.contract {
        Some(p) => crate::measure::read_speed_contract(p)?,
        None => {
            let (c, t) = a.contract();
            (c.clone(), t.to_string())
        }
    };
    let quality = !args.no_quality && a.has_quality() && b.has_quality();
    let mut warmed = contract.0.clone();
    warmed.warmups = 0;
    let text = serde_json::to_string_pretty(&warmed).unwrap_or_default();
    Ok(Sides {
        a,
        b,
        contract,
        warmed: (warmed, text),
        quality,
        held: None,
        launches: args.launches,
    })
}

/// `OUT/ab.json`: the seed, why it stopped, how often the servers started, and every block
/// (side, seconds, folder, machine speed, why it failed), written whole or not at all.
fn write_record(
    out: &Path,
    seed: u64,
    ran: &[Ran],
    stop: &Stop,
    kept_up: Option<Launches>,
) -> Result<(), Fatal> {
    let record = serde_json::json!({
        "format": "rigaudit/ab/1",
        "seed": seed,
        "stopped": stop,
        "servers": match kept_up {
            Some(Launches::Once) => "kept-up",
            Some(_) => "each-quartet",
            None => "each-block",
        },
        "blocks": ran,
    });
    let text = serde_json::to_string_pretty(&record).unwrap_or_default();
    crate::output::write_atomic(&out.join("ab.json"), text.as_bytes())
}

/// The first block of `side` that measured, as a bundle.
fn first_bundle(ran: &[Ran], side: Side) -> Option<rigaudit_audit::Bundle> {
    let r = ran.iter().find(|r| r.side == side && r.failed.is_none())?;
    let dir = Path::new(&r.dir).join("bundle");
    bundle::open(&dir).ok().map(|o| bundle::load(&o))
}

/// What differs between the sides as their first blocks ran them: diff's setup comparison (the
/// commands as edited, what the servers said at start, the contracts).
fn setup_changes(
    ran: &[Ran],
    sides: &Sides,
    args: &Args,
    notes: &mut Vec<String>,
) -> Vec<rigaudit_audit::verdict::SetupChange> {
    for (side, p) in [("A", &sides.a), ("B", &sides.b)] {
        for (rank, argv) in p.shown.iter().enumerate() {
            notes.push(format!("side {side} rank {rank} ran: {}", argv.join(" ")));
        }
    }
    let (Some(a), Some(b)) = (first_bundle(ran, Side::A), first_bundle(ran, Side::B)) else {
        return Vec::new();
    };
    let tol = audit_replay::Tolerance {
        rule: args.rule,
        ..audit_replay::Tolerance::default()
    };
    let policy = rigaudit_audit::diff::SetupPolicy {
        fail: Default::default(),
    };
    let none = Findings::default();
    rigaudit_audit::diff::diff((&a, &b), [&none, &none], &tol, &policy).setup
}

/// The quality rows: each side's first block's answers, paired per question (McNemar), in the
/// words of change; none when the questions were not asked.
fn quality_rows(
    ran: &[Ran],
    sides: &Sides,
    args: &Args,
) -> Vec<rigaudit_audit::verdict::Comparison> {
    if !sides.quality {
        return Vec::new();
    }
    let (Some(a), Some(b)) = (first_bundle(ran, Side::A), first_bundle(ran, Side::B)) else {
        return Vec::new();
    };
    let tol = audit_replay::Tolerance {
        rule: args.rule,
        ..audit_replay::Tolerance::default()
    };
    audit_replay::compare(&a, &b, &tol)
        .comparisons
        .into_iter()
        .filter(|c| c.key.starts_with("quality."))
        .map(rigaudit_audit::diff::as_change)
        .collect()
}

/// The session's lines: blocks, order and seed, looks, why it stopped, bands, failed blocks.
fn session_lines(
    ran: &[Ran],
    seed: u64,
    looked: &Looked,
    stop: &Stop,
    started: Instant,
) -> Vec<String> {
    let order: String = ran
        .chunks(4)
        .map(|q| {
            q.iter()
                .map(|r| format!("{:?}", r.side))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut lines = vec![format!(
        "{} blocks in {} quartets in {:.0} s (seed {seed}: {order}); stopped: {}",
        ran.len(),
        ran.len() / 4,
        started.elapsed().as_secs_f64(),
        match stop {
            Stop::Settled => "every figure decided".to_string(),
            Stop::Budget => "the budget spent (another quartet would not fit)".to_string(),
            Stop::Halted(why) => why.clone(),
        }
    )];
    if ran.len() / 4 < paired::FIRST_LOOK {
        lines.push(format!(
            "the budget afforded {} quartet(s) at this pace; the first look needs {}: give a longer --budget",
            ran.len() / 4,
            paired::FIRST_LOOK
        ));
    }
    for (kind, (pct, auto)) in &looked.bands {
        lines.push(format!(
            "{kind}: band ±{pct:.1} % ({})",
            if *auto {
                "the change this run resolves: twice the 95 % half-width its planned quartets reach at the pair spread measured (each variance moderated toward the rows' prior), at most 10 %; --band sets it"
            } else {
                "--band"
            }
        ));
    }
    for r in ran.iter().filter(|r| r.failed.is_some()) {
        let why = r.failed.as_deref().unwrap_or_default();
        lines.push(format!("block {} failed: {why}", r.dir));
    }
    let gbps: Vec<String> = ran
        .iter()
        .map(|r| r.machine_gbps.map_or("-".into(), |g| format!("{g:.1}")))
        .collect();
    lines.push(format!(
        "machine-speed reference per block, GB/s: {}",
        gbps.join(" ")
    ));
    lines
}

/// The decision rule as the report states it.
fn rule_lines(looked: &Looked, args: &Args) -> Vec<String> {
    let mut lines = vec![
        "paired: each ABBA quartet's change is the mean log of its B blocks minus that of its A blocks (a linear drift cancels); quartets are the units, a positive lag-1 autocorrelation widens the interval, variances shrunk toward a prior fitted to every row".to_string(),
        format!("unchanged: the interval inside ±band at level 1 - 2 × 5 % × share; changed: p / share below 5 % after {} over the rows and the estimate beyond the band; the looks (after quartets 3, 4, 6, 8, 12, ...) share the error rates: half over the interim looks, the rest at the last", args.rule.multiplicity.name()),
        "a row's first decision stands; the comparison stops once every row is decided or the budget is spent".to_string(),
    ];
    if looked.bands.values().any(|(_, auto)| *auto) {
        lines.push(
            "bands: the change this run resolves (each kind's line in the session findings)".into(),
        );
    }
    lines
}

/// A side's name in folder names and bundle ids: `a`, `b`.
fn side_name(side: Side) -> &'static str {
    match side {
        Side::A => "a",
        Side::B => "b",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_flag_is_replaced_where_the_command_has_it_and_appended_where_not() {
        let mut a = argv("engine serve m --threads 2 --port=8");
        set_flag(&mut a, "--threads", Some("1"));
        set_flag(&mut a, "--port", Some("9"));
        set_flag(&mut a, "--decode-delay-us", Some("500"));
        set_flag(&mut a, "--no-mmap", None);
        assert_eq!(
            a,
            argv("engine serve m --threads 1 --port=9 --decode-delay-us 500 --no-mmap")
        );
        let mut b = argv("engine --verbose --x");
        set_flag(&mut b, "--verbose", Some("2"));
        assert_eq!(
            b,
            argv("engine --verbose 2 --x"),
            "a value after a bare flag"
        );
    }

    #[test]
    fn only_a_flag_word_is_taken() {
        assert_eq!(
            parse_arg("--decode-delay-us=500").unwrap(),
            ("--decode-delay-us".into(), Some("500".into()))
        );
        assert_eq!(parse_arg("-t").unwrap(), ("-t".into(), None));
        for bad in ["threads=2", "--", "--a b", "--x;y=1", ""] {
            assert!(parse_arg(bad).is_err(), "{bad}");
        }
    }
}
