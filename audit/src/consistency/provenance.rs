//! Provenance and time: the engine build the start line names against the card's, sessions on
//! one server that overlap, and results dated outside their session.
//!
//! Definitions: the start line's build is a commit or build hash of 7 to 40 hex digits
//! (`commit=H`, `(H)`, `build: N (H)`, or a bare hash word beside the engine's name); it agrees
//! with the card's `engine.commit` when one is a prefix of the other. A session's span is that of
//! its records: the speed run from its first request sent to its last reply ended (its `started`
//! plus the records' seconds), a quality test from its summary's `started` to `ended`. Two spans
//! may touch; they overlap when they share more than the times' precision (2 s for times written to
//! the second, 60 s for a time written to the minute). A result lies inside its manifest session
//! (the session whose name has the word `speed`, or the test's id) within the same precision.
//!
//! `check_engine_build` reports under `setup.version-mismatch` (setup.rs).

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use chrono::{DateTime, Duration, FixedOffset};

type Time = DateTime<FixedOffset>;

fn time(s: &str) -> Option<Time> {
    DateTime::parse_from_rfc3339(s).ok()
}

/// The precision of a written time: 60 s when written to the minute, else 2 s.
fn slack(s: &str) -> Duration {
    let secs = s.get(17..19);
    if secs.is_none_or(|x| x == "00") {
        Duration::seconds(60)
    } else {
        Duration::seconds(2)
    }
}

/// One measured span: (what, file, start, end, slack).
type Span = (String, String, Time, Time, Duration);

/// The spans of the bundle's results, from their records.
fn spans(b: &Bundle) -> Vec<Span> {
    let mut v = Vec::new();
    if let Some(rl) = &b.speed_result {
        let r = &rl.value;
        if let Some(t0) = time(&r.started) {
            let first = r
                .requests
                .iter()
                .map(|q| q.sent_s)
                .fold(f64::INFINITY, f64::min);
            let last = r
                .requests
                .iter()
                .filter_map(|q| q.end_s.or(Some(q.sent_s)))
                .fold(f64::NEG_INFINITY, f64::max);
            let at = |x: f64| t0 + Duration::milliseconds((x * 1000.0) as i64);
            if first.is_finite() && last.is_finite() && last >= first && last < 1e9 {
                v.push((
                    "the speed run".into(),
                    rl.path.clone(),
                    at(first),
                    at(last),
                    slack(&r.started),
                ));
            }
        }
    }
    for t in &b.quality {
        let Some(s) = &t.summary else { continue };
        let (Some(st), Some(en)) = (s.value.started.as_deref(), s.value.ended.as_deref()) else {
            continue;
        };
        if let (Some(a), Some(e)) = (time(st), time(en)) {
            v.push((
                format!("quality test {}", t.test),
                s.path.clone(),
                a,
                e,
                slack(st).max(slack(en)),
            ));
        }
    }
    v
}

/// `setup.sessions-overlap`: measured spans that overlap.
pub(crate) fn check_sessions_overlap(b: &Bundle, e: &mut Emit) -> Ran {
    let v = spans(b);
    if v.len() < 2 {
        return None;
    }
    for (i, x) in v.iter().enumerate() {
        for y in &v[i + 1..] {
            let shared = x.3.min(y.3) - x.2.max(y.2);
            if shared > x.4.max(y.4) {
                e.finding(
                        format!(
                            "{} ({} to {}) and {} ({} to {}) ran on the server at the same time for {} s: each loaded the other's measurement",
                            x.0, x.2, x.3, y.0, y.2, y.3, shared.num_seconds()
                        ),
                    )
                    .file(&y.1);
            }
        }
    }
    Some(())
}

/// The manifest session of `what` (`speed` or a test id): (index, start, end, slack).
fn session_of(b: &Bundle, what: &str) -> Option<(usize, Time, Option<Time>, Duration)> {
    let words = |n: &str| -> Vec<String> {
        n.to_lowercase()
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect()
    };
    let s = &b.manifest.sessions;
    let exact = s
        .iter()
        .position(|x| words(&x.name).iter().any(|w| w == what));
    let prefix = || {
        s.iter().position(|x| {
            words(&x.name)
                .iter()
                .any(|w| what.starts_with(&format!("{w}-")))
        })
    };
    let i = exact.or_else(prefix)?;
    let st = time(&s[i].started)?;
    let en = s[i].ended.as_deref().and_then(time);
    let sl = slack(&s[i].started).max(s[i].ended.as_deref().map_or(Duration::zero(), slack));
    Some((i, st, en, sl))
}

/// Times a result states: (what, file, pointer, time, written).
fn result_times(b: &Bundle) -> Vec<(String, String, String, String, Time, Duration)> {
    let mut v = Vec::new();
    if let Some(rl) = &b.speed_result {
        for (ptr, s) in [("/started", &rl.value.started), ("/ended", &rl.value.ended)] {
            if let Some(t) = time(s) {
                v.push((
                    "speed".to_string(),
                    rl.path.clone(),
                    ptr.to_string(),
                    s.clone(),
                    t,
                    slack(s),
                ));
            }
        }
    }
    if let Some(x) = spans(b).into_iter().find(|x| x.0 == "the speed run") {
        v.push((
            "speed".into(),
            x.1.clone(),
            "/requests".into(),
            "its last reply".into(),
            x.3,
            x.4,
        ));
    }
    for t in &b.quality {
        let Some(s) = &t.summary else { continue };
        for (ptr, st) in [("/started", &s.value.started), ("/ended", &s.value.ended)] {
            if let Some(x) = st.as_deref().and_then(|x| time(x).map(|t| (x, t))) {
                v.push((
                    t.test.to_lowercase(),
                    s.path.clone(),
                    ptr.to_string(),
                    x.0.to_string(),
                    x.1,
                    slack(x.0),
                ));
            }
        }
    }
    v
}

/// `setup.outside-session`: results dated outside their manifest session.
pub(crate) fn check_inside_session(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    if b.manifest.sessions.is_empty() {
        return ran;
    }
    for (what, file, ptr, written, t, sl) in result_times(b) {
        let Some((i, st, en, ssl)) = session_of(b, &what) else {
            continue;
        };
        ran = Some(());
        let tol = sl.max(ssl);
        let before = t + tol < st;
        let after = en.is_some_and(|e| t > e + tol);
        if before || after {
            let name = &b.manifest.sessions[i].name;
            e.finding(
                    format!(
                        "{file}{ptr} ({written}, {t}) lies outside its session '{name}' ({st} to {}) in the manifest",
                        en.map_or("open".to_string(), |e| e.to_string())
                    ),
                )
                .file(file)
                .pointer(ptr);
        }
    }
    ran
}
