//! The `latscope` binary: the command line and the glue between the
//! measuring engines, the store and the renderers. Errors become one line on
//! stderr and an exit code (DESIGN.md): 0 ok, 1 error, 2 usage,
//! 3 threshold exceeded, 130 interrupted.

mod args;
mod exit;
mod output;
mod plan;
mod progress;
mod run;
mod show;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Run(a) => run::run(a),
        Command::List(a) => show::list(a),
        Command::Show(a) => show::show(a),
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
