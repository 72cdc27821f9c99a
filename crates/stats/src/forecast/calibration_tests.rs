//! The calibration harness's arithmetic on synthetic recordings whose
//! answer is known: cutting, coverage, refusal counting, and a regime
//! that changes after the training part.

use super::calibration::*;
use super::limits::Rules;
use super::test_rng::Rng;
use super::{PredictedMax, TailOptions};
use crate::Histogram;
use crate::SecondStats;

/// A recording at 1 kHz: `latency(second, rng)` gives each sample; returns
/// minute blocks and the per-second timeline.
fn record(seconds: usize, seed: u64, latency: impl Fn(usize, &mut Rng) -> u64) -> Recording {
    let mut rng = Rng(seed);
    let mut blocks = Vec::new();
    let mut timeline = Vec::with_capacity(seconds);
    let mut minute = Histogram::new();
    for s in 0..seconds {
        let mut max = 0;
        for _ in 0..1000 {
            let v = latency(s, &mut rng);
            minute.record(v);
            max = max.max(v);
        }
        timeline.push(SecondStats {
            count: 1000,
            max,
            above: 0,
        });
        if (s + 1) % 60 == 0 {
            blocks.push(Block {
                start_s: (s + 1 - 60) as u64,
                end_s: (s + 1) as u64,
                histogram: std::mem::take(&mut minute),
            });
        }
    }
    Recording { blocks, timeline }
}

struct Recording {
    blocks: Vec<Block>,
    timeline: Vec<SecondStats>,
}

/// 20 µs plus an exponential excess of mean 5 µs.
fn exponential(_: usize, rng: &mut Rng) -> u64 {
    let y: f64 = -5_000.0 * (1.0 - rng.uniform()).ln();
    20_000 + y as u64
}

fn plan(train_s: u64, test_s: u64, step_s: u64) -> Plan {
    Plan {
        train_s,
        test_s,
        step_s,
    }
}

#[test]
fn cuts_are_placed_and_their_test_maxima_are_exact() {
    // 16 minutes, a marker spike in second 300 + 60 i of minute i.
    let r = record(16 * 60, 1, |s, rng| {
        if s % 60 == 5 && s >= 300 {
            1_000_000 + s as u64
        } else {
            exponential(s, rng)
        }
    });
    let c = calibrate(
        &r.blocks,
        &r.timeline,
        &plan(120, 600, 120),
        &TailOptions::default(),
        &Rules::NONE,
    )
    .unwrap();
    // Origins 0, 120, 240 s: the fourth would need 360 + 120 + 600 > 960.
    let spans: Vec<_> = c
        .cases
        .iter()
        .map(|k| (k.train_start_s, k.train_end_s, k.test_end_s))
        .collect();
    assert_eq!(spans, vec![(0, 120, 720), (120, 240, 840), (240, 360, 960)]);
    // The test part [120, 720) holds the markers at 305 … 665: the largest
    // is 1 ms + 665 ns, recorded to within a bucket.
    let m = c.cases[0].observed_max_ns;
    assert!(m.abs_diff(1_000_665) < 1_000, "{m}");
    assert_eq!(c.cases[2].observed_max_ns, r.timeline[905].max);
    assert_eq!(c.skipped, 0);
    // A step of 90 s starts the next cut at the next whole block (180 s).
    let c = calibrate(
        &r.blocks,
        &r.timeline,
        &plan(120, 600, 90),
        &TailOptions::default(),
        &Rules::NONE,
    )
    .unwrap();
    let starts: Vec<_> = c.cases.iter().map(|k| k.train_start_s).collect();
    assert_eq!(starts, vec![0, 120, 240]);
    assert!(calibrate(
        &r.blocks,
        &r.timeline,
        &plan(0, 600, 60),
        &TailOptions::default(),
        &Rules::NONE
    )
    .is_err());
}

#[test]
fn gaps_in_blocks_and_empty_test_seconds_are_not_judged() {
    let mut r = record(14 * 60, 2, exponential);
    // Minute 2 is missing: no training part may span it.
    r.blocks.remove(2);
    // Seconds 700-719 recorded nothing: a test part holding them is
    // incomplete (20 of 600 > 1 %).
    for s in &mut r.timeline[700..720] {
        *s = SecondStats::default();
    }
    let c = calibrate(
        &r.blocks,
        &r.timeline,
        &plan(120, 600, 60),
        &TailOptions::default(),
        &Rules::NONE,
    )
    .unwrap();
    let starts: Vec<_> = c.cases.iter().map(|k| k.train_start_s).collect();
    // Origins 0 … 180 hold the missing minute or the empty seconds in
    // their test part (0: test 120-720; 180: test 300-900 > 840 ends).
    // Origin 0 is skipped (empty seconds), 60 and 120 span the gap.
    assert_eq!(c.skipped, 1, "{starts:?}");
    assert!(starts.is_empty(), "{starts:?}");
}

fn prediction(low: u64, median: u64, high: Option<u64>) -> PredictedMax {
    PredictedMax {
        window_s: 600.0,
        events: 600_000.0,
        clusters_expected: 50.0,
        median_ns: median,
        low_ns: low,
        high_ns: high,
        confidence: 0.95,
        parameter_uncertainty: true,
    }
}

fn case(observed: u64, outcome: Outcome) -> Case {
    Case {
        train_start_s: 0,
        train_end_s: 120,
        test_end_s: 720,
        train_max_ns: 0,
        observed_max_ns: observed,
        outcome,
    }
}

fn forecast(rl: (u64, u64, Option<u64>), pi: PredictedMax) -> Outcome {
    Outcome::Forecast {
        point_ns: rl.1,
        low_ns: rl.0,
        high_ns: rl.2,
        observed: false,
        prediction: pi,
        threshold_ns: 40,
        shape: 0.1,
        clusters: 100.0,
        dispersion: None,
        mixture: false,
        self_check_p: None,
    }
}

#[test]
fn coverage_widths_and_refusals_are_counted() {
    let cases = vec![
        // Inside both.
        case(
            100,
            forecast((50, 100, Some(150)), prediction(60, 90, Some(300))),
        ),
        // Above the return level's interval, inside the prediction.
        case(
            200,
            forecast((50, 100, Some(150)), prediction(60, 120, Some(300))),
        ),
        // Below both (overestimates); the return level is unbounded.
        case(
            10,
            forecast((50, 100, None), prediction(60, 100, Some(100))),
        ),
        case(
            5,
            Outcome::Refused {
                reason: "needs 4 more CPU-minutes of data".into(),
            },
        ),
    ];
    let c = summarize(plan(120, 600, 120), Rules::NONE, cases, 2);
    assert_eq!((c.refused, c.skipped), (1, 2));
    assert_eq!(c.refused_share(), Some(0.25));
    let rl = c.return_level;
    assert_eq!(
        (rl.forecasts, rl.held, rl.below, rl.above, rl.unbounded),
        (3, 1, 1, 1, 1)
    );
    // Widths (150 − 50)/100 = 1 twice.
    assert_eq!(rl.median_width, Some(1.0));
    let pi = c.prediction;
    assert_eq!((pi.held, pi.below, pi.above, pi.unbounded), (2, 1, 0, 0));
    // (300 − 60)/90, (300 − 60)/120, (100 − 60)/100: median 2.
    assert_eq!(pi.median_width, Some(2.0));
    assert_eq!(pi.share(), Some(2.0 / 3.0));
    assert_eq!(position(7, 7, None), Position::Inside);
    assert_eq!(position(8, 1, Some(7)), Position::Above);
}

#[test]
fn a_stationary_tail_is_covered_as_stated() {
    // 40 minutes of independent exponential excesses: 2-minute training
    // parts, 10-minute tests, a cut every 2 minutes (15 cuts).
    let r = record(40 * 60, 3, exponential);
    let c = calibrate(
        &r.blocks,
        &r.timeline,
        &plan(120, 600, 120),
        &TailOptions::default(),
        &Rules::STANDARD,
    )
    .unwrap();
    assert_eq!(c.cases.len(), 15);
    assert_eq!(c.refused, 0, "{:?}", c.cases[0].outcome);
    // The true 95 % range of a 10-minute maximum is 20 µs + 5 µs × (ln n −
    // ln(−ln q)): 80.0–104.9 µs, median 88.4 µs, a width of 0.28 of the
    // median. The intervals must hold at least 13 of 15 (the cuts share
    // test seconds, so they are not independent; the deterministic seed
    // makes this exact), and be no narrower than the truth's nor more
    // than three times as wide (parameter uncertainty from 2 minutes).
    assert!(c.prediction.held >= 13, "{:?}", c.prediction);
    let w = c.prediction.median_width.unwrap();
    assert!(w > 0.27 && w < 0.85, "{w}");
}

#[test]
fn a_regime_change_after_training_is_an_underestimate() {
    // From minute 12 on, a stall of 4 ms every ten seconds: the cut whose
    // training part ends before it and whose test part holds it must miss
    // above; those trained wholly after it see the stalls.
    let r = record(24 * 60, 4, |s, rng| {
        if s >= 720 && s % 10 == 0 && rng.uniform() < 0.01 {
            4_000_000
        } else {
            exponential(s, rng)
        }
    });
    let c = calibrate(
        &r.blocks,
        &r.timeline,
        &plan(120, 600, 120),
        &TailOptions::default(),
        &Rules::NONE,
    )
    .unwrap();
    for k in &c.cases {
        let Some((_, pi)) = k.positions() else {
            continue;
        };
        if k.train_end_s <= 720 && k.test_end_s > 720 {
            assert!(k.observed_max_ns >= 3_900_000, "{k:?}");
            assert_eq!(pi, Position::Above, "{k:?}");
        }
        if k.test_end_s <= 720 {
            assert_eq!(pi, Position::Inside, "{k:?}");
        }
    }
    let spanning = c
        .cases
        .iter()
        .filter(|k| k.train_end_s <= 720 && k.test_end_s > 720)
        .count();
    assert!(spanning >= 4, "{spanning}");
    assert!(c.prediction.above >= spanning, "{:?}", c.prediction);
}
