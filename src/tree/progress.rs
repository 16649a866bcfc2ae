//! A tree's progress on a terminal: folders done of those walked, runs verified, runs a second
//! and the time left, on one line of standard error that is cleared at the end. Nothing is drawn
//! when standard error is not a terminal (a CI log, a pipe), under `--quiet`, or when `CI` is set
//! (a runner that gives the job a terminal still keeps its log free of redraws).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts folders and runs as the workers finish them, and redraws the line when it is shown.
pub struct Progress {
    bar: Option<ProgressBar>,
    folders: usize,
    done: AtomicUsize,
    runs: AtomicUsize,
    started: Instant,
}

impl Progress {
    /// A line over `folders` folders, shown only where the module's doc says.
    pub fn new(folders: usize, quiet: bool) -> Progress {
        use std::io::IsTerminal;
        let shown = !quiet && std::env::var_os("CI").is_none() && std::io::stderr().is_terminal();
        let bar = shown.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            folders,
            done: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    /// One folder done, holding `runs` runs.
    pub fn folder_done(&self, runs: usize) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let runs = self.runs.fetch_add(runs, Ordering::Relaxed) + runs;
        if let Some(bar) = &self.bar {
            bar.set_message(line(done, self.folders, runs, self.started.elapsed()));
        }
    }

    /// Clears the line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The progress line: `verifying: 1200/7000 folders, 1180 runs, 790 runs/s, about 8 s left`.
/// The time left assumes the folders still to do go as fast as those done.
pub fn line(done: usize, folders: usize, runs: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { runs as f64 / secs } else { 0.0 };
    let left = if done == 0 || secs <= 0.0 {
        String::new()
    } else {
        let per_folder = secs / done as f64;
        let left = per_folder * folders.saturating_sub(done) as f64;
        format!(", about {} left", shown_duration(left))
    };
    format!("verifying: {done}/{folders} folders, {runs} runs, {rate:.0} runs/s{left}")
}

/// Seconds as `8 s`, `3 min 20 s` or `1 h 5 min`.
fn shown_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_gives_runs_a_second_and_the_time_left() {
        let l = line(1200, 7000, 1180, Duration::from_secs_f64(1.5));
        assert_eq!(
            l,
            "verifying: 1200/7000 folders, 1180 runs, 787 runs/s, about 7 s left"
        );
        let l = line(10, 7000, 10, Duration::from_secs(10));
        assert!(l.ends_with("about 1 h 56 min left"), "{l}");
        assert_eq!(
            line(0, 5, 0, Duration::ZERO),
            "verifying: 0/5 folders, 0 runs, 0 runs/s"
        );
    }

    #[test]
    fn nothing_is_drawn_when_quiet_and_the_counts_still_add_up() {
        let p = Progress::new(3, true);
        assert!(p.bar.is_none());
        p.folder_done(2);
        p.folder_done(0);
        assert_eq!(p.done.load(Ordering::Relaxed), 2);
        assert_eq!(p.runs.load(Ordering::Relaxed), 2);
        p.finish();
    }
}
