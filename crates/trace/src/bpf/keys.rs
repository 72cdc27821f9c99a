//! The analysis's [`WorkKey`] for each of the kernel's histograms: IRQs
//! named as `/sys/kernel/irq/N/actions` lists them, vectors by name, and
//! deferred work by context, kind and function or NAPI device, with at most
//! [`MAX_DEFERRED_SOURCES`] distinct sources (the rest in source 0,
//! "(other)").

use std::collections::{HashMap, HashSet};

use latscope_platform::bpf::{BpfDeferredKind, BpfHistKind, TraceBpf};

use crate::analysis::work::{WorkKey, MAX_DEFERRED_SOURCES};
use crate::event::{DeferredKind, NameId, Names};

/// The name interned first in a BPF tracer's [`Names`], so that
/// `NameId(0)`, a NAPI histogram's source 0, reads as the overflow bucket.
pub(super) const OTHER: &str = "(other)";

/// What naming the kernel's histograms remembers between drains.
#[derive(Debug, Default)]
pub(super) struct WorkKeys {
    irq_names: HashMap<i32, NameId>,
    /// NAPI instance → its device name's id; `None`: the kernel has no
    /// name for it (its map was full).
    napi_names: HashMap<u64, Option<NameId>>,
    /// Deferred sources kept one by one so far.
    deferred: HashSet<(u32, DeferredKind, u64)>,
}

fn deferred_kind(kind: BpfDeferredKind) -> DeferredKind {
    match kind {
        BpfDeferredKind::Timer => DeferredKind::Timer,
        BpfDeferredKind::Hrtimer => DeferredKind::Hrtimer,
        BpfDeferredKind::Tasklet => DeferredKind::Tasklet,
        BpfDeferredKind::Napi => DeferredKind::Napi,
    }
}

impl WorkKeys {
    /// The analysis's key for a kernel histogram. IRQ names are read once
    /// per IRQ, NAPI device names once per instance.
    pub(super) fn key(
        &mut self,
        bpf: &TraceBpf,
        names: &mut Names,
        kind: BpfHistKind,
        source: u64,
    ) -> WorkKey {
        match kind {
            BpfHistKind::IrqExec => {
                let irq = source as i32;
                let name = *self
                    .irq_names
                    .entry(irq)
                    .or_insert_with(|| names.intern(&irq_name(irq)));
                WorkKey::IrqExec { irq, name }
            }
            BpfHistKind::VectorExec => WorkKey::VectorExec {
                name: names.intern(latscope_platform::bpf::vector_name(source as u32)),
            },
            BpfHistKind::SoftirqExec => WorkKey::SoftirqExec { vec: source as u32 },
            BpfHistKind::SoftirqDelay => WorkKey::SoftirqDelay { vec: source as u32 },
            BpfHistKind::Nmi => WorkKey::Nmi,
            BpfHistKind::Work => WorkKey::Work { function: source },
            BpfHistKind::Deferred { kind, context } => {
                let kind = deferred_kind(kind);
                let source = if kind == DeferredKind::Napi {
                    self.napi_source(source, |napi| bpf.napi_name(napi), names)
                } else {
                    source
                };
                self.deferred_key(context, kind, source)
            }
        }
    }

    /// A NAPI instance's source: 1 + the id of its device's name (0 is
    /// the overflow bucket, as for functions).
    fn napi_source(
        &mut self,
        napi: u64,
        name_of: impl FnOnce(u64) -> Option<String>,
        names: &mut Names,
    ) -> u64 {
        let id = *self
            .napi_names
            .entry(napi)
            .or_insert_with(|| name_of(napi).map(|n| names.intern(&n)));
        id.map_or(0, |id| u64::from(id.0) + 1)
    }

    /// The key of (context, kind, source), source 0 once
    /// [`MAX_DEFERRED_SOURCES`] others are kept.
    fn deferred_key(&mut self, vec: u32, kind: DeferredKind, source: u64) -> WorkKey {
        let known = self.deferred.contains(&(vec, kind, source));
        let source = if known || source == 0 {
            source
        } else if self.deferred.len() < MAX_DEFERRED_SOURCES {
            self.deferred.insert((vec, kind, source));
            source
        } else {
            0
        };
        WorkKey::Deferred { vec, kind, source }
    }
}

/// An IRQ's handler names as the kernel lists them
/// (`/sys/kernel/irq/N/actions`), as perf's `irq_handler_entry` names it.
fn irq_name(irq: i32) -> String {
    std::fs::read_to_string(format!("/sys/kernel/irq/{irq}/actions"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("irq{irq}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::HARDIRQ_CONTEXT;

    #[test]
    fn sources_past_the_bound_share_source_0_and_known_ones_stay() {
        let mut k = WorkKeys::default();
        for f in 1..=MAX_DEFERRED_SOURCES as u64 {
            let key = k.deferred_key(1, DeferredKind::Timer, f);
            assert_eq!(
                key,
                WorkKey::Deferred {
                    vec: 1,
                    kind: DeferredKind::Timer,
                    source: f
                }
            );
        }
        let over = |k: &mut WorkKeys, vec, source| match k.deferred_key(
            vec,
            DeferredKind::Hrtimer,
            source,
        ) {
            WorkKey::Deferred { source, .. } => source,
            _ => u64::MAX,
        };
        assert_eq!(over(&mut k, HARDIRQ_CONTEXT, 0xffff_1234), 0);
        // A source kept before the bound was reached keeps its own key.
        assert_eq!(
            k.deferred_key(1, DeferredKind::Timer, 7),
            WorkKey::Deferred {
                vec: 1,
                kind: DeferredKind::Timer,
                source: 7
            }
        );
        // The same function in another context is another source.
        assert_eq!(over(&mut k, 8, 7), 0);
    }

    #[test]
    fn napi_instances_are_named_once_and_unnamed_ones_are_other() {
        let mut k = WorkKeys::default();
        let mut names = Names::default();
        assert_eq!(names.intern(OTHER), NameId(0));
        let mut asked = 0;
        let mut ask = |n: u64| {
            asked += 1;
            (n == 0xa).then(|| "(no_device)".to_string())
        };
        let lo = k.napi_source(0xa, &mut ask, &mut names);
        assert_eq!(names.get(NameId(lo as u32 - 1)), "(no_device)");
        assert_eq!(k.napi_source(0xa, &mut ask, &mut names), lo);
        assert_eq!(k.napi_source(0xb, &mut ask, &mut names), 0);
        assert_eq!(k.napi_source(0xb, &mut ask, &mut names), 0);
        assert_eq!(asked, 2);
    }
}
