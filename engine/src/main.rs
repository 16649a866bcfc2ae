//! `rigaudit-engine`: the bundled engine's binary; see [`rigaudit_engine::cli`].

fn main() -> std::process::ExitCode {
    rigaudit_engine::cli::main_from(std::env::args_os())
}
