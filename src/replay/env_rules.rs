//! Which recorded variables a replayed rank gets: an allow-list of names and value shapes.
//!
//! A card's `env` comes from a page someone else published, and a variable can make a process
//! load code (`LD_PRELOAD`, the bundled engine's `RIGAUDIT_NCCL`, CUDA's injection library,
//! NCCL's plugins) or read its code from a place (`PYTHONPATH`, a kernel cache). So a recorded
//! variable is passed only when a row of [`RULES`] allows it, the first row whose name pattern
//! matches deciding:
//!
//! - a **setting** row passes the value when it has the row's [`Shape`] (a count, a flag, a
//!   word, a `host:port`, a device list). No shape admits a `/`, a leading `.`, `~` or `-`,
//!   white space, quotes or shell characters, so a setting never names a file of the page (a
//!   bare word is looked up nowhere: the loader needs a `/` to open a file by path);
//! - a **place** row (a library, plugin, cache, configuration, home or search path: whatever a
//!   runtime loads or runs code from) passes the value only when the user gave it: every part of
//!   the recorded value is a placeholder filled with `--set` (or by replay itself: the free
//!   port, the checkpoint fetched with its digest checked), with nothing but `:` between them;
//! - the last row, `*`, is the setting of an engine (`PARALLEL=8`, `KV=fp8`,
//!   `WORKER=me@127.0.0.1`): any other name, with a [`Shape::Word`] value.
//!
//! `--allow-env NAME` passes a variable whatever its row says. A refused variable is never set,
//! and the report names it with the reason (the replay's notes).

/// What a report says once after the refused variables.
pub const HOW_TO_PASS: &str = "a place passes only when its value is placeholders you fill with --set; --allow-env NAME passes any one; the allow-list is in docs/security.md";

/// What a setting's value may look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A whole number (`8`, `-1`).
    Count,
    /// `0`, `1`, `true`, `false`, `yes`, `no`, `on`, `off` (any case).
    Flag,
    /// A plain setting: letters, digits and `_ . , : = @ ^ + % -`, not starting with `.` or `-`
    /// (a `-` only before a digit), at most 256 bytes; no `/`, `~`, space, quote or shell
    /// character.
    Word,
    /// `HOST:PORT` (a host name, an IPv4 address or a bracketed IPv6 address).
    HostPort,
    /// GPUs by index, UUID or MIG name, comma-separated (`0,1`, `GPU-8f3...`, `all`).
    Devices,
}

/// What a row does with a variable it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Passed when the value has this shape.
    Setting(Shape),
    /// A place code is loaded or run from: passed only when the user gave the value.
    Place,
}

/// One row of the allow-list.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The names it covers: `NAME`, or one `*` standing for any text (`NCCL_*`, `*_PATH`, `*`).
    pub pattern: &'static str,
    pub kind: Kind,
    /// Why, for the report and docs/security.md.
    pub why: &'static str,
}

const fn set(pattern: &'static str, shape: Shape, why: &'static str) -> Rule {
    Rule {
        pattern,
        kind: Kind::Setting(shape),
        why,
    }
}

const fn place(pattern: &'static str, why: &'static str) -> Rule {
    Rule {
        pattern,
        kind: Kind::Place,
        why,
    }
}

use Shape::{Count, Devices, Flag, HostPort, Word};

const ENGINE: &str = "the bundled engine's setting";
const LOADER: &str =
    "the dynamic loader reads it: it loads libraries or changes where they come from";
const INTERPRETER: &str =
    "an interpreter or shell reads it: it runs code or changes where code comes from";
const NAMES_A_PLACE: &str = "its name says it holds a place (a path, a folder, a file, a library, a plugin, a cache or a configuration)";

/// The allow-list, first match wins: specific rows before the families they belong to, the
/// families before the catch-all.
pub const RULES: &[Rule] = &[
    // The bundled engine (engine/src): its ranks and switches are settings; RIGAUDIT_NCCL and
    // RIGAUDIT_NVRTC name libraries it loads, RIGAUDIT_CACHE its compiled kernels.
    set("RIGAUDIT_ENGINE_RANK", Count, ENGINE),
    set("RIGAUDIT_ENGINE_WORLD", Count, ENGINE),
    set("RIGAUDIT_ENGINE_SIMD", Word, ENGINE),
    set("RIGAUDIT_ENGINE_NO_REPACK", Flag, ENGINE),
    set("RIGAUDIT_ENGINE_NO_GRAPHS", Flag, ENGINE),
    place("RIGAUDIT_*", "the bundled engine loads a library (RIGAUDIT_NCCL, RIGAUDIT_NVRTC) or compiled kernels (RIGAUDIT_CACHE) from it"),
    // NCCL: rank 0's address, and its tuning knobs as words; its plugins and files are places.
    set("NCCL_COMM_ID", HostPort, "NCCL: rank 0's address and port"),
    place("NCCL_*PLUGIN", "NCCL loads it as a plugin library (network, tuner, profiler, environment)"),
    place("NCCL_*FILE", "NCCL reads or writes this file (configuration, topology, graph, debug output)"),
    set("NCCL_*", Word, "an NCCL setting"),
    // CUDA and the driver: device selection and switches; the rest (injection libraries, the
    // kernel cache, the install folder) are places.
    set("CUDA_VISIBLE_DEVICES", Devices, "CUDA: which GPUs"),
    set("NVIDIA_VISIBLE_DEVICES", Devices, "the container runtime: which GPUs"),
    set("CUDA_DEVICE_ORDER", Word, "CUDA: how GPUs are numbered"),
    set("CUDA_LAUNCH_BLOCKING", Flag, "CUDA: synchronous launches"),
    set("CUDA_MODULE_LOADING", Word, "CUDA: lazy or eager module loading"),
    set("CUDA_DEVICE_MAX_CONNECTIONS", Count, "CUDA: hardware queues"),
    set("CUDA_CACHE_DISABLE", Flag, "CUDA: no kernel cache"),
    set("NVIDIA_TF32_OVERRIDE", Flag, "cuBLAS: TF32 off"),
    place("CUDA_*", "CUDA loads an injection library, reads compiled kernels or its install from it"),
    // Threads and allocators of common runtimes.
    set("OMP_NUM_THREADS", Word, "OpenMP threads"),
    place("OMP_TOOL*", "OpenMP loads tool libraries from it"),
    set("OMP_*", Word, "an OpenMP setting"),
    set("MKL_NUM_THREADS", Count, "MKL threads"),
    set("OPENBLAS_NUM_THREADS", Count, "OpenBLAS threads"),
    set("RAYON_NUM_THREADS", Count, "Rayon threads"),
    set("TOKENIZERS_PARALLELISM", Flag, "tokenizers' threads"),
    set("PYTORCH_CUDA_ALLOC_CONF", Word, "PyTorch's allocator settings"),
    // Python's switches that change no code.
    set("PYTHONUNBUFFERED", Flag, "Python: unbuffered output"),
    set("PYTHONDONTWRITEBYTECODE", Flag, "Python: no .pyc files"),
    set("PYTHONHASHSEED", Word, "Python: the hash seed"),
    set("PYTHONIOENCODING", Word, "Python: the encoding of standard streams"),
    set("PYTHONUTF8", Flag, "Python: UTF-8 mode"),
    // The loader, interpreters and shells.
    place("LD_*", LOADER),
    place("DYLD_*", LOADER),
    place("GCONV_PATH", LOADER),
    place("PATH", "the programs a process starts are looked up in it"),
    place("PYTHON*", INTERPRETER),
    place("BASH_FUNC_*", INTERPRETER),
    place("BASH_ENV", INTERPRETER),
    place("ENV", INTERPRETER),
    place("SHELLOPTS", INTERPRETER),
    place("BASHOPTS", INTERPRETER),
    place("PS4", INTERPRETER),
    place("PROMPT_COMMAND", INTERPRETER),
    place("IFS", INTERPRETER),
    place("NODE_OPTIONS", INTERPRETER),
    place("PERL5OPT", INTERPRETER),
    place("PERL5DB", INTERPRETER),
    place("RUBYOPT", INTERPRETER),
    place("*_JAVA_OPTIONS", INTERPRETER),
    place("JAVA_TOOL_OPTIONS", INTERPRETER),
    place("LUA_INIT*", INTERPRETER),
    place("MALLOC_CONF", "jemalloc reads it (it can write profiles to files)"),
    place("OPENSSL_*", "OpenSSL loads engines and configuration from it"),
    place("SSLKEYLOGFILE", "TLS session keys are written to it"),
    place("HOME", "configuration and caches are read from it"),
    place("XDG_*", "configuration and caches are read from it"),
    place("TMPDIR", "temporary files, some of them loaded back, go there"),
    // Any other name that says it holds a place.
    place("*PATH", NAMES_A_PLACE),
    place("*DIR", NAMES_A_PLACE),
    place("*DIRS", NAMES_A_PLACE),
    place("*HOME", NAMES_A_PLACE),
    place("*FILE", NAMES_A_PLACE),
    place("*FILES", NAMES_A_PLACE),
    place("*LIB", NAMES_A_PLACE),
    place("*LIBS", NAMES_A_PLACE),
    place("*LIBRARY", NAMES_A_PLACE),
    place("*LIBRARIES", NAMES_A_PLACE),
    place("*PLUGIN", NAMES_A_PLACE),
    place("*PLUGINS", NAMES_A_PLACE),
    place("*PRELOAD", NAMES_A_PLACE),
    place("*CONF", NAMES_A_PLACE),
    place("*CONFIG", NAMES_A_PLACE),
    place("*CACHE", NAMES_A_PLACE),
    place("*OPT", INTERPRETER),
    place("*OPTS", INTERPRETER),
    place("*OPTIONS", INTERPRETER),
    // The catch-all: an engine's own setting, as a word.
    set("*", Word, "a setting of the engine"),
];

/// Whether `name` matches `pattern` (`*` stands for any text, at most one).
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
    }
}

/// The row that decides `name`.
pub fn rule_of(name: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| matches(r.pattern, name))
        .expect("the last row matches every name")
}

/// A variable name a process can be given: letters, digits and `_`, not starting with a digit.
pub fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Whether `v` has the shape `s`.
pub fn fits(s: Shape, v: &str) -> bool {
    match s {
        Count => {
            let digits = v.strip_prefix('-').unwrap_or(v);
            (1..=19).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
        }
        Flag => ["0", "1", "true", "false", "yes", "no", "on", "off"]
            .iter()
            .any(|f| f.eq_ignore_ascii_case(v)),
        Word => word(v),
        HostPort => host_port(v),
        Devices => {
            !v.is_empty()
                && v.len() <= 1024
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-,_:".contains(&b))
        }
    }
}

fn word(v: &str) -> bool {
    let lead_ok = match v.as_bytes() {
        [] => true,
        [b'-', next, ..] => next.is_ascii_digit(),
        [b'.', ..] | [b'-'] => false,
        _ => true,
    };
    lead_ok
        && v.len() <= 256
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.,:=@^+%-".contains(&b))
}

fn host_port(v: &str) -> bool {
    let Some((host, port)) = v.rsplit_once(':') else {
        return false;
    };
    let port_ok = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => {
            !v6.is_empty()
                && v6
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        }
        None => {
            !host.is_empty()
                && host.len() <= 253
                && !host.starts_with(['-', '.'])
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
        }
    };
    port_ok && host_ok
}

/// Whether the recorded `value` is wholly the user's: one or more placeholders (which replay
/// fills from `--set`, or with the free port or the checkpoint it checked), with only `:`
/// between them.
pub fn given_by_user(value: &str) -> bool {
    let mut rest = value;
    let mut any = false;
    while !rest.is_empty() {
        rest = rest.trim_start_matches(':');
        if rest.is_empty() {
            break;
        }
        let Some(body) = rest.strip_prefix('<') else {
            return false;
        };
        let Some(close) = body.find('>') else {
            return false;
        };
        if close == 0 || body[..close].contains('<') {
            return false;
        }
        any = true;
        rest = &body[close + 1..];
    }
    any
}

/// Why a recorded variable is not passed, or `None` when it is: `recorded` is the value as the
/// card writes it, `filled` with its placeholders filled. The reason is short; [`HOW_TO_PASS`]
/// says once what passes one.
pub fn refusal(name: &str, recorded: &str, filled: &str) -> Option<String> {
    if !name_ok(name) {
        return Some("not a variable name (letters, digits and _)".into());
    }
    if filled.contains('\0') {
        return Some("its value holds a NUL byte".into());
    }
    if given_by_user(recorded) {
        return None;
    }
    let rule = rule_of(name);
    match rule.kind {
        Kind::Place => Some(format!("a place: {}", rule.why)),
        Kind::Setting(shape) if fits(shape, filled) => None,
        Kind::Setting(shape) => Some(format!("{}: expects {}", rule.why, shape_words(shape))),
    }
}

/// A shape in words, for a refusal.
pub fn shape_words(s: Shape) -> &'static str {
    match s {
        Count => "a whole number",
        Flag => "0, 1, true, false, yes, no, on or off",
        Word => {
            "a plain word (letters, digits, _ . , : = @ ^ + % -; no path, space or shell character)"
        }
        HostPort => "HOST:PORT",
        Devices => "GPU indexes, UUIDs or MIG names, comma-separated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passes(name: &str, value: &str) -> bool {
        refusal(name, value, value).is_none()
    }

    #[test]
    fn the_seed_pages_variables_pass() {
        for (k, v) in [
            ("TF_GLM_WORLD", "2"),
            ("TF_GLM_RANK", "1"),
            ("NCCL_COMM_ID", "10.0.0.1:29583"),
            ("NCCL_COMM_ID", "[fe80::1]:29583"),
            ("NCCL_SOCKET_IFNAME", "enp1s0f0np0"),
            ("NCCL_SOCKET_IFNAME", "^docker,lo"),
            ("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"),
            ("NCCL_DEBUG", "INFO"),
            ("WORKER", "me@127.0.0.1"),
            ("MEMORY_RESERVE_GIB", "9.5"),
            ("CONTEXT", "auto"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
            (
                "CUDA_VISIBLE_DEVICES",
                "GPU-8f3a2c1e-0000-1111-2222-333344445555",
            ),
            ("PYTHONUNBUFFERED", "1"),
            ("OMP_NUM_THREADS", "8"),
            ("RIGAUDIT_ENGINE_WORLD", "2"),
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
            ("OFFSET", "-1"),
            ("EMPTY", ""),
        ] {
            assert!(passes(k, v), "{k}={v}: {:?}", refusal(k, v, v));
        }
        // A place the user gave through placeholders.
        let recorded = "<folder with libnccl.so.2.30.7>";
        assert_eq!(refusal("LD_LIBRARY_PATH", recorded, "/opt/nccl/lib"), None);
        assert_eq!(refusal("RIGAUDIT_NCCL", "<a>:<b>", "/x:/y"), None);
    }

    #[test]
    fn places_and_code_loaders_are_refused_whatever_their_value() {
        for (k, v) in [
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("LD_PRELOAD", "evil.so"),
            ("LD_LIBRARY_PATH", "lib"),
            ("LD_LIBRARY_PATH", "/opt/x:<folder>"),
            ("RIGAUDIT_NCCL", "libnccl.so.2"),
            ("RIGAUDIT_NVRTC", "/tmp/x.so"),
            ("RIGAUDIT_CACHE", "cache"),
            ("CUDA_INJECTION64_PATH", "inject.so"),
            ("CUDA_CACHE_PATH", "kernels"),
            ("CUDA_HOME", "cuda"),
            ("NCCL_NET_PLUGIN", "evil"),
            ("NCCL_TUNER_PLUGIN", "evil"),
            ("NCCL_PROFILER_PLUGIN", "evil"),
            ("NCCL_CONF_FILE", "nccl.conf"),
            ("NCCL_DEBUG_FILE", "log"),
            ("OMP_TOOL_LIBRARIES", "tool.so"),
            ("PYTHONPATH", "."),
            ("PYTHONSTARTUP", "x.py"),
            ("PATH", "bin"),
            ("HOME", "h"),
            ("XDG_CACHE_HOME", "c"),
            ("TRITON_CACHE_DIR", "t"),
            ("HF_HOME", "h"),
            ("VLLM_PLUGINS", "evil"),
            ("MY_ENGINE_PLUGIN_PATH", "p"),
            ("BASH_FUNC_ls%%", "() { id; }"),
            ("JAVA_TOOL_OPTIONS", "-javaagent:x"),
            ("PERL5OPT", "-Mx"),
            ("SSLKEYLOGFILE", "k"),
        ] {
            assert!(!passes(k, v), "{k}={v} passed");
        }
    }

    #[test]
    fn settings_that_are_not_words_are_refused() {
        for (k, v) in [
            ("PARALLEL", "/tmp/x"),
            ("PARALLEL", "../x"),
            ("PARALLEL", ".hidden"),
            ("PARALLEL", "~root"),
            ("PARALLEL", "$(touch m)"),
            ("PARALLEL", "a b"),
            ("PARALLEL", "a;b"),
            ("PARALLEL", "`id`"),
            ("PARALLEL", "-x"),
            ("PARALLEL", "a\nb"),
            ("PARALLEL", "a\u{1b}b"),
            ("NCCL_COMM_ID", "host"),
            ("NCCL_COMM_ID", "-oProxy:1"),
            ("NCCL_SOCKET_IFNAME", "/dev/x"),
            ("RIGAUDIT_ENGINE_WORLD", "two"),
            ("CUDA_LAUNCH_BLOCKING", "maybe"),
            ("CUDA_VISIBLE_DEVICES", "0 1"),
            ("A=B", "x"),
            ("1X", "x"),
            ("", "x"),
        ] {
            assert!(!passes(k, v), "{k}={v:?} passed");
        }
        assert!(!passes("X", &"a".repeat(257)));
        assert!(refusal("X", "a\0", "a\0").is_some());
    }

    #[test]
    fn placeholders_only_are_the_users() {
        assert!(given_by_user("<a>"));
        assert!(given_by_user("<a>:<b>"));
        assert!(given_by_user(":<a>:"));
        for not in ["", "a", "<a>/lib", "/x:<a>", "<>", "<a", "<a<b>", "x<a>"] {
            assert!(!given_by_user(not), "{not}");
        }
    }

    #[test]
    fn every_row_is_reachable_and_the_catch_all_is_last() {
        assert_eq!(RULES.last().unwrap().pattern, "*");
        for (i, r) in RULES.iter().enumerate() {
            let example = r.pattern.replace('*', "X_");
            let first = RULES.iter().position(|q| matches(q.pattern, &example));
            assert_eq!(
                first,
                Some(i),
                "row {} is shadowed by an earlier one",
                r.pattern
            );
        }
    }
}
