//! A format chosen by name, with the options given beside it: which
//! options go with which format is decided here (an episode with Perfetto
//! only, a unit with rt-tests JSON only, Perfetto with an episode); the CLI
//! words the refusals for its flags.

use super::{Format, HdrUnit, RtTestsUnit};

/// The formats by name; a name's first paragraph is its description in
/// `export --help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FormatName {
    /// The run as JSON (the schema of `run --json`).
    Json,
    /// Summaries per cell, metric and CPU as CSV (nanoseconds).
    Csv,
    /// Histogram buckets per cell, metric and CPU as CSV (nanoseconds).
    CsvBuckets,
    /// HdrHistogram interval log (HistogramLogProcessor and friends).
    Hdr,
    /// cyclictest's `-h` histogram text of timer.latency.
    Cyclictest,
    /// The JSON file `cyclictest --json` writes, of timer.latency.
    RtTestsJson,
    /// Prometheus text exposition of the run's histograms.
    Prometheus,
    /// Chrome / Perfetto JSON trace of one episode (needs --episode).
    Perfetto,
}

/// A format's name and every option given with it.
#[derive(Clone, Copy, Debug)]
pub struct FormatChoice {
    pub name: FormatName,
    /// Perfetto: the episode's number.
    pub episode: Option<u32>,
    /// The HDR log's unit.
    pub hdr_unit: HdrUnit,
    /// The cyclictest histogram's size.
    pub max_us: u32,
    /// rt-tests JSON's unit (`None`: microseconds).
    pub unit: Option<RtTestsUnit>,
}

/// Options that do not go with the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error(
        "an episode goes with the perfetto format only; the other formats export the whole run"
    )]
    EpisodeWithoutPerfetto,
    #[error("a unit goes with the rt-tests-json format (the HDR log has its own)")]
    UnitWithoutRtTests,
    #[error("the perfetto format exports one episode: give its number")]
    PerfettoWithoutEpisode,
}

impl FormatChoice {
    /// The format, with its options.
    pub fn format(&self) -> Result<Format, ChoiceError> {
        use FormatName as N;
        if self.episode.is_some() && self.name != N::Perfetto {
            return Err(ChoiceError::EpisodeWithoutPerfetto);
        }
        if self.unit.is_some() && self.name != N::RtTestsJson {
            return Err(ChoiceError::UnitWithoutRtTests);
        }
        Ok(match self.name {
            N::Json => Format::Json,
            N::Csv => Format::Csv,
            N::CsvBuckets => Format::CsvBuckets,
            N::Hdr => Format::Hdr(self.hdr_unit),
            N::Cyclictest => Format::Cyclictest {
                max_us: self.max_us,
            },
            N::RtTestsJson => Format::RtTestsJson(self.unit.unwrap_or(RtTestsUnit::Micros)),
            N::Prometheus => Format::Prometheus,
            N::Perfetto => Format::Perfetto {
                episode: self.episode.ok_or(ChoiceError::PerfettoWithoutEpisode)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(name: FormatName) -> FormatChoice {
        FormatChoice {
            name,
            episode: None,
            hdr_unit: HdrUnit::Nanos,
            max_us: 1000,
            unit: None,
        }
    }

    #[test]
    fn options_go_with_their_format_only() {
        let with_episode = |name| FormatChoice {
            episode: Some(3),
            ..choice(name)
        };
        assert_eq!(
            with_episode(FormatName::Perfetto).format(),
            Ok(Format::Perfetto { episode: 3 })
        );
        assert_eq!(
            with_episode(FormatName::Json).format(),
            Err(ChoiceError::EpisodeWithoutPerfetto)
        );
        assert_eq!(
            choice(FormatName::Perfetto).format(),
            Err(ChoiceError::PerfettoWithoutEpisode)
        );
        let with_unit = |name| FormatChoice {
            unit: Some(RtTestsUnit::Nanos),
            ..choice(name)
        };
        assert_eq!(
            with_unit(FormatName::RtTestsJson).format(),
            Ok(Format::RtTestsJson(RtTestsUnit::Nanos))
        );
        assert_eq!(
            with_unit(FormatName::Hdr).format(),
            Err(ChoiceError::UnitWithoutRtTests)
        );
        assert_eq!(
            choice(FormatName::RtTestsJson).format(),
            Ok(Format::RtTestsJson(RtTestsUnit::Micros))
        );
    }
}
