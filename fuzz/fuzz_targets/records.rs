//! The manifest and every record kind: the first byte picks the kind, the rest is its JSON. A
//! record that its JSON Schema accepts (as the CLI requires before it parses one) takes the place
//! of that part of the bundled fixture, and then every check runs over the bundle (`verify`), it
//! is compared with the fixture as a replay and as a diff, and the report is built.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rigaudit_audit::bundle::Loaded;
use rigaudit_audit::records::{FileKind, Manifest};
use rigaudit_audit::{Bundle, Findings, Report, Severity};
use rigaudit_fuzz::{bundle, schemas};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::OnceLock;

/// The bundled fixture, parsed once.
fn base() -> &'static Bundle {
    static B: OnceLock<Bundle> = OnceLock::new();
    B.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/runs/smollm2-cpu");
        let opened = bundle::open(std::path::Path::new(dir)).expect("the fixture opens");
        bundle::load(&opened)
    })
}

/// The record, when its kind's schema accepts the value and it parses.
fn record<T: DeserializeOwned>(kind: Option<FileKind>, v: &Value) -> Option<T> {
    let validator = match kind {
        Some(k) => schemas::validator(k)?,
        None => schemas::bundle(),
    };
    if !validator.is_valid(v) {
        return None;
    }
    serde_json::from_value(v.clone()).ok()
}

fn loaded<T>(path: &str, value: T) -> Loaded<T> {
    Loaded {
        path: path.into(),
        published: true,
        reconstructed: false,
        value,
    }
}

/// The fixture with one part replaced by the fuzzed record (none when it is not a valid one).
fn bundle_with(kind: u8, v: &Value) -> Option<Bundle> {
    let mut b = base().clone();
    match kind % 7 {
        0 => b.manifest = record::<Manifest>(None, v)?,
        1 => b.card = Some(loaded("card.json", record(Some(FileKind::Card), v)?)),
        2 => b.speed_contract = Some(loaded("s.json", record(Some(FileKind::SpeedContract), v)?)),
        3 => b.speed_result = Some(loaded("r.json", record(Some(FileKind::SpeedResult), v)?)),
        4 => b.fit = Some(loaded("f.json", record(Some(FileKind::FitResult), v)?)),
        5 => {
            let c = record(Some(FileKind::QualityContract), v)?;
            b.quality.first_mut()?.contract = Some(loaded("q.json", c));
        }
        _ => {
            let s = record(Some(FileKind::QualitySummary), v)?;
            b.quality.first_mut()?.summary = Some(loaded("q.json", s));
        }
    }
    Some(b)
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, json)) = data.split_first() else {
        return;
    };
    let Ok(v) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let Some(b) = bundle_with(kind, &v) else {
        return;
    };
    let found: Findings = rigaudit_audit::verify(&b);
    let report = Report::new("verify", "fuzz", Some(Severity::Error), found);
    let _ = serde_json::to_string(&report);
    let tol = rigaudit_audit::Tolerance::default();
    let _ = rigaudit_audit::replay::compare(base(), &b, &tol);
    let _ = rigaudit_audit::diff::diff(base(), &b, &tol, &Default::default());
});
