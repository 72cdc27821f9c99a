use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A logical CPU number, as the kernel numbers them.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct CpuId(pub u32);

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An ordered set of CPUs, written the kernel's way: `0-3,6,8-9`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSet(BTreeSet<CpuId>);

/// The largest CPU number accepted; the kernel's own limit (NR_CPUS) is 8192.
const MAX_CPU: u32 = 8191;

impl CpuSet {
    pub fn new() -> CpuSet {
        CpuSet(BTreeSet::new())
    }

    /// Parses a kernel-style CPU list (`0`, `0,1`, `0-3`, `0-3,6`).
    pub fn parse(text: &str) -> Result<CpuSet, CpuSetError> {
        let err = || CpuSetError::Malformed(text.to_string());
        let mut set = BTreeSet::new();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(err());
        }
        for part in trimmed.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_cpu(a, text)?, parse_cpu(b, text)?),
                None => {
                    let c = parse_cpu(part, text)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(err());
            }
            for c in lo..=hi {
                set.insert(CpuId(c));
            }
        }
        Ok(CpuSet(set))
    }

    pub fn insert(&mut self, cpu: CpuId) {
        self.0.insert(cpu);
    }
    pub fn contains(&self, cpu: CpuId) -> bool {
        self.0.contains(&cpu)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.0.iter().copied()
    }
}

impl FromIterator<CpuId> for CpuSet {
    fn from_iter<T: IntoIterator<Item = CpuId>>(iter: T) -> Self {
        CpuSet(iter.into_iter().collect())
    }
}

fn parse_cpu(s: &str, whole: &str) -> Result<u32, CpuSetError> {
    let n: u32 = s
        .trim()
        .parse()
        .map_err(|_| CpuSetError::Malformed(whole.to_string()))?;
    if n > MAX_CPU {
        return Err(CpuSetError::Malformed(whole.to_string()));
    }
    Ok(n)
}

/// Compact kernel-style text: consecutive CPUs collapse into ranges.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpus: Vec<u32> = self.0.iter().map(|c| c.0).collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < cpus.len() {
            let start = cpus[i];
            let mut end = start;
            while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
                i += 1;
                end = cpus[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    #[error("invalid CPU list '{0}': expected e.g. 0,1 or 0-3")]
    Malformed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        let s = CpuSet::parse("0-3,6, 8-9").unwrap();
        let v: Vec<u32> = s.iter().map(|c| c.0).collect();
        assert_eq!(v, vec![0, 1, 2, 3, 6, 8, 9]);
        assert_eq!(s.to_string(), "0-3,6,8-9");
        assert_eq!(CpuSet::parse("1").unwrap().to_string(), "1");
        assert_eq!(CpuSet::parse("1,0,1").unwrap().to_string(), "0-1");
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "a", "3-1", "-1", "1-", "0,,1", "99999", "1.5"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad} should fail");
        }
    }
}
