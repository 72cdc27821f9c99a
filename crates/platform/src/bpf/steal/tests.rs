use super::*;
use proptest::prelude::*;

/// A BTF blob: `types` (each a header and its extra bytes) and strings.
fn blob(types: &[Vec<u8>], strings: &[u8]) -> Vec<u8> {
    let t: Vec<u8> = types.concat();
    let mut b = Vec::new();
    b.extend_from_slice(&BTF_MAGIC.to_le_bytes());
    b.extend_from_slice(&[1, 0]); // version, flags
    b.extend_from_slice(&24u32.to_le_bytes()); // hdr_len
    b.extend_from_slice(&0u32.to_le_bytes()); // type_off
    b.extend_from_slice(&(t.len() as u32).to_le_bytes());
    b.extend_from_slice(&(t.len() as u32).to_le_bytes()); // str_off
    b.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    b.extend_from_slice(&t);
    b.extend_from_slice(strings);
    b
}

fn ty(name: u32, kind: u32, vlen: u32, size: u32, extra: &[u32]) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [name, (kind << 24) | vlen, size].iter().chain(extra) {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v
}

/// Strings: 0 "", 1 "hrtimer_bases", 15 "steal_time", 26 ".data..percpu",
/// 40 "kernel_cpustat", 55 "CPUTIME_STEAL", 69 "x".
const STRINGS: &[u8] =
    b"\0hrtimer_bases\0steal_time\0.data..percpu\0kernel_cpustat\0CPUTIME_STEAL\0x\0";

/// id 1 INT, 2 VAR hrtimer_bases, 3 VAR (steal_time or kernel_cpustat),
/// 4 ENUM {x = 3, CPUTIME_STEAL = 7}, 5 DATASEC .data..percpu.
fn kernel(second: u32) -> Vec<u8> {
    blob(
        &[
            ty(0, 1, 0, 8, &[64]),
            ty(1, 14, 0, 1, &[1]),
            ty(second, 14, 0, 1, &[1]),
            ty(0, 6, 2, 4, &[69, 3, 55, 7]),
            ty(26, 15, 2, 0, &[2, 0x1000, 64, 3, 0x17c00, 64]),
        ],
        STRINGS,
    )
}

#[test]
fn the_steal_clock_is_found_relative_to_hrtimer_bases() {
    assert_eq!(
        locate(&kernel(15)),
        Some(StealLocation {
            counter: StealCounter::StealClock,
            delta: 0x17c00 - 0x1000
        })
    );
}

#[test]
fn without_the_steal_clock_kernel_cpustat_steal_is_used() {
    assert_eq!(
        locate(&kernel(40)),
        Some(StealLocation {
            counter: StealCounter::Cpustat,
            delta: 0x17c00 + 7 * 8 - 0x1000
        })
    );
}

#[test]
fn nothing_is_found_without_the_variables() {
    // The second VAR named "x": neither counter.
    assert_eq!(locate(&kernel(69)), None);
    assert_eq!(locate(b"not btf"), None);
}

#[test]
fn the_running_kernel_has_one_if_it_has_btf() {
    let Ok(b) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        println!("skipped: needs /sys/kernel/btf/vmlinux");
        return;
    };
    match locate(&b) {
        Some(l) => {
            println!(
                "steal counter: {:?}, {} bytes from hrtimer_bases",
                l.counter, l.delta
            );
            assert!(l.delta.unsigned_abs() < 1 << 24, "{l:?}");
        }
        None => println!("skipped: this kernel's BTF has no per-CPU steal counter"),
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = locate(&b);
        let mut m = kernel(15);
        let n = m.len();
        for (i, x) in b.iter().enumerate() {
            m[(i * 7) % n] ^= x;
        }
        let _ = locate(&m);
    }
}
