//! `cargo xtask`: the ld-fallback tooling. Everything is in the library (`xtask::commands`
//! is the command tree), so that integration tests drive the same code the CLI runs.

fn main() -> std::process::ExitCode {
    xtask::commands::main()
}
