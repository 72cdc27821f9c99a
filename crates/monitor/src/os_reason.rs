//! I/O errors as one-line reasons, for every message of the crate.

use std::io;

/// An I/O error's text without the "(os error N)" that std appends, which
/// means nothing to a user and breaks the one-line messages.
pub(crate) fn os_reason(error: &io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    }
}
