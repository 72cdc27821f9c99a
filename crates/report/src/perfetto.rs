//! One episode's event window as a Chrome / Perfetto trace (the JSON "Trace
//! Event Format"), for `latscope export --format perfetto`: open the file in
//! ui.perfetto.dev or chrome://tracing and see what ran on the CPU while our
//! thread waited.
//!
//! Layout: one process per CPU ("CPU n"), and in it one track ("thread")
//! per kind of activity: the episode itself (its latency split into irq,
//! sched and return, with markers at the intended expiry and the wake-up),
//! the running task (from `sched_switch`), hard IRQ handlers, interrupt
//! vectors, softirqs, hrtimer callbacks, workqueue items, and instants
//! (`hrtimer_start`, `hrtimer_expire_entry`, `sched_waking`, NMIs, raises).
//!
//! Every slice is a complete ("X") event with a non-negative duration, so
//! the file never has an unbalanced begin or end: a slice whose start lies
//! before the window begins at the window's start (or where the previous
//! slice on its track ended), one still open at the end of the window ends
//! there, and either case is flagged in the slice's args. Slices on a track
//! always nest properly. Times are microseconds (floating, so nanoseconds
//! survive) from the window's start, which `otherData` gives in
//! CLOCK_MONOTONIC nanoseconds.

use std::collections::{BTreeMap, HashMap};

use latscope_model::{Episode, EpisodeWindow, Nanos, RunId, WindowEvent};
use serde_json::{json, Map, Value};

/// The tracks of one CPU, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Track {
    Episode = 0,
    Task = 1,
    Irq = 2,
    Vector = 3,
    Softirq = 4,
    Hrtimer = 5,
    Workqueue = 6,
    Events = 7,
    Deferred = 8,
}

const TRACKS: [(Track, &str); 9] = [
    (Track::Episode, "episode"),
    (Track::Task, "running task"),
    (Track::Irq, "hard IRQ handlers"),
    (Track::Vector, "IRQ vectors"),
    (Track::Softirq, "softirqs"),
    (Track::Hrtimer, "hrtimer callbacks"),
    (Track::Workqueue, "workqueue items"),
    (Track::Events, "events"),
    (Track::Deferred, "timer callbacks and tasklets"),
];

/// The viewer's pid for a CPU's process: CPU + 1, since some importers
/// treat pid 0 as the kernel's idle task.
fn cpu_pid(cpu: u32) -> u64 {
    u64::from(cpu) + 1
}

/// Track ids are unique over the whole file (some importers key threads
/// by tid alone).
fn track_tid(cpu: u32, track: Track) -> u64 {
    cpu_pid(cpu) * 100 + track as u64
}

/// The tracepoint's name without its subsystem ("irq:softirq_entry").
fn event_name(e: &WindowEvent) -> &str {
    e.event.rsplit(':').next().unwrap_or(&e.event)
}

/// What an event does to the slices.
enum Action {
    Begin {
        track: Track,
        key: String,
        name: String,
        args: Value,
    },
    End {
        track: Track,
        key: String,
        name: String,
    },
    Switch,
    Instant {
        name: String,
        args: Value,
    },
}

fn classify(e: &WindowEvent) -> Action {
    let ev = event_name(e);
    let named = |fallback: &str| {
        if e.name.is_empty() {
            fallback.to_string()
        } else {
            e.name.clone()
        }
    };
    match ev {
        "sched_switch" => Action::Switch,
        "irq_handler_entry" => Action::Begin {
            track: Track::Irq,
            key: e.pid.to_string(),
            name: format!("irq {}: {}", e.pid, named("?")),
            args: json!({ "irq": e.pid }),
        },
        "irq_handler_exit" => Action::End {
            track: Track::Irq,
            key: e.pid.to_string(),
            name: format!("irq {}: {}", e.pid, named("?")),
        },
        "softirq_entry" => Action::Begin {
            track: Track::Softirq,
            key: e.pid.to_string(),
            name: named(&format!("vec {}", e.pid)),
            args: json!({ "vec": e.pid }),
        },
        "softirq_exit" => Action::End {
            track: Track::Softirq,
            key: e.pid.to_string(),
            name: named(&format!("vec {}", e.pid)),
        },
        "softirq_raise" => Action::Instant {
            name: format!("raise {}", named(&format!("vec {}", e.pid))),
            args: json!({ "vec": e.pid }),
        },
        "hrtimer_expire_entry" => Action::Begin {
            track: Track::Hrtimer,
            key: e.object.to_string(),
            name: named("hrtimer"),
            args: json!({ "hrtimer": format!("{:#x}", e.object), "now_ns": e.value }),
        },
        "hrtimer_expire_exit" => Action::End {
            track: Track::Hrtimer,
            key: e.object.to_string(),
            name: named("hrtimer"),
        },
        "hrtimer_start" => Action::Instant {
            name: format!("hrtimer_start {}", named(""))
                .trim_end()
                .to_string(),
            args: json!({ "hrtimer": format!("{:#x}", e.object), "expires_ns": e.value }),
        },
        "sched_waking" => Action::Instant {
            name: format!("waking {} ({})", named("?"), e.pid),
            args: json!({ "pid": e.pid, "prio": e.prio }),
        },
        "nmi_handler" | "nmi" => Action::Instant {
            name: format!("NMI {}", named("")).trim_end().to_string(),
            args: json!({ "handler": e.name, "delta_ns": e.value }),
        },
        "workqueue_execute_start" => Action::Begin {
            track: Track::Workqueue,
            key: e.object.to_string(),
            name: named("work"),
            args: json!({ "work": format!("{:#x}", e.object) }),
        },
        "workqueue_execute_end" => Action::End {
            track: Track::Workqueue,
            key: e.object.to_string(),
            name: named("work"),
        },
        "timer_expire_entry" | "tasklet_entry" => Action::Begin {
            track: Track::Deferred,
            key: e.object.to_string(),
            name: named(ev.trim_end_matches("_entry")),
            args: json!({ "object": format!("{:#x}", e.object) }),
        },
        "timer_expire_exit" | "tasklet_exit" => Action::End {
            track: Track::Deferred,
            key: e.object.to_string(),
            name: named(ev.trim_end_matches("_exit")),
        },
        "napi_poll" => Action::Instant {
            name: format!("napi_poll {} ({} of {})", named("?"), e.pid, e.prio),
            args: json!({ "napi": format!("{:#x}", e.object), "work": e.pid, "budget": e.prio }),
        },
        other => {
            // irq_vectors: "<vector>_entry" / "<vector>_exit" (the vector
            // also in `name` when the tracer set it).
            if let Some(stem) = other.strip_suffix("_entry") {
                let name = named(stem);
                Action::Begin {
                    track: Track::Vector,
                    key: name.clone(),
                    name,
                    args: json!({ "vector": e.pid }),
                }
            } else if let Some(stem) = other.strip_suffix("_exit") {
                let name = named(stem);
                Action::End {
                    track: Track::Vector,
                    key: name.clone(),
                    name,
                }
            } else {
                Action::Instant {
                    name: if e.name.is_empty() {
                        other.to_string()
                    } else {
                        format!("{other} {}", e.name)
                    },
                    args: json!({ "pid": e.pid, "value": e.value }),
                }
            }
        }
    }
}

struct Open {
    key: String,
    name: String,
    start: u64,
    args: Value,
}

/// Builds the trace's events; times are nanoseconds until `finish`.
struct Builder {
    origin: u64,
    end: u64,
    /// (ts_ns, order, event): metadata first, then by time, enclosing
    /// slices before the slices they contain.
    events: Vec<(u64, u8, u64, Value)>,
    open: BTreeMap<(u32, Track), Vec<Open>>,
    /// Where the last closed slice of each track ended.
    cursor: BTreeMap<(u32, Track), u64>,
    cpus: BTreeMap<u32, Vec<Track>>,
}

impl Builder {
    fn us(&self, t: u64) -> f64 {
        t.saturating_sub(self.origin) as f64 / 1_000.0
    }

    fn used(&mut self, cpu: u32, track: Track) {
        let tracks = self.cpus.entry(cpu).or_default();
        if !tracks.contains(&track) {
            tracks.push(track);
        }
    }

    fn slice(&mut self, cpu: u32, track: Track, name: &str, start: u64, end: u64, args: Value) {
        let start = start.clamp(self.origin, self.end);
        let end = end.clamp(start, self.end);
        self.used(cpu, track);
        let c = self.cursor.entry((cpu, track)).or_insert(0);
        *c = (*c).max(end);
        let cat = match track {
            Track::Episode => "latscope",
            Track::Task => "sched",
            Track::Irq | Track::Vector => "irq",
            Track::Softirq => "softirq",
            Track::Hrtimer | Track::Deferred => "timer",
            Track::Workqueue => "workqueue",
            Track::Events => "event",
        };
        let ev = json!({
            "name": name,
            "cat": cat,
            "ph": "X",
            "ts": self.us(start),
            "dur": end.saturating_sub(start) as f64 / 1_000.0,
            "pid": cpu_pid(cpu),
            "tid": track_tid(cpu, track),
            "args": args,
        });
        // Longer slices first at equal start: a parent precedes its child.
        self.events
            .push((start, 1, u64::MAX - end.saturating_sub(start), ev));
    }

    fn instant(&mut self, cpu: u32, track: Track, name: &str, t: u64, args: Value) {
        let t = t.clamp(self.origin, self.end);
        self.used(cpu, track);
        let ev = json!({
            "name": name,
            "cat": "event",
            "ph": "i",
            "s": "t",
            "ts": self.us(t),
            "pid": cpu_pid(cpu),
            "tid": track_tid(cpu, track),
            "args": args,
        });
        self.events.push((t, 2, 0, ev));
    }

    fn begin(&mut self, cpu: u32, track: Track, key: String, name: String, t: u64, args: Value) {
        self.open.entry((cpu, track)).or_default().push(Open {
            key,
            name,
            start: t,
            args,
        });
    }

    fn close(&mut self, cpu: u32, track: Track, o: Open, t: u64, note: Option<&str>) {
        let mut args = o.args;
        if let (Some(note), Some(map)) = (note, args.as_object_mut()) {
            map.insert(note.to_string(), Value::Bool(true));
        }
        self.slice(cpu, track, &o.name, o.start, t, args);
    }

    fn end(&mut self, cpu: u32, track: Track, key: &str, name: String, t: u64) {
        let stack = self.open.entry((cpu, track)).or_default();
        if let Some(pos) = stack.iter().rposition(|o| o.key == key) {
            // Close what was opened inside it (their ends were not seen),
            // then it.
            let mut inner: Vec<Open> = stack.drain(pos..).collect();
            let this = inner.remove(0);
            for o in inner.into_iter().rev() {
                self.close(cpu, track, o, t, Some("end_not_seen"));
            }
            self.close(cpu, track, this, t, None);
        } else {
            // Began before the window (or its start was lost): it began no
            // earlier than the last slice here ended, and inside whatever
            // is still open.
            let parent = stack.last().map_or(self.origin, |o| o.start);
            let after = self.cursor.get(&(cpu, track)).copied().unwrap_or(0);
            let start = parent.max(after).max(self.origin).min(t);
            let args = json!({ "start_not_seen": true });
            self.slice(cpu, track, &name, start, t, args);
        }
    }

    /// Ends every slice still open at the end of the window.
    fn close_all(&mut self) {
        let open = std::mem::take(&mut self.open);
        let end = self.end;
        for ((cpu, track), stack) in open {
            for o in stack.into_iter().rev() {
                self.close(cpu, track, o, end, Some("end_not_seen"));
            }
        }
    }
}

fn task_name(tid: i32, names: &HashMap<i32, String>) -> String {
    if tid == 0 {
        return "idle".to_string();
    }
    match names.get(&tid) {
        Some(n) => format!("{n} ({tid})"),
        None => format!("task {tid}"),
    }
}

/// The Chrome / Perfetto trace of one episode and its event window.
pub fn perfetto_trace(run: RunId, episode: &Episode, window: &EpisodeWindow) -> Value {
    let expiry = episode.expiry_ns.0;
    let wake = expiry.saturating_add(episode.latency_ns.0);
    let mut events: Vec<&WindowEvent> = window.events.iter().collect();
    events.sort_by_key(|e| e.time_ns);
    let origin = events.first().map_or(expiry, |e| e.time_ns.min(expiry));
    let end = events.last().map_or(wake, |e| e.time_ns.max(wake));
    let mut b = Builder {
        origin,
        end,
        events: Vec::new(),
        open: BTreeMap::new(),
        cursor: BTreeMap::new(),
        cpus: BTreeMap::new(),
    };
    episode_slices(&mut b, episode);
    let names = task_names(&events);
    window_slices(&mut b, &events, window.cpu.0, &names);
    b.close_all();
    b.used(episode.cpu.0, Track::Episode);
    let mut trace_events = metadata(&b);
    let mut body = std::mem::take(&mut b.events);
    body.sort_by_key(|(t, order, rank, _)| (*t, *order, *rank));
    trace_events.extend(body.into_iter().map(|(_, _, _, v)| v));
    json!({
        "traceEvents": trace_events,
        "displayTimeUnit": "ns",
        "otherData": other_data(run, episode, window, origin),
    })
}

/// The episode on its CPU's episode track: its latency, split into its
/// three phases, and the instants of the intended expiry and the wake-up.
fn episode_slices(b: &mut Builder, episode: &Episode) {
    let expiry = episode.expiry_ns.0;
    let wake = expiry.saturating_add(episode.latency_ns.0);
    let ep_cpu = episode.cpu.0;
    let bd = &episode.breakdown;
    let causes: Vec<Value> = bd
        .causes
        .iter()
        .map(|c| {
            json!({
                "kind": c.kind.as_str(),
                "name": c.name,
                "pid": c.pid,
                "duration_ns": c.duration_ns.0,
            })
        })
        .collect();
    let mut args = json!({
        "latency_ns": episode.latency_ns.0,
        "irq_ns": bd.irq_ns.0,
        "sched_ns": bd.sched_ns.0,
        "return_ns": bd.return_ns.0,
        "idle_at_expiry": bd.idle_at_expiry,
        "complete": bd.complete,
        "unexplained_ns": bd.unexplained_ns.0,
        "causes": causes,
    });
    crate::held::held_args(episode, &mut args);
    crate::steal::steal_args(bd, &mut args);
    b.slice(
        ep_cpu,
        Track::Episode,
        &format!(
            "episode {}: {} {}",
            episode.seq, episode.metric, episode.latency_ns
        ),
        expiry,
        wake,
        args,
    );
    let mut t = expiry;
    for (name, d) in [
        ("irq", bd.irq_ns),
        ("sched", bd.sched_ns),
        ("return", bd.return_ns),
    ] {
        let next = t.saturating_add(d.0).min(wake);
        if next > t {
            b.slice(
                ep_cpu,
                Track::Episode,
                &format!("{name} {}", Nanos(next - t)),
                t,
                next,
                json!({ "duration_ns": d.0 }),
            );
        }
        t = next;
    }
    b.instant(
        ep_cpu,
        Track::Episode,
        "intended expiry",
        expiry,
        json!({ "expiry_ns": expiry }),
    );
    b.instant(
        ep_cpu,
        Track::Episode,
        "wake-up (user code runs)",
        wake,
        json!({ "latency_ns": episode.latency_ns.0 }),
    );
}

/// Task names from the events that carry them.
fn task_names(events: &[&WindowEvent]) -> HashMap<i32, String> {
    let mut names: HashMap<i32, String> = HashMap::new();
    for e in events {
        let ev = event_name(e);
        if (ev == "sched_switch" || ev == "sched_waking") && !e.name.is_empty() {
            names.entry(e.pid).or_insert_with(|| e.name.clone());
        }
    }
    names
}

/// The running task on the window's CPU (`win_cpu`): from the window's
/// start, whoever was current at its first event. (Other CPUs appear only
/// through the few events recorded there, e.g. a wake-up.) Then every
/// event's slice or instant.
fn window_slices(
    b: &mut Builder,
    events: &[&WindowEvent],
    win_cpu: u32,
    names: &HashMap<i32, String>,
) {
    let (origin, end) = (b.origin, b.end);
    let mut running: Option<(i32, u64, Option<i32>)> = None;
    for e in events {
        let cpu = e.cpu;
        if cpu == win_cpu && running.is_none() {
            running = Some((e.tid, origin, None));
        }
        match classify(e) {
            Action::Switch if cpu == win_cpu => {
                // prev_pid, or the task current when the event was recorded
                // (the same task) if the tracer left it out.
                let prev = if e.value != 0 {
                    i32::try_from(e.value).unwrap_or(e.tid)
                } else {
                    e.tid
                };
                let since = running.map_or(origin, |(_, since, _)| since);
                let prio = running.and_then(|(_, _, prio)| prio);
                // A switch at the window's first instant (or two switches
                // at once, when one in between was lost) shows nothing.
                if e.time_ns > since {
                    b.slice(
                        cpu,
                        Track::Task,
                        &task_name(prev, names),
                        since,
                        e.time_ns,
                        json!({ "tid": prev, "prio": prio }),
                    );
                }
                running = Some((e.pid, e.time_ns, Some(e.prio)));
            }
            Action::Switch => b.instant(
                cpu,
                Track::Events,
                &format!("switch to {}", task_name(e.pid, names)),
                e.time_ns,
                json!({ "prev_pid": e.value, "next_pid": e.pid, "next_prio": e.prio }),
            ),
            Action::Begin {
                track,
                key,
                name,
                args,
            } => {
                b.begin(cpu, track, key, name, e.time_ns, args);
                if track == Track::Hrtimer {
                    b.instant(
                        cpu,
                        Track::Events,
                        format!("hrtimer_expire_entry {}", e.name).trim_end(),
                        e.time_ns,
                        json!({ "hrtimer": format!("{:#x}", e.object), "now_ns": e.value }),
                    );
                }
            }
            Action::End { track, key, name } => b.end(cpu, track, &key, name, e.time_ns),
            Action::Instant { name, args } => b.instant(cpu, Track::Events, &name, e.time_ns, args),
        }
    }
    if let Some((tid, since, prio)) = running {
        b.slice(
            win_cpu,
            Track::Task,
            &task_name(tid, names),
            since,
            end,
            json!({ "tid": tid, "prio": prio, "end_not_seen": true }),
        );
    }
}

/// Metadata: name the processes (CPUs) and tracks, in order.
fn metadata(b: &Builder) -> Vec<Value> {
    let mut meta = Vec::new();
    for (cpu, used) in &b.cpus {
        meta.push(json!({
            "name": "process_name", "ph": "M", "ts": 0, "pid": cpu_pid(*cpu), "tid": track_tid(*cpu, Track::Episode),
            "args": { "name": format!("CPU {cpu}") },
        }));
        meta.push(json!({
            "name": "process_sort_index", "ph": "M", "ts": 0, "pid": cpu_pid(*cpu), "tid": track_tid(*cpu, Track::Episode),
            "args": { "sort_index": cpu },
        }));
        for (track, label) in TRACKS {
            if !used.contains(&track) {
                continue;
            }
            meta.push(json!({
                "name": "thread_name", "ph": "M", "ts": 0, "pid": cpu_pid(*cpu), "tid": track_tid(*cpu, track),
                "args": { "name": label },
            }));
            meta.push(json!({
                "name": "thread_sort_index", "ph": "M", "ts": 0, "pid": cpu_pid(*cpu), "tid": track_tid(*cpu, track),
                "args": { "sort_index": track as u64 },
            }));
        }
    }
    meta
}

/// The trace's `otherData`: what it is of, as strings.
fn other_data(run: RunId, episode: &Episode, window: &EpisodeWindow, origin: u64) -> Value {
    let ep_cpu = episode.cpu.0;
    let mut other = Map::new();
    other.insert("source".into(), json!("latscope"));
    other.insert("run".into(), json!(run.0.to_string()));
    other.insert("episode".into(), json!(episode.seq.to_string()));
    other.insert("cpu".into(), json!(ep_cpu.to_string()));
    other.insert("metric".into(), json!(episode.metric));
    other.insert("latency_ns".into(), json!(episode.latency_ns.0.to_string()));
    other.insert("origin_monotonic_ns".into(), json!(origin.to_string()));
    other.insert(
        "window_events".into(),
        json!(window.events.len().to_string()),
    );
    other.insert(
        "window_truncated".into(),
        json!(window.truncated.to_string()),
    );
    Value::Object(other)
}
