//! Which stored runs a listing shows: [`RunFilter`] over [`RunListing`]s
//! (`latscope list --host --kernel --since`).

use latscope_model::Nanos;

use crate::RunListing;

/// A listing's filter; every field set must match (none set: every run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// The measured machine's hostname.
    pub host: Option<String>,
    /// A kernel release or one of its series ([`kernel_matches`]).
    pub kernel: Option<String>,
    /// Runs started at or after this Unix time.
    pub started_since: Option<Nanos>,
}

impl RunFilter {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == RunFilter::default()
    }

    /// Whether `run` passes the filter.
    pub fn matches(&self, run: &RunListing) -> bool {
        self.host.as_ref().is_none_or(|h| run.meta.hostname == *h)
            && self
                .kernel
                .as_ref()
                .is_none_or(|k| kernel_matches(&run.system_kernel, k))
            && self
                .started_since
                .is_none_or(|t| run.meta.started_unix_ns >= t)
    }
}

/// Whether kernel release `release` is `wanted` or one of its series:
/// `6.18` matches `6.18` and `6.18.44-rt12`, not `6.180`.
pub fn kernel_matches(release: &str, wanted: &str) -> bool {
    match release.strip_prefix(wanted) {
        Some(rest) => rest.is_empty() || rest.starts_with(['.', '-', '+']),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::kernel_matches;

    #[test]
    fn a_kernel_series_matches_its_releases_only() {
        assert!(kernel_matches("6.18.44-fc-v657", "6.18"));
        assert!(kernel_matches("6.18", "6.18"));
        assert!(kernel_matches("6.18-rc3", "6.18"));
        assert!(!kernel_matches("6.180.1", "6.18"));
        assert!(!kernel_matches("6.1.2", "6.18"));
        assert!(kernel_matches("6.18.44-fc-v657", "6.18.44-fc-v657"));
    }
}
