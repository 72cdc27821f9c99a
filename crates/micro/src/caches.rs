//! What the kernel says about the CPU's caches
//! (`/sys/devices/system/cpu/cpuN/cache/index*/{level,type,size}`), to set
//! beside the levels the memory curve shows (`latscope_stats::micro::levels`) and to size
//! the curve (to at least four times the last-level cache).

use serde::Serialize;

/// One cache of a CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cache {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub bytes: u64,
}

/// A sysfs size: `32K`, `8192K`, `16M`, or plain bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// The caches of `cpu` as sysfs lists them, in index order; empty when
/// sysfs has none (some VMs and containers).
pub fn read_caches(cpu: u32) -> Vec<Cache> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
    let mut out = Vec::new();
    for i in 0.. {
        let base = format!("{dir}/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{base}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            break;
        };
        if let (Ok(level), Some(bytes)) = (level.trim().parse(), parse_size(&size)) {
            out.push(Cache {
                level,
                kind: kind.trim().to_string(),
                bytes,
            });
        }
    }
    out
}

/// The data caches a load goes through, by level: the data or unified
/// cache of each level, smallest level first.
pub fn data_levels(caches: &[Cache]) -> Vec<Cache> {
    let mut v: Vec<Cache> = caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .cloned()
        .collect();
    v.sort_by_key(|c| c.level);
    v.dedup_by_key(|c| c.level);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("8192K"), Some(8 << 20));
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("12Q"), None);
    }

    /// The development VM: L1d 32K, L1i 64K, L2 512K, L3 8M.
    #[test]
    fn data_levels_skip_the_instruction_cache() {
        let c = |level, kind: &str, bytes| Cache {
            level,
            kind: kind.into(),
            bytes,
        };
        let all = vec![
            c(1, "Data", 32 << 10),
            c(1, "Instruction", 64 << 10),
            c(2, "Unified", 512 << 10),
            c(3, "Unified", 8 << 20),
        ];
        let d = data_levels(&all);
        assert_eq!(
            d.iter().map(|c| c.bytes).collect::<Vec<_>>(),
            vec![32 << 10, 512 << 10, 8 << 20]
        );
    }

    #[test]
    fn this_machine_lists_its_caches_or_none() {
        let c = read_caches(0);
        for cache in &c {
            assert!(cache.level >= 1 && cache.bytes > 0, "{cache:?}");
        }
    }
}
