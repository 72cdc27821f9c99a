use super::*;

#[test]
fn a_record_reads_back_and_short_bytes_are_refused() {
    let mut b = Vec::new();
    for v in [10u64, 20, 30, 40] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    for v in [7u32, 1, 123_456, u32::MAX] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    let r = TimerRecord::parse(&b).unwrap();
    assert_eq!(
        r,
        TimerRecord {
            expires: 10,
            callback_now: 20,
            callback_time: 30,
            switch_in: 40,
            tid: 7,
            cpu: 1,
            steal_irq: 123_456,
            steal_sched: u32::MAX,
        }
    );
    for n in 0..TIMER_RECORD_BYTES {
        assert_eq!(TimerRecord::parse(&b[..n]), None);
    }
    // The slot's last 8 bytes (timer.bpf.c's reserved[1]) are not read.
    b.extend_from_slice(&u64::MAX.to_ne_bytes());
    assert_eq!(TimerRecord::parse(&b), Some(r));
}

proptest::proptest! {
    #[test]
    fn every_field_of_a_record_reads_back(
        t in proptest::prelude::any::<[u64; 4]>(),
        u in proptest::prelude::any::<[u32; 4]>(),
    ) {
        let mut b = Vec::new();
        for v in t {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for v in u {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        let r = TimerRecord::parse(&b).unwrap();
        proptest::prop_assert_eq!(
            [r.expires, r.callback_now, r.callback_time, r.switch_in],
            t
        );
        proptest::prop_assert_eq!([r.tid, r.cpu, r.steal_irq, r.steal_sched], u);
    }
}

#[test]
fn the_vector_table_is_the_c_one() {
    let c: Vec<(usize, &str)> = include_str!("../../bpf/vectors.h")
        .lines()
        .filter_map(|l| l.strip_prefix("VECTOR("))
        .map(|l| {
            let (i, rest) = l.split_once(", ").unwrap();
            (i.parse().unwrap(), rest.trim_end_matches(')'))
        })
        .collect();
    let rust: Vec<(usize, &str)> = VECTOR_NAMES.iter().copied().enumerate().collect();
    assert_eq!(c, rust);
    assert_eq!(vector_index("local_timer"), Some(0));
    assert_eq!(vector_name(10), "deferred_error_apic");
    assert_eq!(vector_name(11), "?");
    assert_eq!(vector_name(u32::MAX), "?");
}

/// `index_of` of the recording core's layout (crates/record/src/layout.rs):
/// what the kernel's hdr_index.h must agree with.
fn layout_index_of(value: u64) -> u32 {
    latscope_record::layout::index_of(value) as u32
}

/// hdr_index.h line by line in Rust (the binary-search leading zeros).
fn c_hdr_index(value: u64) -> u32 {
    fn clz(mut x: u64) -> u32 {
        let mut n = 0;
        for (mask, shift) in [
            (0xFFFF_FFFF_0000_0000u64, 32),
            (0xFFFF_0000_0000_0000, 16),
            (0xFF00_0000_0000_0000, 8),
            (0xF000_0000_0000_0000, 4),
            (0xC000_0000_0000_0000, 2),
        ] {
            if x & mask == 0 {
                n += shift;
                x <<= shift;
            }
        }
        if x & 0x8000_0000_0000_0000 == 0 {
            n += 1;
        }
        n
    }
    let highest = (1u64 << 36) - 1;
    let v = if value < highest { value } else { highest };
    let bucket = 64 - (10 + 1) - clz(v | 2047);
    let sub = v >> bucket;
    (((u64::from(bucket) + 1) << 10) + sub - 1024) as u32
}

/// The values both index functions are compared on: 0..2^20, the bucket
/// edges, and pseudo-random u64s of every magnitude.
fn index_test_values() -> Vec<u64> {
    let mut v: Vec<u64> = (0..1u64 << 20).collect();
    for shift in 0..64 {
        let p = 1u64 << shift;
        v.extend([p - 1, p, p + 1, p.wrapping_mul(3) / 2]);
    }
    v.extend([u64::MAX, (1 << 36) - 1, 1 << 36, (1 << 36) + 1]);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200_000 {
        // xorshift64*, shifted right by a varying amount for all magnitudes
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        v.push(r >> (r % 64));
    }
    v
}

#[test]
fn hdr_index_port_agrees_with_layout() {
    for v in index_test_values() {
        assert_eq!(c_hdr_index(v), layout_index_of(v), "value {v}");
    }
}

/// The header itself, compiled by the host C compiler, against layout.rs
/// (skipped without `cc`).
#[test]
fn hdr_index_h_compiled_by_the_host_agrees_with_layout() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("latscope-hdr-index-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("t.c");
    let exe = dir.join("t");
    let header = concat!(env!("CARGO_MANIFEST_DIR"), "/bpf/hdr_index.h");
    std::fs::write(
        &src,
        format!(
            "#include \"{header}\"\n#include <stdio.h>\n\
             int main(void) {{ unsigned long long v; \
             while (fread(&v, 8, 1, stdin) == 1) {{ unsigned int i = hdr_index(v); \
             fwrite(&i, 4, 1, stdout); }} return 0; }}\n"
        ),
    )
    .unwrap();
    let built = std::process::Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .status();
    if !matches!(built, Ok(s) if s.success()) {
        println!("skipped: no host C compiler (cc)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let values = index_test_values();
    let mut input = Vec::with_capacity(values.len() * 8);
    for v in &values {
        input.extend_from_slice(&v.to_ne_bytes());
    }
    let mut child = std::process::Command::new(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.stdout.len(), values.len() * 4);
    for (v, c) in values.iter().zip(out.stdout.chunks_exact(4)) {
        let c = u32::from_ne_bytes(c.try_into().unwrap());
        assert_eq!(c, layout_index_of(*v), "value {v}");
    }
}

#[test]
fn deferred_hist_kinds_round_trip_and_match_the_c_numbering() {
    for kind in BpfDeferredKind::ALL {
        for context in 0..=HARDIRQ_CONTEXT {
            let k = BpfHistKind::Deferred { kind, context };
            assert_eq!(BpfHistKind::from_raw(k.to_raw()), Some(k));
        }
    }
    // Contexts 17..31 and kinds past NAPI are no kind.
    assert_eq!(BpfHistKind::from_raw(32 + 17), None);
    assert_eq!(BpfHistKind::from_raw(32 + 4 * 32), None);
    assert_eq!(BpfHistKind::from_raw(6), None);
    assert_eq!(BpfHistKind::from_raw(31), None);
    assert_eq!(
        BpfHistKind::from_raw(32 + 3 * 32 + 3),
        Some(BpfHistKind::Deferred {
            kind: BpfDeferredKind::Napi,
            context: 3
        })
    );
    let c = include_str!("../../bpf/timer.bpf.c");
    assert!(c.contains("    H_DEFERRED = 32,"));
    assert!(c.contains("#define HARDIRQ_CONTEXT 16"));
    for (name, i) in [
        ("D_TIMER", 0),
        ("D_HRTIMER", 1),
        ("D_TASKLET", 2),
        ("D_NAPI", 3),
    ] {
        assert!(c.contains(&format!("    {name} = {i},")), "{name}");
        assert_eq!(BpfDeferredKind::ALL[i] as usize, i);
    }
}
