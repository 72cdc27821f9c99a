//! A small SVG plotting kit for the HTML report: linear and logarithmic
//! axes with tick labels, polylines (with gaps where a log scale has no
//! value), markers, and a legend. Pure functions from data to markup, so
//! each piece can be tested on its own.
//!
//! Plots scale with the page (`viewBox` and `width: 100%`), so they fit a
//! phone and print at the width of the paper.

use std::fmt::Write as _;

use super::escape::escape;

/// Plot size in SVG user units; the page scales it.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 340.0;
/// Room for the y tick labels and the axis label on the left, the x ticks
/// and label below.
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 52.0;

/// Colours that stay apart for colour-blind readers and in greyscale print
/// (Okabe and Ito's palette with wine and grey added, yellow last as it
/// is the hardest to see on white).
pub const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#882255",
    "#999999", "#F0E442",
];

/// How an axis maps values onto its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
}

/// One axis: its label (with the unit), scale and range.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    pub min: f64,
    pub max: f64,
}

impl Axis {
    /// An axis spanning the values given (finite ones; positive ones on a
    /// log scale), widened to whole decades on a log scale and to "nice"
    /// steps on a linear one so that the ends carry ticks. `None` when no
    /// value fits the scale.
    pub fn fit(label: &str, scale: Scale, values: impl IntoIterator<Item = f64>) -> Option<Axis> {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for v in values {
            if v.is_finite() && (scale == Scale::Linear || v > 0.0) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if lo > hi {
            return None;
        }
        let (min, max) = match scale {
            Scale::Log => {
                let a = lo.log10().floor();
                let mut b = hi.log10().ceil();
                if b <= a {
                    b = a + 1.0;
                }
                (10f64.powf(a), 10f64.powf(b))
            }
            Scale::Linear => {
                if hi <= lo {
                    let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
                    (lo - pad, hi + pad)
                } else {
                    let step = nice_step((hi - lo) / 5.0);
                    ((lo / step).floor() * step, (hi / step).ceil() * step)
                }
            }
        };
        Some(Axis {
            label: label.to_string(),
            scale,
            min,
            max,
        })
    }

    /// Where `v` falls along the axis, 0 at `min` and 1 at `max`; `None`
    /// for a value the scale cannot show (not finite, or not positive on a
    /// log scale).
    pub fn fraction(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self.scale {
            Scale::Linear => {
                let span = self.max - self.min;
                (span > 0.0).then(|| (v - self.min) / span)
            }
            Scale::Log => {
                if v <= 0.0 || self.min <= 0.0 || self.max <= self.min {
                    return None;
                }
                let (a, b) = (self.min.log10(), self.max.log10());
                Some((v.log10() - a) / (b - a))
            }
        }
    }

    /// The tick values inside the range.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => linear_ticks(self.min, self.max),
            Scale::Log => log_ticks(self.min, self.max),
        }
    }
}

/// 1, 2 or 5 times a power of ten, the smallest not below `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// About five evenly spaced ticks at multiples of a nice step.
pub fn linear_ticks(min: f64, max: f64) -> Vec<f64> {
    if !(min.is_finite() && max.is_finite() && max > min) {
        return Vec::new();
    }
    let step = nice_step((max - min) / 5.0);
    let first = (min / step).ceil() as i64;
    let last = (max / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Ticks of a log axis: each power of ten in the range; when the range
/// spans less than two decades, also 2× and 5× each power, so there are
/// always enough ticks to read a value.
pub fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    if !(min > 0.0 && max > min && max.is_finite()) {
        return Vec::new();
    }
    let lo = min.log10().floor() as i32;
    let hi = max.log10().ceil() as i32;
    let dense = max / min < 100.0 * (1.0 + 1e-9);
    let inside = |v: f64| v >= min * (1.0 - 1e-9) && v <= max * (1.0 + 1e-9);
    let mut out = Vec::new();
    for e in lo..=hi {
        let p = 10f64.powi(e);
        let mults: &[f64] = if dense { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for m in mults {
            let v = m * p;
            if inside(v) {
                out.push(v);
            }
        }
    }
    out
}

/// A tick's text: plain decimals for everyday magnitudes, powers of ten
/// (`10⁻⁶`, `10⁵`) for very small and very large ones.
pub fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    let exp = a.log10().round() as i32;
    let is_power = (a / 10f64.powi(exp) - 1.0).abs() < 1e-9;
    if is_power && !(-2..=4).contains(&exp) {
        let sign = if v < 0.0 { "−" } else { "" };
        return format!("{sign}10{}", superscript(exp));
    }
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.0e}");
    }
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

fn superscript(n: i32) -> String {
    n.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            '9' => '⁹',
            other => other,
        })
        .collect()
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Straight lines between the points.
    Line,
    /// Lines with a dot on each point.
    LineDots,
    /// Dots only.
    Dots,
}

/// One data series: a name for the legend and its points, in segments (a
/// plot draws no line between segments).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub mark: Mark,
    pub segments: Vec<Vec<(f64, f64)>>,
    /// Points drawn hollow (e.g. lower bounds); drawn on top of the line.
    pub hollow: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: &str, mark: Mark, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.to_string(),
            mark,
            segments: vec![points],
            hollow: Vec::new(),
        }
    }

    fn points(&self) -> impl Iterator<Item = &(f64, f64)> {
        self.segments.iter().flatten().chain(self.hollow.iter())
    }
}

/// A chart with two axes and any number of series.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// Read by screen readers (`<title>` and `aria-label`).
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

impl Plot {
    /// A plot whose axes span every point of `series`; `None` when no
    /// point can be shown on the scales.
    pub fn fit(
        title: &str,
        x: (&str, Scale),
        y: (&str, Scale),
        series: Vec<Series>,
    ) -> Option<Plot> {
        let xs = series.iter().flat_map(|s| s.points().map(|p| p.0));
        let x_axis = Axis::fit(x.0, x.1, xs.collect::<Vec<_>>())?;
        let ys = series.iter().flat_map(|s| s.points().map(|p| p.1));
        let y_axis = Axis::fit(y.0, y.1, ys.collect::<Vec<_>>())?;
        Some(Plot {
            title: title.to_string(),
            x: x_axis,
            y: y_axis,
            series,
        })
    }

    fn px(&self, x: f64) -> Option<f64> {
        Some(LEFT + self.x.fraction(x)? * (WIDTH - LEFT - RIGHT))
    }

    fn py(&self, y: f64) -> Option<f64> {
        Some(HEIGHT - BOTTOM - self.y.fraction(y)? * (HEIGHT - TOP - BOTTOM))
    }

    /// The plot as an inline `<svg>` element.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{title}\"><title>{title}</title>"
        );
        self.render_axes(&mut out);
        let _ = write!(
            out,
            "<svg x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\" overflow=\"hidden\" viewBox=\"{LEFT} {TOP} {} {}\">",
            WIDTH - LEFT - RIGHT,
            HEIGHT - TOP - BOTTOM,
            WIDTH - LEFT - RIGHT,
            HEIGHT - TOP - BOTTOM
        );
        for (i, s) in self.series.iter().enumerate() {
            self.render_series(&mut out, s, PALETTE[i % PALETTE.len()]);
        }
        out.push_str("</svg>");
        if self.series.len() > 1 {
            self.render_legend(&mut out);
        }
        out.push_str("</svg>");
        out
    }

    fn render_axes(&self, out: &mut String) {
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let (y0, y1) = (HEIGHT - BOTTOM, TOP);
        let _ = write!(
            out,
            "<rect x=\"{x0}\" y=\"{y1}\" width=\"{}\" height=\"{}\" class=\"frame\"/>",
            x1 - x0,
            y0 - y1
        );
        for t in self.x.ticks() {
            if let Some(x) = self.px(t) {
                let _ = write!(
                    out,
                    "<line x1=\"{x:.1}\" y1=\"{y1}\" x2=\"{x:.1}\" y2=\"{y0}\" class=\"grid\"/>\
                     <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
                    y0 + 16.0,
                    escape(&tick_label(t))
                );
            }
        }
        for t in self.y.ticks() {
            if let Some(y) = self.py(t) {
                let _ = write!(
                    out,
                    "<line x1=\"{x0}\" y1=\"{y:.1}\" x2=\"{x1}\" y2=\"{y:.1}\" class=\"grid\"/>\
                     <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
                    x0 - 6.0,
                    y + 4.0,
                    escape(&tick_label(t))
                );
            }
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"axis-label\">{}</text>",
            (x0 + x1) / 2.0,
            HEIGHT - 10.0,
            escape(&self.x.label)
        );
        let (cx, cy) = (16.0, (y0 + y1) / 2.0);
        let _ = write!(
            out,
            "<text x=\"{cx}\" y=\"{cy:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {cx} {cy:.1})\" class=\"axis-label\">{}</text>",
            escape(&self.y.label)
        );
    }

    fn render_series(&self, out: &mut String, s: &Series, colour: &str) {
        let draw_line = matches!(s.mark, Mark::Line | Mark::LineDots);
        let draw_dots = matches!(s.mark, Mark::Dots | Mark::LineDots);
        let _ = write!(
            out,
            "<g class=\"series\"><title>{}</title>",
            escape(&s.name)
        );
        for seg in &s.segments {
            let pts: Vec<(f64, f64)> = seg
                .iter()
                .filter_map(|&(x, y)| Some((self.px(x)?, self.py(y)?)))
                .collect();
            if draw_line && pts.len() > 1 {
                out.push_str("<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"");
                out.push_str(colour);
                out.push_str("\" points=\"");
                for (i, (x, y)) in pts.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let _ = write!(out, "{x:.1},{y:.1}");
                }
                out.push_str("\"/>");
            }
            if draw_dots || pts.len() == 1 {
                for (x, y) in &pts {
                    let _ = write!(
                        out,
                        "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.6\" fill=\"{colour}\"/>"
                    );
                }
            }
        }
        for &(x, y) in &s.hollow {
            if let (Some(x), Some(y)) = (self.px(x), self.py(y)) {
                let _ = write!(
                    out,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.2\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"1.4\"/>"
                );
            }
        }
        out.push_str("</g>");
    }

    /// The legend, in the top right corner, where latency plots (falling
    /// curves, thin tails) leave room.
    fn render_legend(&self, out: &mut String) {
        let longest = self
            .series
            .iter()
            .map(|s| s.name.chars().count())
            .max()
            .unwrap_or(0);
        let w = 34.0 + 6.5 * longest as f64;
        let x = WIDTH - RIGHT - w - 6.0;
        let mut y = TOP + 14.0;
        let h = 16.0 * self.series.len() as f64 + 6.0;
        let _ = write!(
            out,
            "<g class=\"legend\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" class=\"legend-box\"/>",
            x - 4.0,
            y - 13.0
        );
        for (i, s) in self.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let _ = write!(
                out,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/>\
                 <text x=\"{:.1}\" y=\"{y:.1}\" class=\"tick\">{}</text>",
                y - 4.0,
                x + 20.0,
                y - 4.0,
                x + 26.0,
                escape(&s.name)
            );
            y += 16.0;
        }
        out.push_str("</g>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_are_the_decades_of_a_wide_range() {
        assert_eq!(
            log_ticks(1.0, 10_000.0),
            vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]
        );
        let t = log_ticks(1e-6, 1.0);
        assert_eq!(t.len(), 7);
        assert!((t[0] - 1e-6).abs() < 1e-18);
    }

    #[test]
    fn narrow_log_ranges_get_two_and_five_ticks() {
        let t = log_ticks(10.0, 100.0);
        assert_eq!(t, vec![10.0, 20.0, 50.0, 100.0]);
    }

    #[test]
    fn log_axes_widen_to_whole_decades_and_ignore_non_positive_values() {
        let a = Axis::fit("x", Scale::Log, [0.0, -3.0, 7.0, 350.0, f64::NAN])
            .unwrap_or_else(|| panic!("no axis"));
        assert_eq!((a.min, a.max), (1.0, 1000.0));
        assert_eq!(a.fraction(10.0).map(|f| (f * 3.0).round()), Some(1.0));
        assert_eq!(a.fraction(0.0), None);
        assert!(Axis::fit("x", Scale::Log, [0.0, -1.0]).is_none());
        // One value: one decade around it.
        let one = Axis::fit("x", Scale::Log, [100.0]).unwrap_or_else(|| panic!("no axis"));
        assert_eq!((one.min, one.max), (100.0, 1000.0));
    }

    #[test]
    fn linear_ticks_use_nice_steps() {
        assert_eq!(linear_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(0.0, 1.0).len(), 6);
        let a = Axis::fit("s", Scale::Linear, [0.3, 9.2]).unwrap_or_else(|| panic!("no axis"));
        assert_eq!((a.min, a.max), (0.0, 10.0));
        assert!(linear_ticks(5.0, 5.0).is_empty());
    }

    #[test]
    fn tick_labels_use_powers_for_extremes() {
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(tick_label(0.01), "0.01");
        assert_eq!(tick_label(0.001), "10⁻³");
        assert_eq!(tick_label(1e-6), "10⁻⁶");
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(1e5), "10⁵");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(0.0), "0");
    }

    #[test]
    fn a_plot_escapes_its_labels_and_draws_each_series() {
        let p = Plot::fit(
            "a <b> & c",
            ("latency (µs)", Scale::Log),
            ("count", Scale::Log),
            vec![
                Series::new("CPU <0>", Mark::Line, vec![(1.0, 10.0), (10.0, 100.0)]),
                Series::new("CPU 1", Mark::Dots, vec![(2.0, 5.0)]),
            ],
        )
        .unwrap_or_else(|| panic!("no plot"));
        let svg = p.render();
        assert!(svg.contains("a &lt;b&gt; &amp; c"), "{svg}");
        assert!(svg.contains("CPU &lt;0&gt;"), "{svg}");
        assert!(!svg.contains("<b>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("<circle"));
        assert!(svg.contains("latency (µs)"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn a_plot_without_showable_points_is_none() {
        let p = Plot::fit(
            "t",
            ("x", Scale::Log),
            ("y", Scale::Log),
            vec![Series::new("s", Mark::Line, vec![(0.0, 1.0)])],
        );
        assert!(p.is_none());
    }
}
