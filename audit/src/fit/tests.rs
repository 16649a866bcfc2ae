//! One case per row of `fit::CHECKS`: each check, run alone by its id, finds a problem planted in
//! a small bundle and stays quiet on the bundle without it.

use crate::testkit::{assert_cases, one_value_cases};

#[test]
fn every_fit_row_finds_its_planted_problem() {
    assert_cases(one_value_cases("fit."));
}
