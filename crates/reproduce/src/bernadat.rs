//! Bernadat's Table 15: the worst case of every test under every
//! workload. Here per workload: the noise probe's worst interruption
//! (periodic CPU preemptions), the timer probe with a periodic timer
//! (timer service, and traced: ISR, DPC, thread wake-up), a random-phase
//! relative sleep (full design), and the udp probe.

use latscope_model::metric;
use latscope_studies::Study;

use crate::design::{CellKind, ProbeDesign, PERIODIC, SLEEP};
use crate::figures::{CellFigures, RunFigures};
use crate::paired::{in_unit, Measured, PairedTable, MISSING};

/// The paper's workloads and latscope's nearest.
const WORKLOADS: [(&str, Option<&str>); 9] = [
    ("Idle", Some("idle")),
    ("CPU", Some("cpu")),
    ("Make", Some("compile")),
    ("Java", Some("memory")),
    ("Disk", Some("disk")),
    ("Net", Some("net")),
    ("Tty", Some("tty")),
    ("CD", None),
    ("Floppy", None),
];

/// Each row of Table 15: the cell kind, the metric, and the name shown.
const ROWS: [(CellKind, &str, &str); 8] = [
    (CellKind::Noise, metric::NOISE_GAP, "noise.gap"),
    (
        SLEEP,
        metric::TIMER_LATENCY,
        "timer.latency (nanosleep, random phase)",
    ),
    (PERIODIC, metric::TIMER_LATENCY, "timer.latency (timerfd)"),
    (PERIODIC, metric::TIMER_IRQ, "timer.irq"),
    (
        PERIODIC,
        metric::SOFTIRQ_DELAY_PREFIX,
        "softirq.delay.<VEC> (worst vector)",
    ),
    (
        PERIODIC,
        metric::TIMER_LATENCY,
        "timer.latency (timerfd, traced)",
    ),
    (CellKind::Udp, metric::UDP_RECV, "udp.recv"),
    (CellKind::Udp, metric::UDP_SEND, "udp.send"),
];

pub(crate) fn pair(study: &Study, design: &ProbeDesign, f: &RunFigures) -> Vec<PairedTable> {
    study
        .tables
        .iter()
        .map(|table| {
            let why = "not in this design: latscope run --probe noise --pause 0 alone at --policy other and at rr 50, then with --priorities rr:50,rr:50 and fifo:60,fifo:50, gives its four columns (docs/concepts.md, Table 6)";
            let mut t = PairedTable::from_published(table, "µs", why);
            if table.number == "15" {
                table_15(&mut t, design, f);
            }
            t
        })
        .collect()
}

fn table_15(t: &mut PairedTable, design: &ProbeDesign, f: &RunFigures) {
    let paper = |w: &str| {
        WORKLOADS
            .iter()
            .find(|(_, ours)| *ours == Some(w))
            .map_or("no column", |(p, _)| p)
    };
    t.measured_columns = design
        .workloads
        .iter()
        .map(|w| format!("{w} (paper's {})", paper(w)))
        .collect();
    for (i, (kind, name, shown)) in ROWS.iter().enumerate() {
        let Some(k) = design.kinds.iter().position(|d| d == kind) else {
            t.set(
                i,
                shown,
                Measured::NoCounterpart("not in this design (the full design measures it)".into()),
            );
            continue;
        };
        let cells = (0..design.workloads.len())
            .map(|w| {
                f.cell((w * design.kinds.len() + k) as u32)
                    .and_then(|c| worst(c, name))
                    .unwrap_or_else(|| MISSING.to_string())
            })
            .collect();
        t.set(i, shown, Measured::Figures(cells));
    }
    t.notes.push("This machine: the largest value measured in each cell, in µs. The paper's CD and Floppy loads have no equivalent; Make is compile and Java is memory here. Thread Wakeup and Timer are the same traced timerfd cell's timer.latency.".to_string());
}

fn worst(c: &CellFigures, name: &str) -> Option<String> {
    if name == metric::SOFTIRQ_DELAY_PREFIX {
        let (vec, h) = c.worst_of_family(name)?;
        return Some(format!("{} ({vec})", in_unit(h.max()?.0, "µs")));
    }
    Some(in_unit(c.merged(name)?.max()?.0, "µs"))
}
