//! `show` on a store: a stored run as text or as its JSON document, a
//! micro run's benchmarks or a latency run's summary (with a monitor's
//! observed blocks and, when asked, its episodes).

use latscope_store::Store;

use super::{observed_text, StoredError};

/// What `show` prints of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShowAs {
    /// The JSON document instead of text.
    pub json: bool,
    /// A latency run's histograms in the text.
    pub histogram: bool,
    /// A latency run's episodes in the text.
    pub episodes: bool,
}

/// The run `spec` names, as `show` prints it.
pub fn show_run(store: &Store, spec: &str, how: ShowAs) -> Result<String, StoredError> {
    let id = store.resolve(spec)?;
    let run = store.load_run(id)?;
    if let Some(micro) = store.load_micro(id)? {
        let results = micro.results();
        let context = micro.context.as_ref();
        if how.json {
            return json(&crate::micro_json(&run, context, &results));
        }
        return Ok(crate::micro_text(&run, context, &results));
    }
    if how.json {
        return json(&crate::run_json(&run));
    }
    let mut text = crate::run_summary(&run, how.histogram);
    text.push_str(&observed_text(store, id)?);
    if how.episodes {
        text.push_str(&crate::episodes_text(&run));
    }
    Ok(text)
}

fn json<T: serde::Serialize>(doc: &T) -> Result<String, StoredError> {
    Ok(serde_json::to_string_pretty(doc).map_err(StoredError::Json)? + "\n")
}
