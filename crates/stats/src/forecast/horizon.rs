//! Worst case per hour, day and week (the study's Table 3).
//!
//! Two views, both kept:
//!
//! * **Observed windows**: when the run covers a horizon, cut the per-second
//!   timeline into consecutive windows of that length and take each window's
//!   maximum. The distribution of those maxima (median, worst, how many) is
//!   what "the worst case per hour" means on this machine, seen directly.
//! * **Exceedance rate**: the horizon holds `N = rate × T` wake-ups, where
//!   `T` is the run time equivalent to the horizon under a usage model; the
//!   expected worst case is the latency exceeded on average once in `N`
//!   wake-ups. The run's own data answer when it holds at least `N` samples;
//!   beyond that the generalized Pareto tail extrapolates (labelled so).
//!
//! # Usage model
//!
//! Following Cota-Robles & Held (§3.1, §4.3): the hourly figure is for one
//! hour of continuous running of the measured load. A "day" and a "week" are
//! a heavy user's day and week, compressed by how much faster than a person
//! the load drives the machine: a day is `hours_per_day × 3600 / speedup`
//! seconds of the measured load, a week `days_per_week` such days. The
//! study's Business Winstone, 10× faster than a person, thus makes a 40-hour
//! office week in 4 hours.

use serde::Serialize;

use crate::blocks::BlockStats;
use crate::SecondStats;

use super::measured::Measured;
use super::{ForecastError, LatencyEstimate, PredictedMax};

/// How a machine is used: hours of heavy use per day, days per week, and how
/// many times faster than a person the measured load drives the system.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UsageModel {
    pub hours_per_day: f64,
    pub days_per_week: f64,
    pub speedup: f64,
}

impl UsageModel {
    /// Around the clock at the measured pace: a day is 24 hours of the load.
    pub const CONTINUOUS: UsageModel = UsageModel {
        hours_per_day: 24.0,
        days_per_week: 7.0,
        speedup: 1.0,
    };

    /// A custom model; every figure must be positive (hours at most 24, days
    /// at most 7).
    pub fn new(
        hours_per_day: f64,
        days_per_week: f64,
        speedup: f64,
    ) -> Result<UsageModel, ForecastError> {
        let ok = hours_per_day > 0.0
            && hours_per_day <= 24.0
            && days_per_week > 0.0
            && days_per_week <= 7.0
            && speedup > 0.0
            && speedup.is_finite();
        if !ok {
            return Err(ForecastError::InvalidArgument(format!(
                "usage model needs 0 < hours/day ≤ 24, 0 < days/week ≤ 7 and a positive speed-up (got {hours_per_day} h × {days_per_week} d at {speedup}×)"
            )));
        }
        Ok(UsageModel {
            hours_per_day,
            days_per_week,
            speedup,
        })
    }

    /// Seconds of the measured load equivalent to one day of use.
    pub fn day_run_seconds(&self) -> f64 {
        self.hours_per_day * 3600.0 / self.speedup
    }

    /// Seconds of the measured load equivalent to one week of use.
    pub fn week_run_seconds(&self) -> f64 {
        self.day_run_seconds() * self.days_per_week
    }

    /// A preset by name (see [`USAGE_PRESETS`]).
    pub fn preset(name: &str) -> Option<UsageModel> {
        USAGE_PRESETS
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .map(|p| p.model)
    }
}

/// A named usage model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UsagePreset {
    pub name: &'static str,
    /// The study's range of hours per day; the model uses the upper end,
    /// which gives the larger (more conservative) worst case.
    pub hours_per_day_range: (f64, f64),
    pub model: UsageModel,
    pub note: &'static str,
}

/// The study's usage models (Cota-Robles & Held §3.1 and §4.3), plus
/// continuous use.
pub const USAGE_PRESETS: [UsagePreset; 5] = [
    UsagePreset {
        name: "office",
        hours_per_day_range: (6.0, 8.0),
        model: UsageModel {
            hours_per_day: 8.0,
            days_per_week: 5.0,
            speedup: 10.0,
        },
        note: "Business Winstone driven 10x faster than a person: 4 h of load = a 40-hour work week",
    },
    UsagePreset {
        name: "workstation",
        hours_per_day_range: (6.0, 6.0),
        model: UsageModel {
            hours_per_day: 6.0,
            days_per_week: 5.0,
            speedup: 5.0,
        },
        note: "engineering applications, more often CPU/disk/network bound: 5x; 6 h of load = a 30-hour week",
    },
    UsagePreset {
        name: "games",
        hours_per_day_range: (3.0, 4.0),
        model: UsageModel {
            hours_per_day: 4.0,
            days_per_week: 7.0,
            speedup: 1.0,
        },
        note: "game demos play in real time: no speed-up (Table 3's consumer week; §3.1 estimates 2-3 h on 4-6 days)",
    },
    UsagePreset {
        name: "web",
        hours_per_day_range: (3.0, 4.0),
        model: UsageModel {
            hours_per_day: 4.0,
            days_per_week: 7.0,
            speedup: 4.0,
        },
        note: "Ethernet instead of a phone line, with reading time: 4x; about 8 h of load = a heavy user's week",
    },
    UsagePreset {
        name: "continuous",
        hours_per_day_range: (24.0, 24.0),
        model: UsageModel::CONTINUOUS,
        note: "around the clock at the measured pace (servers, appliances, controllers)",
    },
];

/// A forecast horizon.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Horizon {
    /// One hour of continuous running of the measured load.
    Hour,
    /// One day of use under the usage model.
    Day,
    /// One week of use under the usage model.
    Week,
    /// This many seconds of continuous running of the measured load.
    Seconds(f64),
}

impl Horizon {
    /// Seconds of the measured load the horizon corresponds to.
    pub fn run_seconds(&self, usage: &UsageModel) -> f64 {
        match *self {
            Horizon::Hour => 3600.0,
            Horizon::Day => usage.day_run_seconds(),
            Horizon::Week => usage.week_run_seconds(),
            Horizon::Seconds(s) => s,
        }
    }

    /// `hour`, `day`, `week` or the number of seconds, as in JSON.
    pub fn name(&self) -> String {
        match *self {
            Horizon::Hour => "hour".to_string(),
            Horizon::Day => "day".to_string(),
            Horizon::Week => "week".to_string(),
            Horizon::Seconds(s) => format!("{s}s"),
        }
    }
}

/// The maxima of consecutive whole windows of a per-second timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowMaxima {
    /// Window length in seconds.
    pub window_s: u64,
    /// Whole windows in the timeline (a trailing partial one is ignored).
    pub windows: usize,
    /// Median of the window maxima (the mean of the two middle ones for an
    /// even count, rounded down).
    pub median_ns: u64,
    /// The largest window maximum: the run's maximum over whole windows.
    pub worst_ns: u64,
    /// Each window's maximum, in time order.
    pub maxima_ns: Vec<u64>,
    /// Seconds in the whole windows that recorded no sample (a stall longer
    /// than a second, or data the ring lost); their maximum counts as 0.
    pub empty_seconds: u64,
}

/// Cuts `timeline` (one entry per second from the start) into whole windows
/// of `window_s` seconds and summarizes their maxima; `None` when not even
/// one window fits.
pub fn window_maxima(timeline: &[SecondStats], window_s: u64) -> Option<WindowMaxima> {
    let w = usize::try_from(window_s).ok().filter(|&w| w > 0)?;
    let windows = timeline.len() / w;
    if windows == 0 {
        return None;
    }
    let used = &timeline[..windows * w];
    let maxima_ns: Vec<u64> = used
        .chunks(w)
        .map(|c| c.iter().map(|s| s.max).max().unwrap_or(0))
        .collect();
    let empty_seconds = used.iter().filter(|s| s.count == 0).count() as u64;
    let mut sorted = maxima_ns.clone();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    let median_ns = if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        sorted[mid - 1] + (sorted[mid] - sorted[mid - 1]) / 2
    };
    Some(WindowMaxima {
        window_s,
        windows,
        median_ns,
        worst_ns: sorted[sorted.len() - 1],
        maxima_ns,
        empty_seconds,
    })
}

/// The worst case over one horizon.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HorizonForecast {
    pub horizon: Horizon,
    pub usage: UsageModel,
    /// Seconds of the measured load the horizon corresponds to.
    pub run_seconds: f64,
    /// Wake-ups expected in the horizon at the measured rate (N).
    pub events: f64,
    /// The latency exceeded on average once in N wake-ups (observed or
    /// extrapolated), or why there is none.
    pub estimate: Result<LatencyEstimate, ForecastError>,
    /// The prediction interval of the largest latency of one future
    /// horizon (of its `run_seconds`), or why there is none
    /// ([`super::Measured::predicted_max`]).
    pub prediction: Result<PredictedMax, ForecastError>,
    /// The observed maxima of whole horizon-long windows of the run, when
    /// the run covers the horizon at least once.
    pub windows: Option<WindowMaxima>,
    /// A monitor's complete UTC blocks of the horizon, from its stored
    /// hour windows ([`crate::blocks`]), when it measured at least one:
    /// then the worst case is observed and `estimate` says the model was
    /// not needed ([`super::limits::Refusal::Observed`]).
    pub monitor: Option<BlockStats>,
}

impl Measured<'_> {
    /// The worst case over `horizon` under `usage`: the exceedance-rate
    /// estimate, and the observed maxima of horizon-long windows of
    /// `timeline` (pass `&[]` when there is none).
    pub fn worst_case(
        &self,
        horizon: Horizon,
        usage: &UsageModel,
        timeline: &[SecondStats],
    ) -> HorizonForecast {
        let run_seconds = horizon.run_seconds(usage);
        let events = self.rate_hz() * run_seconds;
        let window = run_seconds.round();
        let windows = if window >= 1.0 && window < u64::MAX as f64 {
            window_maxima(timeline, window as u64)
        } else {
            None
        };
        HorizonForecast {
            horizon,
            usage: *usage,
            run_seconds,
            events,
            estimate: self.exceeded_once_in(events),
            prediction: self.predicted_max(run_seconds),
            windows,
            monitor: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(max: u64) -> SecondStats {
        SecondStats {
            count: 1000,
            max,
            above: 0,
        }
    }

    #[test]
    fn hourly_maxima_of_a_synthetic_timeline() {
        // 3 hours and 10 minutes: hour h has a background of 50 µs and one
        // spike of (h + 1) ms at second 1000 + h; the partial fourth hour
        // holds a 99 ms spike that must be ignored.
        let mut t: Vec<SecondStats> = (0..3 * 3600 + 600).map(|_| sec(50_000)).collect();
        for h in 0..3 {
            t[h * 3600 + 1000 + h] = sec((h as u64 + 1) * 1_000_000);
        }
        t[3 * 3600 + 10] = sec(99_000_000);
        t[5] = SecondStats::default();
        let w = window_maxima(&t, 3600).unwrap();
        assert_eq!(w.windows, 3);
        assert_eq!(w.maxima_ns, vec![1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(w.median_ns, 2_000_000);
        assert_eq!(w.worst_ns, 3_000_000);
        assert_eq!(w.empty_seconds, 1);
        let two = window_maxima(&t[..7200], 3600).unwrap();
        assert_eq!(two.median_ns, 1_500_000);
        assert!(window_maxima(&t, 20_000).is_none());
        assert!(window_maxima(&t, 0).is_none());
    }

    #[test]
    fn usage_models_compress_days_and_weeks() {
        let office = UsageModel::preset("office").unwrap();
        // The study: 4 hours of Winstone = a 40-hour work week.
        assert_eq!(office.week_run_seconds(), 4.0 * 3600.0);
        let ws = UsageModel::preset("Workstation").unwrap();
        assert_eq!(ws.week_run_seconds(), 6.0 * 3600.0);
        let games = UsageModel::preset("games").unwrap();
        assert_eq!(games.day_run_seconds(), 4.0 * 3600.0);
        assert_eq!(games.week_run_seconds(), 28.0 * 3600.0);
        let web = UsageModel::preset("web").unwrap();
        assert_eq!(web.week_run_seconds(), 7.0 * 3600.0);
        assert_eq!(Horizon::Hour.run_seconds(&office), 3600.0);
        assert_eq!(Horizon::Day.run_seconds(&office), 2880.0);
        assert_eq!(Horizon::Seconds(90.0).run_seconds(&office), 90.0);
        assert_eq!(Horizon::Day.run_seconds(&UsageModel::CONTINUOUS), 86_400.0);
        assert!(UsageModel::preset("nope").is_none());
        assert!(UsageModel::new(25.0, 5.0, 1.0).is_err());
        assert!(UsageModel::new(8.0, 5.0, 0.0).is_err());
        assert_eq!(UsageModel::new(8.0, 5.0, 10.0).unwrap(), office);
    }
}
