//! The hidden helper modes of the latscope binary: `latscope __workload
//! MODE ARGS`. The workloads start them as child processes; a user never
//! needs to.
//!
//! | mode | what it does |
//! |---|---|
//! | `guard [--repeat] [--remove-dir DIR] -- PROGRAM ARGS` | runs PROGRAM in the guard's group; ends the whole group (and removes DIR) when latscope dies, when told to stop, or when PROGRAM ends |
//! | `cpu-spin DUTY` | spins on the CPU it is pinned to, DUTY percent of each 10 ms |
//! | `tty-pump PAIRS RATE CHUNK` | pushes bytes through PAIRS raw pseudo-terminals, master to slave, RATE bytes/s each (0: as fast as it goes) |
//! | `net-loop LEVEL` | TCP and UDP over 127.0.0.1 |
//! | `net-sink IF CIDR` / `net-source IF CIDR PEER LEVEL` | the two ends of the veth pair, each in its own network namespace |
//! | `exec-storm RATE` | spawns and waits for `latscope __workload nop`, RATE a second (0: as fast as it goes) |
//! | `rt-load PRIO BUSY_NS PERIOD_NS` | one SCHED_FIFO thread at PRIO, busy BUSY_NS of every PERIOD_NS |
//! | `nop` | exits at once |

mod args;
mod guard;
mod net;
mod pace;
mod rt;
mod spin;
mod tty;

pub(crate) use args::helper_exe;
pub use args::HELPER_ARG;

/// Runs a helper mode when `args` (the whole `argv`, program name first)
/// asks for one, and returns its exit code; None for a normal invocation.
/// Call it first thing in `main`, before argument parsing (as the
/// `latscope` binary's `main` does, through the engine):
///
/// ```ignore
/// if let Some(code) = latscope_workloads::helper_main(&std::env::args().collect::<Vec<_>>()) {
///     std::process::exit(code);
/// }
/// ```
pub fn helper_main(args: &[String]) -> Option<i32> {
    if args.get(1).map(String::as_str) != Some(HELPER_ARG) {
        return None;
    }
    let mode = args.get(2).map(String::as_str).unwrap_or("");
    let rest = args.get(3..).unwrap_or(&[]);
    let result = match mode {
        "guard" => guard::main(rest),
        "cpu-spin" => spin::main(rest),
        "tty-pump" => tty::main(rest),
        "net-loop" => net::loop_main(rest),
        "net-sink" => net::sink_main(rest),
        "net-source" => net::source_main(rest),
        "exec-storm" => spin::exec_storm_main(rest),
        "rt-load" => rt::main(rest),
        "nop" => Ok(0),
        other => Err(format!("unknown helper mode '{other}'")),
    };
    Some(match result {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("latscope {HELPER_ARG} {mode}: {msg}");
            1
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_the_helper_argument_selects_a_mode() {
        assert_eq!(helper_main(&argv(&["latscope", "run"])), None);
        assert_eq!(helper_main(&argv(&["latscope"])), None);
        assert_eq!(helper_main(&argv(&[])), None);
        assert_eq!(
            helper_main(&argv(&["latscope", HELPER_ARG, "nop"])),
            Some(0)
        );
        assert_eq!(
            helper_main(&argv(&["latscope", HELPER_ARG, "bogus"])),
            Some(1)
        );
        assert_eq!(helper_main(&argv(&["latscope", HELPER_ARG])), Some(1));
        assert_eq!(
            helper_main(&argv(&["latscope", HELPER_ARG, "cpu-spin", "x"])),
            Some(1)
        );
        assert_eq!(
            helper_main(&argv(&["latscope", HELPER_ARG, "tty-pump", "1"])),
            Some(1)
        );
        assert_eq!(
            helper_main(&argv(&["latscope", HELPER_ARG, "guard", "--", ""])),
            Some(1)
        );
    }
}
