//! Helpers shared by the report crate's integration tests.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

/// `promtool check metrics` on `text` through its standard input:
/// `None` where promtool is not installed, else its exit status and
/// everything it printed.
pub fn promtool_check(text: &str) -> Option<(std::process::ExitStatus, String)> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = text.to_string();
    // A thread writes, so that promtool's output can never block our write.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status, printed))
}
