//! The programs loaded and attached through aya, and the flight recorder
//! read through its own read-only mmap (aya maps no array; see the module
//! docs of `bpf` for the record ordering this reader relies on).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use aya::maps::{Array, HashMap, Map, MapData, PerCpuArray, PerCpuHashMap};
use aya::programs::Program;
use aya::{Btf, Ebpf, EbpfLoader};

use super::groups::{attached_optional_groups, attached_required_groups, Group};
use super::mapping::Mapping;
use super::rows::Rows;
use super::steal::StealCounter;
use super::{
    BpfConfig, BpfCounters, BpfHistBucket, BpfHistKind, BpfHistTotal, RecordedEvent, RecorderRead,
    TimerRecord, MAX_HIST_ROWS, RECORD_BYTES, SAMPLE_SLOTS, TIMER_RECORD_BYTES,
};
use crate::error::PlatformError;

const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/timer.bpf.o"));

/// `struct rec_head`: one cache line per ring.
const HEAD_BYTES: usize = 64;
/// `struct timer_record`: a slot of a sample ring (seq, then the record).
const SAMPLE_SLOT_BYTES: usize = 64;

fn err(what: &str) -> impl Fn(String) -> PlatformError + '_ {
    move |e| PlatformError::Invalid(format!("BPF: {what}: {e}"))
}

/// `struct hist_key` of the programs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct HistKey {
    kind: u32,
    index: u32,
    source: u64,
}

/// Counters per histogram key: `struct hist_chunk` of the programs, the
/// counts of `HIST_CHUNK` consecutive HDR indices (the key's index is the
/// first one's divided by it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct HistChunk([u64; HIST_CHUNK]);

const HIST_CHUNK: usize = 16;

/// The per-CPU copies of one total, summed; `None` when none counted.
fn sum_cpus(kind: BpfHistKind, source: u64, values: &[HistTotal]) -> Option<BpfHistTotal> {
    let mut t = BpfHistTotal::empty(kind, source);
    for v in values.iter().filter(|v| v.count > 0) {
        t.add(v.count, v.sum, v.min, v.max);
    }
    (t.count > 0).then_some(t)
}

/// `struct hist_total` of the programs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct HistTotal {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

// SAFETY: both are #[repr(C)], made of integers only with no padding
// (4 + 4 + 8 and 4 × 8 bytes), so every bit pattern is a valid value and
// they can be copied to and from the kernel's bytes.
unsafe impl aya::Pod for HistKey {}
// SAFETY: #[repr(C)] array of integers: no padding, every bit pattern valid.
unsafe impl aya::Pod for HistChunk {}
// SAFETY: as above.
unsafe impl aya::Pod for HistTotal {}

/// What reading one slot found.
enum Slot {
    /// The record, copied whole.
    Read,
    /// Claimed by a writer that has not published it yet.
    Pending,
    /// Already overwritten by a later record (or during the copy).
    Overwritten,
}

/// Rings of sequence-numbered slots, mapped: the flight recorder's, and
/// the sample rings.
struct Recorder {
    records: Mapping,
    heads: Mapping,
    slots: u64,
    /// Bytes per slot.
    slot_bytes: usize,
    /// `cpus[r]` is the CPU of ring r.
    cpus: Vec<u32>,
}

impl Recorder {
    fn ring_of(&self, cpu: u32) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }

    fn head(&self, ring: usize) -> u64 {
        self.heads.load_u64(ring * HEAD_BYTES, Ordering::Acquire)
    }

    /// Copies record `n` of `ring` (its first `words` u64s) into `buf`.
    fn read(&self, ring: usize, n: u64, buf: &mut [u8; RECORD_BYTES], words: usize) -> Slot {
        let slot = (ring as u64) * self.slots + (n & (self.slots - 1));
        let offset = slot as usize * self.slot_bytes;
        let want = n + 1;
        let s1 = self.records.load_u64(offset, Ordering::Acquire);
        if s1 < want {
            return Slot::Pending;
        }
        if s1 > want {
            return Slot::Overwritten;
        }
        self.records.copy_words(offset, buf, words);
        // The copy's loads may not move below the second sequence load.
        fence(Ordering::Acquire);
        if self.records.load_u64(offset, Ordering::Relaxed) != want {
            return Slot::Overwritten;
        }
        Slot::Read
    }
}

/// How many records around a window's ends [`TraceBpf::recorder_window`]
/// reads past the first one out of range: two nested programs (an
/// interrupt's inside a tracepoint's) can publish neighbours a little out
/// of time order.
pub const WINDOW_DISORDER: u64 = 8;

/// The BPF backend's kernel half, loaded and attached (see the module
/// docs of `bpf`).
pub struct TraceBpf {
    pub(super) ebpf: Ebpf,
    samples: Recorder,
    /// Per sample ring: the next record to read.
    sample_next: Vec<u64>,
    /// Sample records overwritten before they were read.
    samples_lost: u64,
    /// Every ring's head at the last [`TraceBpf::fill_since_last`]: the
    /// sample rings', then the recorder's.
    fill_marks: Vec<u64>,
    recorder: Option<Recorder>,
    /// The frequent kinds' histogram rows and totals.
    rows: Rows,
    missing: Vec<String>,
    attached: Vec<String>,
    /// The steal counter the programs read per wake-up, if any.
    steal: Option<StealCounter>,
}

/// Loads and attaches every program of `g`; the first failure says which.
/// Most are BTF tracepoints; one is a raw tracepoint (see the C file).
fn attach_group(ebpf: &mut Ebpf, btf: &Btf, g: &Group) -> Result<(), String> {
    for (program, tracepoint) in g {
        match ebpf.program_mut(program) {
            Some(Program::BtfTracePoint(p)) => p.load(tracepoint, btf),
            Some(Program::RawTracePoint(p)) => p.load(),
            Some(_) => return Err(format!("{program}: not a tracepoint program")),
            None => return Err(format!("no program {program}")),
        }
        .map_err(|e| format!("{tracepoint}: {e}"))?;
    }
    for (program, tracepoint) in g {
        match ebpf.program_mut(program) {
            Some(Program::BtfTracePoint(p)) => p.attach().map(|_| ()),
            Some(Program::RawTracePoint(p)) => p.attach(tracepoint).map(|_| ()),
            Some(_) => return Err(format!("{program}: not a tracepoint program")),
            None => return Err(format!("no program {program}")),
        }
        .map_err(|e| format!("{tracepoint}: {e}"))?;
    }
    Ok(())
}

fn map_fd<'a>(ebpf: &'a Ebpf, name: &str) -> Result<BorrowedFd<'a>, PlatformError> {
    match ebpf.map(name) {
        Some(Map::Array(data)) => Ok(data.fd().as_fd()),
        Some(_) => Err(err("the object")(format!("map '{name}' is not an array"))),
        None => Err(err("the object")(format!("no map '{name}'"))),
    }
}

/// Fills the cpu -> ring map `name` (an array over the possible CPUs): the
/// CPU `cpus[r]` gets 1 + r, the programs' "ring r" (0 stays "none").
fn number_rings(ebpf: &mut Ebpf, name: &str, cpus: &[u32]) -> Result<(), PlatformError> {
    let map = ebpf
        .map_mut(name)
        .ok_or_else(|| err("the object")(format!("no map '{name}'")))?;
    let mut rings: Array<_, u32> =
        Array::try_from(map).map_err(|e| err("an array map")(format!("'{name}': {e}")))?;
    for (ring, &cpu) in (1u32..).zip(cpus) {
        rings
            .set(cpu, ring, 0)
            .map_err(|e| err("numbering the rings")(format!("'{name}': {e}")))?;
    }
    Ok(())
}

/// The sizes of the maps, from the configuration.
struct Sizes {
    /// CPUs the kernel may have.
    possible: u32,
    /// The traced CPUs, each once, in the order given.
    cpus: Vec<u32>,
    /// Records per recorder ring, rings (one per traced CPU, at least
    /// one), and records in all.
    slots: u32,
    rings: u32,
    records: u32,
    hist_rows: u32,
    /// Sample rings for the recorded CPUs, or for every CPU when only the
    /// decomposition runs (the watched threads may be anywhere).
    sample_cpus: Vec<u32>,
    sample_rings: u32,
    sample_records: u32,
}

impl Sizes {
    fn of(config: &BpfConfig) -> Result<Sizes, PlatformError> {
        let possible = aya::util::nr_cpus()
            .map_err(|(what, e)| err("counting the possible CPUs")(format!("{what}: {e}")))?;
        let possible = u32::try_from(possible)
            .map_err(|_| err("counting the possible CPUs")("too many".into()))?;
        let mut cpus: Vec<u32> = Vec::with_capacity(config.cpus.len());
        for &cpu in &config.cpus {
            if cpu >= possible || cpu > u32::from(u16::MAX) {
                return Err(err("tracing CPUs")(format!(
                    "CPU {cpu} does not exist ({possible} possible)"
                )));
            }
            if !cpus.contains(&cpu) {
                cpus.push(cpu);
            }
        }
        let slots = config.recorder_slots;
        if slots != 0 && !slots.is_power_of_two() {
            return Err(err("the recorder")(format!(
                "{slots} slots per CPU is not a power of two"
            )));
        }
        let rings = u32::try_from(cpus.len().max(1))
            .map_err(|_| err("the recorder")("too many CPUs".into()))?;
        let records = rings
            .checked_mul(slots.max(1))
            .filter(|&n| usize::try_from(n).is_ok_and(|n| n.checked_mul(RECORD_BYTES).is_some()))
            .ok_or_else(|| {
                err("the recorder")(format!("{slots} slots × {rings} CPUs is too big"))
            })?;
        let sample_cpus: Vec<u32> = if cpus.is_empty() {
            (0..possible).collect()
        } else {
            cpus.clone()
        };
        let sample_rings = u32::try_from(sample_cpus.len())
            .map_err(|_| err("the sample rings")("too many CPUs".into()))?;
        let sample_records = sample_rings
            .checked_mul(SAMPLE_SLOTS)
            .ok_or_else(|| err("the sample rings")("too many CPUs".into()))?;
        Ok(Sizes {
            possible,
            cpus,
            slots,
            rings,
            records,
            hist_rows: config.hist_rows.clamp(1, MAX_HIST_ROWS),
            sample_cpus,
            sample_rings,
            sample_records,
        })
    }
}

/// The programs' switches (their read-only globals), from the
/// configuration, the kernel and the `LATSCOPE_BPF_DIAG` diagnostics of
/// bench/bpf-prog-cost.sh.
struct Switches {
    diag: String,
    hist_on: u32,
    softirq_deferred: u32,
    diag_level: u32,
    warm_on: u32,
    kernel_slots: u32,
    elide_own: u32,
    deferred_off: u32,
    steal: Option<super::steal::StealLocation>,
    stack_threshold: u64,
}

impl Switches {
    fn of(config: &BpfConfig, slots: u32) -> Switches {
        let diag = std::env::var("LATSCOPE_BPF_DIAG").unwrap_or_default();
        // Softirq times wait for the next switch like vector times, except
        // on PREEMPT_RT, where softirqs are preemptible (timer.bpf.c,
        // defer_softirq); an RT kernel has /sys/kernel/realtime = 1.
        let rt = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
        // `new-off`: all three parts issue 34 added (deferred work by
        // function, steal time, episode stacks) off at once, to weigh them
        // together against the backend as it was before them.
        let new_off = diag == "new-off";
        Switches {
            // `hist-off`: the programs without the interrupt and work
            // histograms, to weigh what they cost.
            hist_on: u32::from(config.histograms && diag != "hist-off"),
            // `softirq-at-once` compares deferring softirq times with not.
            softirq_deferred: u32::from(!rt && diag != "softirq-at-once"),
            // What the programs cost with only the recorder, stopping at
            // their first check, or returning at once (`empty`: the
            // kernel's price for calling them; timer.bpf.c, diag_level).
            diag_level: match diag.as_str() {
                "recorder" => 1,
                "attached" => 2,
                "empty" => 3,
                _ => 0,
            },
            // `warm-on`: sched_switch warms the next wake-up's cache lines
            // (timer.bpf.c, warm_rings; off by default: it bought nothing
            // measurable).
            warm_on: u32::from(diag == "warm-on"),
            // `recorder-off`: the programs write no flight-recorder records
            // (the maps keep their sizes; episodes then have empty
            // windows), to weigh what the records cost on the wake-up path.
            kernel_slots: if diag == "recorder-off" { 0 } else { slots },
            // `elide-own`: no records of the measured thread's own timer
            // expiry, callback exit and wake-up (timer.bpf.c, elide_own).
            elide_own: u32::from(diag == "elide-own"),
            // `deferred-off`: no deferred work by function and device (its
            // programs unattached, groups.rs; timer.bpf.c, deferred_off).
            deferred_off: u32::from(diag == "deferred-off" || new_off),
            // The per-wake-up steal counter (steal.rs; timer.bpf.c,
            // steal_on); `steal-off` leaves it unread, to weigh what
            // reading it costs.
            steal: std::fs::read("/sys/kernel/btf/vmlinux")
                .ok()
                .and_then(|b| super::steal::locate(&b))
                .filter(|_| diag != "steal-off" && !new_off),
            // `stacks-off`: no episode stacks (timer.bpf.c, "The code that
            // held the CPU"), to weigh what they cost.
            stack_threshold: if diag == "stacks-off" || new_off {
                0
            } else {
                config.stack_threshold_ns
            },
            diag,
        }
    }
}

/// Loads the object with its maps sized and its switches set.
fn load(sizes: &Sizes, sw: &Switches) -> Result<Ebpf, PlatformError> {
    let object = OBJECT.to_vec();
    let (rings, hist_rows) = (sizes.rings, sizes.hist_rows);
    let steal_on = u32::from(sw.steal.is_some());
    let steal_delta = sw.steal.map_or(0, |l| l.delta);
    EbpfLoader::new()
        .set_max_entries("recorder", sizes.records)
        .set_max_entries("rec_heads", rings)
        .set_max_entries("traced_cpus", sizes.possible)
        .set_max_entries("samples", sizes.sample_records)
        .set_max_entries("sample_heads", sizes.sample_rings)
        .set_max_entries("sample_rings", sizes.possible)
        .set_max_entries("row_tables", rings * 2)
        .set_max_entries("hist_rows", rings * 2 * hist_rows)
        .set_global("rec_slots", &sw.kernel_slots, true)
        .set_global("sample_slots", &SAMPLE_SLOTS, true)
        .set_global("hist_on", &sw.hist_on, true)
        .set_global("softirq_deferred", &sw.softirq_deferred, true)
        .set_global("diag_level", &sw.diag_level, true)
        .set_global("warm_on", &sw.warm_on, true)
        .set_global("elide_own", &sw.elide_own, true)
        .set_global("deferred_off", &sw.deferred_off, true)
        .set_global("steal_on", &steal_on, true)
        .set_global("steal_delta", &steal_delta, true)
        .set_global("rows_per_table", &hist_rows, true)
        .set_global("stack_threshold", &sw.stack_threshold, true)
        .load(&object)
        .map_err(|e| err("loading")(e.to_string()))
}

impl TraceBpf {
    /// The object's one-element-or-more array map `name`.
    fn array<T: aya::Pod>(&mut self, name: &str) -> Result<Array<&mut MapData, T>, PlatformError> {
        let map = self
            .ebpf
            .map_mut(name)
            .ok_or_else(|| err("the object")(format!("no map '{name}'")))?;
        Array::try_from(map).map_err(|e| err("an array map")(format!("'{name}': {e}")))
    }

    /// Loads the programs with the recorder sized for `config`, watches
    /// `config.tids`, marks `config.cpus` as traced, and attaches: always
    /// `sched_switch`, `hrtimer_start` and `hrtimer_expire_entry` (failing
    /// if one cannot be), and with `cpus` every other tracepoint this
    /// kernel has ([`TraceBpf::missing`] lists the others).
    pub fn open(config: &BpfConfig) -> Result<TraceBpf, PlatformError> {
        let sizes = Sizes::of(config)?;
        let switches = Switches::of(config, sizes.slots);
        // The object is parsed from an owned copy: ELF parsing wants its
        // sections aligned, which an embedded byte string is not.
        if !crate::caps::may_load_bpf() {
            return Err(PlatformError::Invalid(
                "BPF: permission denied (needs root, or CAP_BPF and CAP_PERFMON)".to_string(),
            ));
        }
        let mut ebpf = load(&sizes, &switches)?;
        let btf = Btf::from_sys_fs().map_err(|e| err("reading the kernel's BTF")(e.to_string()))?;
        number_rings(&mut ebpf, "traced_cpus", &sizes.cpus)?;
        number_rings(&mut ebpf, "sample_rings", &sizes.sample_cpus)?;
        let samples = Recorder {
            records: Mapping::read_only(
                map_fd(&ebpf, "samples")?,
                sizes.sample_records as usize * SAMPLE_SLOT_BYTES,
                "the sample rings",
            )?,
            heads: Mapping::read_only(
                map_fd(&ebpf, "sample_heads")?,
                sizes.sample_rings as usize * HEAD_BYTES,
                "the sample rings' heads",
            )?,
            slots: u64::from(SAMPLE_SLOTS),
            slot_bytes: SAMPLE_SLOT_BYTES,
            cpus: sizes.sample_cpus.clone(),
        };
        let recorder = if sizes.slots > 0 && !sizes.cpus.is_empty() {
            let len = sizes.records as usize * RECORD_BYTES;
            Some(Recorder {
                records: Mapping::read_only(map_fd(&ebpf, "recorder")?, len, "the recorder")?,
                heads: Mapping::read_only(
                    map_fd(&ebpf, "rec_heads")?,
                    sizes.rings as usize * HEAD_BYTES,
                    "the recorder's heads",
                )?,
                slots: u64::from(sizes.slots),
                slot_bytes: RECORD_BYTES,
                cpus: sizes.cpus.clone(),
            })
        } else {
            None
        };
        let rows = Rows::map(
            map_fd(&ebpf, "row_tables")?,
            map_fd(&ebpf, "hist_rows")?,
            sizes.rings as usize,
            sizes.hist_rows as usize,
        )?;
        let mut bpf = TraceBpf {
            steal: switches.steal.map(|l| l.counter),
            ebpf,
            rows,
            sample_next: vec![0; samples.cpus.len()],
            samples,
            samples_lost: 0,
            fill_marks: Vec::new(),
            recorder,
            missing: Vec::new(),
            attached: Vec::new(),
        };
        bpf.watch(&config.tids)?;
        bpf.attach(&btf, &switches.diag, !sizes.cpus.is_empty())?;
        Ok(bpf)
    }

    /// Attaches the required groups of programs (failing if one cannot be)
    /// and, with traced CPUs, every optional group this kernel has.
    fn attach(&mut self, btf: &Btf, diag: &str, traced: bool) -> Result<(), PlatformError> {
        for g in attached_required_groups(diag) {
            attach_group(&mut self.ebpf, btf, &g).map_err(|e| err("attaching")(e))?;
            self.attached.extend(g.into_iter().map(|(p, _)| p));
        }
        if traced {
            for g in attached_optional_groups(diag) {
                if attach_group(&mut self.ebpf, btf, &g).is_ok() {
                    self.attached.extend(g.into_iter().map(|(p, _)| p));
                } else {
                    self.missing.extend(g.into_iter().map(|(_, t)| t));
                }
            }
        }
        Ok(())
    }

    /// Follows these threads' wake-ups too (the timer decomposition).
    pub fn watch(&mut self, tids: &[u32]) -> Result<(), PlatformError> {
        let map = self
            .ebpf
            .map_mut("watched")
            .ok_or_else(|| err("the object")("no map 'watched'".into()))?;
        let mut watched: HashMap<_, u32, u32> =
            HashMap::try_from(map).map_err(|e| err("map 'watched'")(e.to_string()))?;
        for &tid in tids {
            watched
                .insert(tid, 1, 0)
                .map_err(|e| err("watching a thread")(e.to_string()))?;
        }
        // The programs cache a CPU's last unwatched thread; a new
        // generation makes them look again.
        let mut gen = self.array::<u64>("watch_gen")?;
        let next = gen
            .get(&0, 0)
            .map_err(|e| err("map 'watch_gen'")(e.to_string()))?
            .wrapping_add(1);
        gen.set(0, next, 0)
            .map_err(|e| err("map 'watch_gen'")(e.to_string()))?;
        Ok(())
    }

    /// Tracepoints not attached because this kernel lacks them (or one of
    /// their group), by name (`threshold_apic_entry`, ...).
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// The steal counter each [`TimerRecord`]'s steal figures come from
    /// (`None`: the kernel has none the programs can read; they are 0).
    pub fn steal_counter(&self) -> Option<StealCounter> {
        self.steal
    }

    /// Appends every timer record written since the last call to `out`
    /// (ring by ring, oldest first in each); returns how many. Records
    /// overwritten before they were read are counted
    /// ([`BpfCounters::samples_dropped`]). Never blocks.
    pub fn drain_samples(&mut self, out: &mut Vec<TimerRecord>) -> usize {
        let before = out.len();
        let mut buf = [0u8; RECORD_BYTES];
        for ring in 0..self.samples.cpus.len() {
            let head = self.samples.head(ring);
            let mut n = self.sample_next[ring];
            if head.saturating_sub(n) > self.samples.slots {
                let skip = head - self.samples.slots;
                self.samples_lost += skip - n;
                n = skip;
            }
            while n < head {
                match self.samples.read(ring, n, &mut buf, SAMPLE_SLOT_BYTES / 8) {
                    Slot::Read => {
                        if let Some(r) = TimerRecord::parse(&buf[8..8 + TIMER_RECORD_BYTES]) {
                            out.push(r);
                        }
                    }
                    Slot::Pending => break,
                    Slot::Overwritten => self.samples_lost += 1,
                }
                n += 1;
            }
            self.sample_next[ring] = n;
        }
        out.len() - before
    }

    /// [`TraceBpf::drain_samples`], by its first name.
    pub fn drain(&mut self, out: &mut Vec<TimerRecord>) -> usize {
        self.drain_samples(out)
    }

    /// The largest share of one ring (a sample ring or a recorder ring)
    /// written since the previous call, 0 on the first: how near a reader
    /// that calls this at each read came to having records overwritten
    /// before it read them. Loads only the heads.
    pub fn fill_since_last(&mut self) -> f64 {
        let rec_rings = self.recorder.as_ref().map_or(0, |r| r.cpus.len());
        let n = self.samples.cpus.len() + rec_rings;
        let first = self.fill_marks.len() != n;
        if first {
            self.fill_marks = vec![0; n];
        }
        let mut fill = 0f64;
        let rings = (0..self.samples.cpus.len())
            .map(|r| (&self.samples, r))
            .chain(
                self.recorder
                    .iter()
                    .flat_map(|rec| (0..rec.cpus.len()).map(move |r| (rec, r))),
            );
        for ((ring, r), mark) in rings.zip(self.fill_marks.iter_mut()) {
            let head = ring.head(r);
            if !first {
                fill = fill.max(head.saturating_sub(*mark) as f64 / ring.slots as f64);
            }
            *mark = head;
        }
        fill
    }

    /// The programs' counters, summed over CPUs.
    pub fn counters(&self) -> Result<BpfCounters, PlatformError> {
        let map = self
            .ebpf
            .map("counters")
            .ok_or_else(|| err("the object")("no map 'counters'".into()))?;
        let counters: PerCpuArray<_, u64> =
            PerCpuArray::try_from(map).map_err(|e| err("map 'counters'")(e.to_string()))?;
        let sum = |i: u32| -> Result<u64, PlatformError> {
            Ok(counters
                .get(&i, 0)
                .map_err(|e| err("reading the counters")(e.to_string()))?
                .iter()
                .sum())
        };
        Ok(BpfCounters {
            samples_sent: (0..self.samples.cpus.len())
                .map(|r| self.samples.head(r))
                .sum(),
            samples_dropped: self.samples_lost,
            // The rings' heads count what was written (claimed slots).
            recorded: self
                .recorder
                .as_ref()
                .map_or(0, |rec| (0..rec.cpus.len()).map(|r| rec.head(r)).sum()),
            hist_dropped: sum(3)?,
            stacks_full: sum(0)?,
            stacks_failed: sum(1)?,
        })
    }

    /// How many records `cpu`'s ring has had (the sequence number the next
    /// one will get); `None` when `cpu` is not recorded. A follower that
    /// wants only what comes next starts [`TraceBpf::recorder_since`] here.
    pub fn recorder_head(&self, cpu: u32) -> Option<u64> {
        let rec = self.recorder.as_ref()?;
        rec.ring_of(cpu).map(|r| rec.head(r))
    }

    /// Appends to `out`, oldest first, every event of `cpu` with time in
    /// `from_time..=to_time` that the ring still holds and that was not
    /// overwritten while copied. Allocates nothing but `out`'s growth.
    ///
    /// The window's start is found by bisection over the ring's sequence
    /// numbers, along which times rise (but for the neighbours two nested
    /// programs can leave a little out of order, [`WINDOW_DISORDER`]), and
    /// the copy stops after `to_time`: a window costs what it holds, not
    /// the whole backlog between it and the ring's head, which made a
    /// tracer that had fallen behind (a flood of episodes) slower the
    /// further behind it was.
    pub fn recorder_window(
        &self,
        cpu: u32,
        from_time: u64,
        to_time: u64,
        out: &mut Vec<RecordedEvent>,
    ) -> RecorderRead {
        let Some((rec, ring)) = self
            .recorder
            .as_ref()
            .and_then(|r| r.ring_of(cpu).map(|i| (r, i)))
        else {
            return RecorderRead::default();
        };
        let mut buf = [0u8; RECORD_BYTES];
        let head = rec.head(ring);
        let oldest = head.saturating_sub(rec.slots);
        let time = |buf: &[u8; RECORD_BYTES]| {
            u64::from_ne_bytes([
                buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], buf[14], buf[15],
            ])
        };
        // The first record at or after from_time, reading only (seq, time):
        // records the writer has lapped count as older, those not yet
        // published as newer.
        let (mut lo, mut hi) = (oldest, head);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match rec.read(ring, mid, &mut buf, 2) {
                Slot::Read if time(&buf) < from_time => lo = mid + 1,
                Slot::Read | Slot::Pending => hi = mid,
                Slot::Overwritten => lo = mid + 1,
            }
        }
        // The ring still held an event older than the window: nothing of
        // the window's start was lost to the writer.
        let older_seen = lo > oldest
            && matches!(rec.read(ring, lo - 1, &mut buf, 2), Slot::Read)
            && time(&buf) < from_time;
        let before = out.len();
        let mut complete = older_seen;
        let mut beyond = 0;
        for n in lo.saturating_sub(WINDOW_DISORDER).max(oldest)..head {
            match rec.read(ring, n, &mut buf, RECORD_BYTES / 8) {
                Slot::Read => {
                    let Some(ev) = RecordedEvent::parse(&buf, cpu) else {
                        continue;
                    };
                    if ev.time > to_time {
                        beyond += 1;
                        if beyond > WINDOW_DISORDER {
                            break;
                        }
                    } else if ev.time >= from_time {
                        // Out-of-order neighbours on either side are
                        // kept only when in range.
                        out.push(ev);
                    }
                }
                Slot::Pending => break,
                Slot::Overwritten => {
                    if n >= lo {
                        complete = false;
                    }
                }
            }
        }
        RecorderRead {
            complete,
            events: out.len() - before,
        }
    }

    /// For a reader that follows `cpu`'s ring: appends, oldest first, the
    /// records from sequence number `after_seq` on (0: the oldest the ring
    /// holds) up to the newest published one, and returns the sequence
    /// number to pass next time and how many records were overwritten
    /// before they could be read. Allocates nothing but `out`'s growth.
    pub fn recorder_since(
        &self,
        cpu: u32,
        after_seq: u64,
        out: &mut Vec<RecordedEvent>,
    ) -> (u64, u64) {
        let Some((rec, ring)) = self
            .recorder
            .as_ref()
            .and_then(|r| r.ring_of(cpu).map(|i| (r, i)))
        else {
            return (after_seq, 0);
        };
        let mut buf = [0u8; RECORD_BYTES];
        let head = rec.head(ring);
        let mut n = after_seq;
        let mut lost = 0;
        let oldest = head.saturating_sub(rec.slots);
        if n < oldest {
            lost += oldest - n;
            n = oldest;
        }
        while n < head {
            match rec.read(ring, n, &mut buf, RECORD_BYTES / 8) {
                Slot::Read => {
                    if let Some(ev) = RecordedEvent::parse(&buf, cpu) {
                        out.push(ev);
                    }
                }
                Slot::Pending => break,
                Slot::Overwritten => lost += 1,
            }
            n += 1;
        }
        (n, lost)
    }

    /// Drains the histogram set the programs are not writing: appends its
    /// counters and exact totals (summed over CPUs) to `buckets` and
    /// `totals`, deletes them from the kernel's maps, and switches the
    /// programs to the drained set. What the programs add meanwhile goes to
    /// the other set, drained by the next call; so each call returns what
    /// was added up to the previous one, and the caller keeps the sums.
    /// (A set is read only after the programs left it a whole call
    /// interval before, so no update is lost between the read and the
    /// delete.)
    pub fn drain_histograms(
        &mut self,
        buckets: &mut Vec<BpfHistBucket>,
        totals: &mut Vec<BpfHistTotal>,
    ) -> Result<(), PlatformError> {
        let active = self
            .array::<u32>("hist_sel")?
            .get(&0, 0)
            .map_err(|e| err("reading 'hist_sel'")(e.to_string()))?;
        let idle = u32::from(active == 0);
        let (hist_name, totals_name) = if idle == 0 {
            ("hist0", "totals0")
        } else {
            ("hist1", "totals1")
        };
        {
            let map = self
                .ebpf
                .map_mut(hist_name)
                .ok_or_else(|| err("the object")(format!("no map '{hist_name}'")))?;
            let mut hist: PerCpuHashMap<_, HistKey, HistChunk> =
                PerCpuHashMap::try_from(map).map_err(|e| err("a histogram map")(e.to_string()))?;
            let keys: Vec<HistKey> = hist.keys().flatten().collect();
            for key in keys {
                if let (Ok(values), Some(kind)) =
                    (hist.get(&key, 0), BpfHistKind::from_raw(key.kind))
                {
                    for j in 0..HIST_CHUNK {
                        let count = values.iter().fold(0u64, |a, v| a.saturating_add(v.0[j]));
                        if count > 0 {
                            buckets.push(BpfHistBucket {
                                kind,
                                source: key.source,
                                index: key.index.saturating_mul(HIST_CHUNK as u32) + j as u32,
                                count,
                            });
                        }
                    }
                }
                let _ = hist.remove(&key);
            }
        }
        {
            let map = self
                .ebpf
                .map_mut(totals_name)
                .ok_or_else(|| err("the object")(format!("no map '{totals_name}'")))?;
            let mut tot: PerCpuHashMap<_, HistKey, HistTotal> =
                PerCpuHashMap::try_from(map).map_err(|e| err("a totals map")(e.to_string()))?;
            let keys: Vec<HistKey> = tot.keys().flatten().collect();
            for key in keys {
                if let (Ok(values), Some(kind)) =
                    (tot.get(&key, 0), BpfHistKind::from_raw(key.kind))
                {
                    if let Some(t) = sum_cpus(kind, key.source, &values) {
                        totals.push(t);
                    }
                }
                let _ = tot.remove(&key);
            }
        }
        self.rows.drain(idle as usize, buckets, totals);
        self.array::<u32>("hist_sel")?
            .set(0, idle, 0)
            .map_err(|e| err("switching the histogram maps")(e.to_string()))
    }

    /// Each attached program's name, run time (ns) and run count, from its
    /// `bpf_prog_info`. The kernel counts only while BPF statistics are
    /// on ([`enable_bpf_stats`], or `kernel.bpf_stats_enabled = 1`).
    pub fn prog_stats(&self) -> Vec<(String, u64, u64)> {
        let mut out = Vec::with_capacity(self.attached.len());
        for (name, program) in self.ebpf.programs() {
            if !self.attached.iter().any(|a| a == name) {
                continue;
            }
            if let Ok(info) = program.info() {
                let ns = u64::try_from(info.run_time().as_nanos()).unwrap_or(u64::MAX);
                out.push((name.to_string(), ns, info.run_count()));
            }
        }
        out
    }
}

/// Keeps the kernel's BPF run-time statistics on while it lives (the
/// BPF_ENABLE_STATS descriptor: the kernel counts while any is open).
pub struct BpfStatsGuard {
    _fd: OwnedFd,
}

/// Turns on the kernel's per-program run time and count
/// ([`TraceBpf::prog_stats`]) until the guard is dropped. Needs root.
pub fn enable_bpf_stats() -> Result<BpfStatsGuard, PlatformError> {
    aya::sys::enable_stats(aya::sys::Stats::RunTime)
        .map(|fd| BpfStatsGuard { _fd: fd })
        .map_err(|e| err("enabling the BPF run-time statistics")(e.to_string()))
}
