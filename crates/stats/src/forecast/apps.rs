//! Application presets and their verdicts.
//!
//! [`APP_PRESETS`] is the one table of applications: the study's Table 1
//! (low-latency streaming applications of 1999, with their buffer ranges)
//! and today's cases. Each has a period, a number of buffers, a compute time
//! and a target mean time between misses.
//!
//! Targets follow the study's three tiers (§5.2): one miss per 5–10 minutes
//! for conferencing audio and video (we take the stricter 10 minutes), one per
//! hour for a soft modem (a miss costs a retransmission or a retrain), one
//! per day for high-reliability devices. Today's cases are placed in those
//! tiers as argued in each row's `rationale`.
//!
//! For the Table 1 rows, which give ranges, the nominal scheme is the study's
//! own worked example where there is one (the modem's triple-buffered 6 ms
//! buffers) and otherwise a typical point inside the range; compute is 25 %
//! of the period, the study's deliberately high estimate for the soft-modem
//! datapump, for lack of per-application figures.

use serde::Serialize;

use super::mttf::{BufferScheme, Compute, Mttf};
use super::text::fmt_ns;
use super::{Interval, Measured, Provenance};

/// Where a preset comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Cota-Robles & Held, Table 1.
    Study,
    /// Today's applications.
    Today,
}

/// What one stall costs an application: a stall that holds a wake-up back
/// past the slack makes a run of late deadlines (the coordinated-omission
/// corrected series shows each of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Losses {
    /// One underrun per stall: a buffered stream glitches once (one click,
    /// one dropped or repeated frame, one retransmission) however many
    /// deadlines the stall spans, and then refills. The verdict counts late
    /// wake-ups: each is one cluster of late deadlines.
    PerStall,
    /// Every late deadline is a loss of its own: a control cycle without
    /// output, a fieldbus frame not sent, a radio slot not transmitted.
    /// The verdict counts late deadlines.
    PerDeadline,
}

impl Losses {
    pub fn as_str(self) -> &'static str {
        match self {
            Losses::PerStall => "one underrun per stall",
            Losses::PerDeadline => "every late deadline",
        }
    }
}

/// An application's buffering scheme and its target time between misses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AppPreset {
    /// Stable name for `--app` and JSON.
    pub name: &'static str,
    pub description: &'static str,
    pub origin: Origin,
    /// Buffer length t (the period between deadlines), ns.
    pub period_ns: u64,
    /// Number of buffers n.
    pub buffers: u32,
    /// Compute time per buffer c.
    pub compute: Compute,
    /// Target mean time between misses, seconds.
    pub target_s: f64,
    /// What a stall costs it: the verdict counts stalls or deadlines.
    pub losses: Losses,
    /// The study's typical range of buffer lengths, ns (Table 1 rows).
    pub period_range_ns: Option<(u64, u64)>,
    /// The study's typical range of buffer counts (Table 1 rows).
    pub buffers_range: Option<(u32, u32)>,
    /// Why this scheme and this target.
    pub rationale: &'static str,
}

const MINUTES_10: f64 = 600.0;
const HOUR: f64 = 3600.0;
const DAY: f64 = 86_400.0;
const MS: u64 = 1_000_000;

/// 48 kHz audio buffers of `frames` frames, in ns (rounded).
const fn audio_48k(frames: u64) -> u64 {
    (frames * 1_000_000_000 + 24_000) / 48_000
}

/// Every application preset, in display order.
pub const APP_PRESETS: &[AppPreset] = &[
    AppPreset {
        name: "adsl",
        description: "ADSL datapump (study Table 1)",
        origin: Origin::Study,
        period_ns: 2 * MS,
        buffers: 4,
        compute: Compute::Fraction(0.25),
        losses: Losses::PerStall,
        target_s: HOUR,
        period_range_ns: Some((2 * MS, 4 * MS)),
        buffers_range: Some((2, 6)),
        rationale: "2 ms buffers, 4 of them: 6 ms tolerance, inside the study's 4-10 ms; a datapump like the soft modem, so one miss per hour",
    },
    AppPreset {
        name: "modem",
        description: "soft modem datapump (study Table 1, §5.1)",
        origin: Origin::Study,
        period_ns: 6 * MS,
        buffers: 3,
        compute: Compute::Fraction(0.25),
        losses: Losses::PerStall,
        target_s: HOUR,
        period_range_ns: Some((4 * MS, 16 * MS)),
        buffers_range: Some((2, 6)),
        rationale: "the study's worked example: triple-buffered 6 ms buffers (12 ms of buffering), datapump at 25 % of the CPU; one miss per hour (§5.2)",
    },
    AppPreset {
        name: "rt-audio",
        description: "real-time audio, e.g. conferencing (study Table 1)",
        origin: Origin::Study,
        period_ns: 10 * MS,
        buffers: 4,
        compute: Compute::Fraction(0.25),
        losses: Losses::PerStall,
        target_s: MINUTES_10,
        period_range_ns: Some((8 * MS, 24 * MS)),
        buffers_range: Some((2, 8)),
        rationale: "the study's footnote: 4 buffers are realistic for low-latency audio; 10 ms buffers give 30 ms tolerance; one drop per 5-10 minutes, the stricter end",
    },
    AppPreset {
        name: "rt-video",
        description: "real-time video at 30 fps (study Table 1)",
        origin: Origin::Study,
        period_ns: 33_333_333,
        buffers: 2,
        compute: Compute::Fraction(0.25),
        losses: Losses::PerStall,
        target_s: MINUTES_10,
        period_range_ns: Some((33 * MS, 50 * MS)),
        buffers_range: Some((2, 3)),
        rationale: "30 fps frames, double buffered; video teleconferencing tolerates a dropped frame per 5-10 minutes, the stricter end",
    },
    AppPreset {
        name: "pro-audio-64",
        description: "pro audio, 48 kHz, 64-frame double buffer (1.33 ms)",
        origin: Origin::Today,
        period_ns: audio_48k(64),
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerStall,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "an xrun is an audible click that ruins a take or a live set, so the high-reliability tier (one per day); DSP load up to half the period leaves the usual headroom",
    },
    AppPreset {
        name: "pro-audio-128",
        description: "pro audio, 48 kHz, 128-frame double buffer (2.67 ms)",
        origin: Origin::Today,
        period_ns: audio_48k(128),
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerStall,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "as pro-audio-64, at the most common tracking buffer size",
    },
    AppPreset {
        name: "pro-audio-256",
        description: "pro audio, 48 kHz, 256-frame double buffer (5.33 ms)",
        origin: Origin::Today,
        period_ns: audio_48k(256),
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerStall,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "as pro-audio-64, at a mixing buffer size",
    },
    AppPreset {
        name: "control-1khz",
        description: "1 kHz control loop",
        origin: Origin::Today,
        period_ns: MS,
        buffers: 2,
        compute: Compute::Fraction(0.2),
        losses: Losses::PerDeadline,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "each cycle's output is due by the next cycle (n = 2: slack = t - c); a late cycle disturbs the controlled plant, so the high-reliability tier; 200 µs of control law",
    },
    AppPreset {
        name: "fieldbus-250us",
        description: "fieldbus master at a 250 µs cycle (EtherCAT-style)",
        origin: Origin::Today,
        period_ns: 250_000,
        buffers: 2,
        compute: Compute::Fraction(0.2),
        losses: Losses::PerDeadline,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "the frame for the next cycle must be ready in time; missed frames trip slave watchdogs, so the high-reliability tier; 50 µs to update the process image",
    },
    AppPreset {
        name: "vr-90hz",
        description: "VR frames at 90 Hz (11.1 ms)",
        origin: Origin::Today,
        period_ns: 11_111_111,
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerStall,
        target_s: MINUTES_10,
        period_range_ns: None,
        buffers_range: None,
        rationale: "a missed frame is visible judder that reprojection only partly hides, a recoverable glitch like the study's conferencing tier; the render thread's CPU work takes half the frame",
    },
    AppPreset {
        name: "game-144hz",
        description: "game frames at 144 Hz (6.94 ms)",
        origin: Origin::Today,
        period_ns: 6_944_444,
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerStall,
        target_s: MINUTES_10,
        period_range_ns: None,
        buffers_range: None,
        rationale: "double-buffered vsync: a late frame is a visible stutter, the conferencing tier; game logic and submission take half the frame",
    },
    AppPreset {
        name: "5g-slot",
        description: "5G NR slot of 0.5 ms (30 kHz subcarrier spacing), virtualized RAN",
        origin: Origin::Today,
        period_ns: 500_000,
        buffers: 2,
        compute: Compute::Fraction(0.5),
        losses: Losses::PerDeadline,
        target_s: DAY,
        period_range_ns: None,
        buffers_range: None,
        rationale: "a missed slot loses transport blocks for every user of the cell; vRAN hosts are qualified with day-long latency runs that must stay under budget, the high-reliability tier; L1 processing takes half the slot",
    },
];

impl AppPreset {
    /// A preset by name (case-insensitive).
    pub fn find(name: &str) -> Option<&'static AppPreset> {
        APP_PRESETS
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The preset's buffering scheme.
    pub fn scheme(&self) -> BufferScheme {
        BufferScheme {
            period_ns: self.period_ns,
            buffers: self.buffers,
            compute: self.compute,
        }
    }

    /// `(n − 1)·t − c`.
    pub fn slack_ns(&self) -> i64 {
        self.scheme().slack_ns()
    }
}

/// A summary of the tail fit behind an extrapolated verdict.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TailSummary {
    pub threshold_ns: f64,
    pub exceedances: u64,
    pub shape: f64,
    pub scale_ns: f64,
}

/// What a verdict rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Basis {
    /// Deadlines measured (samples of the per-deadline histogram).
    pub samples: u64,
    /// Measured time, seconds.
    pub duration_s: f64,
    /// Measured deadlines whose latency exceeded the slack.
    pub misses: u64,
    pub provenance: Provenance,
    /// Whether the histogram was coordinated-omission corrected.
    pub per_deadline: bool,
    /// The tail fit, for extrapolated verdicts.
    pub tail: Option<TailSummary>,
}

/// PASS or FAIL for an application on the measured machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub app: String,
    /// The predicted mean time between misses meets the target.
    pub pass: bool,
    /// The target lies outside the MTTF's confidence interval, so more data
    /// would not be expected to change the verdict.
    pub conclusive: bool,
    /// Predicted mean time between misses, seconds.
    pub mttf_s: f64,
    /// `mttf_s` is a lower bound (no miss observed).
    pub lower_bound: bool,
    pub mttf_interval_s: Interval<f64>,
    pub target_s: f64,
    pub slack_ns: i64,
    pub basis: Basis,
    /// One line on how the verdict was reached.
    pub note: String,
}

/// The verdict for `preset` on the distribution its [`Losses`] call for:
/// the per-deadline one ([`Measured::deadlines`]) for
/// [`Losses::PerDeadline`], the wake-ups ([`Measured::wakeups`], one sample
/// per stall) for [`Losses::PerStall`]. The note says which was counted.
///
/// * No miss, and the run's deadlines span the target (`N·t ≥ target`):
///   PASS on the observed lower bound.
/// * Otherwise the MTTF of [`Measured::mttf_extrapolated`] (as the MTTF
///   grid): the data at or below the tail fit's threshold or where they
///   hold at least ten misses, the capped tail model beyond, at most ten
///   runs' worth of deadlines (a lower bound beyond); the
///   observed MTTF when the tail gives no extrapolation and misses were
///   seen; else FAIL and inconclusive, saying why — a pass is never claimed
///   without evidence.
///
/// `conclusive` is whether the target lies outside the MTTF's interval.
pub fn verdict(preset: &AppPreset, measured: &Measured<'_>) -> Verdict {
    let scheme = preset.scheme();
    let observed = measured.mttf(&scheme);
    let target = preset.target_s;
    let unit = if measured.per_deadline() {
        "deadlines"
    } else {
        "wake-ups"
    };
    let counting = preset.losses.as_str();
    let observed_note = |m: &Mttf| {
        format!(
            "{} of {} {unit} later than the slack ({}; counting {counting}): observed",
            m.misses,
            m.deadlines,
            fmt_ns(m.slack_ns)
        )
    };
    let (m, note): (Mttf, String) = if observed.misses == 0 && observed.mttf_s >= target {
        let note = format!(
            "no miss in {} {unit} ({}), which spans the {} target: observed lower bound",
            observed.deadlines,
            fmt_s(observed.mttf_s),
            fmt_s(target)
        );
        (observed, note)
    } else {
        match measured.mttf_extrapolated(&scheme) {
            Ok(x) if x.provenance == Provenance::Extrapolated => {
                let fit = match measured.tail() {
                    Ok(t) => format!(
                        "a generalized Pareto tail above {} ({} samples, shape {:.2})",
                        fmt_ns(t.threshold_ns as i64),
                        t.exceedances,
                        t.fit.gpd.shape
                    ),
                    Err(_) => "the fitted tail".to_string(),
                };
                let limit = if x.lower_bound {
                    format!(
                        "; rarer than one miss in {} runs of this length, which is as far as the model may reach: at least {}",
                        super::limits::MAX_EXTRAPOLATION,
                        fmt_s(x.mttf_s)
                    )
                } else {
                    String::new()
                };
                let note = format!(
                    "{} of {} {unit} later than the slack ({}; counting {counting}): extrapolated from {fit}{limit}",
                    observed.misses,
                    observed.deadlines,
                    fmt_ns(observed.slack_ns),
                );
                (x, note)
            }
            Ok(x) => {
                let note = observed_note(&x);
                (x, note)
            }
            Err(_) if observed.misses > 0 => {
                let note = observed_note(&observed);
                (observed, note)
            }
            Err(e) => {
                let note = format!(
                    "no miss in {} ({} {unit}), shorter than the {} target, and no extrapolation: {e}",
                    fmt_s(observed.mttf_s),
                    observed.deadlines,
                    fmt_s(target)
                );
                return Verdict {
                    app: preset.name.to_string(),
                    pass: false,
                    conclusive: false,
                    mttf_s: observed.mttf_s,
                    lower_bound: true,
                    mttf_interval_s: observed.interval_s,
                    target_s: target,
                    slack_ns: observed.slack_ns,
                    basis: basis(measured, &observed, None),
                    note,
                };
            }
        }
    };
    let pass = m.mttf_s >= target;
    let conclusive = if pass {
        m.interval_s.low >= target
    } else {
        m.interval_s.high.is_some_and(|h| h < target)
    };
    let tail = (m.provenance == Provenance::Extrapolated)
        .then(|| measured.tail().ok())
        .flatten()
        .map(|t| TailSummary {
            threshold_ns: t.threshold_ns,
            exceedances: t.exceedances,
            shape: t.fit.gpd.shape,
            scale_ns: t.fit.gpd.scale,
        });
    Verdict {
        app: preset.name.to_string(),
        pass,
        conclusive,
        mttf_s: m.mttf_s,
        lower_bound: m.lower_bound,
        mttf_interval_s: m.interval_s,
        target_s: target,
        slack_ns: m.slack_ns,
        basis: basis(measured, &m, tail),
        note,
    }
}

fn basis(measured: &Measured<'_>, m: &Mttf, tail: Option<TailSummary>) -> Basis {
    Basis {
        samples: measured.samples(),
        duration_s: measured.duration_s(),
        misses: m.misses,
        provenance: m.provenance,
        per_deadline: measured.per_deadline(),
        tail,
    }
}

fn fmt_s(s: f64) -> String {
    if s >= 86_400.0 {
        format!("{:.1} d", s / 86_400.0)
    } else if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.3} s")
    }
}

impl Measured<'_> {
    /// The verdict for an application preset (see [`verdict`]).
    pub fn verdict(&self, preset: &AppPreset) -> Verdict {
        verdict(preset, self)
    }
}
