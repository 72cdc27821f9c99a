//! Workload names as the user writes them: `cpu`, `net`,
//! `custom:stress-ng --cpu 1`, `custom:["my prog","an arg"]`.

use std::fmt;
use std::str::FromStr;

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
    Custom { program: String, args: Vec<String> },
}

const CUSTOM_PREFIX: &str = "custom:";

impl WorkloadSpec {
    /// The built-in workloads, in the order tables show them.
    pub const BUILTIN: [WorkloadSpec; 9] = [
        WorkloadSpec::Idle,
        WorkloadSpec::Cpu,
        WorkloadSpec::Memory,
        WorkloadSpec::Compile,
        WorkloadSpec::Disk,
        WorkloadSpec::Net,
        WorkloadSpec::Tty,
        WorkloadSpec::Fork,
        WorkloadSpec::Timer,
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
            "" => Err(WorkloadError::Invalid {
                spec: text.to_string(),
                why: "empty workload name".into(),
            }),
            other => Err(WorkloadError::Unknown(other.to_string())),
        }
    }

    /// Parses a comma-separated list (`--workload idle,cpu,net`). A
    /// `custom:` entry takes everything after it, commas included, so it
    /// must come last: `--workload cpu,custom:my-load --rate 1,2`.
    pub fn parse_list(text: &str) -> Result<Vec<WorkloadSpec>, WorkloadError> {
        let mut out = Vec::new();
        let mut rest = text;
        loop {
            let head = rest.trim_start();
            if head.starts_with(CUSTOM_PREFIX) {
                out.push(WorkloadSpec::parse(head)?);
                break;
            }
            match rest.split_once(',') {
                Some((one, tail)) => {
                    out.push(WorkloadSpec::parse(one)?);
                    rest = tail;
                }
                None => {
                    out.push(WorkloadSpec::parse(rest)?);
                    break;
                }
            }
        }
        Ok(out)
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
            WorkloadSpec::Custom { program, .. } => {
                let base = program.rsplit('/').next().unwrap_or(program);
                format!("{CUSTOM_PREFIX}{base}")
            }
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
}
