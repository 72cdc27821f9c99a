//! The code that held the CPU during an episode: `struct held_record` of
//! timer.bpf.c (one per wake-up of a watched thread later than
//! [`BpfConfig::stack_threshold_ns`](super::BpfConfig)), and the kernel
//! stacks it names by id in the `stacks` map.
//!
//! ```text
//! offset size
//!  0     8    expires      the hrtimer's expiry (the record's key, with the CPU)
//!  8     8    switch_in    BPF clock at the watched thread's switch-in
//! 16     4    irq_pid      the task the timer interrupt interrupted (0: idle, -1: unknown)
//! 20     4    irq_stack    its kernel stack's id, taken when the callback was late; -1: none
//! 24     4    prev_pid     the task the watched thread replaced (0: idle)
//! 28     4    yield_stack  prev's kernel stack's id at __schedule; -1: none
//! 32    16    irq_comm     the interrupted task's comm when known, else ""
//! 48    16    prev_comm
//! ```

/// The size of `struct held_record`.
pub const HELD_RECORD_BYTES: usize = 64;

/// Frames the kernel keeps per stack (`HELD_DEPTH`): a stack with this
/// many frames may have been cut.
pub const HELD_DEPTH: usize = 48;

/// One late wake-up's stacks, as the kernel recorded them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldRecord {
    pub expires: u64,
    pub switch_in: u64,
    /// The interrupted task at the expiry (0: idle); `None`: unknown (the
    /// callback was not seen).
    pub irq_pid: Option<i32>,
    /// The interrupted context's stack id (the callback was late).
    pub irq_stack: Option<u32>,
    pub prev_pid: i32,
    /// Where prev gave up the CPU (not for the idle task).
    pub yield_stack: Option<u32>,
    pub irq_comm: [u8; 16],
    pub prev_comm: [u8; 16],
}

fn id(v: i32) -> Option<u32> {
    u32::try_from(v).ok()
}

impl HeldRecord {
    /// Reads a record as the program writes it (native endianness);
    /// `None` when the bytes are too short.
    pub fn parse(b: &[u8]) -> Option<HeldRecord> {
        let b = b.get(..HELD_RECORD_BYTES)?;
        let u64_at = |i: usize| Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?));
        let i32_at = |i: usize| Some(i32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let name_at = |i: usize| -> Option<[u8; 16]> { b.get(i..i + 16)?.try_into().ok() };
        let irq_pid = i32_at(16)?;
        Some(HeldRecord {
            expires: u64_at(0)?,
            switch_in: u64_at(8)?,
            irq_pid: (irq_pid >= 0).then_some(irq_pid),
            irq_stack: id(i32_at(20)?),
            prev_pid: i32_at(24)?,
            yield_stack: id(i32_at(28)?),
            irq_comm: name_at(32)?,
            prev_comm: name_at(48)?,
        })
    }

    /// The bytes the program would write for this record (tests, fixtures).
    pub fn to_bytes(&self) -> [u8; HELD_RECORD_BYTES] {
        let mut b = [0u8; HELD_RECORD_BYTES];
        let neg = |v: Option<u32>| v.and_then(|v| i32::try_from(v).ok()).unwrap_or(-1);
        b[0..8].copy_from_slice(&self.expires.to_ne_bytes());
        b[8..16].copy_from_slice(&self.switch_in.to_ne_bytes());
        b[16..20].copy_from_slice(&self.irq_pid.unwrap_or(-1).to_ne_bytes());
        b[20..24].copy_from_slice(&neg(self.irq_stack).to_ne_bytes());
        b[24..28].copy_from_slice(&self.prev_pid.to_ne_bytes());
        b[28..32].copy_from_slice(&neg(self.yield_stack).to_ne_bytes());
        b[32..48].copy_from_slice(&self.irq_comm);
        b[48..64].copy_from_slice(&self.prev_comm);
        b
    }
}

/// A stack as the stack map holds it: `HELD_DEPTH` u64 slots, the
/// innermost frame first, ending at the first 0. Never panics.
pub fn parse_stack(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .take(HELD_DEPTH)
        .filter_map(|c| c.try_into().ok().map(u64::from_ne_bytes))
        .take_while(|&ip| ip != 0)
        .collect()
}

#[cfg(latscope_bpf)]
mod kernel {
    use aya::maps::{HashMap, StackTraceMap};

    use super::super::loaded::TraceBpf;
    use super::HeldRecord;

    /// `struct held_key` of the programs.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    struct HeldKey {
        cpu: u32,
        tid: u32,
        expires: u64,
    }

    /// `struct held_record`, as bytes.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    struct HeldBytes([u8; super::HELD_RECORD_BYTES]);

    // SAFETY: #[repr(C)] of integers without padding (4 + 4 + 8 bytes):
    // every bit pattern is a valid value.
    unsafe impl aya::Pod for HeldKey {}
    // SAFETY: a byte array: every bit pattern is valid.
    unsafe impl aya::Pod for HeldBytes {}

    impl TraceBpf {
        /// Takes (reads and deletes) the kernel's record of the wake-up of
        /// `cpu`'s measuring thread `tid` for the hrtimer expiry `expires`,
        /// if it made one (the wake-up was later than the stack threshold).
        pub fn take_held(&mut self, cpu: u32, tid: u32, expires: u64) -> Option<HeldRecord> {
            let map = self.ebpf.map_mut("held")?;
            let mut held: HashMap<_, HeldKey, HeldBytes> = HashMap::try_from(map).ok()?;
            let key = HeldKey { cpu, tid, expires };
            let bytes = held.get(&key, 0).ok()?;
            let _ = held.remove(&key);
            HeldRecord::parse(&bytes.0)
        }

        /// The kernel stack `id` of the `stacks` map, innermost frame
        /// first; `None` when the map no longer holds it.
        pub fn stack(&self, id: u32) -> Option<Vec<u64>> {
            let map = self.ebpf.map("stacks")?;
            let stacks = StackTraceMap::try_from(map).ok()?;
            let trace = stacks.get(&id, 0).ok()?;
            Some(
                trace
                    .frames()
                    .iter()
                    .map(|f| f.ip)
                    .take_while(|&ip| ip != 0)
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name16(s: &str) -> [u8; 16] {
        let mut n = [0u8; 16];
        n[..s.len()].copy_from_slice(s.as_bytes());
        n
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let r = HeldRecord {
            expires: 1_000_000,
            switch_in: 1_900_000,
            irq_pid: Some(4242),
            irq_stack: Some(17),
            prev_pid: 4242,
            yield_stack: None,
            irq_comm: name16("rustc"),
            prev_comm: name16("rustc"),
        };
        assert_eq!(HeldRecord::parse(&r.to_bytes()), Some(r));
        // -1 in the kernel's fields is "none".
        let mut b = r.to_bytes();
        b[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        b[20..24].copy_from_slice(&(-1i32).to_ne_bytes());
        let p = HeldRecord::parse(&b).unwrap();
        assert_eq!((p.irq_pid, p.irq_stack), (None, None));
        assert_eq!(HeldRecord::parse(&b[..63]), None);
    }

    #[test]
    fn a_stack_ends_at_its_first_zero() {
        let mut b = Vec::new();
        for ip in [0xffff_ffff_8100_0010u64, 0xffff_ffff_8100_0020, 0, 5] {
            b.extend_from_slice(&ip.to_ne_bytes());
        }
        assert_eq!(
            parse_stack(&b),
            [0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]
        );
        assert!(parse_stack(&[]).is_empty());
        assert!(parse_stack(&[1, 2, 3]).is_empty());
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = HeldRecord::parse(&b);
            prop_assert!(parse_stack(&b).len() <= HELD_DEPTH);
        }

        #[test]
        fn records_round_trip(
            expires in any::<u64>(), switch_in in any::<u64>(),
            irq_pid in proptest::option::of(0i32..), irq_stack in proptest::option::of(0u32..=i32::MAX as u32),
            prev_pid in any::<i32>(), yield_stack in proptest::option::of(0u32..=i32::MAX as u32),
            irq_comm in any::<[u8; 16]>(), prev_comm in any::<[u8; 16]>(),
        ) {
            let r = HeldRecord { expires, switch_in, irq_pid, irq_stack, prev_pid, yield_stack, irq_comm, prev_comm };
            prop_assert_eq!(HeldRecord::parse(&r.to_bytes()), Some(r));
        }
    }
}
