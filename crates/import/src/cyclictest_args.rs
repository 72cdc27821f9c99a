//! cyclictest's command line as its JSON file records it, read the way
//! cyclictest 2.x reads it (getopt_long with
//! `a::A::b:c:d:D:h:H:i:l:MNo:p:mqrRsSt::uvD:x`): the options that say what
//! was measured (interval, priority and policy, histogram size, timer mode,
//! duration) and nothing else.

use latscope_model::{Nanos, Policy, TimerApiName};

/// What the command line says about the measurement.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CyclictestArgs {
    /// `-i`, µs (cyclictest's default: 1000).
    pub interval_us: Option<u64>,
    /// `-p`.
    pub priority: Option<u32>,
    /// `--policy`, as cyclictest names it.
    pub policy: Option<String>,
    /// `-h`/`-H`: histogram buckets 0 .. N-1.
    pub histogram: Option<u64>,
    /// `-N`: values in nanoseconds.
    pub nsecs: bool,
    /// `-r`: relative sleeps.
    pub relative: bool,
    /// `-x`: POSIX interval timers.
    pub posix_timers: bool,
    /// `-s`: the system-call modes (nanosleep, or setitimer with `-x`).
    pub system: bool,
    /// `--priospread`: each thread one priority below the previous.
    pub priospread: bool,
    /// `-D`.
    pub duration: Option<Nanos>,
}

/// Short options that take an argument (attached or the next word).
const SHORT_REQUIRED: &str = "bcdDhHilop";
/// Short options whose argument is optional (attached only, or a next
/// word that is a number).
const SHORT_OPTIONAL: &str = "aAt";
/// Long options that take an argument, and those whose argument is
/// optional.
const LONG_REQUIRED: [&str; 18] = [
    "breaktrace",
    "clock",
    "distance",
    "duration",
    "latency",
    "fifo",
    "histogram",
    "histofall",
    "histfile",
    "interval",
    "json",
    "loops",
    "mainaffinity",
    "oscope",
    "priority",
    "policy",
    "spike",
    "spike-nodes",
];
const LONG_OPTIONAL: [&str; 4] = ["affinity", "aligned", "secaligned", "threads"];
const LONG_FLAGS: [&str; 18] = [
    "laptop",
    "mlockall",
    "refresh_on_max",
    "nsecs",
    "quiet",
    "priospread",
    "relative",
    "resolution",
    "system",
    "smi",
    "smp",
    "tracemark",
    "unbuffered",
    "verbose",
    "dbg_cyclictest",
    "help",
    "posix_timers",
    "default-system",
];

/// A long option by its name or a prefix only it has (as getopt_long
/// accepts).
fn long_name(given: &str) -> Option<&'static str> {
    let all = LONG_REQUIRED
        .iter()
        .chain(LONG_OPTIONAL.iter())
        .chain(LONG_FLAGS.iter());
    if let Some(exact) = all.clone().find(|n| **n == given) {
        return Some(exact);
    }
    let mut matches = all.filter(|n| n.starts_with(given));
    match (matches.next(), matches.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// cyclictest's `-D` (`parse_time_string`): a number with an optional
/// `s`, `m`, `h` or `d`; seconds without one.
fn duration(text: &str) -> Option<Nanos> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last()? {
        (i, 's' | 'S') => (&t[..i], 1),
        (i, 'm' | 'M') => (&t[..i], 60),
        (i, 'h' | 'H') => (&t[..i], 3600),
        (i, 'd' | 'D') => (&t[..i], 86_400),
        _ => (t, 1),
    };
    let secs: u64 = num.parse().ok()?;
    Some(Nanos::from_secs(secs.checked_mul(mult)?))
}

impl CyclictestArgs {
    /// Reads the words after the program's name. Unknown options are
    /// skipped (a newer cyclictest may have more); a value that is not a
    /// number where one is due is an error naming it.
    pub fn parse(words: &[&str]) -> Result<CyclictestArgs, String> {
        let mut a = CyclictestArgs::default();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            i += 1;
            if let Some(long) = w.strip_prefix("--") {
                if long.is_empty() {
                    break;
                }
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                let Some(name) = long_name(name) else {
                    continue;
                };
                let value = if LONG_REQUIRED.contains(&name) {
                    match inline {
                        Some(v) => Some(v),
                        None => {
                            i += 1;
                            words.get(i - 1).copied()
                        }
                    }
                } else {
                    inline
                };
                a.apply_long(name, value)?;
            } else if let Some(shorts) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
                for (pos, c) in shorts.char_indices() {
                    let rest = &shorts[pos + c.len_utf8()..];
                    if SHORT_REQUIRED.contains(c) {
                        let value = if rest.is_empty() {
                            i += 1;
                            words.get(i - 1).copied()
                        } else {
                            Some(rest)
                        };
                        a.apply_short(c, value)?;
                        break;
                    }
                    if SHORT_OPTIONAL.contains(c) {
                        // An attached argument, or none (a following number
                        // is cyclictest's business: nothing here needs it).
                        break;
                    }
                    a.apply_short(c, None)?;
                }
            }
        }
        Ok(a)
    }

    fn apply_short(&mut self, c: char, value: Option<&str>) -> Result<(), String> {
        let long = match c {
            'D' => "duration",
            'h' | 'H' => "histogram",
            'i' => "interval",
            'p' => "priority",
            'N' => "nsecs",
            'r' => "relative",
            's' => "system",
            'x' => "posix_timers",
            _ => return Ok(()),
        };
        self.apply_long(long, value)
    }

    fn apply_long(&mut self, name: &str, value: Option<&str>) -> Result<(), String> {
        let number = |what: &str| -> Result<u64, String> {
            value
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("--{what} {} is not a number", value.unwrap_or("")))
        };
        match name {
            "interval" => self.interval_us = Some(number(name)?),
            "priority" => {
                let p = number(name)?;
                self.priority = Some(u32::try_from(p).map_err(|_| format!("--priority {p}"))?);
            }
            "policy" => self.policy = value.map(str::to_string),
            "histogram" | "histofall" => self.histogram = Some(number(name)?),
            "nsecs" => self.nsecs = true,
            "relative" => self.relative = true,
            "posix_timers" => self.posix_timers = true,
            "system" => self.system = true,
            "priospread" => self.priospread = true,
            "duration" => {
                let v = value.unwrap_or("");
                self.duration =
                    Some(duration(v).ok_or_else(|| format!("--duration {v} is not a duration"))?);
            }
            _ => {}
        }
        Ok(())
    }

    /// The policy and priority cyclictest applied (its `process_options`):
    /// a priority without a policy is FIFO, a real-time policy without a
    /// priority runs at `threads + 1`, `batch` and `idle` are other
    /// policies latscope records as `other`. The `String` says what was
    /// assumed or changed, when anything was.
    pub fn scheduling(&self, threads: usize) -> (Policy, u32, Option<String>) {
        let named = self.policy.as_deref().map(|p| match p {
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            _ => Policy::Other,
        });
        let priority = self.priority.unwrap_or(0);
        let mut note = None;
        let policy = match named {
            Some(p @ (Policy::Fifo | Policy::Rr)) => p,
            // Not parsed from cyclictest's options (recorded as other).
            Some(p @ (Policy::Batch | Policy::Idle | Policy::Deadline)) => p,
            Some(Policy::Other) if priority > 0 => Policy::Fifo,
            Some(Policy::Other) => {
                if let Some(p) = self
                    .policy
                    .as_deref()
                    .filter(|p| *p != "other" && *p != "normal")
                {
                    note = Some(format!(
                        "cyclictest ran with --policy={p}; latscope records it as other"
                    ));
                }
                Policy::Other
            }
            None if priority > 0 => Policy::Fifo,
            None => Policy::Other,
        };
        let priority = match policy {
            Policy::Other => 0,
            _ if priority == 0 => u32::try_from(threads + 1).unwrap_or(u32::MAX),
            _ => priority,
        };
        if self.priospread {
            note = Some(format!(
                "cyclictest ran with --priospread: thread N at priority {priority} - N; recorded as {priority}, the first thread's"
            ));
        }
        (policy, priority, note)
    }

    /// The timer service latscope calls cyclictest's mode by, and a note
    /// when the match is not exact.
    pub fn timer_api(&self) -> (TimerApiName, Option<String>) {
        match (self.posix_timers, self.system, self.relative) {
            (true, true, _) => (
                TimerApiName::PosixTimer,
                Some("cyclictest ran with -s -x (setitimer): recorded as posix-timer".into()),
            ),
            (true, false, _) => (TimerApiName::PosixTimer, None),
            (false, true, _) => (
                TimerApiName::Nanosleep,
                Some("cyclictest ran with -s (the nanosleep system call): recorded as nanosleep".into()),
            ),
            (false, false, true) => (
                TimerApiName::Nanosleep,
                Some("cyclictest ran with -r (relative clock_nanosleep): recorded as latscope's relative timer service, nanosleep".into()),
            ),
            (false, false, false) => (TimerApiName::ClockNanosleep, None),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(line: &str) -> CyclictestArgs {
        let words: Vec<&str> = line.split_whitespace().collect();
        CyclictestArgs::parse(&words[1..]).unwrap()
    }

    #[test]
    fn reads_short_long_attached_and_grouped_options() {
        let a = parse("cyclictest -D 2 -q -h 100 --json=/tmp/x.json -m -t -p 95 -i 1000");
        assert_eq!(a.duration, Some(Nanos::from_secs(2)));
        assert_eq!(a.histogram, Some(100));
        assert_eq!(a.priority, Some(95));
        assert_eq!(a.interval_us, Some(1000));
        let a = parse("cyclictest -qmNp80 -i250 -H50 --duration=1m --policy rr -a1 -t2");
        assert!(a.nsecs);
        assert_eq!(a.priority, Some(80));
        assert_eq!(a.interval_us, Some(250));
        assert_eq!(a.histogram, Some(50));
        assert_eq!(a.duration, Some(Nanos::from_secs(60)));
        assert_eq!(a.policy.as_deref(), Some("rr"));
        let a = parse("cyclictest --inter=500 --prior=70 --histo 20 --unknown -r -x --posix");
        assert_eq!(a.interval_us, Some(500));
        assert_eq!(a.priority, Some(70));
        // --histo is a prefix of --histogram and --histofall: ambiguous
        assert_eq!(a.histogram, None);
        assert!(a.relative && a.posix_timers);
    }

    #[test]
    fn bad_numbers_are_errors() {
        let e = CyclictestArgs::parse(&["-i", "fast"]).unwrap_err();
        assert_eq!(e, "--interval fast is not a number");
        assert!(CyclictestArgs::parse(&["-D", "2x"]).is_err());
        assert!(CyclictestArgs::parse(&["-p"]).is_err());
    }

    #[test]
    fn scheduling_follows_cyclictest() {
        assert_eq!(parse("c -p 95").scheduling(2).0, Policy::Fifo);
        assert_eq!(parse("c").scheduling(2), (Policy::Other, 0, None));
        assert_eq!(parse("c --policy=fifo").scheduling(2).1, 3);
        let (p, n, note) = parse("c --policy=batch").scheduling(1);
        assert_eq!((p, n), (Policy::Other, 0));
        assert!(note.unwrap().contains("batch"));
        assert_eq!(
            parse("c --policy=other -p 50").scheduling(1).0,
            Policy::Fifo
        );
        assert_eq!(parse("c -r").timer_api().0, TimerApiName::Nanosleep);
        assert_eq!(parse("c -x").timer_api(), (TimerApiName::PosixTimer, None));
        assert_eq!(parse("c").timer_api(), (TimerApiName::ClockNanosleep, None));
    }
}
