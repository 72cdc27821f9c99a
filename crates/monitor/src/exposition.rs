//! What a `GET /metrics` serves: an [`Exposition`] of counter, gauge and
//! histogram families, built once per scrape, and two encoders for it —
//! the Prometheus text format 0.0.4 ([`encode_text`]) and the protobuf
//! exposition ([`encode_protobuf`]), which alone can carry Prometheus's
//! native histograms. [`negotiate`] picks one from the scraper's `Accept`.
//!
//! Histograms hold nanoseconds and are exposed in seconds. Both formats
//! carry the classic buckets of the run export ([`PROMETHEUS_BUCKETS_NS`],
//! 1 µs to 100 ms at ten per decade), so dashboards read either; the
//! protobuf adds the native histogram:
//!
//! - **Schema 3**: bucket bounds at 2^(k/8) s, neighbours 1.09× apart, so
//!   a quantile read from them is off by at most 9 % (the classic R10
//!   buckets allow 28 %). It is the schema of the Go client's default
//!   bucket factor (1.1), so our series aggregate with other clients'
//!   default native histograms without Prometheus lowering either's
//!   resolution (it merges at the coarser schema). 1 µs to 100 ms spans
//!   134 buckets at schema 3, inside the 160 the native histogram spec
//!   names as a typical per-series bucket limit; schema 4 (4.4 %) would
//!   need 266 for the same spread.
//! - **Zero threshold 2^-128 s**, the Go client's default: only exact
//!   zeros fall in the zero bucket (the least positive latency, 1 ns, is
//!   far above it), and a threshold equal to other clients' default needs
//!   no widening when Prometheus adds the histograms.
//! - **Mapping**: every HDR recording bucket's count goes to the native
//!   bucket that holds the HDR bucket's midpoint. HDR buckets are at most
//!   0.1 % wide (exact below 2048 ns), so this misplaces a sample by at
//!   most 0.05 % of its value; samples above the recorder's 68.7 s limit
//!   are clamped there, as in the HDR histogram itself.
//! - **Spans and deltas**: integer counts, delta-coded across the whole
//!   bucket sequence; gaps of one or two empty buckets stay inside a span
//!   as zero counts, longer gaps start a new span.
//!
//! The messages are hand-written `prost` structs with the field numbers of
//! `io.prometheus.client`'s `metrics.proto` ([`proto`]). The crates that
//! ship these types were weighed: `prometheus` (tikv) 0.14's copy of the
//! file predates native histograms (no `schema`, no `positive_span`);
//! `prometheus-client` 0.25 has them, but generates its types at build time
//! with `prost-build`, which needs `protoc` on every machine that builds
//! latscope or, with its `protobuf-protox` feature, 69 crates in all
//! (prost alone is 10, most of them already in the build), and its prost
//! 0.14 needs Rust 1.85 (the workspace's floor is 1.80) — all for eight
//! messages and an enum whose fields the wire format fixes.
//!
//! [`PROMETHEUS_BUCKETS_NS`]: latscope_report::exports::PROMETHEUS_BUCKETS_NS

mod native;
pub mod proto;

use std::fmt::Write as _;

use latscope_record::Histogram;
use latscope_report::exports::{
    prometheus_label_value as label_value, prometheus_seconds as seconds, PROMETHEUS_BUCKETS_NS,
};
use prost::Message as _;

pub use self::native::{
    native_buckets, native_index, native_upper_bound, NativeBuckets, NATIVE_SCHEMA,
    NATIVE_ZERO_THRESHOLD,
};

/// The content type of [`encode_text`]'s output.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of [`encode_protobuf`]'s output.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// The type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    /// The name in a `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One series' value.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    Counter(f64),
    Gauge(f64),
    /// Nanoseconds, exposed in seconds.
    Histogram(&'a Histogram),
}

impl Value<'_> {
    /// The family type this value belongs to.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Counter(_) => Kind::Counter,
            Value::Gauge(_) => Kind::Gauge,
            Value::Histogram(_) => Kind::Histogram,
        }
    }
}

/// One series: its labels (names and raw values, in print order) and value.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    pub labels: Vec<(String, String)>,
    pub value: Value<'a>,
}

/// A family: every series of one metric name, written together.
#[derive(Debug, Clone)]
pub struct Family<'a> {
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub samples: Vec<Sample<'a>>,
}

/// Why [`Exposition::try_add`] refused a sample. Each is a mistake in the
/// calling code (names and kinds are the code's, label values are never
/// refused): a sample that would make the scrape invalid, or fail
/// `promtool check metrics`, is kept out rather than spoil the rest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpositionError {
    #[error("`{0}` is not a valid metric name")]
    BadName(String),
    #[error("{family}: a {kind:?} family given a {value:?} value")]
    KindMismatch {
        family: String,
        kind: Kind,
        value: Kind,
    },
    #[error("{family}: already a {was:?} family, cannot add a {now:?} sample")]
    KindRedeclared {
        family: String,
        was: Kind,
        now: Kind,
    },
    #[error("{0}: a counter's name must end in `_total`")]
    CounterWithoutTotal(String),
    #[error("{0}: only a counter's name may end in `_total`")]
    TotalNotCounter(String),
    #[error("{family}: `{label}` is not a label name this family may use")]
    BadLabel { family: String, label: String },
    #[error("{family}: label `{label}` given twice")]
    RepeatedLabel { family: String, label: String },
    #[error("{family}: a series with labels {labels:?} is already there")]
    DuplicateSeries {
        family: String,
        labels: Vec<(String, String)>,
    },
}

/// The families of one scrape, in the order they were first added, each
/// once with all its series.
#[derive(Debug, Clone, Default)]
pub struct Exposition<'a> {
    pub families: Vec<Family<'a>>,
    /// What [`Exposition::add`] refused, for the caller's log and tests.
    pub rejected: Vec<ExpositionError>,
}

impl<'a> Exposition<'a> {
    pub fn new() -> Exposition<'a> {
        Exposition::default()
    }

    /// Adds a series to the family `name`, creating it (with this `help`
    /// and `kind`) at the end if it is new; a later `help` for the same
    /// family is ignored. A sample that [`Exposition::try_add`] refuses is
    /// left out and its reason kept in [`Exposition::rejected`], so that
    /// one wrong series never makes the whole scrape unreadable.
    pub fn add(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        labels: Vec<(String, String)>,
        value: Value<'a>,
    ) {
        if let Err(e) = self.try_add(name, help, kind, labels, value) {
            self.rejected.push(e);
        }
    }

    /// [`Exposition::add`], with the reason when the sample is refused:
    /// an invalid metric or label name (`le` is the histograms' own,
    /// `__` names are Prometheus's), a value of another kind than the
    /// family's, a counter not named `..._total` or another kind so named,
    /// a label given twice, or a series the family already has (the same
    /// labels in any order).
    pub fn try_add(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        labels: Vec<(String, String)>,
        value: Value<'a>,
    ) -> Result<(), ExpositionError> {
        if !valid_metric_name(name) {
            return Err(ExpositionError::BadName(name.to_string()));
        }
        if value.kind() != kind {
            return Err(ExpositionError::KindMismatch {
                family: name.to_string(),
                kind,
                value: value.kind(),
            });
        }
        match (kind, name.ends_with("_total")) {
            (Kind::Counter, false) => {
                return Err(ExpositionError::CounterWithoutTotal(name.to_string()))
            }
            (Kind::Gauge | Kind::Histogram, true) => {
                return Err(ExpositionError::TotalNotCounter(name.to_string()))
            }
            _ => {}
        }
        for (i, (label, _)) in labels.iter().enumerate() {
            if !valid_label_name(label) || (kind == Kind::Histogram && label == "le") {
                return Err(ExpositionError::BadLabel {
                    family: name.to_string(),
                    label: label.clone(),
                });
            }
            if labels[..i].iter().any(|(l, _)| l == label) {
                return Err(ExpositionError::RepeatedLabel {
                    family: name.to_string(),
                    label: label.clone(),
                });
            }
        }
        let family = match self.families.iter().position(|f| f.name == name) {
            Some(i) => &mut self.families[i],
            None => {
                self.families.push(Family {
                    name: name.to_string(),
                    help: help.to_string(),
                    kind,
                    samples: Vec::new(),
                });
                let last = self.families.len() - 1;
                &mut self.families[last]
            }
        };
        if family.kind != kind {
            return Err(ExpositionError::KindRedeclared {
                family: name.to_string(),
                was: family.kind,
                now: kind,
            });
        }
        // Linear, like the family lookup: a scrape holds hundreds of
        // series, and label sets differ in their first pair or two.
        if family
            .samples
            .iter()
            .any(|s| same_labels(&s.labels, &labels))
        {
            return Err(ExpositionError::DuplicateSeries {
                family: name.to_string(),
                labels,
            });
        }
        family.samples.push(Sample { labels, value });
        Ok(())
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved for
/// Prometheus's internal labels).
fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

/// Whether two label sets (names unique within each) are the same series.
fn same_labels(a: &[(String, String)], b: &[(String, String)]) -> bool {
    a.len() == b.len() && a.iter().all(|pair| b.contains(pair))
}

/// The exposition as Prometheus text, format 0.0.4 ([`TEXT_CONTENT_TYPE`]):
/// per family `# HELP`, `# TYPE` and its series; a histogram as the
/// cumulative `_bucket{le=...}` lines at [`PROMETHEUS_BUCKETS_NS`] (in
/// seconds) and `+Inf`, `_sum` (seconds, exact) and `_count`. Bucket
/// counts are at the histogram's 0.1 % resolution, as in the run export.
/// Families without series are left out.
pub fn encode_text(e: &Exposition<'_>) -> String {
    let mut out = String::new();
    for f in e.families.iter().filter(|f| !f.samples.is_empty()) {
        let name = &f.name;
        let _ = writeln!(out, "# HELP {name} {}", help_text(&f.help));
        let _ = writeln!(out, "# TYPE {name} {}", f.kind.as_str());
        for s in &f.samples {
            let labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", label_value(v)))
                .collect();
            let braced = if labels.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", labels.join(","))
            };
            match s.value {
                Value::Counter(v) | Value::Gauge(v) => {
                    let _ = writeln!(out, "{name}{braced} {}", float(v));
                }
                Value::Histogram(h) => {
                    let prefix: String = labels.iter().map(|l| format!("{l},")).collect();
                    let total = h.count();
                    for le_ns in PROMETHEUS_BUCKETS_NS {
                        let _ = writeln!(
                            out,
                            "{name}_bucket{{{prefix}le=\"{}\"}} {}",
                            seconds(u128::from(le_ns)),
                            total - h.count_above(le_ns)
                        );
                    }
                    let _ = writeln!(out, "{name}_bucket{{{prefix}le=\"+Inf\"}} {total}");
                    let _ = writeln!(out, "{name}_sum{braced} {}", seconds(h.sum()));
                    let _ = writeln!(out, "{name}_count{braced} {total}");
                }
            }
        }
    }
    out
}

/// A `# HELP` text with `\` and line feeds escaped.
fn help_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as the text format spells floats: integers plainly
/// (`3`, not `3.0`), others in the shortest form that reads back to the
/// same f64 (with an exponent where long), and `+Inf`, `-Inf`, `NaN`.
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{v}")
    } else {
        format!("{v:?}")
    }
}

/// The exposition as the Prometheus protobuf format
/// ([`PROTOBUF_CONTENT_TYPE`]): each family a `MetricFamily` message
/// preceded by its length as a varint. Histograms carry the classic
/// buckets of [`encode_text`] (without `+Inf`, which the format makes
/// optional) and the native histogram described in the module
/// documentation. Families without series are left out.
pub fn encode_protobuf(e: &Exposition<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    for f in e.families.iter().filter(|f| !f.samples.is_empty()) {
        let family = proto::MetricFamily {
            name: Some(f.name.clone()),
            help: Some(f.help.clone()),
            r#type: Some(match f.kind {
                Kind::Counter => proto::MetricType::Counter,
                Kind::Gauge => proto::MetricType::Gauge,
                Kind::Histogram => proto::MetricType::Histogram,
            } as i32),
            metric: f.samples.iter().map(metric).collect(),
        };
        out.extend(family.encode_length_delimited_to_vec());
    }
    out
}

/// One series as a `Metric` message.
fn metric(s: &Sample<'_>) -> proto::Metric {
    let mut m = proto::Metric {
        label: s
            .labels
            .iter()
            .map(|(k, v)| proto::LabelPair {
                name: Some(k.clone()),
                value: Some(v.clone()),
            })
            .collect(),
        ..Default::default()
    };
    match s.value {
        Value::Counter(v) => m.counter = Some(proto::Counter { value: Some(v) }),
        Value::Gauge(v) => m.gauge = Some(proto::Gauge { value: Some(v) }),
        Value::Histogram(h) => m.histogram = Some(histogram(h)),
    }
    m
}

/// A histogram as a `Histogram` message, classic and native.
fn histogram(h: &Histogram) -> proto::Histogram {
    let total = h.count();
    let bucket = PROMETHEUS_BUCKETS_NS
        .iter()
        .map(|&le_ns| proto::Bucket {
            cumulative_count: Some(total - h.count_above(le_ns)),
            // Correctly rounded, so the same f64 as the text's decimal.
            upper_bound: Some(le_ns as f64 / 1e9),
        })
        .collect();
    let native = native_buckets(h);
    let (positive_span, positive_delta) = native::spans_and_deltas(&native.buckets);
    proto::Histogram {
        sample_count: Some(total),
        sample_sum: Some(seconds_f64(h.sum())),
        bucket,
        schema: Some(NATIVE_SCHEMA),
        zero_threshold: Some(NATIVE_ZERO_THRESHOLD),
        zero_count: Some(native.zero_count),
        positive_span,
        positive_delta,
    }
}

/// Nanoseconds as f64 seconds, whole seconds and the fraction converted
/// apart so that large sums keep their nanoseconds as long as f64 can.
fn seconds_f64(ns: u128) -> f64 {
    let whole = (ns / 1_000_000_000) as f64;
    let frac = (ns % 1_000_000_000) as f64 / 1e9;
    whole + frac
}

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text 0.0.4, [`encode_text`].
    Text,
    /// Length-delimited `io.prometheus.client.MetricFamily` messages,
    /// [`encode_protobuf`].
    Protobuf,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT_CONTENT_TYPE,
            Format::Protobuf => PROTOBUF_CONTENT_TYPE,
        }
    }

    /// The exposition encoded in this format.
    pub fn encode(self, e: &Exposition<'_>) -> Vec<u8> {
        match self {
            Format::Text => encode_text(e).into_bytes(),
            Format::Protobuf => encode_protobuf(e),
        }
    }
}

/// The format to answer a request with this `Accept` header: protobuf when
/// a media range names `application/vnd.google.protobuf` with
/// `proto=io.prometheus.client.MetricFamily` and `encoding=delimited` (as
/// Prometheus asks first when native histograms are on) at a quality above
/// zero and no lower than the best range that text satisfies (`text/plain`,
/// `text/*`, `*/*`); text otherwise, and without a header. Names and
/// parameter names compare without case; other parameters (`version`,
/// `escaping`, ...) are ignored, and a range with an unreadable `q` is
/// skipped.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let mut protobuf_q = 0.0f64;
    let mut text_q = 0.0f64;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim();
        let mut q = Some(1.0);
        let (mut proto, mut encoding) = (None, None);
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let key = key.trim();
            let value = value.trim().trim_matches('"');
            if key.eq_ignore_ascii_case("q") {
                q = value
                    .parse::<f64>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q));
            } else if key.eq_ignore_ascii_case("proto") {
                proto = Some(value);
            } else if key.eq_ignore_ascii_case("encoding") {
                encoding = Some(value);
            }
        }
        let Some(q) = q else { continue };
        let is = |name: &str| media.eq_ignore_ascii_case(name);
        if is("application/vnd.google.protobuf")
            && proto.is_some_and(|p| p.eq_ignore_ascii_case("io.prometheus.client.MetricFamily"))
            && encoding.is_some_and(|e| e.eq_ignore_ascii_case("delimited"))
        {
            protobuf_q = protobuf_q.max(q);
        } else if is("text/plain") || is("text/*") || is("*/*") {
            text_q = text_q.max(q);
        }
    }
    if protobuf_q > 0.0 && protobuf_q >= text_q {
        Format::Protobuf
    } else {
        Format::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_groups_series_by_family_in_first_seen_order() {
        let h = Histogram::new();
        let mut e = Exposition::new();
        let l = |v: &str| vec![("cpu".to_string(), v.to_string())];
        e.add(
            "b_seconds",
            "B.",
            Kind::Histogram,
            l("0"),
            Value::Histogram(&h),
        );
        e.add("a_total", "A.", Kind::Counter, l("0"), Value::Counter(1.0));
        e.add(
            "b_seconds",
            "other",
            Kind::Histogram,
            l("1"),
            Value::Histogram(&h),
        );
        let names: Vec<_> = e.families.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["b_seconds", "a_total"]);
        assert_eq!(e.families[0].samples.len(), 2);
        assert_eq!(e.families[0].help, "B.");
        assert!(e.rejected.is_empty());
    }

    #[test]
    fn mistakes_are_refused_and_kept() {
        let h = Histogram::new();
        let mut e = Exposition::new();
        let none = Vec::new;
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        /// (name, kind, labels, value) of one call.
        type Case<'h> = (&'static str, Kind, Vec<(String, String)>, Value<'h>);
        let cases: Vec<Case<'_>> = vec![
            ("9lives", Kind::Gauge, none(), Value::Gauge(1.0)),
            ("x_total", Kind::Counter, none(), Value::Gauge(1.0)),
            ("x", Kind::Counter, none(), Value::Counter(1.0)),
            ("x_total", Kind::Gauge, none(), Value::Gauge(1.0)),
            (
                "x_seconds",
                Kind::Histogram,
                vec![pair("le", "1")],
                Value::Histogram(&h),
            ),
            (
                "x",
                Kind::Gauge,
                vec![pair("__name__", "y")],
                Value::Gauge(1.0),
            ),
            ("x", Kind::Gauge, vec![pair("a-b", "y")], Value::Gauge(1.0)),
            (
                "x",
                Kind::Gauge,
                vec![pair("a", "1"), pair("a", "2")],
                Value::Gauge(1.0),
            ),
        ];
        for (name, kind, labels, value) in cases {
            assert!(e.try_add(name, "h", kind, labels, value).is_err(), "{name}");
        }
        assert!(e.families.is_empty());
        let ab = vec![pair("a", "1"), pair("b", "2")];
        let ba = vec![pair("b", "2"), pair("a", "1")];
        e.add("x", "h", Kind::Gauge, ab, Value::Gauge(1.0));
        e.add("x", "h", Kind::Gauge, ba, Value::Gauge(2.0));
        e.add("x", "h", Kind::Histogram, none(), Value::Histogram(&h));
        assert!(matches!(
            e.rejected[..],
            [
                ExpositionError::DuplicateSeries { .. },
                ExpositionError::KindRedeclared { .. }
            ]
        ));
        assert_eq!(e.families[0].samples.len(), 1);
        // A label name is fine in another family's position: `le` on a gauge.
        assert!(e
            .try_add(
                "y",
                "h",
                Kind::Gauge,
                vec![pair("le", "1")],
                Value::Gauge(0.0)
            )
            .is_ok());
    }

    #[test]
    fn text_escapes_and_spells_floats() {
        assert_eq!(help_text("a\\b\nc \"d\""), "a\\\\b\\nc \"d\"");
        assert_eq!(float(3.0), "3");
        assert_eq!(float(-0.0), "-0");
        assert_eq!(float(0.25), "0.25");
        assert_eq!(float(1.5e-10), "1.5e-10");
        assert_eq!(float(1e300), "1e300");
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(seconds_f64(1_500_000_001), 1.500_000_001);
    }

    #[test]
    fn text_of_one_of_each() {
        let mut h = Histogram::new();
        h.record_n(1_000, 2);
        h.record(150_000_000);
        let mut e = Exposition::new();
        let l = vec![("path".to_string(), "a\"b".to_string())];
        e.add(
            "c_total",
            "C.",
            Kind::Counter,
            l.clone(),
            Value::Counter(7.0),
        );
        e.add("g", "G.", Kind::Gauge, Vec::new(), Value::Gauge(0.5));
        e.add(
            "h_seconds",
            "H.",
            Kind::Histogram,
            Vec::new(),
            Value::Histogram(&h),
        );
        let text = encode_text(&e);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..6],
            [
                "# HELP c_total C.",
                "# TYPE c_total counter",
                "c_total{path=\"a\\\"b\"} 7",
                "# HELP g G.",
                "# TYPE g gauge",
                "g 0.5",
            ]
        );
        assert_eq!(lines[8], "h_seconds_bucket{le=\"0.000001\"} 2");
        assert_eq!(lines[58], "h_seconds_bucket{le=\"0.1\"} 2");
        assert_eq!(
            lines[59..],
            [
                "h_seconds_bucket{le=\"+Inf\"} 3",
                "h_seconds_sum 0.150002",
                "h_seconds_count 3"
            ]
        );
    }

    #[test]
    fn accept_headers() {
        let pb = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited";
        assert_eq!(negotiate(Some(pb)), Format::Protobuf);
        assert_eq!(negotiate(Some(&format!("{pb};q=0"))), Format::Text);
        assert_eq!(
            negotiate(Some(&format!("{pb};q=0.3,text/plain;q=0.7"))),
            Format::Text
        );
        assert_eq!(
            negotiate(Some(&format!("{pb};q=0.5,*/*;q=0.5"))),
            Format::Protobuf
        );
        assert_eq!(negotiate(Some(&format!("{pb};q=abc"))), Format::Text);
        // encoding=text is the protobuf text form, which this does not write
        assert_eq!(
            negotiate(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text")),
            Format::Text
        );
        assert_eq!(
            negotiate(Some("application/vnd.google.protobuf")),
            Format::Text
        );
        assert_eq!(negotiate(Some("")), Format::Text);
        assert_eq!(Format::Text.content_type(), TEXT_CONTENT_TYPE);
    }
}
