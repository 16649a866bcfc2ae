//! Differential tests of vllm (see main.rs): the result files vLLM's own serving-benchmark client
//! wrote, unedited, at each version pinned in `fixtures/differential/pins.toml` [vllm] and over its
//! matrix of options and reply shapes (`scripts/differential/vllm.sh`), read back by rigaudit.
//! On every one rigaudit must recompute each printed figure as that version did (or say, at info,
//! that the file cannot give it), raise no error, and warn only of what vLLM's own code does
//! (each warning naming it) or of a statistic too thin to stand (docs/formats/vllm.md).

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The warnings a genuine vLLM file may draw: failed requests named, vLLM's own recording of
/// textless replies (rows V2, V3) and of uncounted tokens (row V6, `speed.token-source` naming
/// 0.7.0 to 0.8.3), a percentile from too few samples (row V11).
fn named(check: &str, message: &str) -> bool {
    match check {
        "import.failed-requests" | "import.failed-as-zero" | "import.ttft-empty-chunk" => true,
        "import.percentile-few-samples" => true,
        "speed.token-source" => message.contains("vLLM 0.7.0 to 0.8.3"),
        _ => false,
    }
}

/// Every fixture: (version, case, result file).
fn fixtures() -> Vec<(String, String, PathBuf)> {
    let base = root().join("fixtures/differential/vllm");
    let mut out = Vec::new();
    for v in std::fs::read_dir(&base).unwrap() {
        let v = v.unwrap().path();
        if v.ends_with("sglang") {
            continue;
        }
        for c in std::fs::read_dir(&v).unwrap() {
            let c = c.unwrap().path();
            let name = |p: &PathBuf| p.file_name().unwrap().to_string_lossy().to_string();
            out.push((name(&v), name(&c), c.join("result.json")));
        }
    }
    out.sort();
    assert!(out.len() >= 30, "{} vLLM fixtures", out.len());
    out
}

fn verify(path: &Path) -> Run {
    let p = path.to_str().unwrap();
    rigaudit(&["verify", "--from", "vllm", p, "--format", "json"])
}

/// The results of a file: one object, or one a line (`--append-result`).
fn results(path: &Path) -> Vec<Value> {
    // Python's json writes a bare Infinity (SGLang's request_rate): read here as null.
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace(": Infinity", ": null");
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    }
}

fn version(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|x| x.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// The printed figures a version's file holds that rigaudit recomputes or names as not
/// recomputable: counts, totals, throughputs, distributions, peaks.
fn figures(result: &Value) -> Vec<String> {
    let o = result.as_object().unwrap();
    o.iter()
        .filter(|(_, v)| v.is_number())
        .map(|(k, _)| k.clone())
        .filter(|k| {
            k.ends_with("_ms")
                || k.ends_with("_throughput")
                || k.starts_with("total_")
                || k.starts_with("max_") && k != "max_concurrency"
                || ["completed", "request_goodput", "request_goodput:"].contains(&k.as_str())
        })
        .collect()
}

#[test]
fn no_genuine_file_draws_an_error_and_every_warning_names_vllms_own_behaviour() {
    let mut wrong = Vec::new();
    for (v, c, path) in fixtures() {
        let run = verify(&path);
        if run.code != 0 {
            wrong.push(format!("{v}/{c}: exit {}: {}", run.code, run.stderr));
        }
        for f in run.json()["findings"].as_array().unwrap() {
            let (sev, check) = (
                f["severity"].as_str().unwrap(),
                f["check"].as_str().unwrap(),
            );
            let message = f["message"].as_str().unwrap();
            if sev == "error" || sev == "warning" && !named(check, message) {
                wrong.push(format!("{v}/{c}: {sev} {check}: {}", f["message"]));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_printed_figure_is_recomputed_as_the_version_did_or_said_not_to_be() {
    let mut wrong = Vec::new();
    for (v, c, path) in fixtures() {
        let run = verify(&path);
        let report = run.json();
        let recomputed: BTreeSet<String> = report["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .inspect(|r| {
                if r["matches"] != true {
                    wrong.push(format!("{v}/{c}: {r}"));
                }
            })
            .map(|r| {
                r["key"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("vllm.")
                    .to_string()
            })
            .collect();
        let said: BTreeSet<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "import.not-recomputable")
            .flat_map(|f| f["data"]["keys"].as_array().cloned().unwrap_or_default())
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        for result in results(&path) {
            for k in figures(&result) {
                if !recomputed.contains(&k) && !said.contains(&k) {
                    wrong.push(format!(
                        "{v}/{c}: {k} neither recomputed nor said not to be"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What each version's files let rigaudit recompute (rows V1, V9, V13): TTFT and ITL always;
/// TPOT and E2EL from 0.30 (latencies); the peaks from 0.16 (start times).
#[test]
fn what_is_recomputed_follows_what_each_version_saves() {
    for (v, c, path) in fixtures() {
        if !["clean", "refused"].contains(&c.as_str()) {
            continue;
        }
        let run = verify(&path);
        let keys: BTreeSet<String> = run.json()["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect();
        let has = |k: &str| keys.contains(&format!("vllm.{k}"));
        for k in [
            "completed",
            "mean_ttft_ms",
            "p99_itl_ms",
            "output_throughput",
        ] {
            assert!(has(k), "{v}/{c}: {k} not recomputed: {keys:?}");
        }
        let (_, minor) = version(&v);
        assert_eq!(has("mean_e2el_ms"), minor >= 30, "{v}/{c}: {keys:?}");
        // TPOT needs latencies, unless no success has two tokens (vLLM's list is then empty,
        // its figures those of [0]: 0.7.3's uncounted replies).
        let r = &results(&path)[0];
        let one_token = r["output_lens"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x.as_f64().unwrap() <= 1.0);
        assert_eq!(
            has("std_tpot_ms"),
            minor >= 30 || one_token,
            "{v}/{c}: {keys:?}"
        );
        assert_eq!(
            has("max_concurrent_requests"),
            minor >= 30,
            "{v}/{c}: {keys:?}"
        );
    }
}

fn case(v: &str, c: &str) -> Run {
    verify(&root().join(format!("fixtures/differential/vllm/{v}/{c}/result.json")))
}

fn messages(run: &Run, check: &str) -> Vec<String> {
    run.findings(check)
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["severity"].as_str().unwrap(),
                f["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_textless_reply_is_recorded_as_each_version_records_it() {
    // 0.6.2: a 200 reply with no text (the engine's immediate stop, the shaped empty and stop
    // replies) is a success at TTFT 0, in vLLM's own figures: named at warning, not an error.
    let run = case("0.6.2", "shapes");
    let m = messages(&run, "import.failed-as-zero").join("\n");
    assert!(
        m.starts_with("warning 3 of the 8 successes have TTFT 0"),
        "{m}"
    );
    assert!(m.contains("vLLM to 0.6.3 records a 200 reply"), "{m}");
    // 0.6.6: the completions client fails such a reply.
    let run = case("0.6.6", "shapes");
    let m = messages(&run, "import.failed-requests").join("\n");
    assert!(
        m.contains("3 x Never received a valid chunk to calculate TTFT"),
        "{m}"
    );
    assert!(!run.has("import.failed-as-zero") && !run.has("import.ttft-empty-chunk"));
    // From 0.7 a chunk with choices and no text is a first token: the shaped empty reply (and
    // the engine's stops, whose finish chunk has choices) are successes with a TTFT.
    for v in ["0.7.3", "0.10.1", "0.11.1", "0.20.0", "0.34.0"] {
        let run = case(v, "shapes");
        let m = messages(&run, "import.ttft-empty-chunk").join("\n");
        assert!(
            m.starts_with("warning ") && m.contains("successes carry no text: vLLM from 0.7"),
            "{v}: {m}"
        );
        assert!(!run.has("import.failed-as-zero"), "{v}: {}", run.stdout);
    }
}

#[test]
fn replies_without_a_usage_only_chunk_count_no_token_from_0_7_to_0_8_3() {
    // The engine puts usage on its finish chunk (which has choices): 0.7.3 keeps its default 0
    // for every reply, and its own totals, throughputs and TPOT say 0; 0.10.1's script reads
    // usage from any chunk, 0.11.1 falls back to the tokenizer.
    let run = case("0.7.3", "clean");
    let m = messages(&run, "speed.token-source").join("\n");
    assert!(
        m.starts_with("warning 6 of the 6 successes carry text but 0 output tokens"),
        "{m}"
    );
    let r = &results(&root().join("fixtures/differential/vllm/0.7.3/clean/result.json"))[0];
    assert_eq!(r["total_output_tokens"], 0);
    assert_eq!(r["mean_tpot_ms"], 0.0);
    for v in ["0.10.1", "0.11.1", "0.34.0"] {
        assert!(!case(v, "clean").has("speed.token-source"), "{v}");
    }
}

#[test]
fn the_e2el_mean_and_median_of_0_6_3_and_before_are_named_as_swapped() {
    let swapped = |run: &Run| {
        messages(run, "import.not-recomputable")
            .iter()
            .any(|m| m.contains("mean_e2el_ms holds the median"))
    };
    assert!(swapped(&case("0.6.2", "clean")));
    assert!(!swapped(&case("0.6.6", "clean")));
    // And the file's own numbers show it: its mean_e2el_ms is its p50.
    let r = &results(&root().join("fixtures/differential/vllm/0.6.2/clean/result.json"))[0];
    assert_eq!(r["mean_e2el_ms"], r["p50_e2el_ms"]);
}

#[test]
fn refused_and_broken_replies_are_named_failures_over_which_nothing_is_computed() {
    for v in ["0.6.2", "0.7.3", "0.34.0"] {
        let run = case(v, "refused");
        let m = messages(&run, "import.failed-requests").join("\n");
        assert!(
            m.contains("2 of 6 requests failed (2 x Bad Request)"),
            "{v}: {m}"
        );
    }
    // A stream cut, an HTTP 500, and (0.6.2) a stream without [DONE] or with an error object.
    let m = messages(&case("0.6.2", "shapes"), "import.failed-requests").join("\n");
    for what in [
        "Internal Server Error",
        "KeyError: 'choices'",
        "'latency'",
        "ClientPayloadError",
    ] {
        assert!(m.contains(what), "{what}: {m}");
    }
    // 0.34 fails a stream carrying an error object (stream_error, 0.31 on).
    let m = messages(&case("0.34.0", "shapes"), "import.failed-requests").join("\n");
    assert!(m.contains("shaped mid-stream error"), "{m}");
}

#[test]
fn appended_results_are_each_read_and_warmups_are_not_counted() {
    let run = case("0.34.0", "aggregates");
    let m = messages(&run, "import.not-recomputable").join("\n");
    assert!(m.contains("no per-request lists"), "{m}");
    let p = root().join("fixtures/differential/vllm/0.34.0/aggregates/result.json");
    assert_eq!(results(&p).len(), 2);
    // Two warm-up requests and a ramp-up: the figures are over the five requests only.
    let p = root().join("fixtures/differential/vllm/0.34.0/warmup-rampup/result.json");
    let r = &results(&p)[0];
    assert_eq!(r["completed"], 5);
    assert_eq!(r["ttfts"].as_array().unwrap().len(), 5);
    assert_eq!(case("0.34.0", "warmup-rampup").code, 0);
}

#[test]
fn an_edit_that_vllm_could_not_have_written_is_still_an_error() {
    // A 0.34 completions file whose first success is rewritten with no first token: vLLM's
    // completions client fails such a reply, so the success is not as vLLM recorded it.
    let p = root().join("fixtures/differential/vllm/0.34.0/clean/result.json");
    let mut r = results(&p).remove(0);
    r["ttfts"][0] = 0.0.into();
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("result.json");
    std::fs::write(&q, r.to_string()).unwrap();
    let run = verify(&q);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.has_at("import.failed-as-zero", "error"),
        "{}",
        run.stdout
    );
}

#[test]
fn sglang_bench_serving_lines_are_read_their_throughputs_recomputed_the_rest_said() {
    // SGLang's bench_serving appends one line of aggregates a run, `request_rate` a bare
    // Infinity; 0.3.6 writes no request_throughput nor input_throughput (row V17).
    let base = root().join("fixtures/differential/vllm/sglang");
    let mut seen = 0;
    for v in std::fs::read_dir(&base).unwrap() {
        for c in std::fs::read_dir(v.unwrap().path()).unwrap() {
            let path = c.unwrap().path().join("result.jsonl");
            let run = verify(&path);
            assert_eq!(
                run.code,
                0,
                "{}: {}{}",
                path.display(),
                run.stdout,
                run.stderr
            );
            let report = run.json();
            let keys: Vec<&str> = report["recomputed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["key"].as_str().unwrap())
                .collect();
            // Each throughput the line prints, against its total over the duration.
            let line = &results(&path)[0];
            for k in [
                "request_throughput",
                "output_throughput",
                "input_throughput",
            ] {
                let printed = line.get(k).is_some();
                let checked = keys.contains(&format!("vllm.{k}").as_str());
                assert_eq!(printed, checked, "{}: {k}: {keys:?}", path.display());
            }
            assert!(keys.contains(&"vllm.output_throughput"), "{keys:?}");
            assert!(run.has("import.not-recomputable"), "{}", run.stdout);
            seen += 1;
        }
    }
    assert!(seen >= 4, "{seen} SGLang fixtures");
}

#[test]
fn client_queue_figures_and_decimal_percentiles_are_recomputed() {
    // 0.34 with --max-concurrency, a finite rate and both queue metrics asked (row V14), and
    // --metric-percentiles 50,99.9 (keys `p99.9_*`, row V11).
    let run = case("0.34.0", "queue");
    let keys: Vec<String> = run.json()["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect();
    for k in [
        "vllm.p99.9_client_queue_time_ms",
        "vllm.std_e2el_including_client_queue_ms",
        "vllm.p99.9_ttft_ms",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k}: {keys:?}");
    }
    assert_eq!(run.code, 0, "{}", run.stdout);
}
