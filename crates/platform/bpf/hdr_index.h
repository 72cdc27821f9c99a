/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * latscope's HDR histogram bucket index, in C for the BPF programs.
 *
 * It mirrors `index_of` in crates/record/src/layout.rs line for line (unit
 * 1 ns, three significant digits: 2048 sub-buckets, values clamped at
 * 2^36 - 1 ns), so a count the kernel files under index i lands in the
 * same counter a user-space `Histogram` would use. It is plain C with no
 * kernel or BPF header so the host compiler can build it too: the test
 * `hdr_index_agrees_with_layout` in crates/platform/src/bpf.rs compiles it
 * with `cc` and compares it with the Rust function for 0..2^20 and random
 * values.
 *
 * BPF has no count-leading-zeros instruction; the binary search below is
 * six compare-and-shift steps, which the verifier follows without loops.
 */
#ifndef LATSCOPE_HDR_INDEX_H
#define LATSCOPE_HDR_INDEX_H

#define HDR_HIGHEST_TRACKABLE ((1ULL << 36) - 1)
#define HDR_SUB_BUCKET_MASK 2047ULL
#define HDR_SUB_BUCKET_HALF_MAGNITUDE 10
#define HDR_SUB_BUCKET_HALF_COUNT 1024ULL

/* Leading zeros of a non-zero 64-bit value. */
static inline unsigned int hdr_clz64(unsigned long long x)
{
    unsigned int n = 0;
    if (!(x & 0xFFFFFFFF00000000ULL)) {
        n += 32;
        x <<= 32;
    }
    if (!(x & 0xFFFF000000000000ULL)) {
        n += 16;
        x <<= 16;
    }
    if (!(x & 0xFF00000000000000ULL)) {
        n += 8;
        x <<= 8;
    }
    if (!(x & 0xF000000000000000ULL)) {
        n += 4;
        x <<= 4;
    }
    if (!(x & 0xC000000000000000ULL)) {
        n += 2;
        x <<= 2;
    }
    if (!(x & 0x8000000000000000ULL))
        n += 1;
    return n;
}

/* layout.rs `index_of`: the counter index of `value` nanoseconds. */
static inline unsigned int hdr_index(unsigned long long value)
{
    unsigned long long v = value < HDR_HIGHEST_TRACKABLE ? value : HDR_HIGHEST_TRACKABLE;
    /* bucket_of: 0 below 2048; v | 2047 is never 0. */
    unsigned int bucket =
        64 - (HDR_SUB_BUCKET_HALF_MAGNITUDE + 1) - hdr_clz64(v | HDR_SUB_BUCKET_MASK);
    unsigned long long sub = v >> bucket;
    return (unsigned int)((((unsigned long long)bucket + 1) << HDR_SUB_BUCKET_HALF_MAGNITUDE) +
                          sub - HDR_SUB_BUCKET_HALF_COUNT);
}

#endif
