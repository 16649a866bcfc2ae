//! What differs in the setup of two bundles: the card (each rank's flags and variables, where it
//! runs), what the server said at start, the contract; ranks that differ alike grouped.

use super::*;

/// Every setup difference of the two bundles, in subject order.
pub fn setup_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let mut setup = Vec::new();
    if let (Some(x), Some(y)) = (&a.card, &b.card) {
        setup.extend(card_changes(x, y));
    }
    setup.extend(server_changes(a, b));
    setup.extend(contract_changes(a, b));
    setup.sort_by_key(|c| c.subject);
    group_ranks(setup)
}

/// Identical changes of several ranks (one subject, the same change after `rank N `, the same A
/// and B values) as one row, `ranks 0, 1 env KV (added)`, its places joined: a change made on
/// every box of a two-box page is one difference, not one per box.
pub(super) fn group_ranks(changes: Vec<SetupChange>) -> Vec<SetupChange> {
    let mut out: Vec<(Vec<u32>, SetupChange)> = Vec::new();
    for c in changes {
        let Some((rank, rest)) = rank_of(&c.what) else {
            out.push((Vec::new(), c));
            continue;
        };
        let same = |(ranks, g): &&mut (Vec<u32>, SetupChange)| {
            !ranks.is_empty()
                && rank_of(&g.what).is_some_and(|(_, r)| r == rest)
                && (g.subject, &g.a, &g.b) == (c.subject, &c.a, &c.b)
        };
        match out.iter_mut().find(|x| same(x)) {
            Some((ranks, g)) => {
                ranks.push(rank);
                g.where_a = join_places(&g.where_a, &c.where_a);
                g.where_b = join_places(&g.where_b, &c.where_b);
            }
            None => out.push((vec![rank], c)),
        }
    }
    out.into_iter()
        .map(|(ranks, mut c)| {
            if ranks.len() > 1 {
                let rest = rank_of(&c.what).map_or(String::new(), |(_, r)| r.to_string());
                let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
                c.what = format!("ranks {} {rest}", list.join(", "));
            }
            c
        })
        .collect()
}

/// The rank a change of one rank's command names, and the rest of its words: `rank 1 env KV
/// (added)` is (1, `env KV (added)`).
pub(super) fn rank_of(what: &str) -> Option<(u32, &str)> {
    let (n, rest) = what.strip_prefix("rank ")?.split_once(' ')?;
    Some((n.parse().ok()?, rest))
}

/// Places (`file pointer`) joined, the file named once when they share it: `card.json
/// /commands/0/env, /commands/1/env`.
pub(super) fn join_places(all: &str, next: &str) -> String {
    let file = |p: &str| p.split_once(' ').map(|(f, _)| f.to_string());
    match (file(all), next.split_once(' ')) {
        (Some(f), Some((g, pointer))) if f == g => format!("{all}, {pointer}"),
        _ => format!("{all}, {next}"),
    }
}

/// A value as a short string (`absent` for none).
pub(super) fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "absent".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Every leaf of a JSON value by pointer (arrays of scalars are one leaf).
pub(super) fn leaves(v: &Value, at: String, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(xs) if xs.iter().any(|x| x.is_object() || x.is_array()) => {
            for (i, x) in xs.iter().enumerate() {
                leaves(x, format!("{at}/{i}"), out);
            }
        }
        Value::Array(xs) if xs.is_empty() => {
            // An empty list records nothing, like an absent one.
            out.insert(at, Value::Null);
        }
        _ => {
            out.insert(at, v.clone());
        }
    }
}

/// The leaves that differ between two JSON values, skipping pointers under `skip`.
pub(super) fn json_changes(
    subject_of: &dyn Fn(&str) -> Subject,
    label: &str,
    (a, fa): (&Value, &str),
    (b, fb): (&Value, &str),
    skip: &[&str],
) -> Vec<SetupChange> {
    let (mut la, mut lb) = (BTreeMap::new(), BTreeMap::new());
    leaves(a, String::new(), &mut la);
    leaves(b, String::new(), &mut lb);
    let keys: BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
    keys.into_iter()
        .filter(|k| !skip.iter().any(|s| k.starts_with(s)))
        .filter(|k| la.get(*k) != lb.get(*k))
        .filter(|k| {
            // Absent and null are the same record.
            !matches!(
                (la.get(*k), lb.get(*k)),
                (None | Some(Value::Null), None | Some(Value::Null))
            )
        })
        .map(|k| SetupChange {
            subject: subject_of(k),
            what: format!("{label} {}", k.trim_start_matches('/').replace('/', ".")),
            a: show(la.get(k)),
            b: show(lb.get(k)),
            where_a: format!("{fa} {k}"),
            where_b: format!("{fb} {k}"),
        })
        .collect()
}

/// The subject of a card field by its pointer.
pub(super) fn card_subject(pointer: &str) -> Subject {
    let top = pointer
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    match top {
        "engine" => Subject::Engine,
        "nccl" => Subject::Nccl,
        "checkpoint" => Subject::Checkpoint,
        "sampling" if !pointer.ends_with("_source") => Subject::Sampling,
        "hardware" if !pointer.ends_with("/description") => Subject::Hardware,
        "ranks" => Subject::Command,
        _ => Subject::Text,
    }
}

/// The two cards' differences: every field, then each rank's command.
pub(super) fn card_changes(a: &Loaded<Card>, b: &Loaded<Card>) -> Vec<SetupChange> {
    let (va, vb) = (
        serde_json::to_value(&a.value).unwrap_or_default(),
        serde_json::to_value(&b.value).unwrap_or_default(),
    );
    let mut out = json_changes(
        &card_subject,
        "card",
        (&va, &a.path),
        (&vb, &b.path),
        &["/commands", "/measured", "/citations"],
    );
    let ranks: BTreeSet<u32> = a
        .value
        .commands
        .iter()
        .chain(&b.value.commands)
        .map(|c| c.rank)
        .collect();
    for rank in ranks {
        let find = |c: &Card| c.commands.iter().position(|x| x.rank == rank);
        let (ia, ib) = (find(&a.value), find(&b.value));
        let (ca, cb) = (
            ia.map(|i| &a.value.commands[i]),
            ib.map(|i| &b.value.commands[i]),
        );
        let wa = ia.map_or(format!("{} /commands", a.path), |i| {
            format!("{} /commands/{i}", a.path)
        });
        let wb = ib.map_or(format!("{} /commands", b.path), |i| {
            format!("{} /commands/{i}", b.path)
        });
        out.extend(command_changes(rank, ca, cb, &wa, &wb));
    }
    out
}

/// A command's argv as flags (`--flag value`, `--flag=value`, `-f value`; a flag followed by
/// another flag or nothing has no value) and positional arguments (after the executable).
pub(super) fn flags(argv: &[String]) -> (BTreeMap<String, String>, Vec<String>) {
    let (mut f, mut pos) = (BTreeMap::new(), Vec::new());
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.starts_with('-') && a.len() > 1 {
            if let Some((k, v)) = a.split_once('=') {
                f.insert(k.to_string(), v.to_string());
            } else if argv.get(i + 1).is_some_and(|n| !n.starts_with('-')) {
                f.insert(a.clone(), argv[i + 1].clone());
                i += 1;
            } else {
                f.insert(a.clone(), "(set)".into());
            }
        } else {
            pos.push(a.clone());
        }
        i += 1;
    }
    (f, pos)
}

/// Differences of two maps, named `label KEY`.
pub(super) fn map_changes(
    label: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
    (wa, wb): (&str, &str),
) -> Vec<SetupChange> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let kind = match (a.get(k), b.get(k)) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            };
            SetupChange {
                subject: Subject::Command,
                what: format!("{label} {k} ({kind})"),
                a: a.get(k).cloned().unwrap_or_else(|| "absent".into()),
                b: b.get(k).cloned().unwrap_or_else(|| "absent".into()),
                where_a: wa.to_string(),
                where_b: wb.to_string(),
            }
        })
        .collect()
}

/// One changed part of a rank's command, with where each side records it (`wa`/`wb` + `at`).
pub(super) fn command_change(
    what: String,
    x: String,
    y: String,
    wa: &str,
    wb: &str,
    at: &str,
) -> SetupChange {
    SetupChange {
        subject: Subject::Command,
        what,
        a: x,
        b: y,
        where_a: format!("{wa}{at}"),
        where_b: format!("{wb}{at}"),
    }
}

pub(super) fn command_changes(
    rank: u32,
    a: Option<&RankCommand>,
    b: Option<&RankCommand>,
    wa: &str,
    wb: &str,
) -> Vec<SetupChange> {
    let (Some(a), Some(b)) = (a, b) else {
        let has = |c: Option<&RankCommand>| c.map_or("absent".into(), |c| c.argv.join(" "));
        let what = format!("rank {rank} command");
        return vec![command_change(what, has(a), has(b), wa, wb, "")];
    };
    let mut out = where_it_runs(rank, a, b, wa, wb);
    let ((fa, pa), (fb, pb)) = (flags(&a.argv), flags(&b.argv));
    let argv = (format!("{wa}/argv"), format!("{wb}/argv"));
    out.extend(map_changes(
        &format!("rank {rank} flag"),
        &fa,
        &fb,
        (&argv.0, &argv.1),
    ));
    if pa != pb {
        let what = format!("rank {rank} positional arguments");
        out.push(command_change(
            what,
            pa.join(" "),
            pb.join(" "),
            wa,
            wb,
            "/argv",
        ));
    }
    let env = (format!("{wa}/env"), format!("{wb}/env"));
    out.extend(map_changes(
        &format!("rank {rank} env"),
        &a.env,
        &b.env,
        (&env.0, &env.1),
    ));
    out
}

/// A rank's executable and box, when they differ.
pub(super) fn where_it_runs(
    rank: u32,
    a: &RankCommand,
    b: &RankCommand,
    wa: &str,
    wb: &str,
) -> Vec<SetupChange> {
    let absent = |x: Option<&String>| x.cloned().unwrap_or_else(|| "absent".into());
    let mut out = Vec::new();
    let (ea, eb) = (a.argv.first(), b.argv.first());
    if ea != eb {
        let what = format!("rank {rank} executable");
        out.push(command_change(
            what,
            absent(ea),
            absent(eb),
            wa,
            wb,
            "/argv/0",
        ));
    }
    if a.box_name != b.box_name {
        let (x, y) = (absent(a.box_name.as_ref()), absent(b.box_name.as_ref()));
        out.push(command_change(
            format!("rank {rank} box"),
            x,
            y,
            wa,
            wb,
            "/box",
        ));
    }
    out
}

/// What a server's start lines and `/v1/models` say, as named values.
pub(super) fn server_said(b: &Bundle) -> Option<(String, BTreeMap<String, String>)> {
    let r = b.speed_result.as_ref()?;
    let lines = &r.value.server.start_lines;
    let info = startline::parse(lines);
    let mut m = BTreeMap::new();
    if let Some(w) = startline::models_window(&r.value.server.models).or(info.window) {
        m.insert("window".to_string(), w.to_string());
    }
    if let Some(s) = info.slots {
        m.insert("slots".into(), s.to_string());
    }
    if let Some(v) = info.engine_version {
        m.insert("engine version".into(), v);
    }
    if let Some(v) = info.nccl {
        m.insert("NCCL version".into(), v);
    }
    for (k, v) in info.sampling {
        m.insert(format!("default {k}"), v.to_string());
    }
    let text = lines.join("\n");
    for (name, pat) in START_PATTERNS {
        if let Some(c) = Regex::new(pat).ok().and_then(|r| r.captures(&text)) {
            let v = c.iter().skip(1).flatten().next().map(|m| m.as_str());
            m.insert(name.to_string(), v.unwrap_or("yes").to_string());
        }
    }
    Some((r.path.clone(), m))
}

/// Further things start lines say, as (name, pattern with one capture).
pub(super) const START_PATTERNS: &[(&str, &str)] = &[
    (
        "KV cache type",
        r"(?i)\b(?:kv(?:[ _-]cache)?(?:[ _-]type)?|cache)[ =:]+(bf16|fp16|f16|f32|fp32|fp8(?:_e4m3|_e5m2)?|q8_0|q4_0|q4_1|q5_0|q5_1|int8|int4)\b",
    ),
    (
        "drafts",
        r"(?i)\b([A-Za-z0-9_-]+) drafts\b|\b(speculative[^,;\n]*)",
    ),
    ("patches", r"(?i)\+\s*(\d+) patches\b"),
    (
        "engine build",
        r"(?i)\(([0-9a-f]{7,40})\)|\bnative ([0-9a-f]{7,40})\b",
    ),
    ("tensor parallel", r"(?i)\btensor parallel (\d+)"),
];

pub(super) fn server_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let (Some((fa, ma)), Some((fb, mb))) = (server_said(a), server_said(b)) else {
        return Vec::new();
    };
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    keys.into_iter()
        .filter(|k| ma.get(*k) != mb.get(*k))
        .map(|k| SetupChange {
            subject: if k.starts_with("default ") {
                Subject::Sampling
            } else {
                Subject::Server
            },
            what: format!("server {k}"),
            a: ma.get(k).cloned().unwrap_or_else(|| "not said".into()),
            b: mb.get(k).cloned().unwrap_or_else(|| "not said".into()),
            where_a: format!("{fa} /server"),
            where_b: format!("{fb} /server"),
        })
        .collect()
}

pub(super) fn contract_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let subject = |_: &str| Subject::Contract;
    let mut out = Vec::new();
    if let (Some(x), Some(y)) = (&a.speed_contract, &b.speed_contract) {
        let (vx, vy) = (
            serde_json::to_value(&x.value).unwrap_or_default(),
            serde_json::to_value(&y.value).unwrap_or_default(),
        );
        let skip = [
            "/sampling_source",
            "/server/slots_source",
            "/server/window_source",
        ];
        out.extend(json_changes(
            &subject,
            "speed contract",
            (&vx, &x.path),
            (&vy, &y.path),
            &skip,
        ));
    }
    for t in &a.quality {
        let Some(u) = b.quality.iter().find(|u| u.test == t.test) else {
            continue;
        };
        if let (Some(x), Some(y)) = (&t.contract, &u.contract) {
            let (vx, vy) = (
                serde_json::to_value(&x.value).unwrap_or_default(),
                serde_json::to_value(&y.value).unwrap_or_default(),
            );
            let label = format!("quality contract {}", t.test);
            out.extend(json_changes(
                &subject,
                &label,
                (&vx, &x.path),
                (&vy, &y.path),
                &[],
            ));
        }
    }
    out
}

/// The setup section as JSON, for reports.
pub fn setup_json(changes: &[SetupChange]) -> Value {
    json!(changes)
}
