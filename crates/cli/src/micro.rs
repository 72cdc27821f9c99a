//! `latscope micro`: the microbenchmarks, stored as a run with one `micro`
//! cell per benchmark, each stored as soon as it is measured (so Ctrl-C
//! keeps every finished one), then printed in the study's style.

use anyhow::Context;
use latscope_engine::system::{
    caps, cpus_in_order, monotonic_ns, online_cpus, realtime_ns, sysinfo, StopSignals,
};
use latscope_engine::Stop;
use latscope_micro::ops::Benchmark;
use latscope_micro::session::{select, Session, SessionOptions};
use latscope_model::{
    CellMeta, CellSettings, CommonSettings, CpuId, MicroResult, MicroSettings, Nanos, Policy,
    RunStatus,
};
use latscope_store::Store;

use crate::args::MicroArgs;
use crate::exit::{self, Exit};

pub fn micro(args: &MicroArgs) -> Result<i32, Exit> {
    let benchmarks = select(&args.bench, args.quick).map_err(Exit::usage)?;
    if args.list {
        for b in &benchmarks {
            let two = if b.two_cpus { " (two CPUs)" } else { "" };
            crate::output::print(&format!("{:<28} {}{two}\n", b.id(), b.operation));
        }
        return Ok(exit::OK);
    }
    let (cpu, other) = choose_cpus(args.cpus.as_deref())?;
    let mut options = SessionOptions::new(cpu, other, args.quick);
    if let Some(n) = args.iterations {
        options.iterations = n as usize;
    }

    // The store and the JSON file must be usable before anything runs.
    let mut store = Store::open(&args.store.store)?;
    if let Some(path) = &args.json {
        crate::output::check_writable(path)?;
    }
    let signals = StopSignals::install().context("cannot install signal handlers")?;
    let stop = Stop::from_signals(&signals);

    let system = sysinfo::snapshot();
    let meta = latscope_engine::running_meta(
        Nanos(realtime_ns()),
        crate::args::recorded_command_line(),
        &system,
    );
    let run = store.create_run(&meta, &system, &caps::detect())?;
    let session = match Session::start(options.clone()) {
        Ok(s) => s,
        Err(e) => {
            let ended = Nanos(realtime_ns());
            let _ = store.finish_run(run, RunStatus::Failed, ended, &[e.to_string()]);
            return Err(anyhow::Error::from(e).into());
        }
    };
    store.set_micro_context(run, &session.context())?;

    let quiet = args.quiet;
    let mut index = 0u32;
    let flag = stop.flag();
    let mut started = monotonic_ns();
    let outcome = session.run(&benchmarks, &flag, &mut |b: &Benchmark, r: MicroResult| {
        let now = monotonic_ns();
        let cell = CellMeta {
            index,
            probe: "micro".into(),
            workload: "idle".into(),
            settings: CellSettings::Micro(MicroSettings {
                bench: b.id(),
                iterations: options.iterations as u32,
                warmup: options.warmup as u32,
                cpu,
                other_cpu: r.other_cpu,
                quick: options.quick,
                common: CommonSettings {
                    policy: Policy::Other,
                    priority: 0,
                    cpus: std::iter::once(cpu)
                        .chain(r.other_cpu)
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                    ..CommonSettings::default()
                },
            }),
            duration_ns: Nanos(now.saturating_sub(started)),
            monotonic_start_ns: Nanos(started),
        };
        started = now;
        index += 1;
        if !quiet {
            match &r.skipped {
                Some(why) => eprintln!("{:<28} skipped: {why}", r.bench),
                None => eprintln!("{:<28} {}", r.bench, latscope_report::op_time(r.median_ns)),
            }
        }
        store.add_micro_cell(run, &cell, &r).map(|_| ())
    });
    let ended = Nanos(realtime_ns());
    let (status, notes) = match &outcome {
        Err(e) => (RunStatus::Failed, vec![format!("the store failed: {e}")]),
        Ok(()) if stop.stopped() => (
            RunStatus::Interrupted,
            vec![format!(
                "interrupted after {index} of {} benchmarks",
                benchmarks.len()
            )],
        ),
        Ok(()) => (RunStatus::Complete, Vec::new()),
    };
    let finished = store.finish_run(run, status, ended, &notes);
    outcome?;
    finished?;

    let stored = store.load_run(run)?;
    let micro = store.load_micro(run)?;
    let (context, results): (_, Vec<MicroResult>) = match &micro {
        Some(m) => (m.context.as_ref(), m.results()),
        None => (None, Vec::new()),
    };
    if let Some(path) = &args.json {
        crate::output::write_json_doc(
            &latscope_report::micro_json(&stored, context, &results),
            path,
        )?;
    }
    if !quiet {
        crate::output::print(&latscope_report::micro_text(&stored, context, &results));
    }
    Ok(crate::run::status_code(status))
}

/// The measuring CPU and the partner: `--cpus A,B`, or the last online CPU
/// and the one before it.
fn choose_cpus(text: Option<&str>) -> Result<(u32, Option<u32>), Exit> {
    let online = online_cpus().context("cannot read the online CPUs")?;
    let chosen: Vec<CpuId> = match text {
        Some(t) => {
            let v = cpus_in_order(t).map_err(|e| Exit::usage(format!("--cpus: {e}")))?;
            if v.is_empty() || v.len() > 2 {
                return Err(Exit::usage(format!(
                    "--cpus wants the measuring CPU and at most one partner (e.g. 1,0), not '{t}'"
                )));
            }
            if let Some(c) = v.iter().find(|c| !online.contains(**c)) {
                return Err(Exit::usage(format!(
                    "--cpus: CPU {} is not online (online CPUs: {online})",
                    c.0
                )));
            }
            v
        }
        None => {
            let all: Vec<CpuId> = online.iter().collect();
            all.into_iter().rev().take(2).collect()
        }
    };
    Ok((chosen[0].0, chosen.get(1).map(|c| c.0)))
}
