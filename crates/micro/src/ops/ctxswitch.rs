//! Context switches: a one-byte token passed through two pipes between the
//! measuring thread and a partner thread, both pinned to the same CPU (every
//! pass is a switch) or to two CPUs (every pass is a cross-CPU wake-up), as
//! lmbench's `lat_ctx` and `perf bench sched pipe` do. One operation is one
//! round trip: the token there and back, two passes.

use std::io::{pipe, PipeReader, PipeWriter, Read, Write};
use std::thread::JoinHandle;

use latscope_model::CpuId;
use latscope_platform::os_ops::EchoProcess;
use latscope_platform::set_affinity;

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// The measuring side of the pair; dropping it closes the pipe to the
/// partner, which then ends, and waits for it.
struct PingPong {
    to_partner: Option<PipeWriter>,
    from_partner: PipeReader,
    partner: Option<JoinHandle<()>>,
}

impl PingPong {
    fn new(partner_cpu: u32) -> Result<PingPong, BenchError> {
        let os = |what: &'static str| {
            move |e| BenchError::Os {
                what: what.to_string(),
                source: e,
            }
        };
        let (mut partner_in, to_partner) = pipe().map_err(os("creating a pipe"))?;
        let (from_partner, mut partner_out) = pipe().map_err(os("creating a pipe"))?;
        let partner = std::thread::Builder::new()
            .name("micro-partner".to_string())
            .spawn(move || {
                if set_affinity(CpuId(partner_cpu)).is_err() {
                    return;
                }
                let mut b = [0u8; 1];
                // Echo every byte until the measuring side closes its end.
                while matches!(partner_in.read(&mut b), Ok(1)) {
                    if partner_out.write_all(&b).is_err() {
                        return;
                    }
                }
            })
            .map_err(os("starting the partner thread"))?;
        let mut p = PingPong {
            to_partner: Some(to_partner),
            from_partner,
            partner: Some(partner),
        };
        // One round trip proves the partner is there (and pinned: a partner
        // that could not pin itself has ended and closed its pipe).
        p.run(1).map_err(|_| {
            BenchError::Setup(format!(
                "the partner thread could not be pinned to CPU {partner_cpu}"
            ))
        })?;
        Ok(p)
    }
}

impl Operation for PingPong {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let to = self
            .to_partner
            .as_mut()
            .ok_or_else(|| BenchError::Setup("the pipe is closed".into()))?;
        let mut b = [7u8; 1];
        for _ in 0..ops {
            to.write_all(&b).map_err(|e| BenchError::Os {
                what: "writing the token".into(),
                source: e,
            })?;
            self.from_partner
                .read_exact(&mut b)
                .map_err(|e| BenchError::Os {
                    what: "reading the token back".into(),
                    source: e,
                })?;
        }
        Ok(())
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        drop(self.to_partner.take());
        if let Some(p) = self.partner.take() {
            let _ = p.join();
        }
    }
}

/// The same round trip with a child process as the partner (every switch
/// changes address space).
struct ProcessPingPong(EchoProcess);

impl Operation for ProcessPingPong {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            self.0.round_trip().map_err(|e| BenchError::Os {
                what: "passing the token to the child process".into(),
                source: e,
            })?;
        }
        Ok(())
    }
}

fn process_partner(cpu: u32) -> Result<Box<dyn Operation>, BenchError> {
    let mut p = ProcessPingPong(EchoProcess::start(cpu).map_err(|e| BenchError::Os {
        what: "starting the partner process".into(),
        source: e,
    })?);
    // A first round trip proves the child is there and pinned.
    p.run(1).map_err(|_| {
        BenchError::Setup(format!(
            "the partner process could not be pinned to CPU {cpu}"
        ))
    })?;
    Ok(Box::new(p))
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    vec![
        Benchmark::new(
            "ctxswitch",
            "threads_same_cpu",
            "one round trip through two pipes, two threads on one CPU",
            false,
            |p: Placement| Ok(Box::new(PingPong::new(p.cpu)?)),
        ),
        Benchmark::new(
            "ctxswitch",
            "threads_two_cpus",
            "one round trip through two pipes, two threads on two CPUs",
            true,
            |p: Placement| {
                let other = p.other_cpu.ok_or_else(|| {
                    BenchError::Setup("needs a second CPU (give --cpus with two)".into())
                })?;
                Ok(Box::new(PingPong::new(other)?))
            },
        ),
        Benchmark::new(
            "ctxswitch",
            "processes_same_cpu",
            "one round trip through two pipes, two processes on one CPU",
            false,
            |p: Placement| process_partner(p.cpu),
        ),
        Benchmark::new(
            "ctxswitch",
            "processes_two_cpus",
            "one round trip through two pipes, two processes on two CPUs",
            true,
            |p: Placement| {
                let other = p.other_cpu.ok_or_else(|| {
                    BenchError::Setup("needs a second CPU (give --cpus with two)".into())
                })?;
                process_partner(other)
            },
        ),
    ]
}
