use super::*;

#[test]
fn percentiles_are_the_first_value_reaching_the_quantile() {
    let s = summarize(&[(3.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.0, 1.0)]);
    assert_eq!(s["count"], 4.0);
    assert_eq!(s["percentiles.p25"], 1.0);
    assert_eq!(s["percentiles.p50"], 2.0);
    assert_eq!(s["median"], 2.0);
    assert_eq!(s["mode"], 2.0);
    assert_eq!(s["max"], 3.0);
    assert_eq!(s["mean"], 2.0);
    assert!((s["variance"] - 0.5).abs() < 1e-12);
    // Zero weights are dropped; weights count.
    let s = summarize(&[(5.0, 0.0), (1.0, 3.0), (9.0, 1.0)]);
    assert_eq!(s["count"], 4.0);
    assert_eq!(s["min"], 1.0);
    assert_eq!(s["percentiles.p90"], 9.0);
    // Nothing left: every field 0, the count kept.
    let s = summarize(&[(7.0, 0.0)]);
    assert_eq!(
        (s["count"], s["mean"], s["percentiles.p99"]),
        (0.0, 0.0, 0.0)
    );
}

#[test]
fn the_0_2_summary_counts_values_and_sums_them_unweighted() {
    // Two requests of 4 and 1 tokens: count 2 (not 5), total_sum 30 (not 4 x 10 + 20).
    let s = summarize_v02(&[(10.0, 4.0), (20.0, 1.0)]);
    assert_eq!(s["count"], 2.0);
    assert_eq!(s["total_sum"], 30.0);
    assert_eq!(s["mean"], 12.0);
    assert_eq!(s["mode"], 10.0);
    // Unweighted, the mode is the smallest value (the first of equal probabilities), not
    // the most frequent.
    let s = summarize_v02(&[(2.0, 1.0), (1.0, 1.0), (2.0, 1.0)]);
    assert_eq!(s["mode"], 1.0);
    assert_eq!(
        summarize(&[(2.0, 1.0), (1.0, 1.0), (2.0, 1.0)])["mode"],
        2.0
    );
}

/// A request of this span, first token and output tokens.
fn req(start: f64, end: f64, first: Option<f64>, tokens: f64) -> Request {
    Request {
        status: "successful".into(),
        start: Some(start),
        end: Some(end),
        first_token: first,
        values: [("output_tokens".to_string(), tokens)].into(),
        ..Default::default()
    }
}

#[test]
fn each_family_takes_the_requests_its_code_takes() {
    let b = Benchmark {
        window: Some((10.0, 20.0)),
        ..Default::default()
    };
    let warm = req(5.0, 9.0, Some(6.0), 8.0);
    let overlapping = req(8.0, 12.0, Some(9.0), 8.0);
    let no_first_token = req(12.0, 13.0, None, 0.0);
    // 0.4 on: a request overlapping the window counts; one wholly before it does not.
    assert!(!warm.kept(&b, REQUEST) && overlapping.kept(&b, REQUEST));
    assert!(no_first_token.kept(&b, REQUEST));
    // 0.7.4 on: TTFT windows by the first token: before the window, or none, is left out.
    let ttft = Keep::Window(Event::Start, Event::FirstToken);
    assert!(!overlapping.kept(&b, ttft) && !no_first_token.kept(&b, ttft));
    // ITL from the first token to the end: no first token starts at the end.
    let itl = Keep::Window(Event::FirstToken, Event::End);
    assert!(overlapping.kept(&b, itl) && no_first_token.kept(&b, itl));
    // 0.2-0.3: the lists are what counts; TTFT needs one output token, ITL two.
    assert!(warm.kept(&b, Keep::All) && !no_first_token.kept(&b, Keep::Tokens(1.0)));
    assert!(!req(0.0, 1.0, None, 1.0).kept(&b, Keep::Tokens(2.0)));
}

#[test]
fn versions_map_to_their_family() {
    assert_eq!(Family::of_version("0.3.1"), Some(Family::V02));
    assert_eq!(Family::of_version("0.5.0.dev0"), Some(Family::V04));
    assert_eq!(Family::of_version("0.7.3"), Some(Family::V04));
    assert_eq!(Family::of_version("0.7.4"), Some(Family::V074));
    assert_eq!(Family::of_version("0.8.1"), Some(Family::V074));
    assert_eq!(Family::of_version("1.0.0"), Some(Family::V074));
    assert_eq!(Family::of_version("dev"), None);
}
