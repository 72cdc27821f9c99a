//! Exit codes (DESIGN.md): 0 ok, 1 error, 2 usage, 3 threshold exceeded,
//! 130 interrupted.

pub const OK: i32 = 0;
pub const ERROR: i32 = 1;
pub const USAGE: i32 = 2;
/// A verdict or check the user asked about failed (a threshold was exceeded).
pub const THRESHOLD: i32 = 3;
pub const INTERRUPTED: i32 = 130;

/// An error that exits with a given code after printing one line.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub error: anyhow::Error,
}

impl Exit {
    pub fn usage(msg: impl std::fmt::Display) -> Exit {
        Exit {
            code: USAGE,
            error: anyhow::anyhow!("{msg}"),
        }
    }
}

impl From<anyhow::Error> for Exit {
    fn from(error: anyhow::Error) -> Exit {
        Exit { code: ERROR, error }
    }
}

macro_rules! exit_from {
    ($($t:ty),*) => {
        $(impl From<$t> for Exit {
            fn from(e: $t) -> Exit {
                Exit { code: ERROR, error: anyhow::Error::from(e) }
            }
        })*
    };
}

exit_from!(
    latscope_store::StoreError,
    latscope_engine::probes::ProbeError,
    latscope_engine::system::PlatformError,
    serde_json::Error
);
