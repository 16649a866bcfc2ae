//! Quality tests: contract, summary and answers (JSON Lines), and the streaming tally of answers.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A quality test's contract.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QualityContract {
    /// Test id (`mmlu-pro`, `gpqa-diamond`, `ifeval`, `livecodebench`, `gpqa-think`, ...).
    pub test: String,
    /// Name as shown.
    pub name: String,
    /// The measuring tool, when it is not the page's own (for example a vendor's benchmark run
    /// unchanged, with its own sampling).
    #[serde(default)]
    pub tool: Option<String>,
    /// Number of questions.
    pub questions: u64,
    /// Answer limit in tokens.
    pub max_tokens: u64,
    /// Seed sent.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Sampling sent.
    #[serde(default)]
    pub sampling: BTreeMap<String, f64>,
    /// Whether thinking was asked for.
    #[serde(default)]
    pub enable_thinking: Option<bool>,
    /// Questions in flight at once.
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// How the margin is computed.
    #[serde(default)]
    pub margin: Margin,
    /// Whether a cut-off answer counts as wrong.
    #[serde(default = "yes")]
    pub cutoff_counts_as_wrong: bool,
}

fn yes() -> bool {
    true
}

/// How a 95 % margin is computed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Margin {
    /// `normal` (1.96 sqrt(p(1-p)/n)) or `wilson`.
    pub method: String,
    /// The z value.
    #[serde(default = "z95")]
    pub z: f64,
}

fn z95() -> f64 {
    1.96
}

impl Default for Margin {
    fn default() -> Self {
        Margin {
            method: "normal".into(),
            z: 1.96,
        }
    }
}

/// A quality test's summary as the measuring tool wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QualitySummary {
    /// Test id.
    pub test: String,
    /// Run label.
    #[serde(default)]
    pub run: Option<String>,
    /// Start, RFC 3339.
    #[serde(default)]
    pub started: Option<String>,
    /// End, RFC 3339.
    #[serde(default)]
    pub ended: Option<String>,
    /// Questions counted.
    pub total: u64,
    /// Right answers.
    pub right: u64,
    /// Percentage shown, or `null`.
    pub pct: Option<f64>,
    /// 95 % margin in points, or `null`.
    pub margin: Option<f64>,
    /// Answers cut off at their limit.
    #[serde(default)]
    pub cutoffs: Option<u64>,
    /// Requests that got no answer (refused, failed), as the summary counts them.
    #[serde(default)]
    pub errors: Option<u64>,
    /// Requests that got no answer and that the summary leaves out of `total`, `right` and `pct`
    /// (an honest summary: a refused request is neither right nor wrong). Absent when the summary
    /// does not say, as in the seed pages, whose totals count every request.
    #[serde(default)]
    pub excluded: Option<u64>,
    /// Median seconds per question.
    #[serde(default)]
    pub median_seconds: Option<f64>,
}

/// One answer record (one line of the answers file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// Question id.
    pub id: String,
    /// Prompt text, when published.
    #[serde(default)]
    pub prompt: Option<String>,
    /// sha256 of the prompt text, when the text is not published.
    #[serde(default)]
    pub prompt_sha256: Option<String>,
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Answer limit sent.
    pub max_tokens: u64,
    /// HTTP status.
    pub status: u16,
    /// Error text.
    #[serde(default)]
    pub error: Option<String>,
    /// `stop`, `length`, or `null` when refused.
    pub finish_reason: Option<String>,
    /// Reply tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// The answer extracted.
    #[serde(default)]
    pub extracted: Option<String>,
    /// The right answer, where the test has one.
    #[serde(default)]
    pub gold: Option<String>,
    /// Whether it was scored right.
    pub correct: bool,
    /// Seconds the request took.
    #[serde(default)]
    pub seconds: Option<f64>,
}

impl Answer {
    /// Whether the server answered the request.
    pub fn answered(&self) -> bool {
        self.status == 200 && self.error.is_none()
    }

    /// The fields the tally reads, borrowed.
    pub fn view(&self) -> AnswerView<'_> {
        crate::answer_view!(self)
    }
}

/// The [`AnswerView`] of a parsed answer record: any value with [`Answer`]'s fields, its strings
/// owned or borrowed (the CLI's streaming reader parses a line into a type of its own that
/// borrows them), so the fields the tally reads are mapped once.
#[macro_export]
macro_rules! answer_view {
    ($answer:expr) => {
        $crate::records::AnswerView {
            id: &$answer.id,
            prompt_tokens: $answer.prompt_tokens,
            max_tokens: $answer.max_tokens,
            status: $answer.status,
            error: $answer.error.as_deref(),
            finish_reason: $answer.finish_reason.as_deref(),
            extracted: $answer.extracted.as_deref(),
            gold: $answer.gold.as_deref(),
            correct: $answer.correct,
        }
    };
}

/// The fields of an answer record the tally reads, borrowed from wherever it was parsed.
#[derive(Debug, Clone, Copy)]
pub struct AnswerView<'a> {
    /// Question id.
    pub id: &'a str,
    /// Prompt tokens.
    pub prompt_tokens: Option<u64>,
    /// Answer limit sent.
    pub max_tokens: u64,
    /// HTTP status.
    pub status: u16,
    /// Error text.
    pub error: Option<&'a str>,
    /// Finish reason.
    pub finish_reason: Option<&'a str>,
    /// Extracted answer.
    pub extracted: Option<&'a str>,
    /// Gold answer.
    pub gold: Option<&'a str>,
    /// Scored right.
    pub correct: bool,
}

impl AnswerView<'_> {
    /// Whether the server answered the request.
    pub fn answered(&self) -> bool {
        self.status == 200 && self.error.is_none()
    }
}

/// Counts over an answers file, built one record at a time so a file is never held whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerTally {
    /// Records.
    pub total: u64,
    /// Records answered by the server.
    pub answered: u64,
    /// Records scored right.
    pub right: u64,
    /// Records scored right although the request was refused (a scoring bug).
    pub right_but_refused: u64,
    /// Answered records cut off at their limit.
    pub cutoffs: u64,
    /// Cut-off records scored wrong.
    pub cutoffs_wrong: u64,
    /// Records whose extracted answer equals the gold but that are scored wrong, or the reverse.
    pub gold_disagrees: u64,
    /// First such record's line, 1-based.
    pub gold_disagrees_first_line: Option<u64>,
    /// Refused or failed requests by status and error text, with counts.
    pub refusals: BTreeMap<String, u64>,
    /// Smallest and largest prompt tokens seen among refused requests.
    pub refused_prompt_tokens: Option<(u64, u64)>,
    /// Answer limits seen.
    pub max_tokens: BTreeMap<u64, u64>,
    /// Lines whose id repeats an earlier line's: (line, earlier line), the first few. Filled by
    /// [`AnswerTally::finish`].
    pub duplicate_ids: Vec<(u64, u64)>,
    /// How many lines repeat an earlier id.
    pub duplicate_count: u64,
    /// The largest prompt tokens + answer limit among answered records, with its line.
    #[serde(default)]
    pub answered_need_max: Option<(u64, u64)>,
    /// Windows named by refusal texts ("maximum context length is N tokens", ...), with counts.
    #[serde(default)]
    pub refusal_windows: BTreeMap<u64, u64>,
    /// Refusals whose text names a window that their prompt plus answer limit fits, and the first
    /// such line.
    #[serde(default)]
    pub refusals_that_fit: (u64, Option<u64>),
    /// Records that cannot be (more reply tokens than the limit, negative or NaN seconds, an
    /// answered record with no finish reason), and the first such line.
    #[serde(default)]
    pub impossible: (u64, Option<u64>),
    /// The last line counted in `impossible`.
    #[serde(skip)]
    impossible_last: Option<u64>,
    /// Cut-off answered records marked right, and the first such line.
    #[serde(default)]
    pub cutoffs_right: (u64, Option<u64>),
    /// (hash of id, [`line_mark`]) of every record, sorted at the end; 16 bytes a record.
    #[serde(skip)]
    ids: Vec<(u64, u64)>,
    /// (hash of id, [`line_mark`]) of every answered record, sorted by hash: two runs over the
    /// same questions are compared question by question ([`AnswerTally::paired_with`]). The
    /// sorted ids themselves, the unanswered taken out by [`AnswerTally::finish`] (one sort for
    /// both, and no second vector: a million records are 16 MB).
    #[serde(skip)]
    scored: Vec<(u64, u64)>,
}

/// The answered questions of an answers file by id ([`AnswerTally::trials`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trials {
    /// Distinct question ids answered.
    pub questions: u64,
    /// Of them, answered more than once.
    pub repeated: u64,
    /// Of those, scored right on one trial and wrong on another.
    pub flipped: u64,
}

/// A record's line with whether it was answered and scored right, in one number that sorts by
/// line: `line << 2 | answered << 1 | right`.
fn line_mark(line: u64, answered: bool, right: bool) -> u64 {
    line << 2 | u64::from(answered) << 1 | u64::from(right)
}

/// Whether a [`line_mark`] says the record was scored right.
fn marked_right(mark: u64) -> bool {
    mark & 1 != 0
}

/// An id's 64-bit hash, the same for every file a run reads (two answers files are paired by it):
/// foldhash's quality hash with a fixed seed.
fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x5249_4741_5544_4954).hash_one(id)
}

impl AnswerTally {
    /// The refusals as a list for a message: `N x STATUS TEXT`, joined by `; `.
    pub fn refusals_listed(&self) -> String {
        let listed: Vec<String> = self
            .refusals
            .iter()
            .map(|(k, n)| format!("{n} x {k}"))
            .collect();
        listed.join("; ")
    }

    /// Adds one record; `line` is its 1-based line in the file.
    pub fn add(&mut self, a: AnswerView<'_>, line: u64) {
        self.total += 1;
        *self.max_tokens.entry(a.max_tokens).or_default() += 1;
        self.ids
            .push((id_hash(a.id), line_mark(line, a.answered(), a.correct)));
        if a.answered() {
            self.answered += 1;
            if a.finish_reason == Some("length") {
                self.cutoffs += 1;
                if !a.correct {
                    self.cutoffs_wrong += 1;
                }
            }
        } else {
            let key = refusal_kind(a.status, a.error.unwrap_or("(no error text)"));
            *self.refusals.entry(key).or_default() += 1;
            if let Some(p) = a.prompt_tokens {
                self.refused_prompt_tokens = Some(match self.refused_prompt_tokens {
                    None => (p, p),
                    Some((lo, hi)) => (lo.min(p), hi.max(p)),
                });
            }
            if a.correct {
                self.right_but_refused += 1;
            }
        }
        if a.correct {
            self.right += 1;
        }
        self.add_consistency(a, line);
        if let (Some(x), Some(g)) = (a.extracted, a.gold) {
            if (x.trim() == g.trim()) != a.correct {
                self.gold_disagrees += 1;
                self.gold_disagrees_first_line.get_or_insert(line);
            }
        }
    }

    /// The counts the consistency checks read (`consistency/`).
    fn add_consistency(&mut self, a: AnswerView<'_>, line: u64) {
        fn bump(c: &mut (u64, Option<u64>), line: u64) {
            c.0 += 1;
            c.1.get_or_insert(line);
        }
        let need = a.prompt_tokens.map(|p| p.saturating_add(a.max_tokens));
        if a.answered() {
            if let Some(n) = need.filter(|n| self.answered_need_max.is_none_or(|(m, _)| *n > m)) {
                self.answered_need_max = Some((n, line));
            }
            if a.finish_reason == Some("length") && a.correct {
                bump(&mut self.cutoffs_right, line);
            }
        } else if let Some(w) = a.error.and_then(crate::startline::named_window) {
            *self.refusal_windows.entry(w).or_default() += 1;
            if need.is_some_and(|n| n <= w) {
                bump(&mut self.refusals_that_fit, line);
            }
        }
        if a.answered() && a.finish_reason.is_none() {
            self.impossible_at(line);
        }
    }

    /// Adds what the tally's view of a record leaves out: its reply tokens against its limit and
    /// its seconds. Call after [`AnswerTally::add`] with the same line.
    pub fn add_reply(
        &mut self,
        completion_tokens: Option<u64>,
        max_tokens: u64,
        seconds: Option<f64>,
        line: u64,
    ) {
        let too_long = completion_tokens.is_some_and(|n| n > max_tokens);
        let bad_time = seconds.is_some_and(|s| s.is_nan() || s < 0.0);
        if too_long || bad_time {
            self.impossible_at(line);
        }
    }

    /// Counts a record that cannot be, once per line.
    fn impossible_at(&mut self, line: u64) {
        if self.impossible_last != Some(line) {
            self.impossible_last = Some(line);
            self.impossible.0 += 1;
            self.impossible.1.get_or_insert(line);
        }
    }

    /// The answered questions of this run and `other` matched by id, as (this run right, the
    /// other right) pairs, with how many answered questions only one side has; `None` when
    /// either side repeats an id (which answer to pair is then unknown) or no question matches.
    pub fn paired_with(&self, other: &AnswerTally) -> Option<(Vec<(bool, bool)>, usize)> {
        if self.duplicate_count > 0 || other.duplicate_count > 0 {
            return None;
        }
        let theirs: BTreeMap<u64, bool> = other
            .scored
            .iter()
            .map(|&(id, mark)| (id, marked_right(mark)))
            .collect();
        let pairs: Vec<(bool, bool)> = self
            .scored
            .iter()
            .filter_map(|&(id, mark)| Some((marked_right(mark), *theirs.get(&id)?)))
            .collect();
        let unmatched = self.scored.len() + other.scored.len() - 2 * pairs.len();
        (!pairs.is_empty()).then_some((pairs, unmatched))
    }

    /// The answered questions by id (call after [`AnswerTally::finish`], which sorts them): how
    /// many distinct ones, how many were answered more than once (repeated trials of one
    /// question), and how many of those were scored right on one trial and wrong on another.
    pub fn trials(&self) -> Trials {
        let mut t = Trials::default();
        for one in self.scored.chunk_by(|a, b| a.0 == b.0) {
            t.questions += 1;
            if one.len() > 1 {
                t.repeated += 1;
                let first = marked_right(one[0].1);
                t.flipped += u64::from(one.iter().any(|&(_, m)| marked_right(m) != first));
            }
        }
        t
    }

    /// Requests that got no answer.
    pub fn refused(&self) -> u64 {
        self.total - self.answered
    }

    /// Merges another tally (for parallel reading); ids are compared across both.
    pub fn merge(&mut self, other: AnswerTally) {
        self.total += other.total;
        self.answered += other.answered;
        self.right += other.right;
        self.right_but_refused += other.right_but_refused;
        self.cutoffs += other.cutoffs;
        self.cutoffs_wrong += other.cutoffs_wrong;
        self.gold_disagrees += other.gold_disagrees;
        // The workers take chunks in turn: the first line is the smaller of the two.
        self.gold_disagrees_first_line = match (
            self.gold_disagrees_first_line,
            other.gold_disagrees_first_line,
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (k, v) in other.refusals {
            *self.refusals.entry(k).or_default() += v;
        }
        if let Some((lo, hi)) = other.refused_prompt_tokens {
            self.refused_prompt_tokens = Some(match self.refused_prompt_tokens {
                None => (lo, hi),
                Some((a, b)) => (a.min(lo), b.max(hi)),
            });
        }
        for (k, v) in other.max_tokens {
            *self.max_tokens.entry(k).or_default() += v;
        }
        merge_sorted(&mut self.ids, other.ids);
        if let Some((n, l)) = other.answered_need_max {
            // The largest need, at its first line whichever worker saw it.
            if self
                .answered_need_max
                .is_none_or(|(m, at)| n > m || (n == m && l < at))
            {
                self.answered_need_max = Some((n, l));
            }
        }
        for (k, v) in other.refusal_windows {
            *self.refusal_windows.entry(k).or_default() += v;
        }
        for (mine, theirs) in [
            (&mut self.refusals_that_fit, other.refusals_that_fit),
            (&mut self.impossible, other.impossible),
            (&mut self.cutoffs_right, other.cutoffs_right),
        ] {
            mine.0 += theirs.0;
            mine.1 = match (mine.1, theirs.1) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }

    /// Sorts the ids [`AnswerTally::finish`] sorts, where this tally was built: a reader that
    /// tallies on several threads sorts each share on its own, [`AnswerTally::merge`] joins sorted
    /// shares in one pass, and the sort in `finish` finds them sorted.
    pub fn presort(&mut self) {
        self.ids.sort_unstable();
    }

    /// Finds repeated ids and lists the answered records by id once every record was added.
    /// (Two ids with the same 64-bit hash would count as one; at a million records the chance is
    /// about 3 in 100 million.) Called again, it keeps what the first call found.
    pub fn finish(&mut self) {
        if self.ids.is_empty() {
            return;
        }
        let mut ids = std::mem::take(&mut self.ids);
        ids.sort_unstable();
        self.duplicate_ids.clear();
        self.duplicate_count = 0;
        for w in ids.windows(2) {
            if w[0].0 == w[1].0 {
                self.duplicate_count += 1;
                if self.duplicate_ids.len() < 5 {
                    self.duplicate_ids.push((w[1].1 >> 2, w[0].1 >> 2));
                }
            }
        }
        self.duplicate_ids.sort_unstable();
        ids.retain(|&(_, mark)| mark & 2 != 0);
        self.scored = ids;
    }
}

/// `b` merged into `a`, both sorted, in one pass and in place (backward, from `a`'s end), so that
/// no third vector is held: a million ids are 16 MB. Any order in gives some order out, which
/// [`AnswerTally::finish`] sorts again.
fn merge_sorted<T: Ord + Copy>(a: &mut Vec<T>, b: Vec<T>) {
    let n = a.len();
    a.extend_from_slice(&b);
    let (mut i, mut j) = (n, b.len());
    for k in (0..a.len()).rev() {
        if j == 0 {
            break;
        }
        if i > 0 && a[i - 1] > b[j - 1] {
            a[k] = a[i - 1];
            i -= 1;
        } else {
            a[k] = b[j - 1];
            j -= 1;
        }
    }
}

/// The kind of a refusal, for grouping: `HTTP <status>: <first sentence of the error text>`, so
/// that "maximum context length is 1024 tokens. However, you requested 1744 tokens ..." and the
/// same text with 1745 count as one kind.
pub fn refusal_kind(status: u16, error: &str) -> String {
    let first = match error.find(". ") {
        Some(i) => &error[..=i],
        None => error,
    };
    format!("HTTP {status}: {}", first.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record scored wrong whose extracted answer is the gold.
    fn disagreeing(id: &str) -> AnswerView<'_> {
        AnswerView {
            id,
            prompt_tokens: Some(10),
            max_tokens: 64,
            status: 200,
            error: None,
            finish_reason: Some("stop"),
            extracted: Some("B"),
            gold: Some("B"),
            correct: false,
        }
    }

    #[test]
    fn sorted_shares_merge_into_one_sorted_whole() {
        for (a, b) in [
            (vec![1, 4, 9], vec![2, 4, 10, 11]),
            (vec![], vec![3, 5]),
            (vec![3, 5], vec![]),
            (vec![7, 8], vec![1, 2]),
        ] {
            let mut whole = [a.clone(), b.clone()].concat();
            whole.sort_unstable();
            let mut merged = a;
            merge_sorted(&mut merged, b);
            assert_eq!(merged, whole);
        }
        // Shares tallied on two threads find an id repeated across them.
        let (mut a, mut b) = (AnswerTally::default(), AnswerTally::default());
        a.add(disagreeing("q-2"), 1);
        a.add(disagreeing("q-1"), 2);
        b.add(disagreeing("q-2"), 3);
        a.presort();
        b.presort();
        a.merge(b);
        a.finish();
        assert_eq!(
            (a.duplicate_count, a.duplicate_ids.clone()),
            (1, vec![(3, 1)])
        );
        assert_eq!(a.trials().repeated, 1);
    }

    #[test]
    fn merged_tallies_keep_the_earliest_first_lines() {
        // The workers take chunks in turn: the tally merged first may hold the later lines.
        let (mut later, mut earlier) = (AnswerTally::default(), AnswerTally::default());
        later.add(disagreeing("q-9"), 90);
        later.add_reply(Some(100), 64, None, 91);
        earlier.add(disagreeing("q-1"), 3);
        earlier.add_reply(Some(100), 64, None, 4);
        later.merge(earlier);
        assert_eq!(later.gold_disagrees, 2);
        assert_eq!(later.gold_disagrees_first_line, Some(3));
        assert_eq!(later.impossible, (2, Some(4)));
    }
}
