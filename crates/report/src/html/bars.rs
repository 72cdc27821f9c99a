//! Horizontal stacked bars: one row per item (an episode, an interrupt
//! source), each made of named shares coloured by category, on a shared
//! linear axis.

use std::fmt::Write as _;

use super::escape::escape;
use super::svg::{tick_label, Axis, Scale, PALETTE};

/// Plot width in SVG user units, as the other plots; the page scales it.
const WIDTH: f64 = 720.0;
const RIGHT: f64 = 16.0;

/// One horizontal bar made of named shares (e.g. an episode's causes).
#[derive(Clone, Debug, PartialEq)]
pub struct StackedBar {
    pub label: String,
    /// `(category, value)`; the category picks the colour.
    pub parts: Vec<(String, f64)>,
}

/// Horizontal stacked bars on a shared linear axis, one row per bar, with a
/// legend of the categories (in the order given). Empty for no bars.
pub fn stacked_bars(
    title: &str,
    x_label: &str,
    categories: &[String],
    bars: &[StackedBar],
) -> String {
    if bars.is_empty() {
        return String::new();
    }
    let row = 20.0;
    let label_w = 150.0;
    let legend_rows = categories.len().div_ceil(4) as f64;
    let top = 10.0 + 18.0 * legend_rows;
    let plot_h = row * bars.len() as f64;
    let height = top + plot_h + 44.0;
    let total_max = bars
        .iter()
        .map(|b| b.parts.iter().map(|p| p.1.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    let Some(axis) = Axis::fit(x_label, Scale::Linear, [0.0, total_max.max(1e-9)]) else {
        return String::new();
    };
    let (x0, x1) = (label_w, WIDTH - RIGHT);
    let px = |v: f64| x0 + axis.fraction(v).unwrap_or(0.0) * (x1 - x0);
    let colour_of = |c: &str| {
        let i = categories.iter().position(|k| k == c).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let t = escape(title);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"plot\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title>"
    );
    for (i, c) in categories.iter().enumerate() {
        let lx = 12.0 + 175.0 * (i % 4) as f64;
        let ly = 18.0 + 18.0 * (i / 4) as f64;
        let _ = write!(
            out,
            "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{ly:.1}\" class=\"tick\">{}</text>",
            ly - 10.0,
            colour_of(c),
            lx + 16.0,
            escape(c)
        );
    }
    let y_end = top + plot_h;
    for tv in axis.ticks() {
        let x = px(tv);
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{y_end:.1}\" class=\"grid\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            y_end + 14.0,
            escape(&tick_label(tv))
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" class=\"axis-label\">{}</text>",
        (x0 + x1) / 2.0,
        y_end + 34.0,
        escape(x_label)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            x0 - 6.0,
            y + 14.0,
            escape(&b.label)
        );
        let mut acc = 0.0;
        for (cat, v) in &b.parts {
            let v = v.max(0.0);
            if v <= 0.0 {
                continue;
            }
            let (a, z) = (px(acc), px(acc + v));
            let _ = write!(
                out,
                "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
                y + 3.0,
                (z - a).max(0.5),
                row - 6.0,
                colour_of(cat),
                escape(cat),
                escape(&tick_label(v))
            );
            acc += v;
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacked_bars_draw_one_rect_per_nonzero_share() {
        let cats = vec!["irq".to_string(), "thread".to_string()];
        let svg = stacked_bars(
            "episodes",
            "time (µs)",
            &cats,
            &[StackedBar {
                label: "#1".into(),
                parts: vec![
                    ("irq".into(), 5.0),
                    ("thread".into(), 20.0),
                    ("irq".into(), 0.0),
                ],
            }],
        );
        // Two legend swatches and two shares.
        assert_eq!(svg.matches("<rect").count(), 4, "{svg}");
        assert!(svg.contains("time (µs)"));
        assert!(stacked_bars("e", "x", &cats, &[]).is_empty());
    }
}
