//! `latscope monitor`: the command line as the daemon's top settings layer,
//! the daemon's lines on stderr (the journal under systemd), its errors as
//! exit codes.

use std::sync::Arc;

use latscope_model::RunStatus;
use latscope_monitor::config::Layer;
use latscope_monitor::daemon::{self, Start};

use crate::args::MonitorArgs;
use crate::exit::{self, Exit};

pub fn monitor(args: &MonitorArgs) -> Result<i32, Exit> {
    let cli = Layer {
        cpus: args.cpus.clone(),
        period: args.period.clone(),
        priority: args.priority,
        listen: args.listen.clone(),
        allow_remote: args.allow_remote.then_some(true),
        web_config_file: args.web_config_file.clone(),
        store: args.store.clone(),
        persist: args.persist.clone(),
        trace: args.trace.then_some(true),
        trace_backend: args.trace_backend.map(|b| b.as_str().to_string()),
        stacks: args.stacks.then_some(true),
        threshold: args.threshold.clone(),
        noise: args.noise.clone(),
        on_threshold: (!args.actions.on_threshold.is_empty())
            .then(|| args.actions.on_threshold.clone()),
        action_limit: args.actions.action_limit.clone(),
        ..Layer::default()
    };
    let start = Start {
        cli,
        config: args.config.clone(),
        command_line: crate::args::recorded_command_line(),
        say: Arc::new(|line: &str| eprintln!("latscope monitor: {line}")),
    };
    match daemon::run(start) {
        Ok(RunStatus::Complete) => Ok(exit::OK),
        Ok(_) => Ok(exit::ERROR),
        // The daemon names the setting; here it is the option.
        Err(daemon::MonitorError::Cpus(why)) => Err(Exit::usage(format!("--cpus: {why}"))),
        Err(e) if e.is_usage() => Err(Exit::usage(e)),
        Err(e) => Err(Exit::from(anyhow::Error::from(e))),
    }
}
