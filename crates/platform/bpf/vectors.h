/* SPDX-License-Identifier: (MIT OR GPL-2.0) */
/*
 * The x86 `irq_vectors` entry/exit tracepoint pairs latscope records, as
 * an X-macro: VECTOR(index, name) for the tracepoints `<name>_entry` and
 * `<name>_exit`. The index is what a recorder record and a histogram key
 * carry; `VECTOR_NAMES` in crates/platform/src/bpf.rs is the same table
 * (a unit test reads this file and compares). Append only: indices are
 * part of the record format. A kernel without one of these pairs leaves
 * it unattached and listed as missing.
 */
VECTOR(0, local_timer)
VECTOR(1, reschedule)
VECTOR(2, call_function)
VECTOR(3, call_function_single)
VECTOR(4, irq_work)
VECTOR(5, x86_platform_ipi)
VECTOR(6, error_apic)
VECTOR(7, spurious_apic)
VECTOR(8, thermal_apic)
VECTOR(9, threshold_apic)
VECTOR(10, deferred_error_apic)
