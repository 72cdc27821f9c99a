// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// latscope's in-kernel timer decomposition (the BPF tracing backend).
//
// For every wake-up of a measuring thread it hands user space one record:
// the expiry its hrtimer was armed for, when the hrtimer's callback ran
// (the `now` the kernel passed it, and the BPF clock at that moment), and
// when the thread was switched in. That is what the perf backend finds by
// reading 6-8 tracepoint records per wake-up; here the kernel keeps the
// state per thread and copies out 48 bytes once.
//
// Matching is the perf analysis's: the hrtimer a watched thread armed
// (hrtimer_start, by its address), that hrtimer's callback
// (hrtimer_expire_entry), then the thread's next switch-in.
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

typedef __s64 ktime_t;

struct timerqueue_node {
    ktime_t expires;
} __attribute__((preserve_access_index));

struct hrtimer {
    struct timerqueue_node node;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
} __attribute__((preserve_access_index));

/* One wake-up of a watched thread, as user space reads it (48 bytes;
 * platform::bpf::TimerRecord has the same layout). */
struct timer_record {
    __u64 expires;       /* the hrtimer's expiry, CLOCK_MONOTONIC ns */
    __u64 callback_now;  /* hrtimer_expire_entry's `now` */
    __u64 callback_time; /* BPF clock (CLOCK_MONOTONIC) in the callback */
    __u64 switch_in;     /* BPF clock when the thread was switched in */
    __u32 tid;
    __u32 cpu;
    __u64 reserved;
};

/* Per watched thread: its armed hrtimer and what has happened since. */
struct thread_state {
    __u64 hrtimer;
    __u64 expires;
    __u64 callback_now;
    __u64 callback_time;
};

/* Threads to follow (tid -> 1), filled by user space before attaching. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, __u32);
} watched SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, struct thread_state);
} threads SEC(".maps");

/* hrtimer address -> the watched thread that armed it. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u64);
    __type(value, __u32);
} timers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} records SEC(".maps");

/* Counters: [0] records sent, [1] records dropped (ring full). */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1;
}

SEC("tp_btf/hrtimer_start")
int BPF_PROG(on_hrtimer_start, struct hrtimer *timer, int mode, bool was_armed)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    if (!bpf_map_lookup_elem(&watched, &tid))
        return 0;
    struct thread_state s = {};
    s.hrtimer = (__u64)timer;
    s.expires = (__u64)BPF_CORE_READ(timer, node.expires);
    bpf_map_update_elem(&threads, &tid, &s, BPF_ANY);
    __u64 key = (__u64)timer;
    bpf_map_update_elem(&timers, &key, &tid, BPF_ANY);
    return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_expire_entry, struct hrtimer *timer, ktime_t *now)
{
    __u64 key = (__u64)timer;
    __u32 *tid = bpf_map_lookup_elem(&timers, &key);
    if (!tid)
        return 0;
    struct thread_state *s = bpf_map_lookup_elem(&threads, tid);
    if (!s || s->hrtimer != key)
        return 0;
    ktime_t n = 0;
    bpf_probe_read_kernel(&n, sizeof(n), now);
    s->callback_now = (__u64)n;
    s->callback_time = bpf_ktime_get_ns();
    return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    __u32 tid = (__u32)BPF_CORE_READ(next, pid);
    struct thread_state *s = bpf_map_lookup_elem(&threads, &tid);
    /* Only the switch-in after our callback: a thread preempted between
     * arming its timer and sleeping is switched in before it. */
    if (!s || s->hrtimer == 0 || s->callback_time == 0)
        return 0;
    struct timer_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
    if (!r) {
        count(1);
        return 0;
    }
    r->expires = s->expires;
    r->callback_now = s->callback_now;
    r->callback_time = s->callback_time;
    r->switch_in = bpf_ktime_get_ns();
    r->tid = tid;
    r->cpu = bpf_get_smp_processor_id();
    r->reserved = 0;
    bpf_ringbuf_submit(r, 0);
    count(0);
    /* One record per arming: the next wake-up needs a new hrtimer_start. */
    __u64 key = s->hrtimer;
    bpf_map_delete_elem(&timers, &key);
    s->hrtimer = 0;
    s->callback_now = 0;
    s->callback_time = 0;
    return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
