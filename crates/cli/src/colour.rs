//! Colour for verdicts on a terminal: only when standard output is a
//! terminal and `NO_COLOR` is not set (https://no-color.org), never in files,
//! pipes or JSON. The colouring itself is `latscope_report::colour`'s.

use std::io::IsTerminal;

/// Whether colour may be used on standard output.
pub fn enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

/// `text` with its verdict words coloured when [`enabled`].
pub fn verdicts(text: &str) -> String {
    latscope_report::colour::verdicts(text, enabled())
}
