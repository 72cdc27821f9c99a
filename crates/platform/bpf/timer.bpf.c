// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// latscope's BPF tracing backend, the kernel half. Three things share one
// program per tracepoint (one program run per event, whatever is enabled):
//
// 1. The timer decomposition. For every wake-up of a measuring thread
//    (`watched`) it writes one 64-byte record into the CPU's sample ring
//    (`samples`, read like the recorder below): the expiry its hrtimer was
//    armed for, when the hrtimer's callback ran (the `now` the kernel
//    passed it, and the BPF clock at that moment), and when the thread
//    was switched in. Matching is the
//    perf analysis's: the hrtimer a watched thread armed (hrtimer_start, by
//    address), that hrtimer's callback (hrtimer_expire_entry), then the
//    thread's next switch-in. It never reads the recorder.
//
// 2. The flight recorder. On the CPUs user space marked in `traced_cpus`,
//    every tracepoint below writes one 64-byte `struct rec` into that CPU's
//    ring: `recorder` is a BPF_F_MMAPABLE array of rings x rec_slots
//    records, one ring per traced CPU (`traced_cpus` maps a CPU to its
//    ring r, which owns elements r*rec_slots .. (r+1)*rec_slots - 1), and
//    `rec_heads` (also mmapable, one 64-byte line per ring so two CPUs
//    never share a cache line) counts the records each ring has had. User
//    space maps both read-only and copies what it wants, when it wants:
//    nothing is sent anywhere, and old records are overwritten.
//
//    Writing record n (0-based, per CPU) into slot n % rec_slots:
//      claim   n = atomic fetch-add of the CPU's head (a program can be
//              interrupted by another one on the same CPU: an IRQ or NMI
//              tracepoint; the atomic gives each its own slot)
//      mark    slot.seq = 0            ("being written")
//      fill    every other field
//      publish slot.seq = n + 1
//    with a compiler barrier between the steps (the JIT emits the stores
//    in program order). The reader copies a slot as: s1 = seq, copy the
//    fields, s2 = seq; the copy is record n only if s1 == s2 == n + 1.
//    Why that is enough on x86 (TSO: a CPU's stores become visible to
//    others in program order, and loads are not reordered with loads):
//    seeing s1 == n + 1 means every field store of record n, which came
//    before that publish, is visible. If a writer overwrites the slot
//    (record n + k*rec_slots) while we copy, its mark store precedes its
//    field stores; if any of our field loads saw one of those, our later
//    load of s2 sees the mark or something later, not n + 1, and the copy
//    is thrown away. s1 < n + 1 means the writer of n has claimed the slot
//    but not published it yet (the reader stops there); s1 > n + 1 means
//    it was overwritten (lost). On arm64 the reader's loads would need
//    acquire ordering and the writer's publish a release store; the Rust
//    side uses acquire loads, and BPF has no release store, so arm64 keeps
//    a (tiny) window this protocol does not close.
//
//    Times are bpf_ktime_get_ns(): CLOCK_MONOTONIC, the clock of the
//    user-space probes and of perf with use_clockid. Two programs nested
//    on one CPU can leave two neighbouring records out of time order by
//    the length of the nested one.
//
// 3. Histograms of interrupt and deferred work, what
//    crates/trace/src/analysis/work.rs computes from perf events, over the
//    traced CPUs: hard IRQ handler time by irq, vector time by vector
//    index, softirq time and raise->entry delay by vec, NMI handler time,
//    work item time by function, and deferred work by what ran inside a
//    softirq or the timer interrupt (timer-wheel, hrtimer and tasklet
//    callbacks by function, NAPI polls by instance; see deferred_add).
//    Each duration goes into latscope's HDR
//    layout (hdr_index.h) as one count under (kind, source, index), and
//    into exact count/sum/min/max under (kind, source). The frequent kinds
//    (vectors, softirqs, NMIs) go to per-CPU rows of counters in mmapable
//    arrays (`row_tables`, `hist_rows`; see there); the others, and what
//    a CPU's full pool of rows cannot take, to `hist0`/`hist1` and
//    `totals0`/`totals1`. Those are BPF_MAP_TYPE_PERCPU_HASH: each CPU adds to
//    its own copy of a counter, so no cache line moves between CPUs on the
//    hot path (a shared HASH would need a locked add on a line every CPU
//    writes); the cost is memory (nr_cpus values per key), paid once since
//    the maps are preallocated (no allocation in NMI context), and user
//    space sums the copies when it reads. The adds are still atomic
//    because a nested program on the same CPU (an NMI inside an IRQ exit)
//    could in principle touch the same counter. A full map drops the
//    update and counts it (counters[3]). There are two such sets of maps
//    (`hist0`/`totals0` and row tables 2r, `hist1`/`totals1` and 2r + 1);
//    the programs write the one `hist_sel` names and user space drains the
//    other (reads and deletes every key, zeroes the rows) before flipping
//    `hist_sel`, so a set only ever holds the
//    keys of one drain interval and the totals live in user space.
//
// CO-RE: the kernel structures are declared with only the fields read,
// relocated against the running kernel's BTF when the object is loaded.
// The license is dual so that the GPL-only helpers of BTF tracepoints may
// be used; user space is MIT OR Apache-2.0 like the rest of latscope.

#include <linux/types.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "hdr_index.h"

typedef __s64 ktime_t;

struct timerqueue_node {
    ktime_t expires;
} __attribute__((preserve_access_index));

/* The CPU an hrtimer is queued on, and the address of that CPU's
 * `hrtimer_bases` (see steal_addr_of). */
struct hrtimer_cpu_base {
    unsigned int cpu;
} __attribute__((preserve_access_index));

struct hrtimer_clock_base {
    struct hrtimer_cpu_base *cpu_base;
} __attribute__((preserve_access_index));

struct hrtimer {
    struct timerqueue_node node;
    ktime_t _softexpires;
    void *function;
    struct hrtimer_clock_base *base;
} __attribute__((preserve_access_index));

struct thread_info {
    __u32 cpu;
} __attribute__((preserve_access_index));

struct pid;

struct task_struct {
    struct thread_info thread_info;
    struct pid *thread_pid;
    int pid;
    int prio;
    int exit_state;
    char comm[16];
} __attribute__((preserve_access_index));

struct irqaction {
    const char *name;
} __attribute__((preserve_access_index));

struct work_struct {
    void *func;
} __attribute__((preserve_access_index));

struct timer_list {
    void *function;
} __attribute__((preserve_access_index));

struct net_device {
    char name[16];
} __attribute__((preserve_access_index));

struct napi_struct {
    struct net_device *dev;
} __attribute__((preserve_access_index));

/* One wake-up of a watched thread, as user space reads it: a 64-byte slot
 * of the CPU's sample ring, `seq` then the 48 bytes
 * platform::bpf::TimerRecord parses. */
struct timer_record {
    __u64 seq;           /* n + 1 for the ring's record n; 0 while written */
    __u64 expires;       /* the hrtimer's expiry, CLOCK_MONOTONIC ns */
    __u64 callback_now;  /* hrtimer_expire_entry's `now` */
    __u64 callback_time; /* BPF clock (CLOCK_MONOTONIC) in the callback */
    __u64 switch_in;     /* BPF clock when the thread was switched in */
    __u32 tid;
    __u32 cpu;
    union {
        __u64 reserved[2];
        struct {
            /* Steal-clock ns from arming to the callback, and from the
             * callback to the switch-in (saturating; 0 without a steal
             * clock: steal_on). reserved[1] stays free. */
            __u32 steal_irq;
            __u32 steal_sched;
        };
    };
};

_Static_assert(sizeof(struct timer_record) == 64, "struct timer_record is 64 bytes");

/* A diagnostic for bench/bpf-prog-cost.sh (LATSCOPE_BPF_DIAG): 0 does
 * everything; 1 only the recorder (no decomposition, no histograms); 2
 * nothing past each program's first lines, the cost of being attached; 3
 * (`empty`) nothing at all, every program returning at its first
 * instruction: the kernel's own price for calling a program from a
 * tracepoint. The value is frozen before the verifier runs, which then
 * drops the branches it rules out: 0 costs nothing. */
const volatile __u32 diag_level = 0;

/* The first line of every program: under diag_level 3 the verifier keeps
 * nothing after it. */
#define EMPTY_FLOOR()                                                                              \
    do {                                                                                           \
        if (diag_level >= 3)                                                                       \
            return 0;                                                                              \
    } while (0)
/* Whether sched_switch warms the next wake-up's lines (warm_rings): off,
 * on only under LATSCOPE_BPF_DIAG=warm-on. Compared in one build, 40
 * alternating rounds at 1 ms idle and loaded, the warming changed B's
 * median latency by nothing the rounds could resolve (D/B p50 1.001 and
 * 0.997, intervals holding 1) while it cost sched_switch about 100 ns a
 * run (772 with it, 677 without; bench/README.md, trace-overhead.sh,
 * --tools UBD, and bpf-prog-cost.sh). */
const volatile __u32 warm_on = 0;
/* A diagnostic (LATSCOPE_BPF_DIAG=elide-own): the expiry, callback exit
 * and wake-up of a watched thread's own timer write no recorder records,
 * to weigh what the records of the measured path itself cost. Episodes
 * then miss those three events. */
const volatile __u32 elide_own = 0;
/* A diagnostic (LATSCOPE_BPF_DIAG=deferred-off): no deferred work by
 * function and device; with its five programs left unattached
 * (crates/platform/src/bpf/groups.rs), the backend as it was before that
 * split, to weigh what the split costs. */
const volatile __u32 deferred_off = 0;
/* The per-wake-up steal figures (timer_record.steal_irq/steal_sched):
 * steal_on is 1 when user space found the steal counter in the kernel's
 * BTF, steal_delta the distance in the per-CPU area from `hrtimer_bases`
 * to it (crates/platform/src/bpf/steal.rs). Typed ksyms (`extern ...
 * __ksym`, bpf_this_cpu_ptr) would be the direct way, but aya does not
 * resolve .ksyms externs, and the kernel resolves a typed ksym through
 * kallsyms, which holds no data symbols without CONFIG_KALLSYMS_ALL (as
 * on the development VM). A CPU's per-CPU variables sit at fixed
 * distances from each other, and the hrtimer of a watched thread points
 * at its CPU's `hrtimer_bases`, so the counter's address is that plus
 * steal_delta. 0 (a kernel without the variable): the verifier drops the
 * reads. */
const volatile __u32 steal_on = 0;
const volatile __s64 steal_delta = 0;

/* Threads to follow (tid -> 1), filled by user space. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u32);
} watched SEC(".maps");

/* Per CPU: the watched threads that armed an hrtimer there (up to
 * TIMER_SLOTS, one per priority of `run --priorities`), each with that
 * hrtimer and what has happened since. A measuring thread is pinned, so
 * its hrtimer is armed, expires and wakes it on one CPU, and each program
 * finds the state with an array lookup the verifier inlines, not a hash
 * lookup (a hash lookup here, on every switch and every hrtimer, cost
 * 100-300 ns a run on the VMs latscope was built on); the slots are then
 * compared in an unrolled loop. `not_tid` caches the last thread found not
 * watched, so a CPU's other hrtimer users skip the `watched` hash too. A
 * thread that arms on one CPU and wakes on another, or more watched
 * threads on one CPU than there are slots, lose those records: their
 * samples are counted as not decomposed, never misattributed. */
#define TIMER_SLOTS 4
struct thread_timer {
    __u32 tid; /* watched thread, 0: a free slot */
    __u32 pad;
    __u64 hrtimer; /* its armed hrtimer, 0: none */
    __u64 expires;
    __u64 callback_now;
    __u64 callback_time;
    __u64 steal_arm; /* the steal counter when the thread armed its hrtimer */
    __u64 steal_cb;  /* ... and in its callback */
};

struct cpu_timer {
    __u32 not_tid; /* last thread seen not watched (0: none) */
    __u32 pad;
    __u64 not_gen;    /* `watch_gen` when not_tid was seen */
    __u64 steal_addr; /* this CPU's steal counter, 0: not known yet */
    struct thread_timer t[TIMER_SLOTS];
};

/* The slot of watched thread `tid` (0: a free slot), NULL: none. */
static __always_inline struct thread_timer *slot_of(struct cpu_timer *s, __u32 tid)
{
#pragma unroll
    for (int i = 0; i < TIMER_SLOTS; i++) {
        if (s->t[i].tid == tid)
            return &s->t[i];
    }
    return NULL;
}

/* The slot whose armed hrtimer is `timer`, NULL: none. */
static __always_inline struct thread_timer *slot_of_timer(struct cpu_timer *s, __u64 timer)
{
#pragma unroll
    for (int i = 0; i < TIMER_SLOTS; i++) {
        if (s->t[i].hrtimer == timer && timer != 0)
            return &s->t[i];
    }
    return NULL;
}

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cpu_timer);
} cpu_timer SEC(".maps");

/* This CPU's steal counter, 0 when unknown. One helper call: the address
 * is a plain number to the verifier. The host writes the counter only
 * while this vCPU is not running, so a read from the vCPU is never torn. */
static __always_inline __u64 steal_read(struct cpu_timer *s)
{
    __u64 v = 0;
    if (!steal_on || s->steal_addr == 0)
        return 0;
    bpf_probe_read_kernel(&v, sizeof(v), (const void *)s->steal_addr);
    return v;
}

/* Finds this CPU's steal counter from the hrtimer a watched thread armed
 * here, once per CPU: the timer's `hrtimer_bases` is this CPU's when the
 * timer is queued on it (the check on `cpu`). */
static __always_inline void steal_addr_of(struct cpu_timer *s, struct hrtimer *timer, __u32 cpu)
{
    if (!steal_on || s->steal_addr != 0)
        return;
    struct hrtimer_cpu_base *b = timer->base->cpu_base;
    if (b && b->cpu == cpu)
        s->steal_addr = (__u64)b + (__u64)steal_delta;
}

/* b - a as the record's u32: 0 if the counter went back, saturating. */
static __always_inline __u32 steal_span(__u64 a, __u64 b)
{
    if (b <= a)
        return 0;
    return b - a > 0xffffffffULL ? 0xffffffffU : (__u32)(b - a);
}

/* Bumped by user space after each change to `watched`: a thread cached as
 * not watched under an older generation is looked up again. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} watch_gen SEC(".maps");

static __always_inline struct cpu_timer *timer_state(void)
{
    if (diag_level >= 1)
        return NULL;
    __u32 zero = 0;
    return bpf_map_lookup_elem(&cpu_timer, &zero);
}

/* The sample rings: one per CPU user space gave a ring in `sample_rings`
 * (cpu -> 1 + ring, 0: none), `sample_slots` records each, in one
 * mmapable array like the recorder's and read the same way (see the
 * header comment), with a head per ring on its own cache line. Only
 * sched_switch writes them, with interrupts off, and NMI programs never:
 * one writer per ring at a time, so the head is a plain store, not the
 * recorder's atomic add. (A BPF ring buffer took a spinlock shared by all
 * CPUs on every wake-up, on the path to the woken thread.) */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct timer_record);
} samples SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} sample_rings SEC(".maps");

/* Counters: [0]-[1] stacks not taken (C_STACK_FULL, C_STACK_FAILED),
 * [2] unused (the rings' heads count what was written), [3] histogram
 * updates dropped (map full or busy). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        __sync_fetch_and_add(c, 1);
}

#define C_HIST_DROPPED 3

/* ---- Settings, written by user space before the object is loaded. ---- */

/* Records per CPU in the recorder, a power of two; 0: no recorder. */
const volatile __u32 rec_slots = 0;
/* Records per sample ring, a power of two. */
const volatile __u32 sample_slots = 1;
/* Whether the histograms are kept. */
const volatile __u32 hist_on = 0;
/* Whether softirq times wait in the CPU's list like vector times (see
 * defer_softirq): not on PREEMPT_RT, where softirqs run preemptibly. */
const volatile __u32 softirq_deferred = 0;

/* CPUs to record and histogram: cpu -> 1 + the index of its ring in the
 * recorder (0: not traced), set before attaching. Sized by user space to
 * the number of possible CPUs; the recorder has rings for the traced CPUs
 * only, so tracing 2 CPUs of 256 costs 2 rings. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} traced_cpus SEC(".maps");

/* ---- The flight recorder (see the header comment). ---- */

enum rec_kind {
    K_SWITCH = 1,
    K_WAKING = 2,
    K_HRTIMER_START = 3,
    K_HRTIMER_EXPIRE_ENTRY = 4,
    K_HRTIMER_EXPIRE_EXIT = 5,
    K_IRQ_ENTRY = 6,
    K_IRQ_EXIT = 7,
    K_SOFTIRQ_RAISE = 8,
    K_SOFTIRQ_ENTRY = 9,
    K_SOFTIRQ_EXIT = 10,
    K_VECTOR_ENTRY = 11,
    K_VECTOR_EXIT = 12,
    K_NMI = 13,
    K_WORK_START = 14,
    K_WORK_END = 15,
    K_TIMER_ENTRY = 16,
    K_TIMER_EXIT = 17,
    K_TASKLET_ENTRY = 18,
    K_TASKLET_EXIT = 19,
    K_NAPI_POLL = 20,
};

/* One recorded event: 64 bytes, native endianness, one cache line (the
 * mmapable array's values start page-aligned): each event on the path to a
 * woken thread writes one line, not the two an 80-byte record straddled.
 * The CPU is not stored, user space knows it from the ring. A switch's
 * `tid` is prev's pid (the current task), with aux 1 when that pid is
 * already released (perf names such a task -1). RecordedEvent::parse in
 * crates/platform/src/bpf/record.rs reads the same layout (offsets in
 * comments). */
struct rec {
    __u64 seq;    /*  0: n + 1 for the CPU's record n; 0 while being written */
    __u64 time;   /*  8: bpf_ktime_get_ns() */
    __s32 tid;    /* 16: current_tid(); switch: prev's pid */
    __u8 kind;    /* 20: enum rec_kind */
    __u8 aux;     /* 21: vector events: index into vectors.h; switch: 1 = pid released */
    __u16 state;  /* 22: switch: prev_state (at most 0x100) */
    union {       /* 24: 40 bytes */
        struct {
            __s32 next_pid;     /* 24 */
            __s16 prev_prio;    /* 28 */
            __s16 next_prio;    /* 30 */
            char prev_comm[16]; /* 32 */
            char next_comm[16]; /* 48 */
        } sw;
        struct {
            __s32 pid;        /* 24 */
            __s32 prio;       /* 28 */
            __s32 target_cpu; /* 32 */
            __s32 pad;        /* 36 */
            char comm[16];    /* 40 */
        } wk;
        struct {
            __u64 hrtimer;     /* 24 */
            __u64 function;    /* 32 */
            __s64 expires;     /* 40 (expire entry: now) */
            __s64 softexpires; /* 48 */
        } ht;
        struct {
            __s32 irq;     /* 24 (vector events: vector) */
            __s32 ret;     /* 28 */
            char name[16]; /* 32 */
        } irq;
        struct {
            __u64 handler;  /* 24 */
            __s64 delta_ns; /* 32 */
            __s32 handled;  /* 40 */
        } nmi;
        struct {
            __u64 work;     /* 24 */
            __u64 function; /* 32 */
        } wq;
        struct {
            __u64 object;   /* 24: the timer_list or tasklet_struct */
            __u64 function; /* 32 (timer exit: 0) */
        } dw;
        struct {
            __u64 napi;    /* 24 */
            __s32 work;    /* 32 */
            __s32 budget;  /* 36 */
            char dev[16];  /* 40: dev->name, or "(no_device)" */
        } np;
        __u64 raw[5];
    };
};

_Static_assert(sizeof(struct rec) == 64, "struct rec is 64 bytes");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rec);
} recorder SEC(".maps");

/* Records claimed per CPU; one cache line each. */
struct rec_head {
    __u64 head;
    __u64 pad[7];
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rec_head);
} rec_heads SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct rec_head);
} sample_heads SEC(".maps");

#define barrier() asm volatile("" ::: "memory")

/* 1 + the ring of `cpu`, 0 when it is not traced. */
static __always_inline __u32 traced(__u32 cpu)
{
    if (diag_level >= 2)
        return 0;
    __u32 *ring = bpf_map_lookup_elem(&traced_cpus, &cpu);
    return ring ? *ring : 0;
}

/* The current task as a perf sample names it (perf_event_tid): its pid,
 * but -1 for a task whose pid is already released (the last switch-out of
 * an exiting task); the idle task is 0. */
static __always_inline __s32 current_tid(void)
{
    /* One helper call: the task's pid is what bpf_get_current_pid_tgid's
     * low half would return. */
    struct task_struct *cur = bpf_get_current_task_btf();
    __s32 tid = cur->pid;
    if (tid != 0 && !cur->thread_pid)
        return -1;
    return tid;
}

/* Claims the next slot of ring `ring1 - 1` (what traced() returned) and
 * marks it as being written; NULL when the recorder is off. The caller
 * fills the payload and calls rec_end. `now` is the program's one reading
 * of the BPF clock (each reading costs a helper call). The ring's head
 * counts what was written: no separate counter. */
static __always_inline struct rec *rec_begin(__u32 ring1, __u8 kind, __u64 now,
                                             __u64 *seq)
{
    if (rec_slots == 0 || ring1 == 0)
        return NULL;
    __u32 ring = ring1 - 1;
    struct rec_head *h = bpf_map_lookup_elem(&rec_heads, &ring);
    if (!h)
        return NULL;
    __u64 n = __sync_fetch_and_add(&h->head, 1);
    __u32 idx = ring * rec_slots + (__u32)(n & (rec_slots - 1));
    /* Cannot fail: user space sizes the array rings x rec_slots. (If it
     * did, the claimed slot would never be published and a reader
     * following the ring would wait at it until it is overwritten.) */
    struct rec *r = bpf_map_lookup_elem(&recorder, &idx);
    if (!r)
        return NULL;
    r->seq = 0;
    barrier();
    r->time = now;
    r->tid = current_tid();
    r->kind = kind;
    r->aux = 0;
    r->state = 0;
    *seq = n + 1;
    return r;
}

/* A task's comm as two 8-byte loads: a BTF pointer is read directly (a
 * load the JIT guards with an exception-table entry), not through the
 * bpf_probe_read_kernel helper, whose call costs more than the whole copy. */
static __always_inline void copy_comm(char *dst, const char *comm)
{
    ((__u64 *)dst)[0] = ((const __u64 *)comm)[0];
    ((__u64 *)dst)[1] = ((const __u64 *)comm)[1];
}

static __always_inline void rec_end(struct rec *r, __u64 seq)
{
    barrier();
    r->seq = seq;
}

/* ---- Histograms (see the header comment). ---- */

enum hist_kind {
    H_IRQ_EXEC = 0,
    H_VECTOR_EXEC = 1,
    H_SOFTIRQ_EXEC = 2,
    H_SOFTIRQ_DELAY = 3,
    H_NMI = 4,
    H_WORK = 5,
    /* Deferred work: H_DEFERRED + 32 * enum deferred_kind + the context it
     * ran in (a softirq vec, or HARDIRQ_CONTEXT), source the function or
     * the napi_struct; user space rebuilds WorkKey::Deferred from it. */
    H_DEFERRED = 32,
};

/* What ran inside a softirq or an interrupt (DeferredKind in
 * crates/trace/src/event.rs, in this order). */
enum deferred_kind {
    D_TIMER = 0,
    D_HRTIMER = 1,
    D_TASKLET = 2,
    D_NAPI = 3,
};

/* The context of deferred work that ran in a hard interrupt, not in a
 * softirq (HARDIRQ_CONTEXT in crates/trace/src/event.rs). */
#define HARDIRQ_CONTEXT 16
#define NET_RX_SOFTIRQ 3

struct hist_key {
    __u32 kind;
    __u32 index; /* HDR counter index / HIST_CHUNK; in hist_totals always 0 */
    __u64 source;
};

/* The counters of HIST_CHUNK consecutive HDR indices: a key per chunk, not
 * per counter. A duration lands mostly in a chunk some earlier one used,
 * so an update is a lookup that finds its key; a key per counter made most
 * updates inserts after each drain (the hash's lock, a free element, every
 * CPU's copy zeroed), a few hundred ns on every interrupt exit. */
#define HIST_CHUNK 16
struct hist_chunk {
    __u64 count[HIST_CHUNK];
};

struct hist_total {
    __u64 count;
    __u64 sum;
    __u64 min;
    __u64 max;
};

#define FIXED_KINDS 4
#define FIXED_SLOTS (FIXED_KINDS * 16)

/* Two sets of histogram maps, written in turn: the programs add to the set
 * `hist_sel` names, and user space drains the other one (reads every key
 * and deletes it) before switching the programs to it. A set holds only
 * the keys of one drain interval, however long the run: kept cumulative,
 * the (kind, source, bucket) keys of a machine's interrupts and work items
 * filled 16384 entries within minutes. */
#define HIST_MAP(name, entries, value_type)          \
    struct {                                         \
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);      \
        __uint(max_entries, entries);                \
        __type(key, struct hist_key);                \
        __type(value, value_type);                   \
    } name SEC(".maps")

HIST_MAP(hist0, 4096, struct hist_chunk);
HIST_MAP(hist1, 4096, struct hist_chunk);
HIST_MAP(totals0, 2048, struct hist_total);
HIST_MAP(totals1, 2048, struct hist_total);

/* The kinds whose sources are few and known (vectors, softirq vecs, NMIs:
 * FIXED_KINDS blocks of 16 sources, at fixed_slot(kind, source)) are the
 * frequent ones: a local timer interrupt's vector time and its softirqs'
 * times on every wake-up. They are not hashed. Each traced CPU has, per
 * set, a `row_table` and a pool of rows_per_table `hist_row`s: a row holds
 * the 1024 HDR counters of one (slot, HDR row) pair, HDR row = index >>
 * 10 (one power-of-two range of values), so a duration's counter is
 * found through two array lookups the verifier inlines, with no hash to
 * compute or bucket to walk (the per-CPU hash update it replaces cost
 * about 100 ns of each sched_switch run that added a deferred value;
 * bpf-prog-cost.sh, LATSCOPE_BPF_DIAG=hist-off). The table also holds the
 * slots' exact totals. Both maps are mmapable: user space reads and
 * zeroes the idle set's tables and rows in place, no system call per key.
 *
 * A row is claimed with an atomic add on `used` (a nested program, an NMI
 * inside a softirq's add, claims another), labelled with its pair, then
 * entered in the table; two rows labelled alike (a claim nested inside
 * another for the same pair) are both read. A full pool sends the counts
 * to the hashed maps, as any other kind's. */
#define HDR_ROW_LEN 1024
#define HDR_ROWS 27 /* latscope's HDR layout has 27 * 1024 counters */
#define ROW_IDS (FIXED_SLOTS * HDR_ROWS)
/* Rows per table, 1 to 64 (BpfConfig::hist_rows), set before loading. */
const volatile __u32 rows_per_table = 24;

struct hist_row {
    __u64 id; /* 1 + slot * HDR_ROWS + HDR row; 0: free */
    __u64 count[HDR_ROW_LEN];
};

struct row_table {
    __u64 used; /* rows claimed; at or past rows_per_table the pool is full */
    struct hist_total totals[FIXED_SLOTS];
    __u16 row[ROW_IDS]; /* 1 + the pool row holding a pair, 0: none */
};

/* Table `ring * 2 + set`; its rows are `table * rows_per_table ..`. Sized
 * by user space to the traced CPUs. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct row_table);
} row_tables SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct hist_row);
} hist_rows SEC(".maps");

/* Which set the programs write: 0 or 1 (user space flips it). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} hist_sel SEC(".maps");

/* Vector run times held per CPU until the CPU switches to a task other
 * than its measuring thread. */
#define PENDING_VECTORS 8
/* Softirq run times and delays held the same way (see defer_softirq). */
#define PENDING_SOFTIRQS 16
/* Deferred work's run times held the same way, per context (deferred_add). */
#define PENDING_DEFERRED 16
#define PENDING_HARD 8
/* napi_structs this CPU last entered in `napi_names` (name_napi). */
#define NAPI_SEEN 4

struct pending_work {
    __u32 kind;
    __u32 pad;
    __u64 source;
    __u64 value;
};

/* A callback between its entry and exit event: start 0 means none. */
struct running {
    __u64 start;
    __u64 object; /* timer_list, tasklet_struct or hrtimer */
    __u64 function;
    __u64 context; /* softirq vec or HARDIRQ_CONTEXT */
};

/* What is running on a CPU, to pair entries with exits as work.rs does:
 * one slot per kind, start time 0 meaning none. */
struct cpu_work {
    __u64 irq_start;
    __s64 irq;
    __u64 vec_start;
    __u64 vec_index;
    __u64 softirq_start;
    __u64 softirq_vec;
    __u64 work_start;
    __u64 work_function;
    __u64 raised[16]; /* first raise time of each pending softirq vec */
    /* Vector run times not yet in the histograms (see defer_vector). */
    __u64 npending;
    struct {
        __u64 index;
        __u64 value;
    } pending[PENDING_VECTORS];
    /* Softirq values not yet in the histograms: key = kind << 32 | vec. */
    __u64 nspending;
    struct {
        __u64 key;
        __u64 value;
    } spending[PENDING_SOFTIRQS];
    /* Deferred work (deferred_add): what is running, one slot per kind
     * (hrtimers: [0] in a hard interrupt, [1] in a softirq, which the
     * former may interrupt), and the values not yet in the histograms,
     * those of softirq context and those of hard-IRQ context apart. */
    struct running timer;
    struct running tasklet;
    struct running hrtimer[2];
    __u64 napi_last; /* when this CPU's last napi_poll returned */
    __u64 napi_seen[NAPI_SEEN];
    __u64 napi_next; /* the napi_seen slot the next new instance takes */
    __u64 ndpending;
    struct pending_work dpending[PENDING_DEFERRED];
    __u64 nhpending;
    struct pending_work hpending[PENDING_HARD];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cpu_work);
} cpu_work SEC(".maps");

static __always_inline struct cpu_work *work_state(void)
{
    if (!hist_on || diag_level >= 1)
        return NULL;
    __u32 zero = 0;
    return bpf_map_lookup_elem(&cpu_work, &zero);
}

/* The slot of (kind, source) in a row table, -1 for the hashed kinds. The
 * order of the blocks is BpfHistKind::FIXED in crates/platform/src/bpf.rs. */
static __always_inline int fixed_slot(__u32 kind, __u64 source)
{
    if (source >= 16)
        return -1;
    switch (kind) {
    case H_VECTOR_EXEC:
        return (int)source;
    case H_SOFTIRQ_EXEC:
        return 16 + (int)source;
    case H_SOFTIRQ_DELAY:
        return 32 + (int)source;
    case H_NMI:
        return 48 + (int)source;
    default:
        return -1;
    }
}

static __always_inline void total_add(struct hist_total *t, __u64 value)
{
    /* An empty slot's min is 0: the first value sets it. */
    if (t->count == 0 || value < t->min)
        t->min = value;
    if (value > t->max)
        t->max = value;
    __sync_fetch_and_add(&t->count, 1);
    __sync_fetch_and_add(&t->sum, value);
}

/* One count at HDR counter `index` under (kind, source) in a hashed
 * chunk map. */
static __always_inline void chunk_add(void *hist, __u32 kind, __u64 source, __u32 index)
{
    __u32 j = index & (HIST_CHUNK - 1);
    struct hist_key k = {.kind = kind, .index = index / HIST_CHUNK, .source = source};
    struct hist_chunk *c = bpf_map_lookup_elem(hist, &k);
    if (c) {
        __sync_fetch_and_add(&c->count[j], 1);
        return;
    }
    struct hist_chunk one = {};
    one.count[j] = 1;
    if (bpf_map_update_elem(hist, &k, &one, BPF_NOEXIST)) {
        /* Another CPU may have added the key meanwhile. */
        c = bpf_map_lookup_elem(hist, &k);
        if (c)
            __sync_fetch_and_add(&c->count[j], 1);
        else
            count(C_HIST_DROPPED);
    }
}

/* `value` into the hashed maps: its count and its (kind, source) total. */
static __always_inline void hash_add(void *hist, void *hist_totals, __u32 kind, __u64 source,
                                     __u64 value)
{
    chunk_add(hist, kind, source, hdr_index(value));
    struct hist_key k = {.kind = kind, .index = 0, .source = source};
    struct hist_total *t = bpf_map_lookup_elem(hist_totals, &k);
    if (t) {
        total_add(t, value);
        return;
    }
    struct hist_total n = {.count = 1, .sum = value, .min = value, .max = value};
    if (bpf_map_update_elem(hist_totals, &k, &n, BPF_NOEXIST)) {
        t = bpf_map_lookup_elem(hist_totals, &k);
        if (t)
            total_add(t, value);
        else
            count(C_HIST_DROPPED);
    }
}

/* The pool row holding (slot, HDR row `r`) in table `t`, claimed if there
 * is none yet; NULL when the pool is full. */
static __always_inline struct hist_row *row_of(struct row_table *tab, __u32 t, __u32 id)
{
    __u32 k = tab->row[id];
    if (k) {
        __u32 idx = t * rows_per_table + ((k - 1) % rows_per_table);
        return bpf_map_lookup_elem(&hist_rows, &idx);
    }
    if (tab->used >= rows_per_table)
        return NULL;
    __u64 n = __sync_fetch_and_add(&tab->used, 1);
    if (n >= rows_per_table)
        return NULL;
    __u32 idx = t * rows_per_table + (__u32)n;
    struct hist_row *row = bpf_map_lookup_elem(&hist_rows, &idx);
    if (!row)
        return NULL;
    row->id = (__u64)id + 1;
    barrier();
    tab->row[id] = (__u16)(n + 1);
    return row;
}

enum row_added {
    ROW_NONE = 0,    /* nothing added: the ring has no table */
    ROW_DONE = 1,    /* count and total added */
    ROW_COUNT_TO_HASH = 2, /* total added; the count goes to the hashed chunks */
};

/* `value` under fixed slot `slot` into ring `ring`'s table of set `set`. */
static __always_inline enum row_added row_add(__u32 ring, __u32 set, __u32 slot, __u64 value,
                                              __u32 *index_out)
{
    __u32 t = ring * 2 + set;
    struct row_table *tab = bpf_map_lookup_elem(&row_tables, &t);
    if (!tab)
        return ROW_NONE;
    __u32 index = hdr_index(value);
    *index_out = index;
    __u32 r = index >> 10;
    /* An opaque copy, so the verifier bounds the id it indexes with. */
    __u32 id = slot * HDR_ROWS + r;
    asm volatile("" : "+r"(id));
    if (r >= HDR_ROWS || id >= ROW_IDS)
        return ROW_NONE;
    __u32 s = slot;
    asm volatile("" : "+r"(s));
    s &= FIXED_SLOTS - 1;
    total_add(&tab->totals[s], value);
    struct hist_row *row = row_of(tab, t, id);
    if (!row)
        return ROW_COUNT_TO_HASH;
    __sync_fetch_and_add(&row->count[index & (HDR_ROW_LEN - 1)], 1);
    return ROW_DONE;
}

static __always_inline void hist_add(__u32 kind, __u64 source, __u64 value)
{
    __u32 zero = 0;
    __u32 *sel = bpf_map_lookup_elem(&hist_sel, &zero);
    __u32 set = sel && *sel ? 1 : 0;
    int slot = fixed_slot(kind, source);
    if (slot >= 0) {
        __u32 ring1 = traced(bpf_get_smp_processor_id());
        __u32 index = 0;
        enum row_added added = ring1 ? row_add(ring1 - 1, set, (__u32)slot, value, &index) : ROW_NONE;
        if (added == ROW_DONE)
            return;
        if (added == ROW_COUNT_TO_HASH) {
            if (set)
                chunk_add(&hist1, kind, source, index);
            else
                chunk_add(&hist0, kind, source, index);
            return;
        }
    }
    if (set)
        hash_add(&hist1, &totals1, kind, source, value);
    else
        hash_add(&hist0, &totals0, kind, source, value);
}

/* A vector's run time is not added to the histograms in its exit: the
 * local timer interrupt's exit is on the path from our timer's expiry to
 * our thread, and a histogram update (a hash lookup on cold cache lines)
 * was the most expensive program run on it. The value waits in the CPU's
 * `pending` list and is added when the CPU next switches to a task that is
 * not its measuring thread (going idle, or back to the load), off the
 * measured path; a full list adds directly. Vector exits run in hard-IRQ
 * context and sched_switch with interrupts off, so on one CPU they never
 * interleave; an NMI program adds its own value directly. */
static __always_inline void defer_vector(struct cpu_work *w, __u64 index, __u64 value)
{
    __u64 n = w->npending;
    if (n >= PENDING_VECTORS) {
        hist_add(H_VECTOR_EXEC, index, value);
        return;
    }
    w->pending[n & (PENDING_VECTORS - 1)].index = index;
    w->pending[n & (PENDING_VECTORS - 1)].value = value;
    w->npending = n + 1;
}

/* A softirq's run time and raise->entry delay wait too: the softirqs a
 * timer interrupt raises run in its irq_exit, before the scheduler
 * switches to the thread it woke, and two histogram updates there (one in
 * softirq_entry, one in softirq_exit) cost about 1.5 us of that path. The
 * list is the softirq context's own: hard-IRQ programs, which may
 * interrupt a softirq program, never touch it, and sched_switch, which
 * empties it, cannot run inside a softirq (softirqs run with bottom halves
 * disabled, so not preemptibly). On PREEMPT_RT they do run preemptibly,
 * and a switch could empty the list under a softirq program adding to it;
 * there user space leaves softirq_deferred at 0 and the updates are made
 * at once, as before. */
static __always_inline void defer_softirq(struct cpu_work *w, __u32 kind, __u64 vec,
                                          __u64 value)
{
    __u64 n = w->nspending;
    if (!softirq_deferred || n >= PENDING_SOFTIRQS) {
        hist_add(kind, vec, value);
        return;
    }
    w->spending[n & (PENDING_SOFTIRQS - 1)].key = ((__u64)kind << 32) | vec;
    w->spending[n & (PENDING_SOFTIRQS - 1)].value = value;
    w->nspending = n + 1;
}

/* The context deferred work runs in, as work.rs keys it: the softirq
 * running on the CPU, except inside an interrupt vector (the hrtimer
 * callbacks of the local timer interrupt, which may have interrupted a
 * softirq), and outside any softirq: HARDIRQ_CONTEXT. */
static __always_inline __u64 work_context(struct cpu_work *w)
{
    if (w->vec_start == 0 && w->softirq_start != 0 && w->softirq_vec < 16)
        return w->softirq_vec;
    return HARDIRQ_CONTEXT;
}

/* A deferred function's run time waits like a vector's or a softirq's:
 * hrtimer callbacks run in the local timer interrupt, timer-wheel
 * callbacks and tasklets in the softirqs of its exit, all before our
 * thread is switched in. Each context has its own list: a value of a hard
 * interrupt (a vector is open) goes to `hpending`, which only hard-IRQ
 * programs and sched_switch (interrupts off) touch, as `pending`; one of a
 * softirq to `dpending`, the softirq context's own like `spending` (added
 * at once on PREEMPT_RT, see defer_softirq). Anything else, or a full
 * list, is added at once. */
static __always_inline void deferred_add(struct cpu_work *w, __u32 dkind, __u64 context,
                                         __u64 source, __u64 value)
{
    __u32 kind = H_DEFERRED + dkind * 32 + (__u32)(context & 31);
    if (w->vec_start) {
        __u64 n = w->nhpending;
        if (n < PENDING_HARD) {
            struct pending_work *p = &w->hpending[n & (PENDING_HARD - 1)];
            p->kind = kind;
            p->source = source;
            p->value = value;
            w->nhpending = n + 1;
            return;
        }
    } else if (w->softirq_start && softirq_deferred) {
        __u64 n = w->ndpending;
        if (n < PENDING_DEFERRED) {
            struct pending_work *p = &w->dpending[n & (PENDING_DEFERRED - 1)];
            p->kind = kind;
            p->source = source;
            p->value = value;
            w->ndpending = n + 1;
            return;
        }
    }
    hist_add(kind, source, value);
}

/* A callback's entry: its start, what it is, and the context it runs in. */
static __always_inline void callback_begin(struct running *r, __u64 now, __u64 object,
                                           __u64 function, __u64 context)
{
    r->object = object;
    r->function = function;
    r->context = context;
    r->start = now;
}

/* Its exit: entry -> exit as the run time of (context, kind, function),
 * as work.rs pairs them (the same object, on this CPU). */
static __always_inline void callback_end(struct cpu_work *w, struct running *r, __u32 dkind,
                                         __u64 object, __u64 now)
{
    __u64 start = r->start;
    if (!start)
        return;
    r->start = 0;
    if (r->object == object && now >= start)
        deferred_add(w, dkind, r->context, r->function, now - start);
}

static long flush_vector(__u64 i, void *ctx)
{
    struct cpu_work *w = work_state();
    if (!w)
        return 1;
    __u64 k = i & (PENDING_VECTORS - 1);
    hist_add(H_VECTOR_EXEC, w->pending[k].index, w->pending[k].value);
    return 0;
}

static long flush_softirq(__u64 i, void *ctx)
{
    struct cpu_work *w = work_state();
    if (!w)
        return 1;
    __u64 k = i & (PENDING_SOFTIRQS - 1);
    __u64 key = w->spending[k].key;
    hist_add((__u32)(key >> 32), key & 0xffffffff, w->spending[k].value);
    return 0;
}

static __always_inline long flush_work(struct pending_work *p)
{
    hist_add(p->kind, p->source, p->value);
    return 0;
}

static long flush_deferred(__u64 i, void *ctx)
{
    struct cpu_work *w = work_state();
    if (!w)
        return 1;
    return flush_work(&w->dpending[i & (PENDING_DEFERRED - 1)]);
}

static long flush_hard(__u64 i, void *ctx)
{
    struct cpu_work *w = work_state();
    if (!w)
        return 1;
    return flush_work(&w->hpending[i & (PENDING_HARD - 1)]);
}

/* Adds the CPU's waiting vector, softirq and deferred-work values to the
 * histograms. */
static __always_inline void flush_pending(void)
{
    struct cpu_work *w = work_state();
    if (!w)
        return;
    __u64 n = w->npending;
    if (n) {
        if (n > PENDING_VECTORS)
            n = PENDING_VECTORS;
        bpf_loop((__u32)n, flush_vector, NULL, 0);
        w->npending = 0;
    }
    n = w->nspending;
    if (n) {
        if (n > PENDING_SOFTIRQS)
            n = PENDING_SOFTIRQS;
        bpf_loop((__u32)n, flush_softirq, NULL, 0);
        w->nspending = 0;
    }
    n = w->ndpending;
    if (n) {
        if (n > PENDING_DEFERRED)
            n = PENDING_DEFERRED;
        bpf_loop((__u32)n, flush_deferred, NULL, 0);
        w->ndpending = 0;
    }
    n = w->nhpending;
    if (n) {
        if (n > PENDING_HARD)
            n = PENDING_HARD;
        bpf_loop((__u32)n, flush_hard, NULL, 0);
        w->nhpending = 0;
    }
}

/* The slot of `cpu`'s sample ring the next record goes to, and the ring's
 * head; NULL when the CPU has no sample ring. */
static __always_inline struct timer_record *sample_next(__u32 cpu, struct rec_head **head)
{
    __u32 *ring1 = bpf_map_lookup_elem(&sample_rings, &cpu);
    if (!ring1 || *ring1 == 0)
        return NULL;
    __u32 ring = *ring1 - 1;
    struct rec_head *h = bpf_map_lookup_elem(&sample_heads, &ring);
    if (!h)
        return NULL;
    *head = h;
    __u32 idx = ring * sample_slots + (__u32)(h->head & (sample_slots - 1));
    return bpf_map_lookup_elem(&samples, &idx);
}

/* The wake-up's record into the CPU's sample ring (sched_switch only). */
static __always_inline void sample_write(struct cpu_timer *s, struct thread_timer *w, __u32 cpu,
                                         __u64 now)
{
    struct rec_head *h = NULL;
    struct timer_record *t = sample_next(cpu, &h);
    if (!t || !h)
        return;
    __u64 n = h->head;
    t->seq = 0;
    barrier();
    t->expires = w->expires;
    t->callback_now = w->callback_now;
    t->callback_time = w->callback_time;
    t->switch_in = now;
    t->tid = w->tid;
    t->cpu = cpu;
    if (steal_on) {
        __u64 in = steal_read(s);
        t->steal_irq = steal_span(w->steal_arm, w->steal_cb);
        t->steal_sched = steal_span(w->steal_cb, in);
    }
    barrier();
    t->seq = n + 1;
    h->head = n + 1;
}

/* Brings the lines the next wake-up will write into this CPU's cache: the
 * next WARM_RECORDS recorder records, the CPU's `cpu_work` and the next
 * sample record. They are read (not written: the slots still hold the
 * ring's oldest records) when the CPU switches away from its measuring
 * thread, off the measured path. On the way to a woken thread every
 * program writes a record into a slot last touched a whole ring ago, a
 * cache miss each; read here, the lines wait in this CPU's cache
 * (exclusive, unless user space is copying them) and the writes hit. */
#define WARM_RECORDS 16
static __always_inline void warm_rings(__u32 ring1, __u32 cpu)
{
    if (rec_slots != 0 && ring1 != 0) {
        __u32 ring = ring1 - 1;
        struct rec_head *h = bpf_map_lookup_elem(&rec_heads, &ring);
        if (h) {
            __u64 head = h->head;
            for (__u32 k = 0; k < WARM_RECORDS; k++) {
                __u32 idx = ring * rec_slots + (__u32)((head + k) & (rec_slots - 1));
                struct rec *r = bpf_map_lookup_elem(&recorder, &idx);
                if (r)
                    (void)*(volatile __u64 *)&r->seq;
            }
        }
    }
    /* The CPU's interrupt and softirq bookkeeping, one read every 64 bytes
     * (sizeof / 64 reads: the last partial 64 bytes are not read). */
    struct cpu_work *w = work_state();
    if (w) {
#pragma unroll
        for (__u32 k = 0; k < sizeof(struct cpu_work) / 64; k++)
            (void)*((volatile __u64 *)w + k * 8);
    }
    struct rec_head *sh = NULL;
    struct timer_record *t = sample_next(cpu, &sh);
    if (t)
        (void)*(volatile __u64 *)&t->seq;
}

/* ---- The code that held the CPU (episodes only; see docs/tracing.md,
 * "The code that held the CPU"). A kernel stack walk costs microseconds,
 * so none is taken on an ordinary wake-up: only when a watched thread's
 * wake-up is already later than `stack_threshold` (the episode threshold,
 * set by user space from --threshold; 0: off) when the program sees it.
 *
 * At the watched hrtimer's callback, every time: the pid of the task the
 * timer interrupt interrupted (bpf_get_current_pid_tgid in hard-IRQ
 * context; 0: idle), a few stores. When the callback itself is late by
 * more than the threshold, also its kernel stack: a tp_btf program's
 * stack starts in the tracepoint and the ORC unwinder follows it through
 * the interrupt entry (asm_sysvec_*) into the interrupted context, so
 * the frames past the entry are what the CPU ran when the timer fired
 * (none: it was in user mode). The interrupted instruction alone, for
 * every callback, would need the per-CPU `__irq_regs`: a typed ksym,
 * which aya does not resolve, and this kernel's kallsyms has no data
 * symbols; not done.
 *
 * At the watched thread's switch-in when it is later than the threshold:
 * prev's kernel stack, taken in sched_switch, so it ends in __schedule
 * under the call that gave up the CPU (schedule, cond_resched, ...),
 * unless prev is the idle task. One `struct held_record` per such
 * wake-up goes into `held`, keyed by CPU and expiry, for user space to
 * take when it processes the sample. An LRU hash: records no sample
 * claims (a sample lost on the way) age out, and the map never fills. */

/* Frames kept per stack: the timer interrupt's own ~8 frames, then the
 * interrupted context; deeper stacks are cut (user space says so). */
#define HELD_DEPTH 48

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, 2048);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, HELD_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* The episode threshold in ns (0: no stacks). */
const volatile __u64 stack_threshold = 0;

/* Per CPU: what the watched hrtimer's callback saw. */
struct cpu_held {
    __u64 expires;     /* the expiry it belongs to */
    __s32 irq_pid;     /* the interrupted task, 0: idle */
    __s32 irq_stack;   /* its stack id when the callback was late, else -1 */
    char irq_comm[16]; /* its comm when the stack was taken, else "" */
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct cpu_held);
} cpu_held SEC(".maps");

/* By CPU, watched thread and expiry: the threads of `run --priorities`
 * share their CPU's expiries. */
struct held_key {
    __u32 cpu;
    __u32 tid;
    __u64 expires;
};

/* One late wake-up's stacks; platform::bpf::HeldRecord parses it. */
struct held_record {
    __u64 expires;      /*  0 */
    __u64 switch_in;    /*  8 */
    __s32 irq_pid;      /* 16: interrupted at the expiry, -1: unknown */
    __s32 irq_stack;    /* 20: stack id, -1: none */
    __s32 prev_pid;     /* 24: the task our thread replaced */
    __s32 yield_stack;  /* 28: its stack id at __schedule, -1: none */
    char irq_comm[16];  /* 32 */
    char prev_comm[16]; /* 48 */
};

_Static_assert(sizeof(struct held_record) == 64, "struct held_record is 64 bytes");

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 1024);
    __type(key, struct held_key);
    __type(value, struct held_record);
} held SEC(".maps");

/* counters[0]: stacks the stack map refused (its slot for that stack's
 * hash held another stack: full, in effect); [1]: other failures. */
#define C_STACK_FULL 0
#define C_STACK_FAILED 1

static __always_inline __s32 held_stack(void *ctx)
{
    long id = bpf_get_stackid(ctx, &stacks, 0);
    if (id >= 0)
        return (__s32)id;
    count(id == -17 /* EEXIST */ ? C_STACK_FULL : C_STACK_FAILED);
    return -1;
}

/* In the watched hrtimer's callback (`now`: its expire_entry's now). */
static __always_inline void held_at_callback(void *ctx, struct thread_timer *s, __u64 now)
{
    __u32 zero = 0;
    struct cpu_held *h = bpf_map_lookup_elem(&cpu_held, &zero);
    if (!h)
        return;
    h->expires = s->expires;
    h->irq_pid = (__s32)bpf_get_current_pid_tgid();
    h->irq_stack = -1;
    h->irq_comm[0] = 0;
    if (now > s->expires && now - s->expires > stack_threshold) {
        h->irq_stack = held_stack(ctx);
        bpf_get_current_comm(h->irq_comm, sizeof(h->irq_comm));
    }
}

/* At the watched thread's switch-in (sched_switch, prev -> it). */
static __always_inline void held_at_switch_in(void *ctx, struct thread_timer *s,
                                              struct task_struct *prev, __u32 cpu, __u64 now)
{
    if (now <= s->expires || now - s->expires <= stack_threshold)
        return;
    struct held_key k = {.cpu = cpu, .tid = s->tid, .expires = s->expires};
    struct held_record r = {};
    r.expires = s->expires;
    r.switch_in = now;
    r.irq_pid = -1;
    r.irq_stack = -1;
    __u32 zero = 0;
    struct cpu_held *h = bpf_map_lookup_elem(&cpu_held, &zero);
    if (h && h->expires == s->expires) {
        r.irq_pid = h->irq_pid;
        r.irq_stack = h->irq_stack;
        __builtin_memcpy(r.irq_comm, h->irq_comm, sizeof(r.irq_comm));
    }
    r.prev_pid = prev->pid;
    r.yield_stack = -1;
    copy_comm(r.prev_comm, prev->comm);
    if (r.prev_pid != 0)
        r.yield_stack = held_stack(ctx);
    bpf_map_update_elem(&held, &k, &r, BPF_ANY);
}

/* ---- The programs: one per tracepoint. ---- */

/* sched_switch's prev_state as the tracepoint reports it
 * (__trace_sched_switch_state in include/trace/events/sched.h): the
 * reportable state as one bit, TASK_REPORT_MAX (0x100) when preempted. */
static __always_inline __s64 switch_state(bool preempt, unsigned int prev_state, int exit_state)
{
    if (preempt)
        return 0x100; /* TASK_REPORT_MAX */
    unsigned int state = ((unsigned int)prev_state | (unsigned int)exit_state) & 0x7f; /* TASK_REPORT */
    if ((prev_state & 0x402) == 0x402) /* TASK_IDLE */
        state = 0x80;                  /* TASK_REPORT_IDLE */
    if (prev_state & (0x1000 | 0x8000)) /* TASK_RTLOCK_WAIT, TASK_FROZEN */
        state = 0x2;                    /* TASK_UNINTERRUPTIBLE */
    /* 1 << (fls(state) - 1): the highest set bit. */
    if (state == 0)
        return 0;
    return (__s64)(1ULL << (31 - hdr_clz64((unsigned long long)state << 32)));
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u64 now = bpf_ktime_get_ns();
    __u32 ring = traced(cpu);
    __s32 next_pid = next->pid;
    if (ring) {
        __u64 seq;
        struct rec *r = rec_begin(ring, K_SWITCH, now, &seq);
        if (r) {
            __s32 prev_pid = prev->pid;
            r->aux = r->tid == -1;
            r->tid = prev_pid;
            r->state = (__u16)switch_state(preempt, prev_state, prev->exit_state);
            r->sw.next_pid = next_pid;
            r->sw.prev_prio = (__s16)prev->prio;
            r->sw.next_prio = (__s16)next->prio;
            copy_comm(r->sw.prev_comm, prev->comm);
            copy_comm(r->sw.next_comm, next->comm);
            rec_end(r, seq);
        }
    }

    /* The timer decomposition: our thread's switch-in after its callback. */
    struct cpu_timer *s = timer_state();
    struct thread_timer *w = (s && next_pid != 0) ? slot_of(s, (__u32)next_pid) : NULL;
    if (!w) {
        flush_pending();
        if (diag_level == 0 && warm_on)
            warm_rings(ring, cpu);
    }
    /* Only the switch-in after our callback: a thread preempted between
     * arming its timer and sleeping is switched in before it. */
    if (!s || !w || w->callback_time == 0 || w->hrtimer == 0)
        return 0;
    sample_write(s, w, cpu, now);
    if (stack_threshold)
        held_at_switch_in(ctx, w, prev, cpu, now);
    /* One record per arming: the next wake-up needs a new hrtimer_start. */
    w->hrtimer = 0;
    w->callback_now = 0;
    w->callback_time = 0;
    return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking, struct task_struct *p)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    if (elide_own) {
        struct cpu_timer *s = timer_state();
        if (s && p->pid != 0 && slot_of(s, (__u32)p->pid))
            return 0;
    }
    __u64 seq;
    struct rec *r = rec_begin(ring, K_WAKING, bpf_ktime_get_ns(), &seq);
    if (!r)
        return 0;
    r->wk.pid = p->pid;
    r->wk.prio = p->prio;
    r->wk.target_cpu = (__s32)p->thread_info.cpu;
    r->wk.pad = 0;
    copy_comm(r->wk.comm, p->comm);
    rec_end(r, seq);
    return 0;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(on_hrtimer_start, struct hrtimer *timer, int mode, bool was_armed)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __s64 expires = timer->node.expires;
    __u32 ring = traced(cpu);
    if (ring) {
        __u64 seq;
        struct rec *r = rec_begin(ring, K_HRTIMER_START, bpf_ktime_get_ns(), &seq);
        if (r) {
            r->ht.hrtimer = (__u64)timer;
            r->ht.function = (__u64)timer->function;
            r->ht.expires = expires;
            r->ht.softexpires = timer->_softexpires;
            rec_end(r, seq);
        }
    }

    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct cpu_timer *s = timer_state();
    __u32 zero = 0;
    __u64 *gen = bpf_map_lookup_elem(&watch_gen, &zero);
    if (!s || !gen || tid == 0)
        return 0;
    if (tid == s->not_tid && s->not_gen == *gen)
        return 0;
    struct thread_timer *w = slot_of(s, tid);
    if (!w) {
        if (!bpf_map_lookup_elem(&watched, &tid)) {
            s->not_tid = tid;
            s->not_gen = *gen;
            return 0;
        }
        /* A free slot, or (more watched threads than slots, or those of
         * an earlier cell) the one this tid hashes to. */
        w = slot_of(s, 0);
        if (!w)
            w = &s->t[tid & (TIMER_SLOTS - 1)];
        w->tid = tid;
    }
    w->hrtimer = (__u64)timer;
    w->expires = (__u64)expires;
    w->callback_now = 0;
    w->callback_time = 0;
    if (steal_on) {
        steal_addr_of(s, timer, cpu);
        w->steal_arm = steal_read(s);
        w->steal_cb = w->steal_arm;
    }
    return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_expire_entry, struct hrtimer *timer, ktime_t *now)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    ktime_t n = 0;
    bpf_probe_read_kernel(&n, sizeof(n), now);
    __u64 time = bpf_ktime_get_ns();
    __u32 traced_ring = traced(cpu);
    __u32 ring = traced_ring;
    if (elide_own) {
        struct cpu_timer *o = timer_state();
        if (o && slot_of_timer(o, (__u64)timer))
            ring = 0;
    }
    if (traced_ring) {
        __u64 function = (__u64)timer->function;
        __u64 seq;
        struct rec *r = rec_begin(ring, K_HRTIMER_EXPIRE_ENTRY, time, &seq);
        if (r) {
            r->ht.hrtimer = (__u64)timer;
            r->ht.function = function;
            r->ht.expires = n;
            r->ht.softexpires = 0;
            rec_end(r, seq);
        }
        /* Every callback's run time, our thread's own hrtimer_wakeup too,
         * as work.rs counts them: a few stores here, the histogram update
         * after the switch (deferred_add). */
        struct cpu_work *w = deferred_off ? NULL : work_state();
        if (w) {
            __u64 context = work_context(w);
            callback_begin(&w->hrtimer[context == HARDIRQ_CONTEXT ? 0 : 1], time, (__u64)timer,
                           function, context);
        }
    }

    struct cpu_timer *s = timer_state();
    struct thread_timer *w = s ? slot_of_timer(s, (__u64)timer) : NULL;
    if (!s || !w)
        return 0;
    w->callback_now = (__u64)n;
    w->callback_time = time;
    if (stack_threshold)
        held_at_callback(ctx, w, (__u64)n);
    if (steal_on)
        w->steal_cb = steal_read(s);
    return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_hrtimer_expire_exit, struct hrtimer *timer)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    struct cpu_work *w = deferred_off ? NULL : work_state();
    if (w)
        callback_end(w, &w->hrtimer[work_context(w) == HARDIRQ_CONTEXT ? 0 : 1], D_HRTIMER,
                     (__u64)timer, now);
    if (elide_own) {
        struct cpu_timer *s = timer_state();
        if (s && slot_of_timer(s, (__u64)timer))
            return 0;
    }
    __u64 seq;
    struct rec *r = rec_begin(ring, K_HRTIMER_EXPIRE_EXIT, now, &seq);
    if (!r)
        return 0;
    r->ht.hrtimer = (__u64)timer;
    rec_end(r, seq);
    return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_handler_entry, int irq, struct irqaction *action)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, K_IRQ_ENTRY, now, &seq);
    if (r) {
        r->irq.irq = irq;
        r->irq.ret = 0;
        __builtin_memset(r->irq.name, 0, sizeof(r->irq.name));
        const char *name = BPF_CORE_READ(action, name);
        if (name)
            bpf_probe_read_kernel_str(r->irq.name, sizeof(r->irq.name), name);
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (w) {
        w->irq = irq;
        w->irq_start = now;
    }
    return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_handler_exit, int irq, struct irqaction *action, int ret)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, K_IRQ_EXIT, now, &seq);
    if (r) {
        r->irq.irq = irq;
        r->irq.ret = ret;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (w && w->irq_start) {
        __u64 start = w->irq_start;
        w->irq_start = 0;
        if (w->irq == irq && now >= start)
            hist_add(H_IRQ_EXEC, (__u64)(__s64)irq, now - start);
    }
    return 0;
}

static __always_inline int on_softirq(__u8 kind, unsigned int vec)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, kind, now, &seq);
    if (r) {
        r->raw[0] = vec;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (!w)
        return 0;
    /* The mask after an opaque copy, so the verifier sees an index in
     * 0..15 (clang would otherwise reuse `vec`, bounded only by a 32-bit
     * compare the verifier does not carry over). */
    __u32 v = vec;
    asm volatile("" : "+r"(v));
    v &= 15;
    if (kind == K_SOFTIRQ_RAISE) {
        if (vec < 16 && w->raised[v] == 0)
            w->raised[v] = now;
    } else if (kind == K_SOFTIRQ_ENTRY) {
        w->softirq_vec = vec;
        w->softirq_start = now;
        if (vec < 16 && w->raised[v]) {
            __u64 raised = w->raised[v];
            w->raised[v] = 0;
            if (now >= raised)
                defer_softirq(w, H_SOFTIRQ_DELAY, vec, now - raised);
        }
    } else if (w->softirq_start) {
        __u64 start = w->softirq_start;
        w->softirq_start = 0;
        if (w->softirq_vec == vec && now >= start)
            defer_softirq(w, H_SOFTIRQ_EXEC, vec, now - start);
    }
    return 0;
}

SEC("tp_btf/softirq_raise")
int BPF_PROG(on_softirq_raise, unsigned int vec)
{
    return on_softirq(K_SOFTIRQ_RAISE, vec);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry, unsigned int vec)
{
    return on_softirq(K_SOFTIRQ_ENTRY, vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit, unsigned int vec)
{
    return on_softirq(K_SOFTIRQ_EXIT, vec);
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(on_nmi_handler, void *handler, __s64 delta_ns, int handled)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 seq;
    struct rec *r = rec_begin(ring, K_NMI, bpf_ktime_get_ns(), &seq);
    if (r) {
        r->nmi.handler = (__u64)handler;
        r->nmi.delta_ns = delta_ns;
        r->nmi.handled = handled;
        rec_end(r, seq);
    }
    if (hist_on && delta_ns >= 0)
        hist_add(H_NMI, 0, (__u64)delta_ns);
    return 0;
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(on_workqueue_execute_start, struct work_struct *work)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 function = (__u64)work->func;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, K_WORK_START, now, &seq);
    if (r) {
        r->wq.work = (__u64)work;
        r->wq.function = function;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (w) {
        w->work_function = function;
        w->work_start = now;
    }
    return 0;
}

/* A raw tracepoint, not tp_btf: the verifier refuses a BTF program's read
 * of an argument that points to a function (work_func_t), and the raw
 * tracepoint's arguments are plain u64s (the same values). */
SEC("raw_tp/workqueue_execute_end")
int BPF_PROG(on_workqueue_execute_end, struct work_struct *work, void *function)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, K_WORK_END, now, &seq);
    if (r) {
        r->wq.work = (__u64)work;
        r->wq.function = (__u64)function;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (w && w->work_start) {
        __u64 start = w->work_start;
        w->work_start = 0;
        if (w->work_function == (__u64)function && now >= start)
            hist_add(H_WORK, (__u64)function, now - start);
    }
    return 0;
}

/* ---- Deferred work inside softirqs (deferred_add): timer-wheel
 * callbacks, tasklets, NAPI polls. ---- */

/* A timer-wheel callback or tasklet event: its record, and its run time
 * begun or ended. */
static __always_inline int on_callback(__u8 kind, __u32 dkind, bool entry, __u64 object,
                                       __u64 function)
{
    __u32 ring = traced(bpf_get_smp_processor_id());
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, kind, now, &seq);
    if (r) {
        r->dw.object = object;
        r->dw.function = function;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (!w)
        return 0;
    struct running *run = dkind == D_TIMER ? &w->timer : &w->tasklet;
    if (entry)
        callback_begin(run, now, object, function, work_context(w));
    else
        callback_end(w, run, dkind, object, now);
    return 0;
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(on_timer_expire_entry, struct timer_list *timer, unsigned long baseclk)
{
    EMPTY_FLOOR();
    return on_callback(K_TIMER_ENTRY, D_TIMER, true, (__u64)timer, (__u64)timer->function);
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(on_timer_expire_exit, struct timer_list *timer)
{
    EMPTY_FLOOR();
    return on_callback(K_TIMER_EXIT, D_TIMER, false, (__u64)timer, 0);
}

SEC("tp_btf/tasklet_entry")
int BPF_PROG(on_tasklet_entry, void *tasklet, void *func)
{
    EMPTY_FLOOR();
    return on_callback(K_TASKLET_ENTRY, D_TASKLET, true, (__u64)tasklet, (__u64)func);
}

SEC("tp_btf/tasklet_exit")
int BPF_PROG(on_tasklet_exit, void *tasklet, void *func)
{
    EMPTY_FLOOR();
    return on_callback(K_TASKLET_EXIT, D_TASKLET, false, (__u64)tasklet, (__u64)func);
}

/* napi_struct -> its device's name at first sight, for user space to name
 * the NAPI histograms (their source is the napi_struct). Bounded: a full
 * map names no more instances, whose times user space counts as "other". */
struct napi_name {
    char name[16];
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u64);
    __type(value, struct napi_name);
} napi_names SEC(".maps");

/* The device name as the napi_poll tracepoint reports it (dev_name in
 * include/trace/events/napi.h): napi->dev->name, "(no_device)" without a
 * device (the per-CPU backlog that loopback and netif_rx traffic uses). */
static __always_inline void napi_dev_name(char *dst, struct napi_struct *napi)
{
    struct net_device *dev = napi->dev;
    if (dev) {
        copy_comm(dst, dev->name);
        return;
    }
    const char none[16] = "(no_device)";
#pragma unroll
    for (int i = 0; i < 16; i++)
        dst[i] = none[i];
}

/* Enters the instance's name in `napi_names` unless this CPU did lately:
 * its last NAPI_SEEN instances, compared one by one (the verifier allows
 * no arithmetic on the pointer that would hash it), spare the hash on
 * every poll. */
static __always_inline void name_napi(struct cpu_work *w, __u64 napi, const char *name)
{
#pragma unroll
    for (int i = 0; i < NAPI_SEEN; i++)
        if (w->napi_seen[i] == napi)
            return;
    struct napi_name n;
    copy_comm(n.name, name);
    /* Fails when the key is there (another CPU named it) or the map is full. */
    bpf_map_update_elem(&napi_names, &napi, &n, BPF_NOEXIST);
    __u64 k = w->napi_next;
    w->napi_seen[k & (NAPI_SEEN - 1)] = napi;
    w->napi_next = k + 1;
}

/* napi_poll fires when one instance's poll returns, with no entry event:
 * its run time is from the NET_RX softirq's entry, or from the previous
 * poll on this CPU in the same run if that was later, as work.rs derives
 * it. Polls outside NET_RX (busy polling, threaded NAPI) are recorded but
 * not timed. */
SEC("tp_btf/napi_poll")
int BPF_PROG(on_napi_poll, struct napi_struct *napi, int work, int budget)
{
    EMPTY_FLOOR();
    __u32 ring = traced(bpf_get_smp_processor_id());
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    char dev[16];
    napi_dev_name(dev, napi);
    __u64 seq;
    struct rec *r = rec_begin(ring, K_NAPI_POLL, now, &seq);
    if (r) {
        r->np.napi = (__u64)napi;
        r->np.work = work;
        r->np.budget = budget;
        copy_comm(r->np.dev, dev);
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (!w)
        return 0;
    __u64 start = w->softirq_start;
    __u64 last = w->napi_last;
    w->napi_last = now;
    if (!start || w->softirq_vec != NET_RX_SOFTIRQ)
        return 0;
    if (last > start)
        start = last;
    if (now < start)
        return 0;
    name_napi(w, (__u64)napi, dev);
    deferred_add(w, D_NAPI, NET_RX_SOFTIRQ, (__u64)napi, now - start);
    return 0;
}

static __always_inline int on_vector(__u8 index, int vector, bool entry)
{
    EMPTY_FLOOR();
    __u32 cpu = bpf_get_smp_processor_id();
    __u32 ring = traced(cpu);
    if (!ring)
        return 0;
    __u64 now = bpf_ktime_get_ns();
    __u64 seq;
    struct rec *r = rec_begin(ring, entry ? K_VECTOR_ENTRY : K_VECTOR_EXIT, now, &seq);
    if (r) {
        r->aux = index;
        r->irq.irq = vector;
        rec_end(r, seq);
    }
    struct cpu_work *w = work_state();
    if (!w)
        return 0;
    if (entry) {
        w->vec_index = index;
        w->vec_start = now;
    } else if (w->vec_start) {
        __u64 start = w->vec_start;
        w->vec_start = 0;
        if (w->vec_index == index && now >= start)
            defer_vector(w, index, now - start);
    }
    return 0;
}

#define VECTOR(index, name)                                                                        \
    SEC("tp_btf/" #name "_entry")                                                                  \
    int BPF_PROG(on_##name##_entry, int vector)                                                    \
    {                                                                                              \
        return on_vector(index, vector, true);                                                     \
    }                                                                                              \
    SEC("tp_btf/" #name "_exit")                                                                   \
    int BPF_PROG(on_##name##_exit, int vector)                                                     \
    {                                                                                              \
        return on_vector(index, vector, false);                                                    \
    }
#include "vectors.h"
#undef VECTOR

