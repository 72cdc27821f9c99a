//! The command line as clap types. Nothing here does I/O; `plan.rs` turns
//! these into validated engine configurations.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use latscope_engine::probes::{Phase, TimerApi};
use latscope_engine::request::ProbeKind;
use latscope_engine::workloads::LoadLevel;
use latscope_engine::TraceBackend;
use latscope_import::Unit;
use latscope_model::{Policy, UdpPath};
use latscope_report::exports::{FormatName, HdrUnit, RtTestsUnit};

/// Measure how well this machine meets real-time deadlines, explain the
/// misses, and keep every result in a store.
#[derive(Parser, Debug)]
#[command(name = "latscope", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    Run(Box<RunArgs>),
    List(ListArgs),
    Show(ShowArgs),
    Export(ExportArgs),
    Import(ImportArgs),
    Suite(Box<SuiteArgs>),
    Sched(SchedArgs),
    Check(CheckArgs),
    Forecast(ForecastArgs),
    Compare(CompareArgs),
    Report(ReportArgs),
    Micro(Box<MicroArgs>),
    Monitor(Box<MonitorArgs>),
    Push(PushArgs),
    Pull(PullArgs),
    Study(Box<StudyArgs>),
}

/// `latscope monitor`: every option also has a key in the --config file
/// (snake_case); the command line wins over the file.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    #[arg(long, value_name = "N")]
    pub priority: Option<u32>,
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    #[arg(long)]
    pub allow_remote: bool,
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub persist: Option<String>,
    #[arg(long)]
    pub trace: bool,
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub trace_backend: Option<TraceBackend>,
    #[arg(long)]
    pub stacks: bool,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub threshold: Option<String>,
    #[arg(long, value_name = "ON/EVERY")]
    pub noise: Option<String>,
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "LATSCOPE_STORE",
        hide_env_values = true
    )]
    pub store: Option<PathBuf>,
    #[command(flatten)]
    pub actions: ActionArgs,
}

/// Threshold actions (rtla's --on-threshold), on every episode: need
/// --trace.
#[derive(Args, Debug, Clone, Default)]
pub struct ActionArgs {
    #[arg(long, value_name = "ACTION")]
    pub on_threshold: Vec<String>,
    #[arg(long, value_name = "COUNT/PERIOD")]
    pub action_limit: Option<String>,
}

#[derive(Args, Debug)]
pub struct MicroArgs {
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub bench: Vec<String>,
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: Option<u32>,
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    #[arg(long)]
    pub quick: bool,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[arg(long, short)]
    pub quiet: bool,
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

/// Latency limits for CI gates (cyclictest's `-b`, rtla's `-T`), on the
/// probe's main figure: timer latency, noise gap, UDP path.
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub stop_above: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub fail_above: Option<String>,
}

/// Kernel tracing of `run` and `suite`.
#[derive(Args, Debug, Clone, Default)]
pub struct TraceArgs {
    #[arg(long)]
    pub trace: bool,
    #[arg(long, value_enum, default_value_t, value_name = "BACKEND")]
    pub trace_backend: TraceBackend,
    #[arg(long)]
    pub stacks: bool,
}

/// The background load of `run` and `suite`.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    #[arg(long, value_enum, default_value = "normal")]
    pub load_level: LoadLevel,
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "2s"
    )]
    pub warmup: String,
}

/// What `run` and `suite` write and hold besides the store.
#[derive(Args, Debug, Clone)]
pub struct RunOutputArgs {
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[arg(long)]
    pub no_dma_latency: bool,
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct StoreArg {
    #[arg(
        long,
        value_name = "PATH|URL",
        env = "LATSCOPE_STORE",
        hide_env_values = true,
        default_value = "latscope.db"
    )]
    pub store: PathBuf,
}

/// `latscope push --to STORE [RUN...]`.
#[derive(Args, Debug)]
pub struct PushArgs {
    #[arg(long, value_name = "STORE")]
    pub to: String,
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `latscope pull --from STORE [RUN...]`.
#[derive(Args, Debug)]
pub struct PullArgs {
    #[arg(long, value_name = "STORE")]
    pub from: String,
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[arg(long, value_enum, default_value = "timer")]
    pub probe: ProbeKind,
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    #[arg(long, value_enum, value_name = "PATH")]
    pub path: Option<UdpPath>,
    #[arg(long, value_name = "BYTES")]
    pub payload: Option<usize>,
    #[arg(long, value_name = "N")]
    pub buffers: Option<u32>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub compute: Option<String>,
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "30s"
    )]
    pub duration: String,
    #[arg(long, value_enum, default_value = "fifo")]
    pub policy: Policy,
    #[arg(long, value_name = "N")]
    pub priority: Option<u32>,
    #[arg(long, value_name = "LIST")]
    pub priorities: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub nice: Option<i32>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub sched_runtime: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub sched_deadline: Option<String>,
    #[arg(long, value_enum, default_value = "clock_nanosleep")]
    pub timer_api: TimerApi,
    #[arg(long, value_name = "default|DURATION")]
    pub timer_slack: Option<String>,
    #[arg(long, value_enum, default_value = "fixed")]
    pub phase: Phase,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub threshold: Option<String>,
    #[command(flatten)]
    pub output: RunOutputArgs,
    #[arg(long)]
    pub histogram: bool,
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub checkpoint: String,
    #[arg(long, value_name = "NAME[,NAME...]")]
    pub workload: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub runtime: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub pause: Option<String>,
    #[arg(long, value_name = "N")]
    pub gap_ratio: Option<u32>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub gap_min: Option<String>,
    #[arg(long)]
    pub fp: bool,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "200us"
    )]
    pub stack_period: String,
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub episode_cap: usize,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    #[arg(long)]
    pub json: bool,
    #[arg(long)]
    pub histogram: bool,
    #[arg(long)]
    pub episodes: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    #[arg(long, allow_hyphen_values = true, value_name = "K")]
    pub episode: Option<u32>,
    #[arg(long, value_enum)]
    pub format: FormatName,
    #[arg(long, value_enum, default_value = "ns")]
    pub hdr_unit: HdrUnit,
    #[arg(
        long,
        value_name = "US",
        default_value_t = 1000,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub max_us: u32,
    #[arg(long, value_enum)]
    pub unit: Option<RtTestsUnit>,
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    pub format: latscope_import::FormatName,
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub priority: Option<i64>,
    #[arg(long, value_enum)]
    pub unit: Option<Unit>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct SuiteArgs {
    #[arg(long, conflicts_with_all = ["standard", "long"])]
    pub quick: bool,
    #[arg(long, conflicts_with = "long")]
    pub standard: bool,
    #[arg(long)]
    pub long: bool,
    #[arg(long, value_name = "LIST")]
    pub probes: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub workloads: Option<String>,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub cell_duration: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub priorities: Option<String>,
    #[arg(long, value_name = "default|DURATION")]
    pub timer_slack: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub threshold: Option<String>,
    #[command(flatten)]
    pub trace: TraceArgs,
    #[command(flatten)]
    pub output: RunOutputArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub actions: ActionArgs,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ForecastArgs {
    #[arg(value_name = "RUN")]
    pub run: String,
    #[arg(long, value_name = "LIST")]
    pub cell: Option<String>,
    #[arg(long, value_name = "MS", requires = "buffers")]
    pub period_ms: Option<f64>,
    #[arg(long, value_name = "N", requires = "period_ms")]
    pub buffers: Option<u32>,
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    pub compute_ms: f64,
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    #[arg(long)]
    pub apps: bool,
    #[arg(long, value_name = "NAME", default_value = "continuous")]
    pub usage: String,
    #[arg(long, value_name = "FILE")]
    pub grid_csv: Option<PathBuf>,
    #[arg(
        long,
        value_name = "APP_RUN",
        conflicts_with_all = ["period_ms", "buffers", "app", "apps", "grid_csv", "cell"]
    )]
    pub against: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[arg(long)]
    pub strict: bool,
    #[arg(long)]
    pub json: bool,
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct SchedArgs {
    #[arg(value_name = "TASKS.toml")]
    pub tasks: PathBuf,
    #[arg(long, value_name = "RUN", default_value = "latest")]
    pub run: String,
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "N/PERIOD",
        default_value = "1/hour"
    )]
    pub miss_rate: String,
    #[arg(long, allow_hyphen_values = true, value_name = "INDEX")]
    pub cell: Option<String>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    #[arg(value_name = "RUN", num_args = 2.., required_unless_present = "hosts")]
    pub runs: Vec<String>,
    #[arg(long, conflicts_with = "runs")]
    pub hosts: bool,
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,
    #[arg(long, value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// The command line as a run records it: every argument, with the password
/// of a PostgreSQL store URL replaced by `***`.
pub fn recorded_command_line() -> Vec<String> {
    latscope_store::redact_args(std::env::args_os())
}

/// `latscope study`: one of the four studies reproduced on this machine.
#[derive(Args, Debug)]
pub struct StudyArgs {
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    #[arg(long)]
    pub quick: bool,
    #[arg(long)]
    pub list: bool,
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArg,
}
