//! A list of workloads as a caller writes it (`idle,cpu,custom:prog x,y`),
//! split into the names cells carry. The names are checked when the run is
//! prepared, not here.

/// Why a workload list names no workload, or an empty one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadListError {
    /// Two commas in a row, or a comma at an end.
    #[error("empty name in '{0}'")]
    EmptyName(String),
    /// Nothing but blanks.
    #[error("no workload named")]
    Empty,
}

/// `a,b,custom:prog x y`: commas separate workloads, except inside a
/// `custom:` one, which takes the rest of the list (its command may contain
/// commas).
pub fn split_workloads(list: &str) -> Result<Vec<String>, WorkloadListError> {
    let mut out = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        if rest.starts_with("custom:") {
            out.push(rest.to_string());
            break;
        }
        let (head, tail) = rest.split_once(',').unwrap_or((rest, ""));
        let head = head.trim();
        if head.is_empty() {
            return Err(WorkloadListError::EmptyName(list.to_string()));
        }
        out.push(head.to_string());
        rest = tail.trim();
    }
    if out.is_empty() {
        return Err(WorkloadListError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commas_split_except_inside_a_custom_workload() {
        assert_eq!(
            split_workloads(" idle, cpu,custom:prog a,b "),
            Ok(vec![
                "idle".to_string(),
                "cpu".to_string(),
                "custom:prog a,b".to_string()
            ])
        );
        assert_eq!(
            split_workloads("idle,,cpu"),
            Err(WorkloadListError::EmptyName("idle,,cpu".into()))
        );
        assert_eq!(split_workloads("  "), Err(WorkloadListError::Empty));
    }
}
