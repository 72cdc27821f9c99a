//! Where the BPF programs read a CPU's steal time (timer.bpf.c,
//! `steal_on`/`steal_delta`): found in the kernel's BTF.
//!
//! A KVM guest's paravirtual steal clock is the per-CPU variable
//! `steal_time` (`struct kvm_steal_time`, its first field `steal`: ns the
//! host kept this vCPU from running, written by the host at each vCPU
//! entry). The kernel's own per-CPU accounting, `kernel_cpustat`
//! (`cpustat[CPUTIME_STEAL]`), sums what any paravirtual steal clock
//! reported, but only at each tick. Both are per-CPU variables listed, with
//! their offsets in the per-CPU area, in BTF's `.data..percpu` section. The
//! programs reach a CPU's per-CPU area through `hrtimer_bases` (a watched
//! thread's hrtimer points at its CPU's), so user space hands them the
//! distance from `hrtimer_bases` to the counter.
//!
//! Typed ksyms would be the direct way; aya (0.13) does not resolve them,
//! and the kernel finds a typed ksym's address through kallsyms, which
//! lists no data symbols without `CONFIG_KALLSYMS_ALL`.

/// Which counter the programs read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StealCounter {
    /// KVM's paravirtual steal clock (`steal_time.steal`), updated by the
    /// host at every vCPU entry: exact to the entry.
    StealClock,
    /// `kernel_cpustat.cpustat[CPUTIME_STEAL]`: the same steal, taken into
    /// the kernel's accounting at each tick (tick-granular).
    Cpustat,
}

/// The counter and its distance from `hrtimer_bases` in the per-CPU area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StealLocation {
    pub counter: StealCounter,
    pub delta: i64,
}

const BTF_MAGIC: u16 = 0xeb9f;
const KIND_ENUM: u32 = 6;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const PERCPU_SECTION: &str = ".data..percpu";

/// The steal counter in `btf` (the bytes of `/sys/kernel/btf/vmlinux`):
/// the steal clock when the kernel has it, else `kernel_cpustat`; `None`
/// when neither (or `hrtimer_bases`) is there, or the BTF does not parse.
pub fn locate(btf: &[u8]) -> Option<StealLocation> {
    let t = Types::parse(btf)?;
    let base = t.percpu_offset("hrtimer_bases")?;
    if let Some(off) = t.percpu_offset("steal_time") {
        // `steal` is the first field of struct kvm_steal_time: the
        // hypervisor's ABI (MSR_KVM_STEAL_TIME), fixed.
        return Some(StealLocation {
            counter: StealCounter::StealClock,
            delta: off - base,
        });
    }
    let off = t.percpu_offset("kernel_cpustat")?;
    // cpustat[] is struct kernel_cpustat's first (and only) field.
    let index = t.enum_value("CPUTIME_STEAL")?;
    Some(StealLocation {
        counter: StealCounter::Cpustat,
        delta: off + index * 8 - base,
    })
}

/// The parts of BTF this needs: per-CPU variables' offsets and enum values.
struct Types<'a> {
    strings: &'a [u8],
    /// (name offset, offset in the per-CPU area) of each per-CPU VAR.
    percpu: Vec<(u32, i64)>,
    /// (name offset, value) of every enum member.
    enums: Vec<(u32, i64)>,
}

impl<'a> Types<'a> {
    fn parse(b: &'a [u8]) -> Option<Types<'a>> {
        let u16_at = |i: usize| Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?));
        let u32_at = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
        if u16_at(0)? != BTF_MAGIC {
            return None;
        }
        let hdr = u32_at(4)? as usize;
        let (type_off, type_len) = (u32_at(8)? as usize, u32_at(12)? as usize);
        let (str_off, str_len) = (u32_at(16)? as usize, u32_at(20)? as usize);
        let types = b.get(hdr + type_off..(hdr + type_off).checked_add(type_len)?)?;
        let strings = b.get(hdr + str_off..(hdr + str_off).checked_add(str_len)?)?;
        let mut t = Types {
            strings,
            percpu: Vec::new(),
            enums: Vec::new(),
        };
        let mut vars: Vec<(u32, u32)> = Vec::new(); // (type id, name)
        let mut sections: Vec<(u32, usize, u32)> = Vec::new(); // (name, at, vlen)
        let mut at = 0usize;
        let mut id = 1u32;
        let r32 = |i: usize| Some(u32::from_le_bytes(types.get(i..i + 4)?.try_into().ok()?));
        while at + 12 <= types.len() {
            let (name, info) = (r32(at)?, r32(at + 4)?);
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let extra = extra_bytes(kind, vlen)?;
            match kind {
                KIND_VAR => vars.push((id, name)),
                KIND_DATASEC => sections.push((name, at + 12, vlen)),
                KIND_ENUM => {
                    for k in 0..vlen as usize {
                        let m = at + 12 + k * 8;
                        t.enums.push((r32(m)?, i64::from(r32(m + 4)? as i32)));
                    }
                }
                _ => {}
            }
            at += 12 + extra;
            id += 1;
        }
        let (_, sec_at, vlen) = *sections
            .iter()
            .find(|(n, _, _)| t.name(*n) == Some(PERCPU_SECTION))?;
        for k in 0..vlen as usize {
            let e = sec_at + k * 12;
            let (ty, off) = (r32(e)?, r32(e + 4)?);
            if let Some(&(_, name)) = vars.iter().find(|(v, _)| *v == ty) {
                t.percpu.push((name, i64::from(off)));
            }
        }
        Some(t)
    }

    fn name(&self, off: u32) -> Option<&'a str> {
        let s = self.strings.get(off as usize..)?;
        let end = s.iter().position(|&c| c == 0)?;
        std::str::from_utf8(&s[..end]).ok()
    }

    fn percpu_offset(&self, name: &str) -> Option<i64> {
        self.percpu
            .iter()
            .find(|(n, _)| self.name(*n) == Some(name))
            .map(|&(_, off)| off)
    }

    fn enum_value(&self, name: &str) -> Option<i64> {
        self.enums
            .iter()
            .find(|(n, _)| self.name(*n) == Some(name))
            .map(|&(_, v)| v)
    }
}

/// The bytes after a type's 12-byte header (include/uapi/linux/btf.h).
fn extra_bytes(kind: u32, vlen: u32) -> Option<usize> {
    let vlen = vlen as usize;
    Some(match kind {
        1 | 14 | 17 => 4,             // INT, VAR, DECL_TAG
        3 => 12,                      // ARRAY
        4 | 5 | 15 | 19 => vlen * 12, // STRUCT, UNION, DATASEC, ENUM64
        6 | 13 => vlen * 8,           // ENUM, FUNC_PROTO
        2 | 7..=12 | 16 | 18 => 0,    // PTR, FWD, modifiers, FUNC, FLOAT, TYPE_TAG
        _ => return None,             // a kind this parser does not know
    })
}

#[cfg(test)]
mod tests;
