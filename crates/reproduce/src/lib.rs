//! `latscope study NAME`: each of the four studies' experiment designs run
//! on this machine, and the paper's published figures printed beside the
//! measured ones, with the mapping of terms and units. The designs
//! ([`design`]) are run by the caller (a probe run or a micro run, stored
//! as any other); the pairing ([`reproduce`]) reads what was measured
//! ([`RunFigures`]) and the published tables (`latscope-studies`), and
//! [`render`] prints the result. See docs/studies.md.

mod bernadat;
mod chen;
mod cota;
mod design;
mod figures;
mod jones;
mod paired;
mod render;
#[cfg(test)]
mod tests;

pub use design::{design, CellKind, Design, MicroDesign, ProbeDesign, STUDY_IDS};
pub use figures::{CellFigures, ForecastFigures, HorizonFigure, MetricFigures, RunFigures};
pub use paired::{in_unit, Measured, PairedRow, PairedTable, Reproduction, MISSING};
pub use render::{render, table};

/// A study `latscope study` cannot reproduce.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReproduceError {
    #[error("unknown study '{0}' (cota-robles-held, jones-regehr, bernadat, chen-et-al)")]
    UnknownStudy(String),
    /// The embedded published tables did not load (a build defect).
    #[error("the studies' data: {0}")]
    Data(String),
    /// The figures are of another design than the study's.
    #[error("study '{0}' needs the figures of its own design")]
    WrongDesign(String),
}

/// The study `id` reproduced from `figures`, measured by `design`.
pub fn reproduce(
    id: &str,
    design: &Design,
    figures: &RunFigures,
) -> Result<Reproduction, ReproduceError> {
    let study = latscope_studies::study(id)
        .map_err(|e| ReproduceError::Data(e.to_string()))?
        .ok_or_else(|| ReproduceError::UnknownStudy(id.to_string()))?;
    let wrong = || ReproduceError::WrongDesign(id.to_string());
    let tables = match (id, design) {
        ("cota-robles-held", Design::Probe(p)) => cota::pair(study, p, figures),
        ("jones-regehr", Design::Probe(_)) => jones::pair(study, figures),
        ("bernadat", Design::Probe(p)) => bernadat::pair(study, p, figures),
        ("chen-et-al", Design::Micro(m)) => chen::pair(study, m, figures),
        _ => return Err(wrong()),
    };
    Ok(Reproduction {
        study: study.id.clone(),
        title: study.title.clone(),
        authors: study.authors.clone(),
        published: study.published.clone(),
        run_id: figures.run_id,
        design: design.describe(),
        tables,
        terms: study
            .terms
            .iter()
            .map(|t| {
                let l = if t.latscope.is_empty() {
                    "no counterpart".to_string()
                } else {
                    t.latscope.clone()
                };
                (t.term.clone(), l)
            })
            .collect(),
    })
}

/// The study's title, for `latscope study --list`.
pub fn title(id: &str) -> Result<String, ReproduceError> {
    latscope_studies::study(id)
        .map_err(|e| ReproduceError::Data(e.to_string()))?
        .map(|s| format!("{} ({})", s.title, s.authors))
        .ok_or_else(|| ReproduceError::UnknownStudy(id.to_string()))
}

/// `latscope study --list`: each study's title, with its quick and full
/// designs.
pub fn list_text() -> Result<String, ReproduceError> {
    let mut text = String::new();
    for id in STUDY_IDS {
        text.push_str(&format!("{id}: {}\n", title(id)?));
        for quick in [true, false] {
            if let Some(d) = design(id, quick) {
                let which = if quick { "--quick" } else { "full   " };
                text.push_str(&format!("  {which} {}\n", d.describe()));
            }
        }
    }
    Ok(text)
}
