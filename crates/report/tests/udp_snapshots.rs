//! Snapshot tests of what a UDP run renders (`run --probe udp`): the
//! generic `udp.*` metric tables, the UDP counts after them, and
//! `cells[].udp` in JSON.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{
    metric, Capabilities, CellMeta, CpuId, Nanos, RunId, RunMeta, RunStatus, SystemInfo, UdpPath,
    UdpStats,
};
use latscope_stats::{CellResult, MetricResult, RunResult};

fn hist(name: &str, cpu: u32, values: &[u64]) -> MetricResult {
    let mut m = MetricResult::new(name, Some(CpuId(cpu)));
    for &v in values {
        m.histogram.record(v);
    }
    m
}

fn run_meta() -> RunMeta {
    RunMeta {
        ended_unix_ns: Some(Nanos(1_795_730_650_000_000_000)),
        status: RunStatus::Complete,
        command_line: vec![
            "latscope".into(),
            "run".into(),
            "--probe".into(),
            "udp".into(),
        ],
        pid: 1,
        boot_id: "b".into(),
        hostname: "host".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(RunId(21), Nanos(1_795_730_639_000_000_000))
    }
}

/// Counts with every anomaly present, each a different number.
fn counts() -> UdpStats {
    UdpStats {
        path: UdpPath::Loopback,
        sender_cpu: CpuId(0),
        receiver_cpu: CpuId(1),
        payload_bytes: 64,
        period_ns: Nanos::from_millis(10),
        sent: 1_000,
        send_errors: 2,
        received: 993,
        lost: 7,
        reordered: 3,
        duplicates: 1,
        overruns: 4,
        skipped_sends: 5,
        missing_tx_sched: 6,
        missing_tx_software: 8,
        missing_rx_software: 9,
        checked: 980,
        inconsistent: 2,
    }
}

fn udp_cell() -> CellResult {
    let mut settings = BTreeMap::new();
    settings.insert("period_ns".to_string(), serde_json::json!(10_000_000));
    settings.insert("policy".to_string(), serde_json::json!("fifo"));
    settings.insert("priority".to_string(), serde_json::json!(95));
    CellResult {
        meta: CellMeta::new(
            0,
            "none",
            latscope_model::CellSettings::from_json(
                "udp",
                serde_json::Value::Object(settings.into_iter().collect()),
            )
            .unwrap(),
            Nanos::from_secs(10),
        ),
        // As stored: by name, then CPU.
        metrics: vec![
            hist(metric::UDP_PATH, 1, &[30_000, 32_000, 35_000, 120_000]),
            hist(metric::UDP_RECV, 1, &[12_000, 13_000, 14_000, 90_000]),
            hist(metric::UDP_SEND, 0, &[5_000, 6_000, 7_000, 20_000]),
            hist(metric::UDP_SEND_SCHED, 0, &[1_000, 1_200, 1_500, 4_000]),
        ],
        trace: None,
        episodes: Vec::new(),
        noise: Vec::new(),
        timer: Vec::new(),
        udp: Some(counts()),
        workload_stats: None,
    }
}

fn timer_cell() -> CellResult {
    let mut settings = BTreeMap::new();
    settings.insert("period_ns".to_string(), serde_json::json!(1_000_000));
    CellResult::new(
        CellMeta {
            monotonic_start_ns: Nanos(10_000_000_000),
            ..CellMeta::new(
                1,
                "none",
                latscope_model::CellSettings::from_json(
                    "timer",
                    serde_json::Value::Object(settings.into_iter().collect()),
                )
                .unwrap(),
                Nanos::from_secs(1),
            )
        },
        vec![hist(metric::TIMER_LATENCY, 0, &[10_000, 12_000, 15_000])],
    )
}

fn fixture() -> RunResult {
    RunResult {
        meta: run_meta(),
        system: SystemInfo {
            hostname: "host".into(),
            kernel_release: "6.18.0".into(),
            cpu_count: 2,
            ..SystemInfo::default()
        },
        capabilities: Capabilities::default(),
        cells: vec![udp_cell(), timer_cell()],
    }
}

#[test]
fn udp_summary_text() {
    let run = fixture();
    let text = latscope_report::summary_tables(&run);
    // The udp.* metrics in the generic tables, the whole path first; then
    // the counts, every anomaly present; the timer cell after it renders as
    // it always has.
    let expected = "\n\
cell 0: udp probe (10.0ms period, fifo 95) · workload none · 10.0s measured

udp.path — sender's clock before sendto → receiver's user code has the datagram
CPU  samples     min    mean     p50    p90    p99  p99.9  p99.99    max
1          4  30.0µs  54.2µs  32.0µs  120µs  120µs  120µs   120µs  120µs

udp.send — sender's clock before sendto → driver's transmit time stamp
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
0          4  5.00µs  9.50µs  6.00µs  20.0µs  20.0µs  20.0µs  20.0µs  20.0µs

udp.send.sched — sender's clock before sendto → time stamp before the packet scheduler
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
0          4  1.00µs  1.93µs  1.20µs  4.00µs  4.00µs  4.00µs  4.00µs  4.00µs

udp.recv — receive time stamp → receiver's user code has the datagram
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
1          4  12.0µs  32.2µs  13.0µs  90.0µs  90.0µs  90.0µs  90.0µs  90.0µs

udp over loopback: sender CPU 0 → receiver CPU 1, 64-byte payload every 10.0ms
sent 1000 · received 993 · lost 7 (0.7000%)
reordered 3 · duplicates 1 · send errors 2 (never sent, not counted as lost) · overruns 4 (5 sends skipped)
missing time stamps (left out of that stage's histogram): tx sched 6 · tx software 8 · rx software 9
warning: path shorter than send: 2 of 980 checked (a consistent clock cannot give this: did it step?)

cell 1: timer probe (clock_nanosleep, 1.00ms period, fifo 95) · workload none · 1.00s measured

timer.latency — intended expiry → user code runs
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
0          3  10.0µs  12.3µs  12.0µs  15.0µs  15.0µs  15.0µs  15.0µs  15.0µs
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn a_clean_udp_cell_prints_only_what_always_matters() {
    let mut run = fixture();
    run.cells.truncate(1);
    run.cells[0].udp = Some(UdpStats {
        path: UdpPath::Veth,
        sender_cpu: CpuId(0),
        receiver_cpu: CpuId(1),
        payload_bytes: 64,
        period_ns: Nanos::from_millis(10),
        sent: 1_000,
        received: 1_000,
        checked: 1_000,
        ..UdpStats::default()
    });
    let text = latscope_report::summary_tables(&run);
    let block = "
udp.recv — receive time stamp → receiver's user code has the datagram
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
1          4  12.0µs  32.2µs  13.0µs  90.0µs  90.0µs  90.0µs  90.0µs  90.0µs

udp over veth: sender CPU 0 → receiver CPU 1, 64-byte payload every 10.0ms
sent 1000 · received 1000 · lost 0 (0.0000%)
no reordering, duplicates, send errors or overruns
path shorter than send: 0 of 1000 checked
";
    assert!(text.ends_with(block), "\n{text}");

    // Nothing sent yet (a checkpoint before the first send): no share.
    run.cells[0].udp = Some(UdpStats::default());
    let text = latscope_report::summary_tables(&run);
    assert!(
        text.ends_with(
            "\nudp over loopback: sender CPU 0 → receiver CPU 0, 0-byte payload every 0ns\n\
             sent 0 · received 0 · lost 0 (-)\n\
             no reordering, duplicates, send errors or overruns\n"
        ),
        "\n{text}"
    );
}

#[test]
fn a_udp_cell_without_counts_says_so() {
    let mut run = fixture();
    run.cells[0].udp = None;
    let text = latscope_report::summary_tables(&run);
    assert!(
        text.contains("90.0µs\n\nudp: no counts were stored for this cell\n\ncell 1:"),
        "\n{text}"
    );
    // A cell of another probe has no UDP block at all.
    assert!(!text[text.find("cell 1:").unwrap()..].contains("udp"));
}

#[test]
fn udp_json() {
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["schema"], "latscope.run.v1");
    let cell = &v["cells"][0];
    assert_eq!(cell["probe"], "udp");
    // The udp.* metrics are ordinary metrics.
    let names: Vec<&str> = cell["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["udp.path", "udp.recv", "udp.send", "udp.send.sched"]
    );
    assert_eq!(cell["metrics"][0]["cpu"], 1);
    assert_eq!(cell["metrics"][0]["max_ns"], 120_000);

    let mut udp = cell["udp"].clone();
    let loss = udp["loss_percent"].as_f64().unwrap();
    assert!((loss - 0.7).abs() < 1e-9, "{loss}");
    udp.as_object_mut().unwrap().remove("loss_percent");
    let expected = serde_json::json!({
        "path": "loopback", "sender_cpu": 0, "receiver_cpu": 1,
        "payload_bytes": 64, "period_ns": 10_000_000,
        "sent": 1_000, "send_errors": 2, "received": 993, "lost": 7,
        "reordered": 3, "duplicates": 1, "overruns": 4, "skipped_sends": 5,
        "missing_tx_sched": 6, "missing_tx_software": 8, "missing_rx_software": 9,
        "checked": 980, "inconsistent": 2
    });
    assert_eq!(udp, expected);

    // A cell of another probe has no `udp` key at all.
    let timer = v["cells"][1].as_object().unwrap();
    assert_eq!(timer["probe"], "timer");
    assert!(!timer.contains_key("udp"), "{timer:?}");

    // Nothing sent: the share does not exist.
    let mut run = fixture();
    run.cells[0].udp = Some(UdpStats::default());
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(
        v["cells"][0]["udp"]["loss_percent"],
        serde_json::Value::Null
    );
    assert_eq!(v["cells"][0]["udp"]["sent"], 0);
}

#[test]
fn udp_json_carries_every_field_of_the_model() {
    // Whatever the model serializes must reach the document unchanged: a
    // field added to UdpStats and forgotten here fails this test.
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    let model = serde_json::to_value(run.cells[0].udp.as_ref().unwrap()).unwrap();
    let doc = v["cells"][0]["udp"].as_object().unwrap();
    for (key, value) in model.as_object().unwrap() {
        assert_eq!(&doc[key], value, "field {key}");
    }
    // The model's fields and the derived share, nothing else.
    assert_eq!(doc.len(), model.as_object().unwrap().len() + 1);
}
