//! The messages of the `io.prometheus.client` protobuf exposition
//! (`metrics.proto` of prometheus/client_model), written by hand with the
//! field numbers and wire types of that file: only the fields this encoder
//! writes. A decoder skips the others (summaries, exemplars, negative and
//! float buckets, created timestamps) as protobuf decoders skip unknown
//! fields, so these types also read what other clients write, minus those.
//!
//! The file is proto2, hence `optional` scalars (`Option`, written when
//! `Some`, even when zero). Repeated numbers are written packed, which
//! proto2 leaves to the field's options; parsers must accept both forms,
//! and Prometheus's own copy of the file is proto3, where packed is the
//! default.

/// `io.prometheus.client.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Counter = 0,
    Gauge = 1,
    Summary = 2,
    Untyped = 3,
    Histogram = 4,
    GaugeHistogram = 5,
}

/// `io.prometheus.client.MetricFamily`: one family, its series in `metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub help: Option<String>,
    #[prost(enumeration = "MetricType", optional, tag = "3")]
    pub r#type: Option<i32>,
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
}

/// `io.prometheus.client.Metric`: one series, with the value of its type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
    #[prost(int64, optional, tag = "6")]
    pub timestamp_ms: Option<i64>,
}

/// `io.prometheus.client.LabelPair`: raw name and value, no escaping.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// `io.prometheus.client.Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Counter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

/// `io.prometheus.client.Histogram`: the classic buckets in `bucket`, the
/// native histogram in the fields from `schema` on. Integer counts only
/// (`positive_delta`, not the float `positive_count`), no negative buckets:
/// latencies are never below zero.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    /// Ascending `upper_bound`; `+Inf` is optional and left out.
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    #[prost(sint32, optional, tag = "5")]
    pub schema: Option<i32>,
    #[prost(double, optional, tag = "6")]
    pub zero_threshold: Option<f64>,
    #[prost(uint64, optional, tag = "7")]
    pub zero_count: Option<u64>,
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    /// Each bucket's count minus the previous bucket's (across spans), the
    /// first one's minus zero.
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
}

/// `io.prometheus.client.Bucket`: a classic bucket.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Bucket {
    #[prost(uint64, optional, tag = "1")]
    pub cumulative_count: Option<u64>,
    /// Inclusive.
    #[prost(double, optional, tag = "2")]
    pub upper_bound: Option<f64>,
}

/// `io.prometheus.client.BucketSpan`: `length` consecutive native buckets,
/// starting `offset` buckets after the end of the previous span (the first
/// span's offset is its first bucket's index).
#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, optional, tag = "1")]
    pub offset: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    pub length: Option<u32>,
}
