//! `host-sim`: see [`switchyard_host_sim::cli`].
fn main() -> std::process::ExitCode {
    switchyard_host_sim::cli::main()
}
