//! The system snapshot: what the kernel and the machine were set up to do when
//! a run started.
//!
//! Every file is read relative to a root directory so that the same code runs
//! on the live machine (`/`) and on a fake sysroot in the tests. Nothing here
//! fails: a file that cannot be read leaves its field `None` or empty, because
//! a snapshot with a gap is still worth recording and a guess is not.
//!
//! The snapshot ends with the latency hazards found in it ([`crate::hazards`]),
//! so every run stores what `latscope check` would have said.

use std::fs;
use std::path::Path;

pub use latscope_model::preempt_from_version;
use latscope_model::{CpuSet, IdleState, SystemInfo};

use crate::hazards;
use crate::sysfs::{read_text, read_trimmed};

/// The preemption models the snapshot names, in the kernel's spelling.
const PREEMPT_MODES: [&str; 5] = ["none", "voluntary", "full", "lazy", "rt"];

/// Snapshot of the live machine.
pub fn snapshot() -> SystemInfo {
    let root = Path::new("/");
    let mut info = snapshot_from(root);
    // Clock resolutions and the slack are the running kernel's and this
    // thread's, which no fake sysroot can stand in for.
    info.granularity = crate::granularity::granularity(root);
    info
}

/// Snapshot of the system whose `/proc` and `/sys` are found under `root`.
pub fn snapshot_from(root: &Path) -> SystemInfo {
    let mut info = SystemInfo {
        hostname: read_trimmed(root, "proc/sys/kernel/hostname").unwrap_or_default(),
        machine_id: read_trimmed(root, "etc/machine-id")
            .or_else(|| read_trimmed(root, "var/lib/dbus/machine-id"))
            .filter(|id| !id.is_empty()),
        kernel_release: read_trimmed(root, "proc/sys/kernel/osrelease").unwrap_or_default(),
        kernel_version: read_trimmed(root, "proc/sys/kernel/version").unwrap_or_default(),
        kernel_cmdline: read_trimmed(root, "proc/cmdline").unwrap_or_default(),
        ..SystemInfo::default()
    };

    let config = kernel_config(root, &info.kernel_release);
    let debugfs = read_text(root, "sys/kernel/debug/sched/preempt");
    if let Some((model, source)) = preemption_model(
        debugfs.as_deref(),
        &info.kernel_cmdline,
        config.as_deref(),
        &info.kernel_version,
    ) {
        info.preemption_model = Some(model.to_string());
        info.preemption_source = Some(source.to_string());
    }
    info.hz = config
        .as_deref()
        .and_then(|c| config_value(c, "CONFIG_HZ"))
        .and_then(|v| v.parse().ok());

    info.isolcpus = cmdline_param(&info.kernel_cmdline, "isolcpus");
    info.nohz_full = cmdline_param(&info.kernel_cmdline, "nohz_full");
    info.rcu_nocbs = cmdline_param(&info.kernel_cmdline, "rcu_nocbs");

    const CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0";
    info.clocksource = read_trimmed(root, &format!("{CLOCKSOURCE}/current_clocksource"));
    info.available_clocksources = read_text(root, &format!("{CLOCKSOURCE}/available_clocksource"))
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();

    if let Some(cpuinfo) = read_text(root, "proc/cpuinfo") {
        let cpu = parse_cpuinfo(&cpuinfo);
        info.cpu_model = cpu.model;
        info.hypervisor = cpu.hypervisor;
        info.tsc_constant_nonstop = cpu.tsc_constant_nonstop;
    }
    info.hypervisor_vendor = read_trimmed(root, "sys/hypervisor/type");

    const CPU: &str = "sys/devices/system/cpu";
    let online = read_trimmed(root, &format!("{CPU}/online"))
        .and_then(|text| CpuSet::parse(&text).ok().map(|set| (text, set)));
    if let Some((text, set)) = online {
        info.cpus_online = text;
        info.cpu_count = u32::try_from(set.len()).unwrap_or(u32::MAX);
        for cpu in set.iter() {
            let path = format!("{CPU}/cpu{}/cpufreq/scaling_governor", cpu.0);
            if let Some(governor) = read_trimmed(root, &path) {
                info.cpufreq_governors.insert(cpu.0, governor);
            }
        }
        if let Some(first) = set.iter().next() {
            info.cpuidle_states = idle_states(root, &format!("{CPU}/cpu{}/cpuidle", first.0));
        }
    }
    info.smt_active = match read_trimmed(root, &format!("{CPU}/smt/active")).as_deref() {
        Some("1") => Some(true),
        Some("0") => Some(false),
        _ => None,
    };
    info.cpuidle_driver = read_trimmed(root, &format!("{CPU}/cpuidle/current_driver"));
    info.cpuidle_governor = read_trimmed(root, &format!("{CPU}/cpuidle/current_governor"))
        .or_else(|| read_trimmed(root, &format!("{CPU}/cpuidle/current_governor_ro")));

    info.rt_runtime_us =
        read_trimmed(root, "proc/sys/kernel/sched_rt_runtime_us").and_then(|v| v.parse().ok());
    info.rt_period_us =
        read_trimmed(root, "proc/sys/kernel/sched_rt_period_us").and_then(|v| v.parse().ok());

    let extra = hazards::Extra::read(root, &info);
    info.hazards = hazards::hazards(&info, &extra);
    info
}

/// The running kernel's configuration, as text.
///
/// `/proc/config.gz` is the authority; it is gzip-compressed and decoded in
/// process (a few hundred microseconds, where spawning `zcat` cost about 4 ms
/// of CPU in every run). Any root may hold it, so a fixture can too.
/// Distribution kernels often lack it (no `CONFIG_IKCONFIG_PROC`) and ship
/// `/boot/config-<release>` instead. An uncompressed `proc/config` lets a
/// fixture stand in for the compressed file.
fn kernel_config(root: &Path, release: &str) -> Option<String> {
    if let Some(text) = read_text(root, "proc/config") {
        return Some(text);
    }
    if let Some(text) = read_gzip(&root.join("proc/config.gz")) {
        return Some(text);
    }
    if !release.is_empty() && !release.contains('/') {
        return read_text(root, &format!("boot/config-{release}"));
    }
    None
}

/// A gzip-compressed text file, decoded; `None` if absent or not gzip.
fn read_gzip(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    // The kernel configuration is a few hundred KiB; refuse anything absurd.
    flate2::read::GzDecoder::new(file)
        .take(16 << 20)
        .read_to_string(&mut text)
        .ok()?;
    (!text.is_empty()).then_some(text)
}

/// The value of `key=value` in a kernel configuration (`# KEY is not set`
/// lines and comments give nothing); surrounding quotes are removed.
pub fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.lines().find_map(|line| {
        let line = line.trim();
        if line.starts_with('#') {
            return None;
        }
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| {
            let v = v.trim();
            v.strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v)
        })
    })
}

fn config_is_y(config: &str, key: &str) -> bool {
    config_value(config, key) == Some("y")
}

/// The boot preemption model a kernel configuration selects.
///
/// `PREEMPT_RT` is checked first: since 6.12 it is an option of its own next
/// to the "Preemption Model" choice (which then says `PREEMPT` or
/// `PREEMPT_LAZY`), and an RT kernel is RT whatever the choice. With
/// `PREEMPT_DYNAMIC` the choice is only the boot default, which `preempt=` or
/// debugfs can override; the callers look there first.
pub fn preempt_from_config(config: &str) -> Option<&'static str> {
    if config_is_y(config, "CONFIG_PREEMPT_RT") || config_is_y(config, "CONFIG_PREEMPT_RT_FULL") {
        return Some("rt");
    }
    [
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
    ]
    .into_iter()
    .find(|(key, _)| config_is_y(config, key))
    .map(|(_, mode)| mode)
}

/// The current mode in `/sys/kernel/debug/sched/preempt`, the one in
/// parentheses: `none (voluntary) full lazy` gives `voluntary`.
pub fn parse_preempt_debugfs(text: &str) -> Option<&'static str> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('(')?.strip_suffix(')'))
        .and_then(known_mode)
}

fn known_mode(word: &str) -> Option<&'static str> {
    PREEMPT_MODES.into_iter().find(|m| *m == word)
}

/// The preemption model and where it was read, by the most direct source the
/// machine offers: debugfs (the live setting), `preempt=` on the command line,
/// the configuration's boot default, and last the build string.
///
/// An RT kernel is reported as `rt` even when debugfs or `preempt=` name
/// `full` or `lazy`, because those are its sub-modes and the reader needs to
/// know it is RT. `preempt=` is ignored unless the kernel may be
/// `PREEMPT_DYNAMIC`, as the kernel itself ignores it then.
pub fn preemption_model(
    debugfs: Option<&str>,
    cmdline: &str,
    config: Option<&str>,
    version: &str,
) -> Option<(&'static str, &'static str)> {
    let config_mode = config.and_then(preempt_from_config);
    let version_mode = preempt_from_version(version);
    if config_mode == Some("rt") {
        return Some(("rt", "config"));
    }
    if version_mode == Some("rt") {
        return Some(("rt", "version"));
    }
    if let Some(mode) = debugfs.and_then(parse_preempt_debugfs) {
        return Some((mode, "debugfs"));
    }
    let may_be_dynamic = match config {
        Some(c) => config_is_y(c, "CONFIG_PREEMPT_DYNAMIC"),
        None => true,
    };
    if may_be_dynamic {
        let mode = cmdline_param(cmdline, "preempt")
            .as_deref()
            .and_then(known_mode)
            .filter(|m| *m != "rt");
        if let Some(mode) = mode {
            return Some((mode, "cmdline"));
        }
    }
    if let Some(mode) = config_mode {
        return Some((mode, "config"));
    }
    version_mode.map(|mode| (mode, "version"))
}

/// The kernel's parameters, up to a standalone `--` (what follows goes to
/// init), as `(name, value)`; a value in double quotes loses its quotes and
/// keeps its spaces, as the kernel's own parser does.
pub fn cmdline_params(cmdline: &str) -> Vec<(String, Option<String>)> {
    let mut params = Vec::new();
    let mut chars = cmdline.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut word = String::new();
        let mut quoted = false;
        let mut had_quote = false;
        while let Some(c) = chars.next_if(|c| quoted || !c.is_whitespace()) {
            if c == '"' {
                quoted = !quoted;
                had_quote = true;
            } else {
                word.push(c);
            }
        }
        if word == "--" && !had_quote {
            break;
        }
        params.push(match word.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (word, None),
        });
    }
    params
}

/// The value of kernel parameter `name` (the last one given wins, as it does
/// for the kernel); `None` when absent or given without a value. The kernel
/// treats `-` and `_` in parameter names alike.
pub fn cmdline_param(cmdline: &str, name: &str) -> Option<String> {
    let norm = |s: &str| s.replace('-', "_");
    let name = norm(name);
    cmdline_params(cmdline)
        .into_iter()
        .rev()
        .find(|(n, v)| v.is_some() && norm(n) == name)
        .and_then(|(_, v)| v)
}

/// What the snapshot takes from `/proc/cpuinfo`.
#[derive(Debug, Default, PartialEq)]
struct CpuInfo {
    model: Option<String>,
    hypervisor: bool,
    tsc_constant_nonstop: bool,
}

fn parse_cpuinfo(text: &str) -> CpuInfo {
    let field = |key: &str| {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim();
            (k.trim() == key && !v.is_empty()).then(|| v.to_string())
        })
    };
    let model = field("model name")
        .or_else(|| field("Hardware"))
        .or_else(|| field("cpu model"));
    let flags = field("flags").unwrap_or_default();
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    CpuInfo {
        model,
        hypervisor: has("hypervisor"),
        tsc_constant_nonstop: has("constant_tsc") && has("nonstop_tsc"),
    }
}

/// The idle states under a CPU's `cpuidle` directory, `state0` first. A state
/// whose name or latency cannot be read is left out rather than invented.
fn idle_states(root: &Path, rel: &str) -> Vec<IdleState> {
    let Ok(entries) = fs::read_dir(root.join(rel)) else {
        return Vec::new();
    };
    let mut indices: Vec<u32> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("state")?.parse().ok())
        .collect();
    indices.sort_unstable();
    indices
        .into_iter()
        .filter_map(|k| {
            let dir = format!("{rel}/state{k}");
            Some(IdleState {
                name: read_trimmed(root, &format!("{dir}/name"))?,
                latency_us: read_trimmed(root, &format!("{dir}/latency"))?
                    .parse()
                    .ok()?,
                disabled: read_trimmed(root, &format!("{dir}/disable")).as_deref() == Some("1"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysroot")
    }

    #[test]
    fn reads_the_fixture_sysroot() {
        let info = snapshot_from(&fixture());
        assert_eq!(info.hostname, "rtbox");
        assert_eq!(info.kernel_release, "6.12.0-lowlat");
        assert_eq!(
            info.kernel_version,
            "#1 SMP PREEMPT_DYNAMIC Mon Jan  6 10:00:00 UTC 2025"
        );
        // preempt=full on the command line beats the config's boot default.
        assert_eq!(info.preemption_model.as_deref(), Some("full"));
        assert_eq!(info.preemption_source.as_deref(), Some("cmdline"));
        assert_eq!(info.hz, Some(1000));
        assert_eq!(info.clocksource.as_deref(), Some("tsc"));
        assert_eq!(info.available_clocksources, ["tsc", "hpet", "acpi_pm"]);
        assert_eq!(
            info.cpu_model.as_deref(),
            Some("Intel(R) Xeon(R) CPU E3-1230 v5 @ 3.40GHz")
        );
        assert!(info.hypervisor);
        assert_eq!(info.hypervisor_vendor.as_deref(), Some("xen"));
        assert!(info.tsc_constant_nonstop);
        assert_eq!(info.cpus_online, "0-3");
        assert_eq!(info.cpu_count, 4);
        assert_eq!(info.smt_active, Some(true));
        let governors: Vec<(u32, &str)> = info
            .cpufreq_governors
            .iter()
            .map(|(c, g)| (*c, g.as_str()))
            .collect();
        // cpu3 has no cpufreq directory.
        assert_eq!(
            governors,
            [(0, "performance"), (1, "performance"), (2, "powersave")]
        );
        assert_eq!(info.cpuidle_driver.as_deref(), Some("intel_idle"));
        assert_eq!(info.cpuidle_governor.as_deref(), Some("menu"));
        let names: Vec<(&str, u64, bool)> = info
            .cpuidle_states
            .iter()
            .map(|s| (s.name.as_str(), s.latency_us, s.disabled))
            .collect();
        // state10 sorts after state2, not after state1; state11 has no
        // latency file and is left out.
        assert_eq!(
            names,
            [
                ("POLL", 0, false),
                ("C1", 2, false),
                ("C6", 133, true),
                ("C10", 890, true)
            ]
        );
        assert!(info.kernel_cmdline.starts_with("BOOT_IMAGE=/vmlinuz"));
        assert_eq!(info.isolcpus.as_deref(), Some("managed_irq,domain,2-3"));
        assert_eq!(info.nohz_full.as_deref(), Some("2-3"));
        // rcu_nocbs= only appears after `--`, where it is init's.
        assert_eq!(info.rcu_nocbs, None);
        assert_eq!(info.rt_runtime_us, Some(-1));
        assert_eq!(info.rt_period_us, Some(1_000_000));
        // The findings of `latscope check`, worst first; files the fixture
        // lacks (THP, swaps, /proc/stat) give none.
        let found: Vec<(&str, &str)> = info
            .hazards
            .iter()
            .map(|h| (h.id.as_str(), h.severity.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("cpufreq", "warning"),
                ("smt", "warning"),
                ("virtualization", "warning"),
                ("preemption", "info"),
            ]
        );
    }

    #[test]
    fn missing_root_gives_an_empty_snapshot() {
        let info = snapshot_from(&fixture().join("does-not-exist"));
        assert_eq!(info, SystemInfo::default());
    }

    #[test]
    fn live_machine() {
        let info = snapshot();
        assert!(info.cpu_count >= 1);
        assert!(!info.kernel_release.is_empty());
        if Path::new("/proc/config.gz").exists() {
            assert!(info.hz.is_some(), "HZ from /proc/config.gz");
        }
    }

    #[test]
    fn reads_a_compressed_kernel_config() {
        use std::io::Write;
        let root = std::env::temp_dir().join(format!("latscope-gz-{}", std::process::id()));
        std::fs::create_dir_all(root.join("proc")).unwrap();
        let file = std::fs::File::create(root.join("proc/config.gz")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        gz.write_all(b"CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_PREEMPT_RT=y\n")
            .unwrap();
        gz.finish().unwrap();
        let info = snapshot_from(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(info.hz, Some(1000));
        assert_eq!(info.preemption_model.as_deref(), Some("rt"));
        assert_eq!(info.preemption_source.as_deref(), Some("config"));
        // Not gzip: ignored, not an error.
        assert_eq!(read_gzip(Path::new("/proc/self/status")), None);
    }

    #[test]
    fn debugfs_current_mode_is_the_parenthesised_one() {
        assert_eq!(
            parse_preempt_debugfs("none (voluntary) full lazy\n"),
            Some("voluntary")
        );
        assert_eq!(parse_preempt_debugfs("(none) voluntary full"), Some("none"));
        assert_eq!(parse_preempt_debugfs("none voluntary (lazy)"), Some("lazy"));
        assert_eq!(parse_preempt_debugfs("none voluntary full"), None);
        assert_eq!(parse_preempt_debugfs("(bogus) full"), None);
        assert_eq!(parse_preempt_debugfs(""), None);
    }

    #[test]
    fn config_values_and_choice() {
        let config = "# CONFIG_PREEMPT_VOLUNTARY is not set\n\
                      CONFIG_PREEMPT_NONE=y\n\
                      CONFIG_PREEMPT_BUILD=y\n\
                      CONFIG_PREEMPT_DYNAMIC=y\n\
                      CONFIG_HZ_250=y\n\
                      CONFIG_HZ=250\n\
                      CONFIG_LOCALVERSION=\"-custom\"\n";
        assert_eq!(config_value(config, "CONFIG_HZ"), Some("250"));
        assert_eq!(config_value(config, "CONFIG_LOCALVERSION"), Some("-custom"));
        assert_eq!(config_value(config, "CONFIG_PREEMPT_VOLUNTARY"), None);
        assert_eq!(config_value(config, "CONFIG_PREEMPT"), None);
        assert_eq!(preempt_from_config(config), Some("none"));
        assert_eq!(
            preempt_from_config("CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\n"),
            Some("rt")
        );
        assert_eq!(preempt_from_config("CONFIG_PREEMPT=y\n"), Some("full"));
        assert_eq!(preempt_from_config("CONFIG_PREEMPT_LAZY=y\n"), Some("lazy"));
        assert_eq!(
            preempt_from_config("CONFIG_PREEMPT_VOLUNTARY=y\n"),
            Some("voluntary")
        );
        assert_eq!(preempt_from_config("CONFIG_PREEMPT_COUNT=y\n"), None);
    }

    #[test]
    fn version_string() {
        assert_eq!(preempt_from_version("#1 SMP PREEMPT_DYNAMIC @0"), None);
        assert_eq!(preempt_from_version("#1 SMP PREEMPT_RT Thu"), Some("rt"));
        assert_eq!(preempt_from_version("#1 SMP PREEMPT RT Thu"), Some("rt"));
        assert_eq!(preempt_from_version("#1 SMP PREEMPT Thu"), Some("full"));
        assert_eq!(preempt_from_version("#1 SMP Thu"), None);
    }

    #[test]
    fn preemption_sources_in_order() {
        let dynamic_none = "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        let version = "#1 SMP PREEMPT_DYNAMIC @0";
        // This machine: no debugfs, no preempt=, config says none.
        assert_eq!(
            preemption_model(None, "quiet -- preempt=full", Some(dynamic_none), version),
            Some(("none", "config"))
        );
        assert_eq!(
            preemption_model(
                Some("none voluntary (full) lazy"),
                "preempt=voluntary",
                Some(dynamic_none),
                version
            ),
            Some(("full", "debugfs"))
        );
        assert_eq!(
            preemption_model(None, "preempt=lazy", Some(dynamic_none), version),
            Some(("lazy", "cmdline"))
        );
        // Without PREEMPT_DYNAMIC the kernel ignores preempt=.
        assert_eq!(
            preemption_model(None, "preempt=full", Some("CONFIG_PREEMPT_NONE=y\n"), "#1"),
            Some(("none", "config"))
        );
        // An RT kernel's debugfs shows its sub-mode; the model is rt.
        assert_eq!(
            preemption_model(Some("(full) lazy"), "", None, "#1 SMP PREEMPT_RT x"),
            Some(("rt", "version"))
        );
        assert_eq!(
            preemption_model(None, "", None, "#1 SMP PREEMPT x"),
            Some(("full", "version"))
        );
        assert_eq!(preemption_model(None, "", None, version), None);
        assert_eq!(preemption_model(None, "preempt=bogus", None, version), None);
    }

    #[test]
    fn cmdline_parameters() {
        let cmdline = "BOOT_IMAGE=/vmlinuz ro quiet isolcpus=1 nohz-full=1-3 \
                       isolcpus=2-3 dyndbg=\"file foo.c +p\" -- rcu_nocbs=1 --";
        assert_eq!(cmdline_param(cmdline, "isolcpus").as_deref(), Some("2-3"));
        assert_eq!(cmdline_param(cmdline, "nohz_full").as_deref(), Some("1-3"));
        assert_eq!(cmdline_param(cmdline, "rcu_nocbs"), None);
        assert_eq!(cmdline_param(cmdline, "quiet"), None);
        assert_eq!(
            cmdline_param(cmdline, "dyndbg").as_deref(),
            Some("file foo.c +p")
        );
        assert_eq!(cmdline_param("", "isolcpus"), None);
        assert_eq!(
            cmdline_param("  rcu_nocbs=  ", "rcu_nocbs").as_deref(),
            Some("")
        );
        // A `--` glued to something else is an ordinary word.
        assert_eq!(
            cmdline_param("--x isolcpus=3", "isolcpus").as_deref(),
            Some("3")
        );
        // An unterminated quote runs to the end without panicking.
        assert_eq!(cmdline_param("a=\"b c", "a").as_deref(), Some("b c"));
    }

    #[test]
    fn cpuinfo_fallbacks() {
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\nHardware\t: BCM2835\n";
        assert_eq!(parse_cpuinfo(arm).model.as_deref(), Some("BCM2835"));
        let mips = "system type\t\t: MT7621\ncpu model\t\t: MIPS 1004Kc V2.15\n";
        assert_eq!(
            parse_cpuinfo(mips).model.as_deref(),
            Some("MIPS 1004Kc V2.15")
        );
        assert_eq!(parse_cpuinfo(""), CpuInfo::default());
        let no_nonstop = "model name : X\nflags : fpu constant_tsc\n";
        let cpu = parse_cpuinfo(no_nonstop);
        assert!(!cpu.tsc_constant_nonstop);
        assert!(!cpu.hypervisor);
    }
}
