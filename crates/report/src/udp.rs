//! The UDP probe's counts: how many datagrams went out and came back,
//! which were lost, reordered or duplicated, and which lacked a kernel time
//! stamp. The latencies themselves are the ordinary `udp.*` metrics, shown
//! by the generic tables; this module renders the counts beside them, so
//! that a reader sees what the histograms leave out.

use latscope_model::UdpStats;
use latscope_stats::CellResult;

/// `CellMeta::probe` of a UDP cell.
pub(crate) const UDP_PROBE: &str = "udp";

/// Lost datagrams as a share of those sent, percent; `None` when nothing
/// was sent (there is no honest share of nothing).
pub(crate) fn loss_percent(s: &UdpStats) -> Option<f64> {
    (s.sent > 0).then(|| s.loss_percent())
}

fn percent_text(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_string(), |p| format!("{p:.4}%"))
}

/// The header line: the path, the two CPUs, the datagram and its period.
pub(crate) fn udp_title(s: &UdpStats) -> String {
    format!(
        "udp over {}: sender CPU {} → receiver CPU {}, {}-byte payload every {}",
        s.path, s.sender_cpu, s.receiver_cpu, s.payload_bytes, s.period_ns
    )
}

/// The anomalies that happened, one `label count` each; empty when none did.
fn anomalies(s: &UdpStats) -> Vec<String> {
    let mut out = Vec::new();
    if s.reordered > 0 {
        out.push(format!("reordered {}", s.reordered));
    }
    if s.duplicates > 0 {
        out.push(format!("duplicates {}", s.duplicates));
    }
    if s.send_errors > 0 {
        out.push(format!(
            "send errors {} (never sent, not counted as lost)",
            s.send_errors
        ));
    }
    if s.overruns > 0 || s.skipped_sends > 0 {
        out.push(format!(
            "overruns {} ({} sends skipped)",
            s.overruns, s.skipped_sends
        ));
    }
    out
}

/// What a UDP cell shows after its metric tables: the path and CPUs, the
/// datagrams sent, received and lost (always), the other anomalies and
/// missing time stamps (when there are any), and the clock check. Empty for
/// a cell of another probe.
pub(crate) fn udp_block(cell: &CellResult) -> String {
    let Some(s) = &cell.udp else {
        if cell.meta.probe == UDP_PROBE {
            return "\nudp: no counts were stored for this cell\n".to_string();
        }
        return String::new();
    };
    let mut out = format!("\n{}\n", udp_title(s));
    out.push_str(&format!(
        "sent {} · received {} · lost {} ({})\n",
        s.sent,
        s.received,
        s.lost,
        percent_text(loss_percent(s))
    ));
    let anomalies = anomalies(s);
    if anomalies.is_empty() {
        out.push_str("no reordering, duplicates, send errors or overruns\n");
    } else {
        out.push_str(&anomalies.join(" · "));
        out.push('\n');
    }
    if s.missing_tx_sched > 0 || s.missing_tx_software > 0 || s.missing_rx_software > 0 {
        out.push_str(&format!(
            "missing time stamps (left out of that stage's histogram): tx sched {} · tx software {} · rx software {}\n",
            s.missing_tx_sched, s.missing_tx_software, s.missing_rx_software
        ));
    }
    if s.inconsistent > 0 {
        out.push_str(&format!(
            "warning: path shorter than send: {} of {} checked (a consistent clock cannot give this: did it step?)\n",
            s.inconsistent, s.checked
        ));
    } else if s.checked > 0 {
        out.push_str(&format!(
            "path shorter than send: 0 of {} checked\n",
            s.checked
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, Nanos, UdpPath};

    fn stats() -> UdpStats {
        UdpStats {
            path: UdpPath::Loopback,
            sender_cpu: CpuId(0),
            receiver_cpu: CpuId(1),
            payload_bytes: 64,
            period_ns: Nanos::from_millis(10),
            sent: 1_000,
            received: 1_000,
            checked: 1_000,
            ..UdpStats::default()
        }
    }

    #[test]
    fn a_clean_cell_has_no_anomalies_and_a_title() {
        let s = stats();
        assert!(anomalies(&s).is_empty());
        assert_eq!(loss_percent(&s), Some(0.0));
        assert_eq!(
            udp_title(&s),
            "udp over loopback: sender CPU 0 → receiver CPU 1, 64-byte payload every 10.0ms"
        );
    }

    #[test]
    fn loss_needs_something_sent() {
        let s = UdpStats::default();
        assert_eq!(loss_percent(&s), None);
        assert_eq!(percent_text(loss_percent(&s)), "-");
        let s = UdpStats {
            sent: 3,
            lost: 1,
            ..UdpStats::default()
        };
        assert_eq!(percent_text(loss_percent(&s)), "33.3333%");
    }

    #[test]
    fn only_anomalies_that_happened_are_listed() {
        let s = UdpStats {
            duplicates: 2,
            skipped_sends: 1,
            ..stats()
        };
        assert_eq!(
            anomalies(&s),
            ["duplicates 2", "overruns 0 (1 sends skipped)"]
        );
    }
}
