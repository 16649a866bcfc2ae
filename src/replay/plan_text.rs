//! `replay --plan`: what would run where, shown and not run: each rank's box, argv and
//! environment (every word quoted as it would be sent) and the digests that would be checked.

use super::remote::{box_of, mappings, BoxArgs, Mappings};
use crate::fatal::Fatal;
use crate::input::shown;
use crate::ssh::words::quote;
use crate::ssh::Target;
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;

/// Fills `<name>` placeholders that `sets` names, in one pass (for the plan only; the launch
/// fills through `command::resolve`).
pub(super) fn fill_shown(s: &str, sets: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        match after.find(['<', '>']) {
            Some(close) if after.as_bytes()[close] == b'>' && close > 0 => {
                out.push_str(&rest[..open]);
                match sets.get(&after[..close]) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The program a rank would run on its box (or here): `--box-engine`, else `--engine` (the
/// bundled engine: this rigaudit, run as `rigaudit __engine`).
pub(super) fn planned_program(m: &Mappings, box_name: Option<&String>, engine: &str) -> String {
    match box_name.and_then(|b| m.engines.get(b)) {
        Some(e) => e.clone(),
        None if engine == "bundled" => std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "rigaudit".into()),
        None => engine.to_string(),
    }
}

/// A word of the plan: quoted as it would be sent, control characters (newlines too) escaped,
/// so a page's item cannot draw lines of its own on the terminal.
pub(super) fn word(w: &str) -> String {
    crate::input::shown_n(&quote(w), 1 << 16)
}

/// `replay --plan`: every rank with its box and where that box is reached, the program and
/// argv (each word quoted as it would be sent), the environment (a variable that would be
/// refused is marked), and the digests that would be checked before anything starts.
pub fn plan_text(
    card: &Card,
    a: &BoxArgs,
    sets: &BTreeMap<String, String>,
    engine: &str,
    allow_env: &[String],
) -> Result<String, Fatal> {
    let m = mappings(card, a)?;
    let mut out = String::new();
    for c in &card.commands {
        let box_name = c.box_name.clone().or_else(|| box_of(card, c.rank));
        let target = box_name.as_ref().and_then(|b| m.targets.get(b));
        let place = match (&box_name, target) {
            (Some(b), Some(t)) => format!("box {}, on {t} over ssh", shown(b)),
            (Some(b), None) => format!("box {}, here (not mapped with --box)", shown(b)),
            (None, _) => "no box named, here".to_string(),
        };
        out.push_str(&format!("rank {} ({place})\n", c.rank));
        let program = planned_program(&m, box_name.as_ref(), engine);
        let mut words: Vec<String> = c
            .argv
            .iter()
            .skip(1)
            .map(|w| word(&fill_shown(w, sets)))
            .collect();
        if engine == "bundled" {
            words.insert(0, super::command::ENGINE_SUBCOMMAND.into());
        }
        out.push_str(&format!("  run:  {} {}\n", word(&program), words.join(" ")));
        out.push_str(&format!(
            "  argv as recorded: {}\n",
            c.argv.iter().map(|w| word(w)).collect::<Vec<_>>().join(" ")
        ));
        for (k, v) in &c.env {
            let filled = fill_shown(v, sets);
            let mark = match super::command::env_refusal(k, v, &filled, allow_env) {
                Some(why) => format!("  (refused, not set: {why})"),
                None => String::new(),
            };
            out.push_str(&format!(
                "  env:  {}={}{mark}\n",
                crate::input::shown(k),
                word(&filled)
            ));
        }
        out.push_str(&plan_checks(card, box_name.as_deref(), target, &program));
    }
    Ok(out)
}

/// The digests `plan` would check for one rank.
fn plan_checks(
    card: &Card,
    box_name: Option<&str>,
    target: Option<&Target>,
    program: &str,
) -> String {
    let mut out = String::new();
    let digest = card.engine.binary.as_ref().map_or(
        "none recorded (refused unless --trust-executable)".to_string(),
        |b| format!("{} (engine.binary {})", shown(&b.sha256), shown(&b.path)),
    );
    let where_ = if target.is_some() {
        "on the box, with sha256sum"
    } else {
        "here"
    };
    out.push_str(&format!(
        "  check: sha256 of {} {where_} = {digest}\n",
        word(program)
    ));
    if let Some(n) = &card.nccl {
        let d = box_name
            .and_then(|b| n.per_box.iter().find(|x| x.box_name == b))
            .map_or("no digest recorded for this box".to_string(), |x| {
                shown(&x.sha256)
            });
        out.push_str(&format!(
            "  check: NCCL {} {} = sha256 {d}, version {} (in the rank's LD_LIBRARY_PATH; read, never loaded)\n",
            shown(&n.file),
            if target.is_some() { "on the box" } else { "(rehash --file nccl=PATH here)" },
            shown(&n.version)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::SshArgs;

    /// A page's argv item with a newline and an escape sequence cannot draw lines of its own in
    /// the plan.
    #[test]
    fn remote_plan_escapes_what_the_page_wrote() {
        let card: Card = serde_json::from_value(serde_json::json!({
            "hardware": {"description": "t", "boxes": [{"name": "a", "rank": 0}]},
            "engine": {"name": "e"},
            "checkpoint": {"repo": "o/m", "revision": "r"},
            "ranks": 1,
            "commands": [{"rank": 0, "box": "a",
                "argv": ["e", "x\nrank 9 (box evil, on evil over ssh)", "\u{1b}[2J"],
                "env": {"K": "v\nenv:  LD_PRELOAD='/evil.so'"}}],
            "sampling": {"defaults": {}, "defaults_source": "t"},
            "measured": "2025-01-01T00:00:00Z"
        }))
        .unwrap();
        let a = BoxArgs {
            ssh: SshArgs {
                boxes: vec!["a=h".into()],
                ..SshArgs::default()
            },
            ..BoxArgs::default()
        };
        let text = plan_text(&card, &a, &BTreeMap::new(), "/bin/e", &[]).unwrap();
        assert!(!text.contains('\u{1b}'), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("rank ")).count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("  env:")).count(),
            1,
            "{text}"
        );
        assert!(text.contains("'x\\nrank 9 (box evil"), "{text}");
    }

    #[test]
    fn remote_plan_fills_placeholders_once() {
        let sets = BTreeMap::from([
            ("a".to_string(), "<b>".to_string()),
            ("b".to_string(), "B".to_string()),
        ]);
        assert_eq!(fill_shown("x<a>y<b><c><|eot|>", &sets), "x<b>yB<c><|eot|>");
        assert_eq!(fill_shown("<<a>> a<b", &sets), "<<b>> a<b");
    }
}
