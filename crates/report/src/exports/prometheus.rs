//! The Prometheus text exposition format (version 0.0.4) of a run's
//! histograms, named by Prometheus's conventions so that a dashboard built
//! on an export also reads a live `/metrics` endpoint:
//!
//! - **One family per kind of metric**, the source in labels: every
//!   `softirq.delay.<VEC>` is a series of `latscope_softirq_delay_seconds`
//!   with `vector="<VEC>"`, every `irq.exec.<N>:<name>` one of
//!   `latscope_irq_exec_seconds` with `irq` and `handler`. Putting the
//!   source in the name (as this export once did) makes a family per IRQ
//!   line, which no query can aggregate or compare across machines.
//!   [`prometheus_family`] is the one place that maps names, for reuse.
//! - **Base units**: seconds, as the format's conventions (and promtool's
//!   lint) require; the stored nanoseconds are printed as exact decimals.
//! - **Buckets for latency tails**: ten per decade from 1 µs to 100 ms (the
//!   R10 preferred numbers 1, 1.25, 1.6, 2, 2.5, 3.2, 4, 5, 6.3, 8), then
//!   `+Inf`. `histogram_quantile` interpolates linearly inside the bucket
//!   that holds a quantile, so its answer can be off by the bucket's width:
//!   with neighbouring bounds at most 1.28× apart, by at most 28 %, where
//!   the 2 → 5 step of 1-2-5-per-decade buckets allows 150 % (a true 20 µs
//!   read as up to 50 µs), too coarse to compare two kernels' p99.99. The
//!   price is series: 51 bounds + `+Inf` + `_sum` + `_count` = 54 per
//!   cell × metric × CPU instead of 19. The 1-2-5 values are among the
//!   bounds, so the usual thresholds (10, 20, 50, 100 µs ...) are read
//!   exactly from one bucket. Below 1 µs every sample shares the first
//!   bucket (short handler runs live there, but no tail worth a query);
//!   above 100 ms only `+Inf` counts, and `histogram_quantile` answers
//!   0.1 s for a quantile that lies there (the exact maximum is in the
//!   other exports).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use latscope_model::metric;
use latscope_stats::{Histogram, RunResult};

use super::cpu_label;

/// The finite bucket bounds in nanoseconds, ascending: 1 µs to 100 ms, ten
/// per decade (R10). All below 2048 ns end a recording bucket, so their
/// counts are exact; the others are within the histogram's 0.1 %.
pub const PROMETHEUS_BUCKETS_NS: [u64; 51] = {
    // The R10 preferred numbers of the first decade, in nanoseconds.
    const R10: [u64; 10] = [1000, 1250, 1600, 2000, 2500, 3200, 4000, 5000, 6300, 8000];
    let mut out = [0u64; 51];
    let mut decade = 0;
    let mut scale = 1u64;
    while decade < 5 {
        let mut i = 0;
        while i < 10 {
            out[decade * 10 + i] = R10[i] * scale;
            i += 1;
        }
        decade += 1;
        scale *= 10;
    }
    out[50] = 100_000_000;
    out
};

/// The fixed-name metrics: (metric, family, HELP text).
const FIXED: [(&str, &str, &str); 14] = [
    (
        metric::TIMER_LATENCY,
        "latscope_timer_latency_seconds",
        "Timer wake-up latency: intended expiry to the measuring thread's user code running (latscope timer.latency).",
    ),
    (
        metric::TIMER_INTERVAL,
        "latscope_timer_interval_seconds",
        "Spacing between consecutive timer wake-ups (latscope timer.interval).",
    ),
    (
        metric::TIMER_IRQ,
        "latscope_timer_irq_seconds",
        "Intended timer expiry to the hrtimer's interrupt handler (latscope timer.irq).",
    ),
    (
        metric::TIMER_SCHED,
        "latscope_timer_sched_seconds",
        "hrtimer interrupt to the measuring thread switched in (latscope timer.sched).",
    ),
    (
        metric::TIMER_RETURN,
        "latscope_timer_return_seconds",
        "Measuring thread switched in to its user code running (latscope timer.return).",
    ),
    (
        metric::NMI_EXEC,
        "latscope_nmi_exec_seconds",
        "NMI handler run time (latscope nmi.exec).",
    ),
    (
        metric::NOISE_GAP,
        "latscope_noise_gap_seconds",
        "Length of each interruption of the noise probe's CPU-bound loop (latscope noise.gap).",
    ),
    (
        metric::UDP_SEND,
        "latscope_udp_send_seconds",
        "UDP send call to the kernel's software transmit time stamp (latscope udp.send).",
    ),
    (
        metric::UDP_SEND_SCHED,
        "latscope_udp_send_sched_seconds",
        "UDP send call to the kernel's time stamp before the packet scheduler (latscope udp.send.sched).",
    ),
    (
        metric::UDP_RECV,
        "latscope_udp_recv_seconds",
        "Kernel receive time stamp to the UDP receiver's user code having the datagram (latscope udp.recv).",
    ),
    (
        metric::UDP_PATH,
        "latscope_udp_path_seconds",
        "UDP send call to the receiver's user code having the datagram, on one machine (latscope udp.path).",
    ),
    (
        metric::UDP_RECV_DELIVER,
        "latscope_udp_recv_deliver_seconds",
        "Kernel receive time stamp to the UDP receiver woken (latscope udp.recv.deliver).",
    ),
    (
        metric::UDP_RECV_SCHED,
        "latscope_udp_recv_sched_seconds",
        "UDP receiver woken to switched in (latscope udp.recv.sched).",
    ),
    (
        metric::UDP_RECV_RETURN,
        "latscope_udp_recv_return_seconds",
        "UDP receiver switched in to its user code having the datagram (latscope udp.recv.return).",
    ),
];

/// The HELP text of the families named per source.
const PER_SOURCE: [(&str, &str); 6] = [
    (
        SOFTIRQ_DELAY,
        "Softirq raise to handler entry, per vector (latscope softirq.delay.<VEC>).",
    ),
    (
        SOFTIRQ_EXEC,
        "Softirq handler run time, per vector (latscope softirq.exec.<VEC>).",
    ),
    (
        IRQ_EXEC,
        "Hard IRQ handler run time, per interrupt line and handler (latscope irq.exec.<N>:<name>).",
    ),
    (
        IRQ_VECTOR_EXEC,
        "x86 interrupt vector handler run time, such as local_timer (latscope irq.exec.vector:<name>).",
    ),
    (
        WORKQUEUE_EXEC,
        "Workqueue item run time, per work function (latscope workqueue.exec.<function>).",
    ),
    (
        DEFERRED_EXEC,
        "Deferred work run time inside a softirq or the hard interrupt, per timer or hrtimer callback, tasklet or NAPI device; at most 256 sources, the rest as source=\"(other)\" (latscope deferred.exec.<CONTEXT>.<kind>:<source>).",
    ),
];

const SOFTIRQ_DELAY: &str = "latscope_softirq_delay_seconds";
const SOFTIRQ_EXEC: &str = "latscope_softirq_exec_seconds";
const IRQ_EXEC: &str = "latscope_irq_exec_seconds";
const IRQ_VECTOR_EXEC: &str = "latscope_irq_vector_exec_seconds";
const WORKQUEUE_EXEC: &str = "latscope_workqueue_exec_seconds";
const DEFERRED_EXEC: &str = "latscope_deferred_exec_seconds";
/// The source part of `irq.exec.vector:<name>`; the trace analysis spells
/// it out where it builds the name.
const VECTOR_SOURCE: &str = "vector:";

const FALLBACK_HELP: &str =
    "latscope metric without a family of its own; the metric label holds its name.";

/// The Prometheus family of a latscope metric name and the labels that
/// name its source, for the run export and the monitor's `/metrics`
/// alike. Label values are raw (not escaped). The labels common to every
/// series (cell, probe, workload, cpu) are the caller's.
///
/// - `timer.latency` → `latscope_timer_latency_seconds`, no labels; the
///   other fixed names likewise (`.` → `_`, `_seconds` appended)
/// - `softirq.delay.NET_RX` → `latscope_softirq_delay_seconds`, `vector="NET_RX"`;
///   `softirq.exec.<VEC>` → `latscope_softirq_exec_seconds`
/// - `irq.exec.41:virtio3-rx` → `latscope_irq_exec_seconds`, `irq="41"`,
///   `handler="virtio3-rx"` (split at the first `:`: handler names may hold
///   colons, line numbers never do)
/// - `irq.exec.vector:local_timer` → `latscope_irq_vector_exec_seconds`,
///   `vector="local_timer"`
/// - `workqueue.exec.vmstat_update` → `latscope_workqueue_exec_seconds`,
///   `function="vmstat_update"`
/// - `deferred.exec.NET_RX.napi:eth0` → `latscope_deferred_exec_seconds`,
///   `context="NET_RX"`, `kind="napi"`, `source="eth0"` (the analysis
///   bounds the sources, so the series are bounded too)
/// - anything else → `latscope_<name>_seconds` (characters outside
///   `[A-Za-z0-9_]` become `_`) with `metric="<name>"`: always a valid
///   family name, and the label keeps two names that map to one family (or
///   to a known family's name) from ever making the same series.
pub fn prometheus_family(name: &str) -> (String, Vec<(&'static str, String)>) {
    if let Some(&(_, family, _)) = FIXED.iter().find(|(m, _, _)| *m == name) {
        return (family.to_string(), Vec::new());
    }
    if let Some(v) = name.strip_prefix(metric::SOFTIRQ_DELAY_PREFIX) {
        return (SOFTIRQ_DELAY.to_string(), vec![("vector", v.to_string())]);
    }
    if let Some(v) = name.strip_prefix(metric::SOFTIRQ_EXEC_PREFIX) {
        return (SOFTIRQ_EXEC.to_string(), vec![("vector", v.to_string())]);
    }
    if let Some(source) = name.strip_prefix(metric::IRQ_EXEC_PREFIX) {
        if let Some(v) = source.strip_prefix(VECTOR_SOURCE) {
            return (IRQ_VECTOR_EXEC.to_string(), vec![("vector", v.to_string())]);
        }
        // A line without a handler name is not a shape the analysis makes:
        // the fallback keeps it apart from `<N>:` with an empty name.
        if let Some((irq, handler)) = source.split_once(':') {
            return (
                IRQ_EXEC.to_string(),
                vec![("irq", irq.to_string()), ("handler", handler.to_string())],
            );
        }
    }
    if let Some(f) = name.strip_prefix(metric::WORKQUEUE_EXEC_PREFIX) {
        return (
            WORKQUEUE_EXEC.to_string(),
            vec![("function", f.to_string())],
        );
    }
    if let Some(d) = metric::deferred_name(name) {
        return (
            DEFERRED_EXEC.to_string(),
            vec![
                ("context", d.context.to_string()),
                ("kind", d.kind.to_string()),
                ("source", d.what.to_string()),
            ],
        );
    }
    let body: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    (
        format!("latscope_{body}_seconds"),
        vec![("metric", name.to_string())],
    )
}

/// The `# HELP` text of a family [`prometheus_family`] returns (a generic
/// one for the fallback families). Free of `\` and line feeds, so it needs
/// no escaping.
pub fn prometheus_help(family: &str) -> &'static str {
    FIXED
        .iter()
        .map(|&(_, f, h)| (f, h))
        .chain(PER_SOURCE)
        .find(|(f, _)| *f == family)
        .map_or(FALLBACK_HELP, |(_, h)| h)
}

/// A label value with `\`, `"` and line feeds escaped, as the text format
/// requires.
pub fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Seconds as a Prometheus float, from nanoseconds: exact decimal digits.
pub fn seconds(ns: u128) -> String {
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A series' labels, names and raw values, in print order.
type Labels = Vec<(&'static str, String)>;

/// The series of a family: labels → histogram. Borrowed unless two metrics
/// of one cell and CPU map to the same series, which are then merged (the
/// format allows a series once).
type Series<'a> = Vec<(Labels, Cow<'a, Histogram>)>;

/// The whole run as Prometheus text: families in name order, each with one
/// `# HELP` and `# TYPE ... histogram` and then all its series together,
/// in run order: the cumulative `_bucket{...,le="..."}` lines at
/// [`PROMETHEUS_BUCKETS_NS`] (in seconds) and `+Inf`, `_sum` (seconds) and
/// `_count`. Labels: `cell`, `probe`, `workload`, `cpu` (`all` for
/// system-wide metrics), then those of [`prometheus_family`]. Bucket counts
/// are at the histogram's resolution (0.1 %): a sample in the recording
/// bucket that holds a bound counts as at or below it.
pub fn prometheus_text(run: &RunResult) -> String {
    let mut families: BTreeMap<String, Series<'_>> = BTreeMap::new();
    // (family, labels) → position in its family's series
    let mut seen: HashMap<(String, Labels), usize> = HashMap::new();
    for cell in &run.cells {
        for m in &cell.metrics {
            let (family, source) = prometheus_family(&m.name);
            let mut labels = vec![
                ("cell", cell.meta.index.to_string()),
                ("probe", cell.meta.probe.clone()),
                ("workload", cell.meta.workload.clone()),
                ("cpu", cpu_label(m.cpu)),
            ];
            labels.extend(source);
            let series = families.entry(family.clone()).or_default();
            match seen.get(&(family.clone(), labels.clone())) {
                Some(&i) => series[i].1.to_mut().merge(&m.histogram),
                None => {
                    seen.insert((family, labels.clone()), series.len());
                    series.push((labels, Cow::Borrowed(&m.histogram)));
                }
            }
        }
    }
    let mut out = String::new();
    for (family, series) in &families {
        let _ = writeln!(out, "# HELP {family} {}", prometheus_help(family));
        let _ = writeln!(out, "# TYPE {family} histogram");
        for (labels, h) in series {
            let labels = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", label_value(v)))
                .collect::<Vec<_>>()
                .join(",");
            let total = h.count();
            for le_ns in PROMETHEUS_BUCKETS_NS {
                let at_or_below = total - h.count_above(le_ns);
                let _ = writeln!(
                    out,
                    "{family}_bucket{{{labels},le=\"{}\"}} {at_or_below}",
                    seconds(u128::from(le_ns))
                );
            }
            let _ = writeln!(out, "{family}_bucket{{{labels},le=\"+Inf\"}} {total}");
            let _ = writeln!(out, "{family}_sum{{{labels}}} {}", seconds(h.sum()));
            let _ = writeln!(out, "{family}_count{{{labels}}} {total}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (metric name, family, source labels).
    type Case = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );

    /// Every metric name the model defines, with a source where it takes one.
    const ALL: [Case; 23] = [
        ("timer.latency", "latscope_timer_latency_seconds", &[]),
        ("timer.interval", "latscope_timer_interval_seconds", &[]),
        ("timer.irq", "latscope_timer_irq_seconds", &[]),
        ("timer.sched", "latscope_timer_sched_seconds", &[]),
        ("timer.return", "latscope_timer_return_seconds", &[]),
        (
            "softirq.delay.NET_RX",
            "latscope_softirq_delay_seconds",
            &[("vector", "NET_RX")],
        ),
        (
            "softirq.exec.TIMER",
            "latscope_softirq_exec_seconds",
            &[("vector", "TIMER")],
        ),
        (
            "irq.exec.41:virtio3-rx",
            "latscope_irq_exec_seconds",
            &[("irq", "41"), ("handler", "virtio3-rx")],
        ),
        (
            "irq.exec.16:ahci[0000:00:17.0]",
            "latscope_irq_exec_seconds",
            &[("irq", "16"), ("handler", "ahci[0000:00:17.0]")],
        ),
        (
            "irq.exec.vector:local_timer",
            "latscope_irq_vector_exec_seconds",
            &[("vector", "local_timer")],
        ),
        ("nmi.exec", "latscope_nmi_exec_seconds", &[]),
        (
            "workqueue.exec.vmstat_update",
            "latscope_workqueue_exec_seconds",
            &[("function", "vmstat_update")],
        ),
        (
            "workqueue.exec.(other)",
            "latscope_workqueue_exec_seconds",
            &[("function", "(other)")],
        ),
        (
            "deferred.exec.NET_RX.napi:(no_device)",
            "latscope_deferred_exec_seconds",
            &[
                ("context", "NET_RX"),
                ("kind", "napi"),
                ("source", "(no_device)"),
            ],
        ),
        (
            "deferred.exec.hardirq.hrtimer:tick_nohz_handler",
            "latscope_deferred_exec_seconds",
            &[
                ("context", "hardirq"),
                ("kind", "hrtimer"),
                ("source", "tick_nohz_handler"),
            ],
        ),
        ("noise.gap", "latscope_noise_gap_seconds", &[]),
        ("udp.send", "latscope_udp_send_seconds", &[]),
        ("udp.send.sched", "latscope_udp_send_sched_seconds", &[]),
        ("udp.recv", "latscope_udp_recv_seconds", &[]),
        ("udp.path", "latscope_udp_path_seconds", &[]),
        ("udp.recv.deliver", "latscope_udp_recv_deliver_seconds", &[]),
        ("udp.recv.sched", "latscope_udp_recv_sched_seconds", &[]),
        ("udp.recv.return", "latscope_udp_recv_return_seconds", &[]),
    ];

    fn valid_family(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    #[test]
    fn every_metric_kind_maps_to_its_family_and_labels() {
        for (name, family, labels) in ALL {
            let (f, l) = prometheus_family(name);
            assert_eq!(f, family, "{name}");
            let l: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
            assert_eq!(l, labels, "{name}");
            assert_ne!(prometheus_help(&f), FALLBACK_HELP, "{name}: no HELP");
            assert!(valid_family(&f) && f.ends_with("_seconds"), "{f}");
        }
    }

    #[test]
    fn unknown_names_fall_back_to_a_valid_family_that_keeps_the_name() {
        for (name, family) in [
            ("sched.wakeup", "latscope_sched_wakeup_seconds"),
            ("9 lives/µs", "latscope_9_lives__s_seconds"),
            ("irq.exec.41", "latscope_irq_exec_41_seconds"),
            ("", "latscope__seconds"),
            // a name that spells a known family still stays apart by label
            ("timer_latency", "latscope_timer_latency_seconds"),
        ] {
            let (f, l) = prometheus_family(name);
            assert_eq!(f, family);
            assert!(valid_family(&f), "{f}");
            assert_eq!(l, vec![("metric", name.to_string())]);
        }
        assert_eq!(
            prometheus_help("latscope_sched_wakeup_seconds"),
            FALLBACK_HELP
        );
    }

    #[test]
    fn buckets_are_r10_from_1_us_to_100_ms() {
        let b = PROMETHEUS_BUCKETS_NS;
        assert_eq!(
            b[..10],
            [1000, 1250, 1600, 2000, 2500, 3200, 4000, 5000, 6300, 8000]
        );
        assert_eq!(b[10], 10_000);
        assert_eq!(b[49], 80_000_000);
        assert_eq!(b[50], 100_000_000);
        for w in b.windows(2) {
            let ratio = w[1] as f64 / w[0] as f64;
            assert!((1.2..=1.3).contains(&ratio), "{} → {}", w[0], w[1]);
        }
        // the 1-2-5 thresholds are bounds
        for us in [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10_000, 50_000] {
            assert!(b.contains(&(us * 1000)), "{us} µs");
        }
    }

    #[test]
    fn label_values_and_seconds_are_written_as_the_format_wants() {
        assert_eq!(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(seconds(1_250), "0.00000125");
        assert_eq!(seconds(100_000_000), "0.1");
        assert_eq!(seconds(2_000_000_000), "2");
    }
}
