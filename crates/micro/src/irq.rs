//! Interrupts and softirqs during a benchmark, from `/proc/interrupts` and
//! `/proc/softirqs`: read before and after, per CPU, and told apart the
//! way Chen et al. report them (§3.2's hardware-interrupt counter, "non-clock
//! interrupts" in their tables): the local timer tick is the clock; every
//! other line counts as non-timer.
//!
//! Parsing is pure (the text in, counts out) so that it is tested on real
//! files; reading the files is the caller's.

use serde::Serialize;

/// Why a file could not be read as counts.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum IrqError {
    #[error("no CPU header line")]
    NoHeader,
    #[error("line {line}: {why}")]
    BadLine { line: usize, why: String },
}

/// The counts of one file, by line (`24`, `LOC`, `TIMER`, …) and CPU.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct IrqTable {
    /// The CPU numbers of the columns, in order.
    pub cpus: Vec<u32>,
    /// `(line name, description, count per column)`; a line with fewer
    /// columns than CPUs (`ERR`, `MIS`) counts on none of them.
    pub lines: Vec<(String, String, Vec<u64>)>,
}

/// Interrupts on some CPUs between two readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
pub struct IrqDelta {
    /// Every interrupt line.
    pub total: u64,
    /// All but the clock: the local timer tick (`LOC`) and any line whose
    /// description names a timer.
    pub non_timer: u64,
}

/// Whether a line of `/proc/interrupts` is the clock.
fn is_timer(name: &str, description: &str) -> bool {
    name == "LOC" || description.to_ascii_lowercase().contains("timer")
}

/// Parses `/proc/interrupts` or `/proc/softirqs`: a header of `CPUn`
/// columns, then `NAME: count count … [description]`.
pub fn parse(text: &str) -> Result<IrqTable, IrqError> {
    let mut lines = text.lines().enumerate();
    let cpus: Vec<u32> = loop {
        let Some((_, l)) = lines.next() else {
            return Err(IrqError::NoHeader);
        };
        if l.trim().is_empty() {
            continue;
        }
        let cpus: Option<Vec<u32>> = l
            .split_whitespace()
            .map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
            .collect();
        match cpus {
            Some(c) if !c.is_empty() => break c,
            _ => return Err(IrqError::NoHeader),
        }
    };
    let mut table = IrqTable {
        cpus,
        lines: Vec::new(),
    };
    for (i, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        let (name, rest) = l.split_once(':').ok_or_else(|| IrqError::BadLine {
            line: i + 1,
            why: "no ':'".to_string(),
        })?;
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::new();
        while counts.len() < table.cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        if counts.len() < table.cpus.len() {
            // `ERR: 0` and `MIS: 0` are system-wide; they count on no CPU.
            counts.clear();
        }
        let description = words.collect::<Vec<_>>().join(" ");
        table
            .lines
            .push((name.trim().to_string(), description, counts));
    }
    Ok(table)
}

impl IrqTable {
    /// The sum of line `name` over `cpus` (all when empty); 0 if absent.
    pub fn line_on(&self, name: &str, cpus: &[u32]) -> u64 {
        self.lines
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, _, c)| self.sum_on(c, cpus))
            .sum()
    }

    fn sum_on(&self, counts: &[u64], cpus: &[u32]) -> u64 {
        counts
            .iter()
            .zip(&self.cpus)
            .filter(|(_, cpu)| cpus.is_empty() || cpus.contains(cpu))
            .map(|(n, _)| *n)
            .sum()
    }

    /// `(total, non-timer)` over `cpus` (all when empty).
    fn totals(&self, cpus: &[u32]) -> (u64, u64) {
        let mut total = 0;
        let mut non_timer = 0;
        for (name, description, counts) in &self.lines {
            let n = self.sum_on(counts, cpus);
            total += n;
            if !is_timer(name, description) {
                non_timer += n;
            }
        }
        (total, non_timer)
    }
}

/// The interrupts on `cpus` (all when empty) between `before` and `after`
/// (`/proc/interrupts` read twice). A counter that went backwards (a line
/// that disappeared, a CPU taken offline) counts as 0.
pub fn delta(before: &IrqTable, after: &IrqTable, cpus: &[u32]) -> IrqDelta {
    let (t0, n0) = before.totals(cpus);
    let (t1, n1) = after.totals(cpus);
    IrqDelta {
        total: t1.saturating_sub(t0),
        non_timer: n1.saturating_sub(n0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shortened `/proc/interrupts` of the development VM (kernel 6.18,
    /// two vCPUs).
    const INTERRUPTS: &str = "           CPU0       CPU1       
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0    1797776 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 41:       8311          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
NMI:          0          0   Non-maskable interrupts
LOC:   34654389   40047679   Local timer interrupts
RES:    2758829    2419352   Rescheduling interrupts
CAL:    3695414    3288166   Function call interrupts
ERR:          0
MIS:          0
";

    const SOFTIRQS: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:     675875     936445
      NET_RX:   55087057   56177699
";

    #[test]
    fn the_vm_files_parse() {
        let t = parse(INTERRUPTS).unwrap();
        assert_eq!(t.cpus, vec![0, 1]);
        assert_eq!(t.lines.len(), 9);
        assert_eq!(t.line_on("LOC", &[1]), 40_047_679);
        assert_eq!(t.line_on("36", &[]), 1_797_776);
        assert_eq!(t.line_on("ERR", &[]), 0);
        assert_eq!(t.lines[1].1, "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0");
        let s = parse(SOFTIRQS).unwrap();
        assert_eq!(s.line_on("NET_RX", &[0]), 55_087_057);
        assert_eq!(s.line_on("TIMER", &[]), 675_875 + 936_445);
    }

    #[test]
    fn the_timer_tick_is_not_a_non_timer_interrupt() {
        let before = parse(INTERRUPTS).unwrap();
        let after_text = INTERRUPTS
            .replace("34654389", "34654399")
            .replace("2758829", "2758832")
            .replace(" 8311 ", " 8313 ");
        let after = parse(&after_text).unwrap();
        assert_eq!(
            delta(&before, &after, &[0]),
            IrqDelta {
                total: 15,
                non_timer: 5
            }
        );
        assert_eq!(delta(&before, &after, &[1]), IrqDelta::default());
        // Backwards counts are 0, not a wrap.
        assert_eq!(delta(&after, &before, &[0]), IrqDelta::default());
        assert!(is_timer("0", "IO-APIC 2-edge timer"));
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(parse(""), Err(IrqError::NoHeader));
        assert_eq!(parse("hello world\n"), Err(IrqError::NoHeader));
        assert!(matches!(
            parse("CPU0\n no colon here\n"),
            Err(IrqError::BadLine { line: 2, .. })
        ));
    }
}
