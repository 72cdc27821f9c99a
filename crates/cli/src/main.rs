//! The `latscope` binary: the command line and the glue between the
//! measuring engines, the store and the renderers. Errors become one line on
//! stderr and an exit code (DESIGN.md): 0 ok, 1 error, 2 usage,
//! 3 threshold exceeded, 130 interrupted.

mod args;
mod check;
mod colour;
mod compare;
mod exit;
mod export;
mod forecast;
mod forecast_against;
mod help;
mod import;
mod micro;
mod monitor;
mod observer;
mod output;
mod plan;
mod push;
mod report;
mod run;
mod sched;
mod show;
mod study;
mod suite;

use clap::FromArgMatches;

use crate::args::{Cli, Command};

fn main() {
    // Workload helper processes are this binary in a hidden mode
    // (`latscope __workload ...`): answer them before any argument parsing.
    // `args_os`, because `args` panics on an argument that is not UTF-8.
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(code) = latscope_engine::workloads::helper_main(&argv) {
        std::process::exit(code);
    }
    let mut command = help::command();
    let parsed = command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|mut m| {
            Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(&mut help::command()))
        });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayVersion
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                eprintln!("latscope: {}", one_line(&e.render().to_string()));
                std::process::exit(exit::USAGE);
            }
        },
    };
    let result = match &cli.command {
        Command::Run(a) => run::run(a),
        Command::List(a) => show::list(a),
        Command::Show(a) => show::show(a),
        Command::Export(a) => export::export(a),
        Command::Import(a) => import::import(a),
        Command::Suite(a) => suite::suite(a),
        Command::Sched(a) => sched::sched(a),
        Command::Check(a) => check::check(a),
        Command::Forecast(a) => forecast::forecast(a),
        Command::Compare(a) => compare::compare(a),
        Command::Report(a) => report::report(a),
        Command::Micro(a) => micro::micro(a),
        Command::Monitor(a) => monitor::monitor(a),
        Command::Push(a) => push::push(a),
        Command::Pull(a) => push::pull(a),
        Command::Study(a) => study::study(a),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("latscope: error: {:#}", e.error);
            e.code
        }
    };
    std::process::exit(code);
}

/// clap's usage errors span several lines (message, hints, usage); a user of
/// latscope gets one: the message and its hints, without the usage block.
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect::<Vec<_>>()
        .join(" ")
}
