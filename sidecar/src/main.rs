//! The `switchyard` binary: see [`switchyard::cli`].

fn main() {
    std::process::exit(switchyard::cli::run(std::env::args_os()));
}
