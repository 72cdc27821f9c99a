//! Snapshot tests of the workload characterization: the table, the sources
//! lines, their place in `show`'s text, and the JSON.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{
    Capabilities, CellMeta, CpuId, CpuPercent, DiskRates, InterruptSource, Nanos, NetRates, RunId,
    RunMeta, RunStatus, SystemInfo, WorkloadSecond, WorkloadStats,
};
use latscope_stats::{CellResult, MetricResult, RunResult};

fn cell(index: u32, workload: &str, stats: Option<WorkloadStats>) -> CellResult {
    let mut lat = MetricResult::new("timer.latency", Some(CpuId(1)));
    for v in [10_000u64, 12_000, 15_000] {
        lat.histogram.record(v);
    }
    CellResult {
        workload_stats: stats,
        ..CellResult::new(
            CellMeta::new(
                index,
                workload,
                latscope_model::CellSettings::default_for("timer").unwrap(),
                Nanos::from_secs(10),
            ),
            vec![lat],
        )
    }
}

const NO_SYSCALLS: &str = "system calls not counted: perf_event_open(type 2, config 350, cpu 0): \
                           permission denied (needs root or CAP_PERFMON; perf_event_paranoid=2)";

fn idle() -> WorkloadStats {
    let second = WorkloadSecond {
        offset_ns: Nanos::from_secs(10),
        elapsed_ns: Nanos(10_000_412_000),
        cpu: Some(CpuPercent {
            user: 1.5,
            sys: 2.0,
            idle: 96.5,
            ..CpuPercent::default()
        }),
        cpu_all: Some(CpuPercent {
            user: 1.0,
            nice: 0.25,
            sys: 1.5,
            softirq: 0.1,
            steal: 0.05,
            iowait: 0.1,
            idle: 97.0,
            ..CpuPercent::default()
        }),
        interrupts_per_s: Some(612.4),
        interrupts_measured_per_s: Some(250.2),
        context_switches_per_s: Some(2_140.0),
        processes_per_s: Some(0.3),
        syscalls_per_s: None,
        softirqs_per_s: Some(301.0),
        disk: Some(DiskRates {
            reads_per_s: 0.0,
            writes_per_s: 0.4,
            read_kb_per_s: 0.0,
            write_kb_per_s: 3.2,
        }),
        net_lo: Some(NetRates::default()),
        net: Some(NetRates {
            rx_packets_per_s: 1.0,
            tx_packets_per_s: 1.0,
            rx_kb_per_s: 0.1,
            tx_kb_per_s: 0.2,
        }),
        page_faults_per_s: Some(85.0),
        major_faults_per_s: Some(0.0),
        runnable: Some(1.1),
        blocked: Some(0.0),
    };
    WorkloadStats {
        workload: "idle".into(),
        cpus: "1".into(),
        start_ns: Nanos(5_000_000_000),
        samples: 10,
        mean: second.clone(),
        top_interrupts: vec![
            InterruptSource {
                source: "LOC".into(),
                description: "Local timer interrupts".into(),
                per_s: 480.0,
                measured_per_s: 240.0,
            },
            InterruptSource {
                source: "41".into(),
                description: "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx".into(),
                per_s: 3.5,
                measured_per_s: 0.0,
            },
        ],
        softirqs_per_s: BTreeMap::from([
            ("HI".to_string(), 0.0),
            ("RCU".to_string(), 61.0),
            ("TIMER".to_string(), 240.0),
        ]),
        notes: vec![NO_SYSCALLS.into()],
        pty_bytes_per_s: None,
        rt_load: None,
        seconds: vec![second],
    }
}

fn net() -> WorkloadStats {
    let mut s = idle();
    s.workload = "net".into();
    s.samples = 9;
    let m = &mut s.mean;
    m.cpu_all = Some(CpuPercent {
        user: 20.0,
        sys: 55.5,
        irq: 0.5,
        softirq: 22.25,
        steal: 1.75,
        ..CpuPercent::default()
    });
    m.cpu = None;
    m.interrupts_per_s = Some(48_210.0);
    m.context_switches_per_s = Some(181_000.0);
    m.softirqs_per_s = Some(95_400.0);
    m.disk = None;
    m.net_lo = Some(NetRates {
        rx_packets_per_s: 400_000.0,
        tx_packets_per_s: 400_000.0,
        rx_kb_per_s: 1_500_000.0,
        tx_kb_per_s: 1_500_000.0,
    });
    m.net = Some(NetRates {
        rx_packets_per_s: 25_000.5,
        tx_packets_per_s: 25_000.5,
        rx_kb_per_s: 3_000.0,
        tx_kb_per_s: 3_000.0,
    });
    m.runnable = Some(4.25);
    s.top_interrupts = Vec::new();
    s.softirqs_per_s = BTreeMap::from([
        ("NET_RX".to_string(), 90_000.0),
        ("TIMER".to_string(), 250.0),
    ]);
    s
}

fn fixture() -> RunResult {
    RunResult {
        meta: RunMeta {
            ended_unix_ns: Some(Nanos(1_795_730_669_000_000_000)),
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "suite".into()],
            pid: 1,
            boot_id: "b".into(),
            hostname: "host".into(),
            tool_version: "0.1.0".into(),
            ..RunMeta::new(RunId(9), Nanos(1_795_730_639_000_000_000))
        },
        system: SystemInfo {
            hostname: "host".into(),
            kernel_release: "6.18.0".into(),
            cpu_count: 2,
            ..SystemInfo::default()
        },
        capabilities: Capabilities::default(),
        cells: vec![
            cell(0, "idle", Some(idle())),
            cell(1, "none", None),
            cell(2, "net", Some(net())),
        ],
    }
}

const TABLE: &str = "
workload characterization (means over each cell)
cell  workload  samples  usr%  sys%  irq%  sirq%  steal%  iow%  idle%  intr/s  ctxsw/s  syscall/s  softirq/s  rd/s  wr/s  rdB/s  wrB/s   pkt/s  netB/s  fault/s  run
0     idle           10   1.2   1.5   0.0    0.1     0.1   0.1   97.0     612     2140          -        301   0.0   0.4      0   3.2K     2.0     307       85  1.1
2     net             9  20.0  55.5   0.5   22.2     1.8   0.0    0.0   48.2k   181.0k          -      95.4k     -     -      -      -  850.0k    2.9G       85  4.2
CPU % of all CPUs, usr including nice; B/s in powers of 1024 (K, M, G); pkt/s and netB/s sent + received on every interface, loopback included
note: system calls not counted: perf_event_open(type 2, config 350, cpu 0): permission denied (needs root or CAP_PERFMON; perf_event_paranoid=2) (cells 0, 2)
";

const SOURCES: &str = "
cell 0 · idle: interrupts/s LOC 480 (Local timer interrupts), 41 3.5 (virtio3-rx)
  softirqs/s TIMER 240, RCU 61
  measured CPUs 1: usr 1.5% sys 2.0% irq 0.0% sirq 0.0% idle 96.5%, interrupts/s 250

cell 2 · net: interrupts/s none
  softirqs/s NET_RX 90.0k, TIMER 250
";

#[test]
fn the_characterization_table() {
    let text = latscope_report::workload_table(&fixture());
    assert_eq!(text, TABLE, "\n{text}");
}

#[test]
fn the_sources_of_each_cell() {
    let text = latscope_report::workload_sources(&fixture());
    assert_eq!(text, SOURCES, "\n{text}");
}

#[test]
fn show_ends_with_the_characterization() {
    let run = fixture();
    let text = latscope_report::summary_tables(&run);
    assert!(text.ends_with(&format!("{TABLE}{SOURCES}")), "\n{text}");
    // Once, after every cell's tables.
    assert_eq!(text.matches("workload characterization").count(), 1);
    let last_cell = text.find("cell 2: timer probe").unwrap();
    assert!(text.find("workload characterization").unwrap() > last_cell);
}

#[test]
fn nothing_without_a_characterization() {
    let mut run = fixture();
    for c in &mut run.cells {
        c.workload_stats = None;
    }
    assert_eq!(latscope_report::workload_table(&run), "");
    assert_eq!(latscope_report::workload_sources(&run), "");
    assert!(!latscope_report::summary_tables(&run).contains("characterization"));
}

#[test]
fn json_cells_carry_workload_stats_or_null() {
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert!(cells[1]["workload_stats"].is_null());
    assert!(cells[1].as_object().unwrap().contains_key("workload_stats"));
    let w = &cells[0]["workload_stats"];
    assert_eq!(w["workload"], "idle");
    assert_eq!(w["cpus"], "1");
    assert_eq!(w["samples"], 10);
    assert_eq!(w["start_ns"], 5_000_000_000u64);
    let mean = &w["mean"];
    assert_eq!(mean["elapsed_ns"], 10_000_412_000u64);
    assert_eq!(mean["cpu_all"]["nice"], 0.25);
    assert_eq!(mean["cpu"]["idle"], 96.5);
    // Not measured: null, never 0.
    assert!(mean["syscalls_per_s"].is_null());
    assert_eq!(mean["disk"]["write_kb_per_s"], 3.2);
    assert_eq!(mean["net"]["tx_kb_per_s"], 0.2);
    assert_eq!(mean["net_lo"]["rx_packets_per_s"], 0.0);
    assert_eq!(mean["runnable"], 1.1);
    assert_eq!(w["top_interrupts"][1]["source"], "41");
    assert_eq!(
        w["top_interrupts"][1]["description"],
        "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx"
    );
    assert_eq!(w["top_interrupts"][0]["measured_per_s"], 240.0);
    assert_eq!(w["softirqs_per_s"]["TIMER"], 240.0);
    assert_eq!(w["notes"][0], NO_SYSCALLS);
    assert_eq!(w["seconds"].as_array().unwrap().len(), 1);
    assert_eq!(w["seconds"][0]["offset_ns"], 10_000_000_000u64);
    assert!(cells[2]["workload_stats"]["mean"]["disk"].is_null());
    // The document reads back into the model unchanged.
    let back: WorkloadStats = serde_json::from_value(w.clone()).unwrap();
    assert_eq!(back, idle());
}
