//! The deferred work inside an episode's softirq and interrupt shares: the
//! attribution sweep tallies what ran in each frame (timer-wheel and
//! hrtimer callbacks, tasklets, NAPI polls), and each cause gets them as
//! its [`CausePart`]s, so "NET_RX 180 µs" reads "NET_RX 180 µs: napi:eth0
//! 170 µs".

use std::collections::HashMap;

use latscope_model::{Cause, CausePart, Nanos};

use super::Symbolize;
use crate::event::{DeferredKind, NameId, Names};

/// What one deferred frame was: its kind and function address, or for a
/// NAPI poll its device name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PartSource {
    Function(DeferredKind, u64),
    Device(NameId),
}

/// Parts per cause key, with the frames that contributed (to count runs).
pub(crate) struct PartTally<K> {
    parts: HashMap<K, HashMap<PartSource, (u32, u64)>>,
}

impl<K> Default for PartTally<K> {
    fn default() -> Self {
        PartTally {
            parts: HashMap::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> PartTally<K> {
    /// `ns` of `source` inside the cause `key`; `new_run` when this is the
    /// first time this run (frame) is charged.
    pub fn add(&mut self, key: &K, source: PartSource, ns: u64, new_run: bool) {
        let e = self
            .parts
            .entry(key.clone())
            .or_default()
            .entry(source)
            .or_default();
        e.0 += u32::from(new_run);
        e.1 += ns;
    }

    /// The parts of cause `key`, longest first, named; functions as
    /// `kind:0x…` until [`symbolize`] names them.
    pub fn take(&mut self, key: &K, names: &Names) -> Vec<CausePart> {
        let Some(map) = self.parts.remove(key) else {
            return Vec::new();
        };
        let mut list: Vec<CausePart> = map
            .into_iter()
            .filter(|(_, (_, ns))| *ns > 0)
            .map(|(src, (count, ns))| CausePart {
                name: match src {
                    PartSource::Function(kind, f) => format!("{}:{f:#x}", kind.as_str()),
                    PartSource::Device(dev) => format!("napi:{}", names.get(dev)),
                },
                count: count.max(1),
                duration_ns: Nanos(ns),
            })
            .collect();
        sort_parts(&mut list);
        list
    }
}

fn sort_parts(list: &mut [CausePart]) {
    list.sort_by(|a, b| {
        b.duration_ns
            .cmp(&a.duration_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// Replaces the `kind:0x…` addresses of every cause's parts with the
/// kernel's symbol names, merging addresses that name one function.
pub(crate) fn symbolize(causes: &mut [Cause], symbols: &dyn Symbolize) {
    for c in causes.iter_mut().filter(|c| !c.parts.is_empty()) {
        let mut merged: Vec<CausePart> = Vec::with_capacity(c.parts.len());
        for mut p in std::mem::take(&mut c.parts) {
            if let Some(name) = symbolized(&p.name, symbols) {
                p.name = name;
            }
            match merged.iter_mut().find(|m| m.name == p.name) {
                Some(m) => {
                    m.count += p.count;
                    m.duration_ns = Nanos(m.duration_ns.0 + p.duration_ns.0);
                }
                None => merged.push(p),
            }
        }
        sort_parts(&mut merged);
        c.parts = merged;
    }
}

fn symbolized(name: &str, symbols: &dyn Symbolize) -> Option<String> {
    let (kind, addr) = name.split_once(':')?;
    let hex = addr.strip_prefix("0x")?;
    let a = u64::from_str_radix(hex, 16).ok()?;
    let (function, _) = symbols.symbol(a)?;
    Some(format!("{kind}:{function}"))
}
