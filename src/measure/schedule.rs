//! The order of the counted tries: every step's first run, then every step's second, and so on
//! (decode prompts, prefill depths, concurrency levels, context depths, in that order within a
//! round), not one step's runs back to back.
//!
//! Why: on a shared machine speed moves with a correlation time of seconds (on the 2-core VM of
//! issue 9 a step's three back-to-back runs agreed within 7-8 % (CV) while the same step ran
//! 200 tok/s in one session and 340 in the next). Runs taken back to back sample one moment of
//! the machine: their spread understates the noise, so replay's floor (twice the runs' CV) was too
//! tight and its Welch's test too sure. Runs spread over the whole session sample as many moments
//! as the session lasts, and their spread carries that noise into the floor.

use super::run::{Part, Run, SizedSteps, SizedTry};
use super::write::Saver;
use super::{prompts, Plan};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::speed::ConcPart;
use std::collections::BTreeMap;

/// One step of the contract, its window checked.
pub enum Counted<'c> {
    /// Single-request decode of a built-in prompt.
    Decode {
        prompt_id: String,
        prompt: &'static str,
        runs: u32,
    },
    /// A prefill or context step: a completion prompt of exactly `depth` tokens, sized before
    /// the step's first try (so a server that fails then has the steps before it measured).
    Sized {
        part: Part,
        depth: u64,
        prompt: Option<String>,
        tokenizer: Option<&'c tokenizers::Tokenizer>,
        max_tokens: u64,
        runs: u32,
        min_try_ms: Option<u64>,
    },
    /// Rounds of `level` requests released together.
    Conc {
        part: &'c ConcPart,
        prompt: &'static str,
        level: u32,
    },
}

impl Counted<'_> {
    /// How many counted tries the step takes.
    pub fn runs(&self) -> u32 {
        match self {
            Counted::Decode { runs, .. } | Counted::Sized { runs, .. } => *runs,
            Counted::Conc { part, .. } => part.rounds,
        }
    }
}

/// The decode steps: one per prompt of the contract (a prompt id with no built-in text is fatal).
pub fn decode_steps<'c>(r: &Run<'c>, p: &Plan) -> Result<Vec<Counted<'c>>, Fatal> {
    r.c.prompt_ids
        .iter()
        .map(|pid| match prompts::builtin(pid) {
            Some(prompt) => Ok(Counted::Decode {
                prompt_id: pid.clone(),
                prompt,
                runs: r.c.runs,
            }),
            None => Err(fatal(format!(
                "{}: no built-in prompt '{pid}' (built in: code, prose)",
                p.contract_origin
            ))),
        })
        .collect()
}

/// The prefill or context steps whose prompt and reply fit the window; a step that does not fit
/// gets its fits row and is not sent (context steps record a fits row for every depth, prefill
/// only for those that do not fit).
pub fn sized_steps<'c>(r: &mut Run<'_>, part: Part, sized: SizedSteps<'c>) -> Vec<Counted<'c>> {
    sized
        .depths
        .iter()
        .filter(|&&depth| r.fits_window(part, depth, sized.max_tokens))
        .map(|&depth| Counted::Sized {
            part,
            depth,
            prompt: None,
            tokenizer: sized.tokenizer,
            max_tokens: sized.max_tokens,
            runs: sized.runs,
            min_try_ms: sized.min_try_ms,
        })
        .collect()
}

/// The concurrency steps: one per level.
pub fn conc_steps(cc: &ConcPart) -> Vec<Counted<'_>> {
    let prompt = prompts::builtin(&cc.prompt).unwrap_or("Write a long essay.");
    cc.levels
        .iter()
        .map(|&level| Counted::Conc {
            part: cc,
            prompt,
            level,
        })
        .collect()
}

/// Tries the steps in rounds: round `n` tries every step that has an `n`th run, in the order
/// given; the bundle is saved after every round, and a run that stops keeps what it measured.
pub fn run_rounds(r: &mut Run, steps: &mut [Counted], p: &Plan, save: &Saver) -> Result<(), Fatal> {
    let rounds = steps.iter().map(Counted::runs).max().unwrap_or(0);
    for n in 1..=rounds {
        for step in steps.iter_mut().filter(|s| s.runs() >= n) {
            let name = step_name(step, n);
            r.bar.set_message(name.clone());
            size_prompt(r, step, p);
            try_step(r, step, &name, n);
            if r.stopped(p) {
                save.save(r, false)?;
                return Ok(());
            }
        }
        save.save(r, false)?;
    }
    Ok(())
}

/// The load guard's name of a step's `n`th try: `decode/code/1`, `prefill/512/2`, `conc/4/3`.
pub fn step_name(step: &Counted, n: u32) -> String {
    match step {
        Counted::Decode { prompt_id, .. } => format!("decode/{prompt_id}/{n}"),
        Counted::Sized { part, depth, .. } => format!("{}/{depth}/{n}", part.name()),
        Counted::Conc { level, .. } => format!("conc/{level}/{n}"),
    }
}

/// Sizes a prefill or context step's prompt before its first try (or takes the one an earlier
/// measurement sized on this server, [`Plan::sized`]); a prompt that cannot be sized stops the run, with the plan's liveness check asked first for half a second (an engine that
/// exited during a sizing request is why, not the request).
fn size_prompt(r: &mut Run, step: &mut Counted, p: &Plan) {
    fn lock(s: &super::SizedPrompts) -> std::sync::MutexGuard<'_, BTreeMap<u64, String>> {
        s.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
    if let Counted::Sized {
        depth,
        prompt: prompt @ None,
        tokenizer,
        ..
    } = step
    {
        let earlier = p.sized.as_ref().and_then(|s| lock(s).get(depth).cloned());
        if let Some(text) = earlier {
            *prompt = Some(text);
            return;
        }
        match r.sized_prompt(*tokenizer, *depth) {
            Ok(text) => {
                if let Some(s) = &p.sized {
                    lock(s).insert(*depth, text.clone());
                }
                *prompt = Some(text)
            }
            Err(e) => {
                for _ in 0..5 {
                    if r.stopped(p) {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                r.stop(e.0)
            }
        }
    }
}

/// One counted try of a step, `name` for the load guard (none for a step whose prompt is
/// unsized, or once the run has stopped).
fn try_step(r: &mut Run, step: &Counted, name: &str, n: u32) {
    if r.halted() {
        return;
    }
    match step {
        Counted::Decode {
            prompt_id, prompt, ..
        } => r.guarded(name, |r| r.decode_run(prompt_id, prompt, n)),
        Counted::Sized {
            part,
            depth,
            prompt: Some(prompt),
            max_tokens,
            min_try_ms,
            ..
        } => {
            let step = SizedTry {
                part: part.name(),
                depth: *depth,
                max_tokens: *max_tokens,
                min_try_ms: *min_try_ms,
            };
            r.guarded(name, |r| r.sized_run(&step, prompt, n))
        }
        Counted::Sized { prompt: None, .. } => {}
        Counted::Conc {
            part,
            prompt,
            level,
        } => r.guarded(name, |r| r.conc_round(part, prompt, *level, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conc() -> ConcPart {
        serde_json::from_value(serde_json::json!({
            "levels": [1, 4], "rounds": 2, "max_tokens": 8, "prompt": "prose"
        }))
        .unwrap()
    }

    #[test]
    fn a_step_s_tries_are_named_as_the_load_guard_and_replay_read_them() {
        let cc = conc();
        let steps = conc_steps(&cc);
        assert_eq!(steps.len(), 2);
        assert_eq!(step_name(&steps[1], 2), "conc/4/2");
        let d = Counted::Decode {
            prompt_id: "code".into(),
            prompt: "x",
            runs: 3,
        };
        assert_eq!(step_name(&d, 3), "decode/code/3");
        assert_eq!(d.runs(), 3);
        assert_eq!(steps[0].runs(), 2);
    }
}
