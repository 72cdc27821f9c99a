//! The `/metrics` exposition: the text output checked by the real
//! `promtool check metrics`, the protobuf output decoded back with prost
//! (families, labels, classic buckets, and native histograms whose
//! quantiles are checked against the HDR histogram's on synthetic
//! distributions), and the choice of format from Prometheus's `Accept`.

#![allow(clippy::unwrap_used)]

use crate::common;
use common::promtool_check;

use std::collections::HashMap;

use latscope_monitor::exposition::proto::{self, MetricType};
use latscope_monitor::exposition::{
    encode_protobuf, encode_text, native_upper_bound, negotiate, Exposition, Format, Kind, Value,
    NATIVE_SCHEMA, NATIVE_ZERO_THRESHOLD,
};
use latscope_record::Histogram;
use latscope_report::exports::PROMETHEUS_BUCKETS_NS;
use prost::Message as _;

/// A small deterministic generator (SplitMix64), so the distributions are
/// the same on every run without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Log-uniform in [lo, hi] nanoseconds.
    fn log_uniform(&mut self, lo: f64, hi: f64) -> u64 {
        (lo * (hi / lo).powf(self.unit())).round() as u64
    }
}

/// Named synthetic latency distributions spread over 1 µs to 100 ms.
fn distributions() -> Vec<(&'static str, Histogram)> {
    let mut rng = Rng(42);
    let mut out = Vec::new();
    let mut make = |name, f: &mut dyn FnMut(&mut Rng) -> u64, n: usize| {
        let mut h = Histogram::new();
        for _ in 0..n {
            h.record(f(&mut rng));
        }
        out.push((name, h));
    };
    make(
        "uniform 1 µs..100 ms",
        &mut |r| 1_000 + (r.unit() * 99_999_000.0) as u64,
        50_000,
    );
    make(
        "log-uniform 1 µs..100 ms",
        &mut |r| r.log_uniform(1e3, 1e8),
        50_000,
    );
    make(
        "timer-like: 3 µs + exponential tail, rare ms spikes",
        &mut |r| {
            if r.unit() < 0.001 {
                r.log_uniform(1e6, 5e7)
            } else {
                3_000 + (-(1.0 - r.unit()).ln() * 2_000.0) as u64
            }
        },
        100_000,
    );
    make(
        "bimodal 2 µs and 5 ms",
        &mut |r| {
            if r.unit() < 0.7 {
                r.log_uniform(1.8e3, 2.2e3)
            } else {
                r.log_uniform(4.5e6, 5.5e6)
            }
        },
        20_000,
    );
    make(
        "a tenth exact zeros, the rest log-uniform",
        &mut |r| {
            if r.unit() < 0.1 {
                0
            } else {
                r.log_uniform(1e3, 1e8)
            }
        },
        20_000,
    );
    make("one value", &mut |_| 12_345, 1_000);
    make(
        "sub-2048 ns (exact HDR buckets)",
        &mut |r| 1 + r.next() % 2047,
        10_000,
    );
    out
}

/// A mixed exposition of every kind, with labels that need escaping, an
/// empty histogram and one without labels.
fn mixed<'a>(hists: &'a [(&'static str, Histogram)], empty: &'a Histogram) -> Exposition<'a> {
    let mut e = Exposition::new();
    let l = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    for (i, (name, h)) in hists.iter().enumerate() {
        e.add(
            "latscope_timer_latency_seconds",
            "Timer wake-up latency (latscope timer.latency).",
            Kind::Histogram,
            l(&[("cpu", &i.to_string()), ("shape", name)]),
            Value::Histogram(h),
        );
    }
    e.add(
        "latscope_timer_latency_seconds",
        "ignored: the first help stays",
        Kind::Histogram,
        l(&[("cpu", "all"), ("shape", "empty")]),
        Value::Histogram(empty),
    );
    e.add(
        "latscope_irq_exec_seconds",
        "Hard IRQ handler run time.\nPer line, with a \\ in it.",
        Kind::Histogram,
        Vec::new(),
        Value::Histogram(&hists[1].1),
    );
    e.add(
        "latscope_episodes_total",
        "Samples above the threshold, by cause.",
        Kind::Counter,
        l(&[("cause", "irq")]),
        Value::Counter(12.0),
    );
    e.add(
        "latscope_episodes_total",
        "Samples above the threshold, by cause.",
        Kind::Counter,
        l(&[("cause", "odd \"quoted\" \\ name\nnext line")]),
        Value::Counter(0.0),
    );
    e.add(
        "latscope_info",
        "The monitor's version.",
        Kind::Gauge,
        l(&[("version", "0.1.0"), ("kernel", "6.12.0-rt")]),
        Value::Gauge(1.0),
    );
    e.add(
        "latscope_last_checkpoint_timestamp_seconds",
        "When the monitor last stored what it measured (Unix time).",
        Kind::Gauge,
        Vec::new(),
        Value::Gauge(1_795_730_639.25),
    );
    e.add(
        "latscope_timer_latency_max_seconds",
        "The largest value of the current window so far.",
        Kind::Gauge,
        l(&[("cpu", "0"), ("window", "minute")]),
        Value::Gauge(0.000_123_456),
    );
    assert!(e.rejected.is_empty(), "{:?}", e.rejected);
    e
}

#[test]
fn text_passes_promtool_check_metrics() {
    let hists = distributions();
    let empty = Histogram::new();
    let text = encode_text(&mixed(&hists, &empty));
    let Some((status, printed)) = promtool_check(&text) else {
        println!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    assert!(
        status.success() && printed.trim().is_empty(),
        "promtool check metrics: {status}\n{printed}\n{text}"
    );
    // Not a rubber stamp: a counter without `_total`, written by hand, is
    // refused.
    let (status, printed) = promtool_check("# HELP x X.\n# TYPE x counter\nx 1\n").unwrap();
    assert!(!status.success(), "{printed}");
}

/// Every length-delimited `MetricFamily` of a protobuf exposition.
fn decode(mut bytes: &[u8]) -> Vec<proto::MetricFamily> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        out.push(proto::MetricFamily::decode_length_delimited(&mut bytes).unwrap());
    }
    out
}

/// The native buckets of a decoded histogram rebuilt from spans and
/// deltas: (index, count), ascending, empty buckets left out.
fn native_counts(h: &proto::Histogram) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    let mut deltas = h.positive_delta.iter();
    let mut index = 0i32;
    let mut count = 0i64;
    for span in &h.positive_span {
        // The first offset is the first index, later ones the gap since
        // the end of the previous span.
        index += span.offset();
        for _ in 0..span.length() {
            count += deltas.next().expect("a delta for every bucket of a span");
            assert!(count >= 0, "negative bucket count");
            if count > 0 {
                out.push((index, count as u64));
            }
            index += 1;
        }
    }
    assert!(deltas.next().is_none(), "more deltas than span buckets");
    out
}

/// The labels of a decoded series as (name, value) pairs.
fn labels(m: &proto::Metric) -> Vec<(String, String)> {
    m.label
        .iter()
        .map(|l| (l.name().to_string(), l.value().to_string()))
        .collect()
}

#[test]
fn protobuf_decodes_to_the_same_families_as_the_text() {
    let hists = distributions();
    let empty = Histogram::new();
    let e = mixed(&hists, &empty);
    let families = decode(&encode_protobuf(&e));
    let text = encode_text(&e);

    let names: Vec<&str> = families.iter().map(|f| f.name()).collect();
    let expected: Vec<&str> = e.families.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, expected);
    for (f, want) in families.iter().zip(&e.families) {
        assert_eq!(f.help(), want.help);
        let kind = match want.kind {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
            Kind::Histogram => MetricType::Histogram,
        };
        assert_eq!(f.r#type(), kind, "{}", f.name());
        assert_eq!(f.metric.len(), want.samples.len());
        for (m, s) in f.metric.iter().zip(&want.samples) {
            assert_eq!(labels(m), s.labels, "{}", f.name());
            match s.value {
                Value::Counter(v) => assert_eq!(m.counter.as_ref().unwrap().value(), v),
                Value::Gauge(v) => assert_eq!(m.gauge.as_ref().unwrap().value(), v),
                Value::Histogram(h) => {
                    let p = m.histogram.as_ref().unwrap();
                    assert_eq!(p.sample_count(), h.count());
                    assert!((p.sample_sum() - h.sum() as f64 / 1e9).abs() <= 1e-9 * p.sample_sum());
                    // Classic buckets: the text's bounds and counts.
                    let bounds: Vec<f64> = p.bucket.iter().map(|b| b.upper_bound()).collect();
                    let want: Vec<f64> = PROMETHEUS_BUCKETS_NS
                        .iter()
                        .map(|&ns| ns as f64 / 1e9)
                        .collect();
                    assert_eq!(bounds, want);
                    let from_text = text_buckets(&text, f.name(), &s.labels);
                    for b in &p.bucket {
                        assert_eq!(
                            Some(&b.cumulative_count()),
                            from_text.get(&b.upper_bound().to_bits()),
                            "{} le={}",
                            f.name(),
                            b.upper_bound()
                        );
                    }
                }
            }
        }
    }
}

/// The `_bucket` lines of one series in the text: bound (as f64 bits) →
/// cumulative count.
fn text_buckets(text: &str, family: &str, labels: &[(String, String)]) -> HashMap<u64, u64> {
    let prefix: String = labels
        .iter()
        .map(|(k, v)| {
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            format!("{k}=\"{v}\",")
        })
        .collect();
    let start = format!("{family}_bucket{{{prefix}le=\"");
    text.lines()
        .filter_map(|line| line.strip_prefix(&start))
        .filter_map(|rest| {
            let (le, count) = rest.split_once("\"} ")?;
            let le: f64 = le.parse().ok()?;
            Some((le.to_bits(), count.parse().ok()?))
        })
        .collect()
}

#[test]
fn native_histograms_hold_every_sample_and_the_quantiles() {
    let hists = distributions();
    let mut e = Exposition::new();
    for (name, h) in &hists {
        e.add(
            "x_seconds",
            "X.",
            Kind::Histogram,
            vec![("shape".to_string(), name.to_string())],
            Value::Histogram(h),
        );
    }
    let families = decode(&encode_protobuf(&e));
    assert_eq!(families.len(), 1);
    // A native bucket is 2^(1/8) wide; the HDR value that stands for a
    // quantile may lie another 0.1 % (one HDR bucket) off the native
    // bucket's edge.
    let base = 2f64.powf(1.0 / 8.0);
    let hdr = 1.001;
    let mut worst = 1.0f64;
    for ((name, h), m) in hists.iter().zip(&families[0].metric) {
        let p = m.histogram.as_ref().unwrap();
        assert_eq!(p.schema(), NATIVE_SCHEMA);
        assert_eq!(p.zero_threshold(), NATIVE_ZERO_THRESHOLD);
        let native = native_counts(p);
        let total: u64 = native.iter().map(|&(_, c)| c).sum::<u64>() + p.zero_count();
        assert_eq!(total, p.sample_count(), "{name}");
        assert_eq!(p.sample_count(), h.count(), "{name}");
        for q in [
            0.0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0,
        ] {
            let want = h.quantile(q).unwrap().0 as f64 / 1e9;
            let rank = ((q * h.count() as f64).ceil() as u64).clamp(1, h.count());
            if rank <= p.zero_count() {
                assert_eq!(want, 0.0, "{name} q={q}: in the zero bucket");
                continue;
            }
            let mut seen = p.zero_count();
            let &(index, _) = native
                .iter()
                .find(|&&(_, c)| {
                    seen += c;
                    seen >= rank
                })
                .unwrap();
            let (lower, upper) = (native_upper_bound(index - 1), native_upper_bound(index));
            assert!(
                lower / hdr < want && want <= upper * hdr,
                "{name} q={q}: HDR {want} s outside native bucket {index} ({lower}, {upper}]"
            );
            // The bucket's geometric middle, as one estimate from it.
            let estimate = (lower * upper).sqrt();
            let ratio = (estimate / want).max(want / estimate);
            assert!(ratio <= base * hdr, "{name} q={q}: {estimate} vs {want}");
            worst = worst.max(ratio);
        }
    }
    println!("worst native/HDR quantile ratio: {worst:.4}");
}

#[test]
fn an_empty_histogram_is_still_a_native_one() {
    let h = Histogram::new();
    let mut e = Exposition::new();
    e.add(
        "y_seconds",
        "Y.",
        Kind::Histogram,
        Vec::new(),
        Value::Histogram(&h),
    );
    let families = decode(&encode_protobuf(&e));
    let p = families[0].metric[0].histogram.as_ref().unwrap();
    assert_eq!(p.sample_count(), 0);
    assert_eq!(p.positive_span.len(), 1);
    assert_eq!(
        (p.positive_span[0].offset(), p.positive_span[0].length()),
        (0, 0)
    );
    assert!(p.positive_delta.is_empty());
    assert!(p.bucket.iter().all(|b| b.cumulative_count() == 0));
    // Families without series are left out of both formats.
    e.families[0].samples.clear();
    assert!(encode_protobuf(&e).is_empty());
    assert!(encode_text(&e).is_empty());
}

#[test]
fn negotiate_picks_protobuf_only_when_asked_for_it() {
    let protobuf = [
        // Prometheus 2.x with --enable-feature=native-histograms
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
        // scrape_protocols with PrometheusProto first
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
        // Prometheus 3.x, with its escaping parameter
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,text/plain;version=0.0.4;q=0.1,*/*;q=0.05",
        // spaces, case and quotes
        "Application/Vnd.Google.Protobuf; Proto=\"io.prometheus.client.MetricFamily\"; Encoding=Delimited; Q=0.7, text/plain; version=0.0.4; q=0.3",
        // parameters in another order, no q
        "application/vnd.google.protobuf;encoding=delimited;proto=io.prometheus.client.MetricFamily",
        // after other ranges
        "text/plain;version=0.0.4;q=0.3,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7",
    ];
    for accept in protobuf {
        assert_eq!(negotiate(Some(accept)), Format::Protobuf, "{accept}");
    }
    let text = [
        // Prometheus without native histograms
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.25",
        "text/plain;version=0.0.4",
        "text/plain",
        "*/*",
        "",
        // a browser
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        // protobuf without the delimited MetricFamily parameters
        "application/vnd.google.protobuf",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
        "application/vnd.google.protobuf;proto=io.prometheus.client.Other;encoding=delimited",
        // protobuf refused, or preferred less than text
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0,text/plain",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.2,text/plain;q=0.8",
    ];
    for accept in text {
        assert_eq!(negotiate(Some(accept)), Format::Text, "{accept}");
    }
    assert_eq!(negotiate(None), Format::Text);
    assert_eq!(
        Format::Text.content_type(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(
        Format::Protobuf.content_type(),
        "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
    );
}

#[test]
fn format_encode_is_the_encoders() {
    let hists = distributions();
    let empty = Histogram::new();
    let e = mixed(&hists, &empty);
    assert_eq!(Format::Text.encode(&e), encode_text(&e).into_bytes());
    assert_eq!(Format::Protobuf.encode(&e), encode_protobuf(&e));
    assert_eq!(Kind::Histogram.as_str(), "histogram");
}
