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
/// commas), and inside an `rt:` one, which takes the pieces that continue
/// it (`rt:90,500us/10ms,x2,cpu1`; see `latscope_workloads::continues_rt`).
pub fn split_workloads(list: &str) -> Result<Vec<String>, WorkloadListError> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = list.trim();
    let mut in_rt = false;
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
        match out.last_mut() {
            Some(last) if in_rt && latscope_workloads::continues_rt(head) => {
                last.push(',');
                last.push_str(head);
            }
            _ => {
                in_rt = head.starts_with("rt:");
                out.push(head.to_string());
            }
        }
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

    #[test]
    fn an_rt_workload_keeps_its_commas() {
        assert_eq!(
            split_workloads("idle,rt:90,500us/10ms,x2,cpu1,cpu,hackbench,rt:5,1ms/2ms"),
            Ok(vec![
                "idle".to_string(),
                "rt:90,500us/10ms,x2,cpu1".to_string(),
                "cpu".to_string(),
                "hackbench".to_string(),
                "rt:5,1ms/2ms".to_string(),
            ])
        );
    }
}
