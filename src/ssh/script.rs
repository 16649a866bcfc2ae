//! Fixed scripts run on a box: every word quoted, run by `/bin/sh` once the box's login shell
//! passed the probe ([`super::login_shell`]), bounded in time and output.

use super::client::{Bounds, Output, Ssh, OUT_MAX};
use super::target::Target;
use super::words::command_line;
use std::process::Stdio;
use std::time::Duration;

/// How long a check over ssh (a digest, a library) may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// The fixed look-up of the NCCL library on a box: `$1` is its file name, the rest are folders
/// (from the rank's `LD_LIBRARY_PATH`); prints the path, its sha256 line and the version its text
/// names. The library is never loaded.
pub const NCCL_CHECK: &str = r#"f=$1
shift
for d in "$@"; do
    if [ -f "$d/$f" ]; then
        printf '%s\n' "$d/$f"
        sha256sum -- "$d/$f" || exit 3
        LC_ALL=C grep -a -o -m 1 -E 'NCCL version [0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}[+ ]' -- "$d/$f" | head -n 1
        exit 0
    fi
done
exit 4"#;

impl Ssh {
    /// Runs a fixed script on `t` with `args`, bounded in time; stdout, or what failed.
    pub(crate) fn run_script(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
    ) -> Result<Output, String> {
        let bounds = Bounds {
            input: Vec::new(),
            out_max: OUT_MAX,
            timeout: CHECK_TIMEOUT,
        };
        self.run_script_with(t, script, args, bounds)
    }

    /// Starts a fixed script on `t` with `args` whose stdout the caller reads as a stream (no
    /// stdin; stderr piped). The caller waits for the child.
    pub(crate) fn spawn_script(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
    ) -> Result<std::process::Child, String> {
        self.spawn_with(t, script, args, Stdio::null())
    }

    /// `ssh` running the fixed `script` with `args` (every word quoted), stdout and stderr piped.
    fn spawn_with(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
        stdin: Stdio,
    ) -> Result<std::process::Child, String> {
        super::login_shell::ensure(self, t)?;
        self.spawn_line(t, script_line(script, args)?, stdin)
    }

    /// [`Ssh::run_script`] with `input` on the script's stdin (written as it reads) and other
    /// bounds: stdout past `out_max` bytes is not read (`Output::cut`), and past `timeout` the
    /// client is killed and waited for.
    pub(crate) fn run_script_with(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
        b: Bounds,
    ) -> Result<Output, String> {
        super::login_shell::ensure(self, t)?;
        self.run_line(t, script_line(script, args)?, b)
    }
}

/// The line that runs the fixed `script` with `args` under `/bin/sh`, every word quoted.
fn script_line(script: &str, args: &[&str]) -> Result<String, String> {
    let mut words = vec!["/bin/sh", "-c", script, "rigaudit-check"];
    words.extend_from_slice(args);
    command_line(&words)
}
