//! One figure of a table, as printed and as a value.

use serde::Deserialize;
use thiserror::Error;

/// A figure exactly as the paper prints it, and what it says.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "String")]
pub struct Figure {
    /// The figure as printed, footnote mark included (`"<1.0"`, `"+0.1"`,
    /// `"1,700,000"`, `"2 to 8 ¹"`, `""` for a blank cell).
    pub printed: String,
    /// What the figure says.
    pub value: Value,
    /// The footnote mark printed after it (`'¹'`), if any.
    pub footnote: Option<char>,
}

/// The kinds of figure the four papers print.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A blank cell (in a histogram: no occurrence).
    Blank,
    /// A number (thousands separators removed).
    Number(f64),
    /// `<x`: below x.
    Below(f64),
    /// `+x`: x added to the row above (Cota-Robles & Held's Table 3).
    Added(f64),
    /// `a to b`: a range.
    Range(f64, f64),
    /// `m'ss"`: a duration in minutes and seconds, in seconds.
    Duration(f64),
    /// `not supported`.
    NotSupported,
}

impl Value {
    /// The figure as one number where it is one (the upper end of a range,
    /// the bound of a `<x`); `None` for blank and unsupported cells.
    pub fn number(self) -> Option<f64> {
        match self {
            Value::Number(x) | Value::Below(x) | Value::Added(x) | Value::Duration(x) => Some(x),
            Value::Range(_, hi) => Some(hi),
            Value::Blank | Value::NotSupported => None,
        }
    }
}

/// A figure that is none of the kinds the papers print (a typing error in
/// the data).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'{0}' is not a figure (a number, <x, +x, 'a to b', m's\", 'not supported' or blank)")]
pub struct FigureError(pub String);

const FOOTNOTE_MARKS: &str = "¹²³⁴⁵⁶⁷⁸⁹";

impl TryFrom<String> for Figure {
    type Error = FigureError;

    fn try_from(printed: String) -> Result<Self, Self::Error> {
        let bad = || FigureError(printed.clone());
        let mut body = printed.trim();
        let mut footnote = None;
        if let Some(mark) = body.chars().last().filter(|c| FOOTNOTE_MARKS.contains(*c)) {
            footnote = Some(mark);
            body = body[..body.len() - mark.len_utf8()].trim_end();
        }
        let value = parse_value(body).ok_or_else(bad)?;
        if footnote.is_some() && value == Value::Blank {
            return Err(bad());
        }
        Ok(Figure {
            printed,
            value,
            footnote,
        })
    }
}

fn parse_value(body: &str) -> Option<Value> {
    if body.is_empty() {
        return Some(Value::Blank);
    }
    if body == "not supported" {
        return Some(Value::NotSupported);
    }
    if let Some(rest) = body.strip_prefix('<') {
        return number(rest).map(Value::Below);
    }
    if let Some(rest) = body.strip_prefix('+') {
        return number(rest).map(Value::Added);
    }
    if let Some((lo, hi)) = body.split_once(" to ") {
        let (lo, hi) = (number(lo)?, number(hi)?);
        return (lo <= hi).then_some(Value::Range(lo, hi));
    }
    if let Some((minutes, seconds)) = body.split_once('\'') {
        let seconds = seconds.strip_suffix('"')?;
        let (minutes, seconds) = (integer(minutes)?, integer(seconds)?);
        return (seconds < 60).then_some(Value::Duration((minutes * 60 + seconds) as f64));
    }
    number(body).map(Value::Number)
}

/// Digits with an optional fraction; thousands separated by commas in
/// groups of three, or not at all.
fn number(text: &str) -> Option<f64> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    if let Some(fraction) = fraction {
        if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    let groups: Vec<&str> = whole.split(',').collect();
    let first_ok = groups
        .first()
        .is_some_and(|g| (1..=3).contains(&g.len()) || (groups.len() == 1 && !g.is_empty()));
    let rest_ok = groups[1..].iter().all(|g| g.len() == 3);
    if !first_ok || !rest_ok || !whole.bytes().all(|b| b.is_ascii_digit() || b == b',') {
        return None;
    }
    let plain: String = text.chars().filter(|&c| c != ',').collect();
    plain.parse().ok()
}

fn integer(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Result<Value, FigureError> {
        Figure::try_from(text.to_string()).map(|f| f.value)
    }

    #[test]
    fn every_printed_kind_parses() {
        assert_eq!(value(""), Ok(Value::Blank));
        assert_eq!(value("999"), Ok(Value::Number(999.0)));
        assert_eq!(value("14.94"), Ok(Value::Number(14.94)));
        assert_eq!(value("407,000,000"), Ok(Value::Number(407_000_000.0)));
        assert_eq!(value("<1.0"), Ok(Value::Below(1.0)));
        assert_eq!(value("+0.1"), Ok(Value::Added(0.1)));
        assert_eq!(value("4 to 10"), Ok(Value::Range(4.0, 10.0)));
        assert_eq!(value("6'57\""), Ok(Value::Duration(417.0)));
        assert_eq!(value("not supported"), Ok(Value::NotSupported));
        let f = Figure::try_from("2 to 8 ¹".to_string()).expect("figure");
        assert_eq!((f.value, f.footnote), (Value::Range(2.0, 8.0), Some('¹')));
    }

    #[test]
    fn typing_errors_are_refused() {
        for bad in [
            "1.0.0", "1,00", "12,3456", ".5", "5.", "x", "1 2", "10 to 4", "6'75\"", "6'57", "¹",
            "-3", "1e3",
        ] {
            assert_eq!(value(bad), Err(FigureError(bad.to_string())), "{bad}");
        }
    }

    #[test]
    fn number_of_each_kind() {
        assert_eq!(Value::Range(2.0, 8.0).number(), Some(8.0));
        assert_eq!(Value::Blank.number(), None);
        assert_eq!(Value::NotSupported.number(), None);
    }
}
