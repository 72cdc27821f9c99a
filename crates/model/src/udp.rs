//! What the UDP probe counted beside its histograms: how many datagrams
//! went out and came back, which were lost, reordered or duplicated, and
//! which lacked a kernel time stamp. Nothing is dropped silently: every
//! datagram that does not enter a histogram is in one of these counts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{CpuId, Nanos};

/// The way the datagrams travel between the two sockets.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum UdpPath {
    #[default]
    /// 127.0.0.1 in latscope's own network namespace.
    ///
    /// The loopback driver hands each packet straight to the receive
    /// backlog.
    Loopback,
    /// A veth pair between two private network namespaces (needs root).
    ///
    /// latscope creates them for the run: the packet goes through a
    /// driver's transmit routine, the receive backlog or NAPI, and the
    /// `NET_RX` softirq, like a real NIC.
    Veth,
}

impl UdpPath {
    pub fn as_str(self) -> &'static str {
        match self {
            UdpPath::Loopback => "loopback",
            UdpPath::Veth => "veth",
        }
    }
}

impl fmt::Display for UdpPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for UdpPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "loopback" => Ok(UdpPath::Loopback),
            "veth" => Ok(UdpPath::Veth),
            other => Err(format!("unknown path '{other}': expected loopback or veth")),
        }
    }
}

/// The UDP probe's counts for one cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpStats {
    pub path: UdpPath,
    pub sender_cpu: CpuId,
    pub receiver_cpu: CpuId,
    /// UDP payload bytes per datagram.
    pub payload_bytes: u32,
    pub period_ns: Nanos,
    /// Datagrams the kernel accepted (`sendto` succeeded).
    pub sent: u64,
    /// `sendto` calls that failed (e.g. ENOBUFS under a flood); their
    /// sequence numbers are never received and are not counted as lost.
    pub send_errors: u64,
    /// Distinct datagrams the receiver got.
    pub received: u64,
    /// Sent but never received by the end of the run (after a grace period).
    pub lost: u64,
    /// Received after a datagram with a higher sequence number.
    pub reordered: u64,
    /// Received a second time.
    pub duplicates: u64,
    /// Sender wake-ups later than the next send time: those periods' sends
    /// were skipped, never sent late in a burst.
    pub overruns: u64,
    pub skipped_sends: u64,
    /// Sent datagrams without a `TX_SCHED` (before the qdisc) time stamp.
    pub missing_tx_sched: u64,
    /// Sent datagrams without a `TX_SOFTWARE` (driver) time stamp.
    pub missing_tx_software: u64,
    /// Received datagrams without an `RX_SOFTWARE` time stamp.
    pub missing_rx_software: u64,
    /// Datagrams whose `udp.send` and `udp.path` were both known and
    /// compared, and how many of them had a path shorter than their send
    /// (which a consistent clock cannot give: a clock step, say).
    pub checked: u64,
    pub inconsistent: u64,
}

impl UdpStats {
    /// Lost datagrams as a share of those sent, percent.
    pub fn loss_percent(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        100.0 * self.lost as f64 / self.sent as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_names_round_trip() {
        for p in [UdpPath::Loopback, UdpPath::Veth] {
            assert_eq!(p.as_str().parse::<UdpPath>(), Ok(p));
        }
        assert!("eth0"
            .parse::<UdpPath>()
            .unwrap_err()
            .contains("loopback or veth"));
    }

    /// The command line's value names are the stored names.
    #[cfg(feature = "clap")]
    #[test]
    fn clap_names_are_the_stored_names() {
        use clap::ValueEnum;
        for p in UdpPath::value_variants() {
            assert_eq!(p.to_possible_value().unwrap().get_name(), p.as_str());
        }
        for p in crate::Policy::value_variants() {
            assert_eq!(p.to_possible_value().unwrap().get_name(), p.as_str());
        }
    }

    #[test]
    fn loss_is_a_share_of_what_was_sent() {
        let s = UdpStats {
            sent: 200,
            lost: 3,
            ..UdpStats::default()
        };
        assert!((s.loss_percent() - 1.5).abs() < 1e-9);
        assert_eq!(UdpStats::default().loss_percent(), 0.0);
    }
}
