//! The `root` binary: parse the CLI and configuration, set up logging, run.

use std::process::ExitCode;

use clap::Parser;
use root::cli::{self, Cli};
use root::config::Config;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, cli::Command::SandboxRun) {
        // The community-build sandbox child: no logging, no configuration,
        // no async runtime — one tool call, then exit.
        return if root::builds::sandbox::child::main() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    if let cli::Command::SandboxProbe { open } = &cli.command {
        // Before logging and any thread: the probe confines this process.
        println!("{}", root::builds::sandbox::confine::probe(open));
        return ExitCode::SUCCESS;
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("root: configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    for var in Config::ignored_vars() {
        if std::env::var_os(var).is_some() {
            tracing::warn!(
                var,
                "ignored: Root stores everything in ROOT_DATA_DIR (redb)"
            );
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("root: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(cli, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("root: {e:#}");
            ExitCode::FAILURE
        }
    }
}
