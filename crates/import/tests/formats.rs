//! Each format read from files the tools wrote (cyclictest and oslat 2.4
//! on the development VM; the rtla file is hand-made in rtla's layout, as
//! rtla's timerlat tracer is not on that kernel): counts, minimum and
//! maximum as the files say, what is assumed said in notes, and bad files
//! refused in one line.

#![allow(clippy::unwrap_used)]

use latscope_import::{detect, import, Format, ImportError, Imported, Options, Unit};
use latscope_model::{metric, CellSettings, CpuId, Nanos, Policy, TimerApiName};
use latscope_record::Histogram;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap()
}

fn read(name: &str) -> Imported {
    import(fixture(name).as_bytes(), None, &Options::default()).unwrap()
}

fn histogram<'a>(imp: &'a Imported, name: &str, cpu: u32) -> &'a Histogram {
    &imp.cells[0]
        .metrics
        .iter()
        .find(|m| m.name == name && m.cpu == Some(CpuId(cpu)))
        .unwrap_or_else(|| panic!("no {name} on CPU {cpu}"))
        .histogram
}

fn one_line(e: &ImportError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    text
}

#[test]
fn every_fixture_is_recognised() {
    for (name, format) in [
        ("cyclictest-h50.json", Format::CyclictestJson),
        ("cyclictest-nsecs.json", Format::CyclictestJson),
        ("cyclictest-h50.txt", Format::CyclictestHist),
        ("cyclictest-status-histofall.txt", Format::CyclictestHist),
        ("oslat.json", Format::OslatJson),
        ("rtla-timerlat-hist.txt", Format::RtlaHist),
    ] {
        assert_eq!(detect(&fixture(name)), Some(format), "{name}");
    }
    for text in [
        "hello",
        "{\"a\": 1}",
        "[1, 2]",
        "# Histogram\n",
        "000000 1\n",
    ] {
        assert_eq!(detect(text), None, "{text}");
    }
}

#[test]
fn cyclictest_json_counts_min_max_and_average_are_the_files() {
    let text = fixture("cyclictest-h50.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let imp = read("cyclictest-h50.json");
    assert_eq!(imp.format, Format::CyclictestJson);
    assert_eq!(imp.tool_version.as_deref(), Some("2.40"));
    assert!(imp
        .command_line
        .as_deref()
        .unwrap()
        .starts_with("cyclictest -D 2"));
    assert_eq!(imp.system.kernel_release, doc["sysinfo"]["release"]);
    assert_eq!(imp.system.hostname, doc["sysinfo"]["nodename"]);
    assert_eq!(imp.ended.unwrap().0 - imp.started.unwrap().0, 2_000_000_000);
    assert_eq!(imp.cells.len(), 1);
    let cell = &imp.cells[0];
    assert_eq!(cell.meta.probe, "timer");
    assert_eq!(cell.meta.workload, "none");
    let CellSettings::Timer(s) = &cell.meta.settings else {
        panic!("not a timer cell")
    };
    assert_eq!(s.period_ns, Nanos::from_millis(1));
    assert_eq!(s.timer_api, TimerApiName::ClockNanosleep);
    assert_eq!((s.common.policy, s.common.priority), (Policy::Fifo, 95));
    assert_eq!(s.common.cpus, "0-1");
    assert_eq!(s.common.duration_ns, Some(Nanos::from_secs(2)));
    for (k, t) in doc["thread"].as_object().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let h = histogram(&imp, metric::TIMER_LATENCY, cpu);
        let us = |key: &str| Nanos::from_micros(t[key].as_u64().unwrap());
        assert_eq!(h.count(), t["cycles"].as_u64().unwrap(), "thread {k}");
        assert_eq!(h.min(), Some(us("min")), "thread {k}");
        assert_eq!(h.max(), Some(us("max")), "thread {k}");
        let avg_ns = t["avg"].as_f64().unwrap() * 1000.0;
        let mean = h.mean().unwrap().0 as f64;
        assert!(
            (mean - avg_ns).abs() <= 1.0,
            "thread {k}: {mean} vs {avg_ns}"
        );
        let in_range: u64 = t["histogram"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        let over = t["cycles"].as_u64().unwrap() - in_range;
        // 49 µs is the histogram's last bucket; the overflows sit at 50 µs
        assert_eq!(h.count_above(49_000), over, "thread {k}");
        assert!(
            imp.notes.iter().any(|n| n.starts_with(&format!(
                "thread {k}: {over} samples were above the histogram's range (50 µs)"
            ))),
            "{:?}",
            imp.notes
        );
    }
    // 2 s at 1 ms: the cell's duration is its longest thread's cycles.
    assert_eq!(cell.meta.duration_ns, Nanos::from_millis(2000));
}

#[test]
fn cyclictest_text_and_json_of_one_run_give_the_same_histograms() {
    let json = read("cyclictest-h50.json");
    let text = read("cyclictest-h50.txt");
    assert_eq!(text.format, Format::CyclictestHist);
    for cpu in [0, 1] {
        let a = histogram(&json, metric::TIMER_LATENCY, cpu);
        let b = histogram(&text, metric::TIMER_LATENCY, cpu);
        assert_eq!(
            a.buckets().collect::<Vec<_>>(),
            b.buckets().collect::<Vec<_>>()
        );
        assert_eq!((a.count(), a.min(), a.max()), (b.count(), b.min(), b.max()));
    }
    assert!(text
        .notes
        .iter()
        .any(|n| n.contains("thread N is stored as CPU N")));
    assert!(text
        .notes
        .iter()
        .any(|n| n.contains("read as microseconds")));
    assert!(text
        .notes
        .iter()
        .any(|n| n.contains("does not record the period")));
    // cyclictest -q prints no status lines: the priority is not known.
    let CellSettings::Timer(s) = &text.cells[0].meta.settings else {
        panic!()
    };
    assert_eq!(s.common.policy, Policy::Other);
    assert!(text.notes.iter().any(|n| n.contains("the policy option")));
}

#[test]
fn cyclictest_nanoseconds_keep_nanoseconds() {
    let text = fixture("cyclictest-nsecs.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let t = &doc["thread"]["0"];
    let imp = read("cyclictest-nsecs.json");
    let h = histogram(&imp, metric::TIMER_LATENCY, 0);
    assert_eq!(h.count(), t["cycles"].as_u64().unwrap());
    assert_eq!(h.min(), Some(Nanos(t["min"].as_u64().unwrap())));
    assert_eq!(h.max(), Some(Nanos(t["max"].as_u64().unwrap())));
    let CellSettings::Timer(s) = &imp.cells[0].meta.settings else {
        panic!()
    };
    assert_eq!(s.period_ns, Nanos::from_micros(500));
    assert_eq!((s.common.policy, s.common.priority), (Policy::Fifo, 90));
}

#[test]
fn cyclictest_status_lines_give_the_settings_and_histofall_is_dropped() {
    let imp = read("cyclictest-status-histofall.txt");
    let text = fixture("cyclictest-status-histofall.txt");
    let field = |label: &str| -> Vec<u64> {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap();
        line[label.len()..]
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let (total, max, over, min) = (
        field("# Total:"),
        field("# Max Latencies:"),
        field("# Histogram Overflows:"),
        field("# Min Latencies:"),
    );
    assert_eq!(min.len(), 2);
    assert_eq!(total.len(), 3, "-H adds a column");
    for cpu in [0, 1] {
        let h = histogram(&imp, metric::TIMER_LATENCY, cpu as u32);
        assert_eq!(h.count(), total[cpu] + over[cpu]);
        assert_eq!(h.max(), Some(Nanos::from_micros(max[cpu])));
        assert_eq!(h.min(), Some(Nanos::from_micros(min[cpu])));
    }
    let CellSettings::Timer(s) = &imp.cells[0].meta.settings else {
        panic!()
    };
    assert_eq!(s.period_ns, Nanos::from_millis(2));
    assert_eq!((s.common.policy, s.common.priority), (Policy::Fifo, 80));
    // --unit ns reads the same text as nanoseconds.
    let opts = Options {
        unit: Some(Unit::Nanos),
        ..Options::default()
    };
    let ns = import(text.as_bytes(), None, &opts).unwrap();
    let h = histogram(&ns, metric::TIMER_LATENCY, 0);
    assert_eq!(h.max(), Some(Nanos(max[0])));
}

#[test]
fn oslat_iterations_and_interruptions_are_the_files() {
    let text = fixture("oslat.json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let imp = read("oslat.json");
    assert_eq!(imp.format, Format::OslatJson);
    let cell = &imp.cells[0];
    assert_eq!(cell.meta.probe, "noise");
    let CellSettings::Noise(s) = &cell.meta.settings else {
        panic!()
    };
    assert_eq!(s.gap_min_ns, Some(Nanos::from_micros(1)));
    assert_eq!(s.pause_ns, Nanos::ZERO);
    for (k, t) in doc["thread"].as_object().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let buckets: Vec<(u64, u64)> = t["histogram"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
            .collect();
        let iterations: u64 = buckets.iter().map(|b| b.1).sum();
        let gaps: u64 = buckets.iter().filter(|b| b.0 >= 2).map(|b| b.1).sum();
        let stats = cell.noise.iter().find(|n| n.cpu == CpuId(cpu)).unwrap();
        assert_eq!(stats.iterations, iterations, "thread {k}");
        assert_eq!(stats.interruptions, gaps, "thread {k}");
        assert_eq!(
            stats.tsc_hz,
            t["freq"].as_u64().unwrap() * 1_000_000,
            "thread {k}"
        );
        let h = histogram(&imp, metric::NOISE_GAP, cpu);
        assert_eq!(h.count(), gaps);
        let max = t["max"].as_u64().unwrap();
        assert_eq!(h.max(), Some(Nanos::from_micros(max)), "thread {k}");
        assert_eq!(stats.max_gap_ns, Nanos::from_micros(max));
        let smallest = buckets.iter().filter(|b| b.0 >= 2).map(|b| b.0).min();
        assert_eq!(h.min(), smallest.map(Nanos::from_micros));
        // oslat's own minimum (every iteration) is 1: shorter than 1 µs.
        assert_eq!(t["min"], 1);
    }
}

#[test]
fn rtla_columns_become_timer_latency_and_irq() {
    let imp = read("rtla-timerlat-hist.txt");
    assert_eq!(imp.format, Format::RtlaHist);
    let lat0 = histogram(&imp, metric::TIMER_LATENCY, 0);
    assert_eq!(lat0.count(), 1000);
    assert_eq!(lat0.min(), Some(Nanos::from_micros(4)));
    assert_eq!(lat0.max(), Some(Nanos::from_micros(2210)));
    assert_eq!(lat0.count_above(9_000), 3);
    let irq0 = histogram(&imp, metric::TIMER_IRQ, 0);
    assert_eq!(
        (irq0.count(), irq0.max()),
        (1000, Some(Nanos::from_micros(312)))
    );
    let lat1 = histogram(&imp, metric::TIMER_LATENCY, 1);
    assert_eq!(
        (lat1.count(), lat1.min(), lat1.max()),
        (
            999,
            Some(Nanos::from_micros(4)),
            Some(Nanos::from_micros(5))
        )
    );
    assert_eq!(imp.cells[0].metrics.len(), 4, "Thr is not kept beside Usr");
    assert!(imp
        .notes
        .iter()
        .any(|n| n == "rtla said: 12 (0.21%) events missed, results might not be accurate"));
    assert!(imp
        .notes
        .iter()
        .any(|n| n.contains("kernel-side thread latency is not kept")));
    assert_eq!(imp.cells[0].meta.duration_ns, Nanos::from_secs(1));
    let CellSettings::Timer(s) = &imp.cells[0].meta.settings else {
        panic!()
    };
    assert_eq!((s.common.policy, s.common.priority), (Policy::Fifo, 95));
    assert_eq!(s.period_ns, Nanos::from_millis(1));
}

#[test]
fn rtla_nanoseconds_wide_buckets_and_zeros() {
    // -n -b 1000 -E 4 --with-zeros --no-irq, kernel threads.
    let text =
        "# RTLA timerlat histogram\n# Time unit is nanoseconds (ns)\n# Duration:   0 00:01:00\n\
Index   Thr-003\n0             0 \n1000         10 \n2000          5 \n3000          0 \n\
over:         2 \ncount:       17 \nmin:       1200 \navg:       2500 \nmax:      90000 \n";
    let opts = Options {
        period: Some(Nanos::from_micros(100)),
        ..Options::default()
    };
    let imp = import(text.as_bytes(), Some(Format::RtlaHist), &opts).unwrap();
    let h = histogram(&imp, metric::TIMER_LATENCY, 3);
    assert_eq!(h.count(), 17);
    assert_eq!(h.min(), Some(Nanos(1200)));
    assert_eq!(h.max(), Some(Nanos(90_000)));
    // the range ends at 4 × 1000 ns: one overflow there, one at the max
    assert_eq!(h.count_above(3_999), 2);
    assert_eq!(h.count_above(4_000), 1);
    assert_eq!(imp.cells[0].meta.duration_ns, Nanos::from_secs(60));
    let CellSettings::Timer(s) = &imp.cells[0].meta.settings else {
        panic!()
    };
    assert_eq!(s.period_ns, Nanos::from_micros(100));
}

#[test]
fn bad_files_are_one_line_errors() {
    let json = fixture("cyclictest-h50.json");
    let hist = fixture("cyclictest-h50.txt");
    let oslat = fixture("oslat.json");
    let rtla = fixture("rtla-timerlat-hist.txt");
    let cut = |s: &str, at: usize| s[..s.len() * at / 100].to_string();
    let cases: Vec<(String, Option<Format>, &str)> = vec![
        (String::new(), None, "the file is empty"),
        ("  \n".into(), None, "the file is empty"),
        ("hello world\n".into(), None, "not a format latscope imports"),
        (cut(&json, 60), Some(Format::CyclictestJson), "cut short"),
        (cut(&oslat, 50), Some(Format::OslatJson), "cut short"),
        (cut(&hist, 50), Some(Format::CyclictestHist), "cut short"),
        (cut(&rtla, 55), Some(Format::RtlaHist), "cut short"),
        (json.replace("\"cycles\": 2000", "\"cycles\": 20"), None, "holds 1996 wake-ups but cycles is 20"),
        (json.replace("\"min\": 14", "\"min\": 99"), None, "minimum 99"),
        (hist.replace("# Total: 000001996", "# Total: 000001990"), None, "add up to 1996"),
        (rtla.replace("count:     1000", "count:     1001"), None, "count: says 1001"),
        (
            r#"{"cmdline:": "cyclictest -q --json=x", "thread": {"0": {"histogram": {}, "cycles": 1000, "min": 10, "max": 90, "avg": 20.5, "cpu": 0, "node": 0}}}"#.into(),
            None,
            "run cyclictest with -h N",
        ),
        (oslat.replace("oslat -D 1", "oslat -B -D 1"), None, "-B (--bias)"),
        (rtla.replace("Index ", "Indexx "), None, "not a column"),
        (hist.clone(), Some(Format::CyclictestJson), "not valid JSON"),
        (json.clone(), Some(Format::RtlaHist), "no \"Index\" line"),
    ];
    for (text, format, want) in cases {
        let e = import(text.as_bytes(), format, &Options::default()).unwrap_err();
        let msg = one_line(&e);
        assert!(msg.contains(want), "want {want:?} in {msg:?}");
    }
    let e = import(b"\xff\xfe garbage", None, &Options::default()).unwrap_err();
    assert!(one_line(&e).contains("not text"));
    // Options a file makes meaningless are usage errors.
    let e = import(
        json.as_bytes(),
        None,
        &Options {
            period: Some(Nanos::from_micros(200)),
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(e.is_usage(), "{e}");
    assert!(one_line(&e).contains("the file records the period (1.00ms)"));
    // The front end names the option: the CLI's `--period`.
    let flags = latscope_import::OptionNamer(|o| format!("--{}", o.key()));
    assert!(e
        .line(&flags)
        .ends_with("(1.00ms); --period is for files that do not"));
    assert!(e
        .to_string()
        .ends_with("the period option is for files that do not"));
    let e = import(
        json.as_bytes(),
        None,
        &Options {
            unit: Some(Unit::Nanos),
            ..Options::default()
        },
    )
    .unwrap_err();
    assert!(e.is_usage(), "{e}");
}
