//! The `host-sim` command (placeholder while the library settles).
pub fn main() -> std::process::ExitCode { std::process::ExitCode::SUCCESS }
