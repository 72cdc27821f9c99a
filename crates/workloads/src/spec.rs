//! Workload names as the user writes them: `cpu`, `net`, `hackbench`,
//! `rt:90,500us/10ms,x2,cpu1`, `custom:stress-ng --cpu 1`,
//! `custom:["my prog","an arg"]`.

use std::fmt;
use std::str::FromStr;

use crate::rt_spec::{continues_rt, RtLoad, RT_PREFIX};
use crate::WorkloadError;

/// A named workload. `Custom` runs a program the user names, without a shell.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadSpec {
    Idle,
    Cpu,
    Memory,
    Compile,
    Disk,
    Net,
    Tty,
    Fork,
    Timer,
    /// rt-tests' hackbench in a loop, as rteval runs it.
    Hackbench,
    /// Periodic SCHED_FIFO threads (`rt:PRIO,BUSY/PERIOD,...`).
    Rt(RtLoad),
    Custom {
        program: String,
        args: Vec<String>,
    },
}

const CUSTOM_PREFIX: &str = "custom:";

impl WorkloadSpec {
    /// The built-in workloads, in the order tables show them.
    pub const BUILTIN: [WorkloadSpec; 10] = [
        WorkloadSpec::Idle,
        WorkloadSpec::Cpu,
        WorkloadSpec::Memory,
        WorkloadSpec::Compile,
        WorkloadSpec::Disk,
        WorkloadSpec::Net,
        WorkloadSpec::Tty,
        WorkloadSpec::Fork,
        WorkloadSpec::Timer,
        WorkloadSpec::Hackbench,
    ];

    /// Parses one workload.
    ///
    /// `custom:` takes the rest of the text as the command. Two forms:
    /// - `custom:CMD ARG ARG` — split at runs of whitespace, and nothing
    ///   else: no quotes, no escapes, no `$VAR`, no globs, no `~`. Every
    ///   other character (`;`, `|`, `$`, `*`, `"`, ...) reaches the program
    ///   as it is.
    /// - `custom:["CMD","ARG with spaces",""]` — a JSON array of strings,
    ///   taken exactly, for arguments that contain whitespace or are empty.
    pub fn parse(text: &str) -> Result<WorkloadSpec, WorkloadError> {
        let trimmed = text.trim();
        if let Some(command) = trimmed.strip_prefix(CUSTOM_PREFIX) {
            return parse_custom(text, command);
        }
        if let Some(body) = trimmed.strip_prefix(RT_PREFIX) {
            return RtLoad::parse(text, body).map(WorkloadSpec::Rt);
        }
        match trimmed {
            "idle" => Ok(WorkloadSpec::Idle),
            "cpu" => Ok(WorkloadSpec::Cpu),
            "memory" => Ok(WorkloadSpec::Memory),
            "compile" => Ok(WorkloadSpec::Compile),
            "disk" => Ok(WorkloadSpec::Disk),
            "net" => Ok(WorkloadSpec::Net),
            "tty" => Ok(WorkloadSpec::Tty),
            "fork" => Ok(WorkloadSpec::Fork),
            "timer" => Ok(WorkloadSpec::Timer),
            "hackbench" => Ok(WorkloadSpec::Hackbench),
            "" => Err(WorkloadError::Invalid {
                spec: text.to_string(),
                why: "empty workload name".into(),
            }),
            other => Err(WorkloadError::Unknown(other.to_string())),
        }
    }

    /// Parses a comma-separated list (`--workload idle,cpu,net`). A
    /// `custom:` entry takes everything after it, commas included, so it
    /// must come last: `--workload cpu,custom:my-load --rate 1,2`. An
    /// `rt:` entry takes the pieces after it that continue it
    /// ([`continues_rt`]): `idle,rt:90,500us/10ms,x2,cpu`.
    pub fn parse_list(text: &str) -> Result<Vec<WorkloadSpec>, WorkloadError> {
        split_list(text)
            .iter()
            .map(|one| WorkloadSpec::parse(one))
            .collect()
    }

    /// The short name tables use: `cpu`, `custom:stress-ng`.
    pub fn name(&self) -> String {
        match self {
            WorkloadSpec::Idle => "idle".into(),
            WorkloadSpec::Cpu => "cpu".into(),
            WorkloadSpec::Memory => "memory".into(),
            WorkloadSpec::Compile => "compile".into(),
            WorkloadSpec::Disk => "disk".into(),
            WorkloadSpec::Net => "net".into(),
            WorkloadSpec::Tty => "tty".into(),
            WorkloadSpec::Fork => "fork".into(),
            WorkloadSpec::Timer => "timer".into(),
            WorkloadSpec::Hackbench => "hackbench".into(),
            WorkloadSpec::Rt(load) => load.to_string(),
            WorkloadSpec::Custom { program, .. } => {
                let base = program.rsplit('/').next().unwrap_or(program);
                format!("{CUSTOM_PREFIX}{base}")
            }
        }
    }
}

/// Splits a workload list at its commas, except inside a `custom:` entry
/// (which takes the rest) and an `rt:` entry (which takes the pieces that
/// continue it). The pieces are not checked.
pub fn split_list(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    let mut in_rt = false;
    loop {
        let head = rest.trim_start();
        if head.starts_with(CUSTOM_PREFIX) {
            out.push(head.to_string());
            return out;
        }
        let (one, tail) = match rest.split_once(',') {
            Some((one, tail)) => (one, Some(tail)),
            None => (rest, None),
        };
        match out.last_mut() {
            Some(last) if in_rt && continues_rt(one) => {
                last.push(',');
                last.push_str(one);
            }
            _ => {
                in_rt = one.trim_start().starts_with(RT_PREFIX);
                out.push(one.to_string());
            }
        }
        match tail {
            Some(t) => rest = t,
            None => return out,
        }
    }
}

fn parse_custom(whole: &str, command: &str) -> Result<WorkloadSpec, WorkloadError> {
    let invalid = |why: &str| WorkloadError::Invalid {
        spec: whole.trim().to_string(),
        why: why.to_string(),
    };
    let words: Vec<String> = if command.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<String>>(command.trim())
            .map_err(|e| invalid(&format!("not a JSON array of strings: {e}")))?
    } else {
        command.split_whitespace().map(str::to_string).collect()
    };
    let mut words = words.into_iter();
    let program = match words.next() {
        Some(p) if !p.is_empty() => p,
        _ => {
            return Err(invalid(
                "custom: needs a command, e.g. custom:stress-ng --cpu 1",
            ))
        }
    };
    Ok(WorkloadSpec::Custom {
        program,
        args: words.collect(),
    })
}

impl FromStr for WorkloadSpec {
    type Err = WorkloadError;
    fn from_str(s: &str) -> Result<WorkloadSpec, WorkloadError> {
        WorkloadSpec::parse(s)
    }
}

/// The parseable form: `cpu`, `custom:printf %s a`, or the JSON form when
/// an argument has whitespace or is empty.
impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let WorkloadSpec::Rt(load) = self {
            return load.fmt(f);
        }
        let WorkloadSpec::Custom { program, args } = self else {
            return f.write_str(&self.name());
        };
        let plain = |s: &String| !s.is_empty() && !s.contains(char::is_whitespace);
        if plain(program) && args.iter().all(plain) && !program.starts_with('[') {
            write!(f, "{CUSTOM_PREFIX}{program}")?;
            for a in args {
                write!(f, " {a}")?;
            }
            Ok(())
        } else {
            let mut all = vec![program.clone()];
            all.extend(args.iter().cloned());
            let json = serde_json::to_string(&all).map_err(|_| fmt::Error)?;
            write!(f, "{CUSTOM_PREFIX}{json}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom(program: &str, args: &[&str]) -> WorkloadSpec {
        WorkloadSpec::Custom {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn builtin_names_round_trip() {
        for spec in WorkloadSpec::BUILTIN {
            assert_eq!(WorkloadSpec::parse(&spec.name()).unwrap(), spec);
            assert_eq!(spec.to_string(), spec.name());
        }
    }

    #[test]
    fn custom_is_split_at_whitespace_only() {
        let spec = WorkloadSpec::parse("custom:printf %s|%s a;b $HOME").unwrap();
        assert_eq!(spec, custom("printf", &["%s|%s", "a;b", "$HOME"]));
        let spec = WorkloadSpec::parse("custom:  sh   -c  'echo   hi'  ").unwrap();
        assert_eq!(spec, custom("sh", &["-c", "'echo", "hi'"]));
        let spec = WorkloadSpec::parse("custom:a\t\"b c\"\\ d *").unwrap();
        assert_eq!(spec, custom("a", &["\"b", "c\"\\", "d", "*"]));
        assert_eq!(spec.name(), "custom:a");
    }

    #[test]
    fn custom_json_form_is_exact() {
        let spec = WorkloadSpec::parse(r#"custom:["/bin/my prog", "a b", "", "$X"]"#).unwrap();
        assert_eq!(spec, custom("/bin/my prog", &["a b", "", "$X"]));
        assert_eq!(spec.name(), "custom:my prog");
        // Display gives a form that parses back to the same thing.
        assert_eq!(WorkloadSpec::parse(&spec.to_string()).unwrap(), spec);
        let simple = custom("printf", &["%s|%s", "a;b"]);
        assert_eq!(simple.to_string(), "custom:printf %s|%s a;b");
        assert_eq!(WorkloadSpec::parse(&simple.to_string()).unwrap(), simple);
    }

    #[test]
    fn bad_specs_are_one_line_errors() {
        let cases = [
            ("cpuu", "unknown workload 'cpuu'"),
            ("", "empty workload name"),
            ("custom:", "needs a command"),
            ("custom:   ", "needs a command"),
            ("custom:[]", "needs a command"),
            ("custom:[\"\"]", "needs a command"),
            ("custom:[1,2]", "not a JSON array of strings"),
            ("custom:[\"a\"", "not a JSON array of strings"),
        ];
        for (text, want) in cases {
            let err = WorkloadSpec::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn lists_and_custom_last() {
        let list = WorkloadSpec::parse_list("idle, cpu,net").unwrap();
        assert_eq!(
            list,
            vec![WorkloadSpec::Idle, WorkloadSpec::Cpu, WorkloadSpec::Net]
        );
        let list = WorkloadSpec::parse_list("cpu,custom:load --rates 1,2,3").unwrap();
        assert_eq!(
            list,
            vec![WorkloadSpec::Cpu, custom("load", &["--rates", "1,2,3"])]
        );
        assert!(WorkloadSpec::parse_list("cpu,,net").is_err());
        assert!(WorkloadSpec::parse_list("cpu,").is_err());
        assert!(WorkloadSpec::parse_list("cpu,bogus").is_err());
    }

    #[test]
    fn rt_entries_take_their_pieces() {
        let list = WorkloadSpec::parse_list("idle,rt:90,500us/10ms,x2,cpu1,cpu,hackbench").unwrap();
        assert_eq!(list.len(), 4, "{list:?}");
        assert_eq!(list[1].to_string(), "rt:90,500us/10ms,x2,cpu1");
        assert_eq!(list[1].name(), "rt:90,500us/10ms,x2,cpu1");
        assert_eq!(list[2], WorkloadSpec::Cpu);
        assert_eq!(list[3], WorkloadSpec::Hackbench);
        let list = WorkloadSpec::parse_list("rt:90,1ms/10ms,rt:50,1ms/10ms").unwrap();
        assert_eq!(list.len(), 2, "{list:?}");
        assert_eq!(
            split_list("5,rt:1,2ms/3ms,custom:a 1,2"),
            vec!["5", "rt:1,2ms/3ms", "custom:a 1,2"]
        );
        let err = WorkloadSpec::parse_list("cpu,rt:90")
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs BUSY/PERIOD"), "{err}");
    }
}
