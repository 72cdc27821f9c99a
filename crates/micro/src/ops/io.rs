//! Readiness of many descriptors (as LEBench measures it): `select`,
//! `poll` and `epoll_wait` with a zero timeout over 10 and 1000
//! descriptors that are all ready (eventfds with a count of 1, never
//! read). One operation is one call, which must report every descriptor
//! ready.

use std::os::fd::{AsRawFd, RawFd};

use latscope_platform::os_ops::{
    poll_ready, pollin, raise_nofile_limit, select_readable, Epoll, PollFd,
};
use latscope_platform::wake::EventFd;

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// `n` ready eventfds.
fn ready(n: usize) -> Result<Vec<EventFd>, BenchError> {
    if n > 900 {
        raise_nofile_limit().map_err(|e| BenchError::Os {
            what: "raising the open-descriptor limit".into(),
            source: e,
        })?;
    }
    (0..n)
        .map(|_| {
            let e = EventFd::new().map_err(|e| BenchError::Os {
                what: format!("creating {n} eventfds"),
                source: e,
            })?;
            e.signal().map_err(|e| BenchError::Os {
                what: "making an eventfd ready".into(),
                source: e,
            })?;
            Ok(e)
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Call {
    Select,
    Poll,
    Epoll,
}

struct Readiness {
    call: Call,
    _fds: Vec<EventFd>,
    raw: Vec<RawFd>,
    pollfds: Vec<PollFd>,
    epoll: Option<Epoll>,
}

impl Readiness {
    fn new(call: Call, n: usize) -> Result<Readiness, BenchError> {
        let fds = ready(n)?;
        let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let os = |what: &'static str| {
            move |e| BenchError::Os {
                what: what.into(),
                source: e,
            }
        };
        let epoll = match call {
            Call::Epoll => Some(Epoll::new(&raw).map_err(os("setting up epoll"))?),
            _ => None,
        };
        let mut r = Readiness {
            call,
            pollfds: raw.iter().map(|&fd| pollin(fd)).collect(),
            _fds: fds,
            raw,
            epoll,
        };
        // A first call proves the setup (select refuses descriptors at or
        // beyond FD_SETSIZE).
        r.run(1)?;
        Ok(r)
    }
}

impl Operation for Readiness {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let n = self.raw.len() as i32;
        for _ in 0..ops {
            let ready = match self.call {
                Call::Select => select_readable(&self.raw),
                Call::Poll => poll_ready(&mut self.pollfds),
                Call::Epoll => match self.epoll.as_mut() {
                    Some(e) => e.wait(),
                    None => return Err(BenchError::Setup("no epoll instance".into())),
                },
            }
            .map_err(|e| BenchError::Os {
                what: "waiting for readiness".into(),
                source: e,
            })?;
            if ready != n {
                return Err(BenchError::Setup(format!(
                    "{ready} of {n} descriptors reported ready"
                )));
            }
        }
        Ok(())
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let mut v = Vec::new();
    for (name, call) in [
        ("select", Call::Select),
        ("poll", Call::Poll),
        ("epoll", Call::Epoll),
    ] {
        for n in [10usize, 1000] {
            v.push(Benchmark::new(
                "io",
                format!("{name}_{n}"),
                format!("one {name} call over {n} ready descriptors"),
                false,
                move |_: Placement| Ok(Box::new(Readiness::new(call, n)?)),
            ));
        }
    }
    v
}
