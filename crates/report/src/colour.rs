//! Colour for verdicts on a terminal, applied to finished text, so the
//! renderers stay plain. The caller decides when: the `latscope` binary only
//! when standard output is a terminal and `NO_COLOR` is not set
//! (https://no-color.org), never in files, pipes or JSON.

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// Colours the verdict words of finished text when `on`: PASS green, FAIL
/// red, and a line that starts with `hazard` red or `warning` yellow.
pub fn verdicts(text: &str, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let coloured = if line.starts_with("hazard ") {
            format!("{RED}{}{RESET}{}", &line[..6], &line[6..])
        } else if line.starts_with("warning ") {
            format!("{YELLOW}{}{RESET}{}", &line[..7], &line[7..])
        } else {
            line.replace(" PASS ", &format!(" {GREEN}PASS{RESET} "))
                .replace(" FAIL ", &format!(" {RED}FAIL{RESET} "))
        };
        out.push_str(&coloured);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_unless_asked_and_verdicts_coloured_when_asked() {
        let text = "hazard  preemption\nwarning x\nrt-audio   FAIL  1 s\nmodem  PASS  2 h\n";
        assert_eq!(verdicts(text, false), text);
        let c = verdicts(text, true);
        assert!(c.contains("\x1b[31mhazard\x1b[0m"));
        assert!(c.contains("\x1b[33mwarning\x1b[0m"));
        assert!(c.contains(" \x1b[31mFAIL\x1b[0m "));
        assert!(c.contains(" \x1b[32mPASS\x1b[0m "));
        // Stripping the codes gives the plain text back.
        let stripped = c
            .replace(RED, "")
            .replace(GREEN, "")
            .replace(YELLOW, "")
            .replace(RESET, "");
        assert_eq!(stripped, text);
    }
}
