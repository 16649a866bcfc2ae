//! One case per row of `claims::CHECKS`: each check, run alone by its id, finds a problem planted
//! in a small bundle and stays quiet on the bundle without it.

use crate::report::Severity::{Error, Info, Warning};
use crate::testkit::{assert_cases, case, one_value_cases, Kit};
use crate::testkit::{MIA, SMOLLM2, TENSORFOLD as TF};
use serde_json::json;

#[test]
fn every_claims_row_finds_its_planted_problem() {
    let mut copied = Kit::of(MIA);
    for f in copied.json("bundle.json")["files"].as_array_mut().unwrap() {
        f["reconstructed"] = json!(false);
    }
    let unmeasured = Kit::of(SMOLLM2).with("speed/speed-result.json", |r| {
        r["values"]["prefill.2048"] = json!(390.0);
    });
    let mut cases = one_value_cases("claims.");
    cases.extend([
        case("claims.unpublished", &Kit::of(SMOLLM2), Kit::of(TF), Info)
            .saying("mmlu-pro: right answers and cut-offs per question"),
        case("claims.reconstructed", &copied, Kit::of(MIA), Info).saying("were reconstructed"),
        case("claims.unbacked", &Kit::of(SMOLLM2), Kit::of(TF), Warning),
        case(
            "claims.no-measurement",
            &Kit::of(SMOLLM2),
            unmeasured,
            Error,
        ),
    ]);
    assert_cases(cases);
}
