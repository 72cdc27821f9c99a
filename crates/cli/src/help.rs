//! The help of the commands and their options, kept as text beside the
//! sources (`crates/cli/help/`) and set on the command line's definition
//! at start: `commands.txt` holds each command's line, `common.txt` the
//! help of the options several commands share, `COMMAND.txt` the rest of
//! that command's (or where its help differs). An entry is `ID: TEXT`,
//! ID the field's name in `args.rs`; indented lines continue it.

use clap::{Command, CommandFactory};

use crate::args::Cli;

const COMMANDS: &str = include_str!("../help/commands.txt");
const COMMON: &str = include_str!("../help/common.txt");
const OPTIONS: &[(&str, &str)] = &[
    ("run", include_str!("../help/run.txt")),
    ("list", include_str!("../help/list.txt")),
    ("show", include_str!("../help/show.txt")),
    ("export", include_str!("../help/export.txt")),
    ("import", include_str!("../help/import.txt")),
    ("suite", include_str!("../help/suite.txt")),
    ("sched", include_str!("../help/sched.txt")),
    ("check", include_str!("../help/check.txt")),
    ("forecast", include_str!("../help/forecast.txt")),
    ("compare", include_str!("../help/compare.txt")),
    ("report", include_str!("../help/report.txt")),
    ("micro", include_str!("../help/micro.txt")),
    ("monitor", include_str!("../help/monitor.txt")),
    ("push", include_str!("../help/push.txt")),
    ("pull", include_str!("../help/pull.txt")),
    ("study", include_str!("../help/study.txt")),
];

/// The command line's definition, with its help.
pub fn command() -> Command {
    let mut cli = Cli::command();
    for (name, about) in entries(COMMANDS) {
        cli = cli.mut_subcommand(name, |c| c.about(about));
    }
    for &(name, text) in OPTIONS {
        cli = cli.mut_subcommand(name, |mut c| {
            let shared =
                entries(COMMON).filter(|(id, _)| c.get_arguments().any(|a| a.get_id() == id));
            for (id, help) in shared.collect::<Vec<_>>().into_iter().chain(entries(text)) {
                c = c.mut_arg(id, |a| a.help(help));
            }
            c
        });
    }
    cli
}

/// The entries of a help file, each joined into one line.
fn entries(text: &str) -> impl Iterator<Item = (String, String)> + '_ {
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        match (line.starts_with(char::is_whitespace), entries.last_mut()) {
            (true, Some((_, help))) => {
                help.push(' ');
                help.push_str(line.trim());
            }
            _ => {
                if let Some((id, help)) = line.split_once(": ") {
                    entries.push((id.to_string(), help.to_string()));
                }
            }
        }
    }
    entries.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command and option has its help, and every entry of the
    /// files names one (`mut_arg` would panic on one that does not).
    #[test]
    fn every_command_and_option_has_help() {
        let cli = command();
        cli.clone().debug_assert();
        for c in cli.get_subcommands().filter(|c| c.get_name() != "help") {
            assert!(c.get_about().is_some(), "{} has no help", c.get_name());
            for a in c
                .get_arguments()
                .filter(|a| !["help", "version"].contains(&a.get_id().as_str()))
            {
                assert!(
                    a.get_help().is_some(),
                    "{} {} has no help",
                    c.get_name(),
                    a.get_id()
                );
            }
        }
    }

    #[test]
    fn indented_lines_continue_an_entry() {
        let e: Vec<_> = entries("a: one\n    two\nb: three\n").collect();
        assert_eq!(
            e,
            [("a".into(), "one two".into()), ("b".into(), "three".into())]
        );
    }
}
