//! Every importer, fed arbitrary bytes and the tools' own files mutated
//! (bytes replaced, inserted and cut, numbers made huge): a result or a
//! one-line refusal, never a panic (overflowing counts included).

#![allow(clippy::unwrap_used)]

use latscope_import::{import, Format, Options, Unit};
use proptest::prelude::*;

const FIXTURES: [&str; 6] = [
    "cyclictest-h50.json",
    "cyclictest-h50.txt",
    "cyclictest-nsecs.json",
    "cyclictest-status-histofall.txt",
    "oslat.json",
    "rtla-timerlat-hist.txt",
];

const FORMATS: [Option<Format>; 5] = [
    None,
    Some(Format::CyclictestJson),
    Some(Format::CyclictestHist),
    Some(Format::OslatJson),
    Some(Format::RtlaHist),
];

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(path).unwrap()
}

/// Every format tried on `bytes`: each gives a run or an error whose text
/// is one line.
fn each_format(bytes: &[u8]) {
    for unit in [None, Some(Unit::Nanos)] {
        let options = Options {
            unit,
            ..Options::default()
        };
        for format in FORMATS {
            if let Err(e) = import(bytes, format, &options) {
                let text = e.to_string();
                assert!(!text.contains('\n'), "{format:?}: {text}");
            }
        }
    }
}

/// One edit of a file.
#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, Vec<u8>),
    Cut(usize, usize),
    /// The digits of the number at or after this offset become this one.
    Number(usize, u64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Replace(i, b)),
        (
            any::<usize>(),
            prop::collection::vec(
                prop_oneof![
                    Just(b'\n'),
                    Just(b'#'),
                    Just(b'-'),
                    Just(b'9'),
                    Just(b'"'),
                    Just(b':'),
                    any::<u8>()
                ],
                1..6
            )
        )
            .prop_map(|(i, v)| Edit::Insert(i, v)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Cut(i, n)),
        (
            any::<usize>(),
            prop_oneof![
                Just(u64::MAX),
                Just(u64::MAX / 2 + 1),
                Just(i64::MAX as u64),
                Just(u32::MAX as u64 + 1),
                Just(0),
                any::<u64>()
            ]
        )
            .prop_map(|(i, n)| Edit::Number(i, n)),
    ]
}

fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        if bytes.is_empty() {
            break;
        }
        match e {
            Edit::Replace(i, b) => {
                let i = i % bytes.len();
                bytes[i] = *b;
            }
            Edit::Insert(i, v) => {
                let i = i % (bytes.len() + 1);
                bytes.splice(i..i, v.iter().copied());
            }
            Edit::Cut(i, n) => {
                let i = i % bytes.len();
                let end = (i + n).min(bytes.len());
                bytes.drain(i..end);
            }
            Edit::Number(i, n) => {
                let start = i % bytes.len();
                let Some(at) = bytes[start..].iter().position(u8::is_ascii_digit) else {
                    continue;
                };
                let at = start + at;
                let end = bytes[at..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(bytes.len(), |e| at + e);
                bytes.splice(at..end, n.to_string().into_bytes());
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_are_refused_or_read_never_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        each_format(&bytes);
    }

    #[test]
    fn mutated_tool_files_are_refused_or_read_never_a_panic(
        which in 0..FIXTURES.len(),
        edits in prop::collection::vec(edit(), 1..8),
    ) {
        each_format(&apply(fixture(FIXTURES[which]), &edits));
    }
}

/// Counts that overflow when added: every histogram line and the overflow
/// count at their largest.
#[test]
fn counts_that_overflow_when_added_are_refused() {
    let text = String::from_utf8(fixture("cyclictest-h50.txt")).unwrap();
    let huge: String = text
        .lines()
        .map(|l| {
            if l.starts_with("# Histogram Overflows") {
                let n = l.split_whitespace().count() - 3;
                format!(
                    "# Histogram Overflows: {}",
                    vec![u64::MAX.to_string(); n].join(" ")
                )
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    each_format(huge.as_bytes());
}
