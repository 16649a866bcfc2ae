//! The runner and the shared helpers of `imported` (moved here from mod.rs beside the rows' tests).

use crate::imported::*;
use crate::report::FINDINGS_PER_CHECK;

#[test]
fn percentiles_are_numpy_linear() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile_linear(&v, 50.0), Some(2.5));
    assert_eq!(percentile_linear(&v, 0.0), Some(1.0));
    assert_eq!(percentile_linear(&v, 100.0), Some(4.0));
    assert!((percentile_linear(&v, 90.0).unwrap() - 3.7).abs() < 1e-12);
    assert_eq!(percentile_linear(&[], 50.0), None);
}

/// A parsed input whose every value asks for one finding at that severity.
struct Asked(Vec<Severity>);

/// A format's row that reports one finding per value, at the severity the value asks.
fn one_per_value(values: &Asked, emit: &mut Emit) -> Ran {
    for (i, severity) in values.0.iter().enumerate() {
        emit.at_severity(*severity, format!("{i}"));
    }
    Some(())
}

#[test]
fn findings_of_one_check_are_counted_past_the_bound() {
    let table: [Row<Asked>; 2] = [
        row(FAILED_AS_ZERO, one_per_value),
        row(TOOL_ERRORS, |_, emit| {
            emit.warning("x");
            Some(())
        }),
    ];
    let mut values = vec![Severity::Warning; FINDINGS_PER_CHECK + 5];
    values[FINDINGS_PER_CHECK + 1] = Severity::Error;
    let found = run(&table, &Asked(values));
    assert_eq!(found.findings.len(), FINDINGS_PER_CHECK + 2);
    assert_eq!(found.findings[FINDINGS_PER_CHECK].check, TOOL_ERRORS.id);
    let last = found.findings.last().unwrap();
    assert_eq!(
        (last.check.as_str(), last.severity),
        (FAILED_AS_ZERO.id, Severity::Error)
    );
    assert!(last.message.starts_with("5 more findings"), "{last:?}");
}

#[test]
fn closeness_is_at_the_printed_precision() {
    assert!(close(1446.5398575454544, 1446.5398575454546));
    assert!(close(28.04, 28.0));
    assert!(!close(28.06, 28.0));
    assert!(!close(1446.53, 1446.6));
    assert_eq!(std_population(&[1.0, 3.0]), Some(1.0));
    assert!((std_sample(&[1.0, 3.0]).unwrap() - 2f64.sqrt()).abs() < 1e-12);
}
