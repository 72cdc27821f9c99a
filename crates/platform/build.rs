//! Compiles latscope's BPF programs (`bpf/*.bpf.c`) with clang when the
//! machine has it, for the BPF tracing backend. Without clang (or libbpf's
//! headers) the crate still builds: the backend is left out, cargo prints
//! one warning saying so, and `--trace` uses the perf backend.
//!
//! `LATSCOPE_CLANG` names another clang; `LATSCOPE_NO_BPF=1` leaves the
//! programs out on purpose (to test the fallback). `LATSCOPE_REQUIRE_BPF=1`
//! (set by `.ci/run`) turns "not built" into a build error, so that a
//! program clang rejects cannot pass CI as a build without the backend,
//! whose BPF tests all say "skipped".

use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAMS: &[&str] = &["timer"];
/// Headers the programs include (rebuild when they change).
const HEADERS: &[&str] = &["hdr_index.h", "vectors.h"];

fn main() {
    println!("cargo:rustc-check-cfg=cfg(latscope_bpf)");
    println!("cargo:rerun-if-env-changed=LATSCOPE_CLANG");
    println!("cargo:rerun-if-env-changed=LATSCOPE_NO_BPF");
    println!("cargo:rerun-if-env-changed=LATSCOPE_REQUIRE_BPF");
    for p in PROGRAMS {
        println!("cargo:rerun-if-changed=bpf/{p}.bpf.c");
    }
    for h in HEADERS {
        println!("cargo:rerun-if-changed=bpf/{h}");
    }
    if std::env::var_os("LATSCOPE_NO_BPF").is_some_and(|v| v != "0") {
        println!("cargo:warning=latscope: BPF tracing backend left out (LATSCOPE_NO_BPF); --trace uses perf");
        return;
    }
    let out = match std::env::var_os("OUT_DIR") {
        Some(o) => PathBuf::from(o),
        None => return,
    };
    match build_all(&out) {
        Ok(()) => println!("cargo:rustc-cfg=latscope_bpf"),
        Err(why) if std::env::var_os("LATSCOPE_REQUIRE_BPF").is_some_and(|v| v != "0") => {
            eprintln!("latscope: LATSCOPE_REQUIRE_BPF is set, but the BPF programs did not build: {why}");
            std::process::exit(1);
        }
        Err(why) => println!(
            "cargo:warning=latscope: BPF tracing backend not built ({why}); --trace uses perf. Install clang and libbpf-dev (Debian) to build it"
        ),
    }
}

fn build_all(out: &Path) -> Result<(), String> {
    let clang = std::env::var("LATSCOPE_CLANG").unwrap_or_else(|_| "clang".to_string());
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => return Err(format!("no BPF target defines for {other}")),
        Err(_) => return Err("unknown target architecture".to_string()),
    };
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Err("libbpf's headers (bpf/bpf_helpers.h) not found".to_string());
    }
    // <linux/types.h> needs the target's <asm/types.h>, which Debian keeps
    // under the multiarch directory.
    let multiarch = Command::new(&clang)
        .arg("-print-multiarch")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{clang} not found"))?;
    for p in PROGRAMS {
        let src = format!("bpf/{p}.bpf.c");
        let obj = out.join(format!("{p}.bpf.o"));
        let output = Command::new(&clang)
            // v3: atomic fetch-and-add with its result (the recorder's
            // slot claim) needs BPF_ATOMIC, kernel 5.12 and later.
            .args([
                "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
            ])
            .arg(format!("-D__TARGET_ARCH_{arch}"))
            .arg(format!("-I/usr/include/{multiarch}"))
            .args(["-c", &src, "-o"])
            .arg(&obj)
            .output()
            .map_err(|e| format!("{clang}: {e}"))?;
        if !output.status.success() {
            let err = String::from_utf8_lossy(&output.stderr);
            let first = err
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("failed");
            return Err(format!("{src}: {first}"));
        }
    }
    Ok(())
}
