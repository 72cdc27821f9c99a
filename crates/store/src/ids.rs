//! A cell's row id: its own file, since the errors name cells and the
//! store's root uses the errors.

/// A cell's row id in its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellId(pub i64);
