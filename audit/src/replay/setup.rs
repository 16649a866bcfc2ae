//! The two sides' hardware (speed rows informational on other hardware) and servers' setup.

use super::*;

/// One box of a card's hardware as far as speed depends on it: its CPU (or product) model, cores,
/// memory and the instruction sets engines choose kernels by. Cores come from the box, else from
/// a one-box card's description (`..., 2 cores, ...`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct BoxKey {
    pub(super) model: Option<String>,
    pub(super) cores: Option<u32>,
    pub(super) memory_gib: Option<f64>,
    pub(super) isa: Option<BTreeSet<String>>,
}

/// The parts of a card's hardware that decide whether two runs are on the same machines: the
/// accelerator and each box (in rank order). The free-text description is not compared: two cards
/// of one machine word it differently.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct HardwareKey {
    pub(super) accelerator: Option<String>,
    pub(super) boxes: Vec<BoxKey>,
}

impl HardwareKey {
    pub(super) fn text(&self) -> String {
        let mut models: Vec<String> = self.boxes.iter().filter_map(|b| b.model.clone()).collect();
        models.dedup();
        let cores: Vec<String> = self
            .boxes
            .iter()
            .filter_map(|b| b.cores.map(|c| c.to_string()))
            .collect();
        format!(
            "{} box{} (accelerator {}, {}{})",
            self.boxes.len(),
            if self.boxes.len() == 1 { "" } else { "es" },
            self.accelerator.as_deref().unwrap_or("not named"),
            if models.is_empty() {
                "no box model named".to_string()
            } else {
                models.join(", ")
            },
            if cores.is_empty() {
                String::new()
            } else {
                format!(", {} cores", cores.join("+"))
            }
        )
    }
}

/// `N cores` in a description.
pub(super) fn cores_in(description: &str) -> Option<u32> {
    let words: Vec<&str> = description.split([' ', ',', ';', '(', ')']).collect();
    words
        .windows(2)
        .find(|w| w[1].starts_with("core"))
        .and_then(|w| w[0].parse().ok())
}

pub(super) fn hw_key(h: &Hardware) -> HardwareKey {
    let mut boxes: Vec<&crate::records::card::BoxInfo> = h.boxes.iter().collect();
    boxes.sort_by_key(|b| (b.rank.unwrap_or(u32::MAX), b.name.clone()));
    let one_box = boxes.len() == 1;
    HardwareKey {
        accelerator: h.accelerator.as_ref().map(|a| a.trim().to_string()),
        boxes: boxes
            .into_iter()
            .map(|b| BoxKey {
                model: b.model.as_ref().map(|m| m.trim().to_string()),
                cores: b
                    .cores
                    .or_else(|| one_box.then(|| cores_in(&h.description)).flatten()),
                memory_gib: b.memory_gib,
                isa: b.isa.as_ref().map(|v| v.iter().cloned().collect()),
            })
            .collect(),
    }
}

/// What differs between two boxes, comparing a property only when both record it; memory within
/// 10 % counts as the same (a VM reports slightly less than it was given).
pub(super) fn box_differences(i: usize, a: &BoxKey, b: &BoxKey) -> Vec<String> {
    let mut out = Vec::new();
    if a.model != b.model {
        out.push(format!(
            "box {i}: model {} vs {}",
            a.model.as_deref().unwrap_or("not named"),
            b.model.as_deref().unwrap_or("not named")
        ));
    }
    if let (Some(x), Some(y)) = (a.cores, b.cores) {
        if x != y {
            out.push(format!("box {i}: {x} vs {y} cores"));
        }
    }
    if let (Some(x), Some(y)) = (a.memory_gib, b.memory_gib) {
        if (x - y).abs() > 0.10 * x.max(y) {
            out.push(format!("box {i}: {x} vs {y} GiB of memory"));
        }
    }
    if let (Some(x), Some(y)) = (&a.isa, &b.isa) {
        let only_a: Vec<&String> = x.difference(y).collect();
        let only_b: Vec<&String> = y.difference(x).collect();
        if !only_a.is_empty() || !only_b.is_empty() {
            out.push(format!(
                "box {i}: instruction sets differ (only recorded: {:?}; only replayed: {:?})",
                only_a, only_b
            ));
        }
    }
    out
}

/// What differs between two cards' hardware, for a person; empty when it is the same hardware.
pub(super) fn hardware_differences(a: &HardwareKey, b: &HardwareKey) -> Vec<String> {
    let mut out = Vec::new();
    if a.accelerator != b.accelerator {
        out.push(format!(
            "accelerator {} vs {}",
            a.accelerator.as_deref().unwrap_or("not named"),
            b.accelerator.as_deref().unwrap_or("not named")
        ));
    }
    if a.boxes.len() != b.boxes.len() {
        out.push(format!("{} vs {} boxes", a.boxes.len(), b.boxes.len()));
    }
    for (i, (x, y)) in a.boxes.iter().zip(&b.boxes).enumerate() {
        out.extend(box_differences(i, x, y));
    }
    out
}

/// What one server said about itself, with where.
pub(super) struct ServerView {
    pub(super) window: Option<(u64, &'static str)>,
    pub(super) slots: Option<u64>,
    pub(super) sampling: BTreeMap<String, f64>,
    pub(super) version: Option<String>,
}

pub(super) fn server_view(r: &SpeedResult) -> ServerView {
    let info = startline::parse(&r.server.start_lines);
    let window = startline::models_window(&r.server.models)
        .map(|w| (w, "/server/models"))
        .or(info.window.map(|w| (w, "/server/start_lines")));
    ServerView {
        window,
        slots: info.slots,
        sampling: info.sampling,
        version: info.engine_version,
    }
}

pub(super) fn setup(a: &Loaded<SpeedResult>, b: &Loaded<SpeedResult>, out: &mut Vec<Finding>) {
    let (x, y) = (server_view(&a.value), server_view(&b.value));
    let paths = (a.path.as_str(), b.path.as_str());
    let all = [
        window_differs(&x, &y, paths),
        slots_differs(&x, &y, paths),
        sampling_differs(&x, &y, paths),
        version_differs(&x, &y, paths),
        gpu_differs(&a.value, &b.value, paths),
    ];
    for d in all.into_iter().flatten() {
        out.push(
            Finding::new(SETUP_DIFFERS.id, d.severity, d.message)
                .file(&b.path)
                .pointer(d.pointers.1)
                .data(json!({
                    "what": d.what,
                    "recorded": d.values.0,
                    "replayed": d.values.1,
                    "recorded_file": a.path,
                    "recorded_pointer": d.pointers.0,
                })),
        );
    }
}

const LINES: &str = "/server/start_lines";

/// Both results name a GPU (measure `--gpu`) and its name or driver differ: figures on another
/// card or driver move by themselves, so the replay says so before its drifts.
fn gpu_differs(a: &SpeedResult, b: &SpeedResult, (fa, fb): (&str, &str)) -> Option<ServerDiffers> {
    let (ga, gb) = (a.gpu.as_ref()?, b.gpu.as_ref()?);
    let driver = |g: &crate::records::speed::GpuRecord| {
        g.driver.clone().unwrap_or_else(|| "not named".into())
    };
    let (da, db) = (driver(ga), driver(gb));
    let name = ga.name.trim() != gb.name.trim();
    let drivers = ga.driver.is_some() && gb.driver.is_some() && da != db;
    (name || drivers).then(|| {
        let what = match (name, drivers) {
            (true, true) => "GPUs and drivers",
            (true, false) => "GPUs",
            _ => "GPU drivers",
        };
        ServerDiffers {
            severity: Severity::Warning,
            what: "gpu",
            values: (format!("{} (driver {da})", ga.name), format!("{} (driver {db})", gb.name)),
            pointers: ("/gpu", "/gpu"),
            message: format!(
                "the {what} differ: {} with driver {da} when recorded ({fa} /gpu) but {} with driver {db} when replayed ({fb} /gpu); speed figures on another card or driver move by themselves",
                ga.name, gb.name
            ),
        }
    })
}

/// One way the two servers differ: how much it matters, what, the two values, where each side
/// says it, and the sentence.
pub(super) struct ServerDiffers {
    severity: Severity,
    what: &'static str,
    values: (String, String),
    pointers: (&'static str, &'static str),
    message: String,
}

fn window_differs(x: &ServerView, y: &ServerView, (fa, fb): (&str, &str)) -> Option<ServerDiffers> {
    let ((wa, pa), (wb, pb)) = (x.window?, y.window?);
    (wa != wb).then(|| ServerDiffers {
        severity: Severity::Error,
        what: "window",
        values: (wa.to_string(), wb.to_string()),
        pointers: (pa, pb),
        message: format!(
            "the server's window was {wa} tokens when recorded ({fa} {pa}) but {wb} when replayed ({fb} {pb}); steps sized to the window are not the same steps"
        ),
    })
}

fn slots_differs(x: &ServerView, y: &ServerView, (fa, fb): (&str, &str)) -> Option<ServerDiffers> {
    let (sa, sb) = (x.slots?, y.slots?);
    (sa != sb).then(|| ServerDiffers {
        severity: Severity::Error,
        what: "slots",
        values: (sa.to_string(), sb.to_string()),
        pointers: (LINES, LINES),
        message: format!(
            "the server served {sa} streams at once when recorded ({fa} {LINES}) but {sb} when replayed ({fb} {LINES}); concurrency levels queue differently"
        ),
    })
}

fn sampling_differs(
    x: &ServerView,
    y: &ServerView,
    (fa, fb): (&str, &str),
) -> Option<ServerDiffers> {
    let diffs: Vec<String> = x
        .sampling
        .iter()
        .filter_map(|(k, va)| {
            let vb = y.sampling.get(k)?;
            (va != vb).then(|| format!("{k} {va} recorded, {vb} replayed"))
        })
        .collect();
    (!diffs.is_empty()).then(|| ServerDiffers {
        severity: Severity::Warning,
        what: "sampling",
        values: (format!("{:?}", x.sampling), format!("{:?}", y.sampling)),
        pointers: (LINES, LINES),
        message: format!(
            "the server's sampling defaults differ ({}; {fa} and {fb} {LINES})",
            diffs.join(", ")
        ),
    })
}

fn version_differs(
    x: &ServerView,
    y: &ServerView,
    (fa, fb): (&str, &str),
) -> Option<ServerDiffers> {
    let (va, vb) = (x.version.as_ref()?, y.version.as_ref()?);
    (va != vb).then(|| ServerDiffers {
        severity: Severity::Warning,
        what: "engine_version",
        values: (va.clone(), vb.clone()),
        pointers: (LINES, LINES),
        message: format!(
            "the engine was version {va} when recorded ({fa} {LINES}) but {vb} when replayed ({fb} {LINES})"
        ),
    })
}
