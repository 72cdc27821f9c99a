//! Builds the trivial program of the process benchmarks twice — statically
//! and dynamically linked against the C library — with the C compiler the
//! `cc` crate finds. The two executables are embedded in latscope (see
//! `src/ops/process.rs`); where one cannot be built (no C compiler, no
//! static C library), an empty file stands in and its benchmarks say why
//! they are skipped.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=programs/true.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let source = PathBuf::from("programs/true.c");
    for (name, extra) in [("true_static", &["-static"][..]), ("true_dynamic", &[][..])] {
        let target = out.join(name);
        let built = cc::Build::new()
            .cargo_metadata(false)
            .opt_level(2)
            .try_get_compiler()
            .ok()
            .and_then(|c| {
                let mut cmd: Command = c.to_command();
                cmd.args(extra).arg("-o").arg(&target).arg(&source);
                cmd.status().ok()
            })
            .is_some_and(|s| s.success());
        if !built {
            println!("cargo:warning=could not build the {name} program of the process benchmarks; they will be skipped");
            let _ = std::fs::write(&target, b"");
        }
    }
}
