//! The command line as clap types. Nothing here does I/O; `plan.rs` turns
//! these into validated engine configurations.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
    /// Measure (default: timer probe on every CPU for 30 s), store and summarize.
    Run(Box<RunArgs>),
    /// List the runs in the store.
    List(ListArgs),
    /// Show a stored run's summary.
    Show(ShowArgs),
    /// Export a run (json, csv, hdr, cyclictest, rt-tests-json, prometheus)
    /// or one episode of a traced run (perfetto).
    Export(ExportArgs),
    /// Store another tool's results as a run: cyclictest --json or -h
    /// histogram text, oslat --json, rtla timerlat hist text.
    Import(ImportArgs),
    /// Run a matrix of probes x workloads x priorities as cells of one run.
    Suite(Box<SuiteArgs>),
    /// Response-time analysis of a task set (TOML) with a run's measured
    /// pseudo worst case latency as release jitter and blocking.
    Sched(SchedArgs),
    /// Audit this machine for known latency hazards, with remedies.
    Check(CheckArgs),
    /// Turn a stored run into answers: exceedance, worst case per hour/day/
    /// week, time to buffer underrun, verdicts for applications.
    Forecast(ForecastArgs),
    /// Compare runs side by side: p50, p99, p99.9, max and whether the tail
    /// difference is statistically real (the first run is the baseline).
    Compare(CompareArgs),
    /// Write a run as one self-contained HTML page with plots (histograms,
    /// exceedance, maxima over time, causes, forecast).
    Report(ReportArgs),
    /// Microbenchmarks: what the operating system's primitives cost on this
    /// machine (system calls, context switches, wake-ups, memory...), with
    /// counters and interrupts, stored as a run (Chen et al.).
    Micro(Box<MicroArgs>),
    /// Always-on monitoring: the timer probe on every CPU without end, a
    /// Prometheus endpoint, per-minute and per-hour windows in the store.
    Monitor(Box<MonitorArgs>),
    /// Copy runs from this store to another (a shared store): each run
    /// once, whole or not at all.
    Push(PushArgs),
    /// Copy runs from another store into this one: each run once, whole or
    /// not at all.
    Pull(PullArgs),
    /// Reproduce a study's headline table on this machine: run its design,
    /// store it as a run, print the paper's figures beside the measured ones.
    Study(Box<StudyArgs>),
}

/// `latscope monitor`: every option also has a key in the --config file
/// (snake_case); the command line wins over the file.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// CPUs to measure (default: every online CPU).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Wake-up period (default 1ms).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    /// Real-time priority of the measuring threads, 1-99 (default 95).
    #[arg(long, value_name = "N")]
    pub priority: Option<u32>,
    /// Address of the /metrics endpoint (default 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Allow --listen on an address other than loopback without
    /// authentication (not needed with a --web.config.file that has
    /// basic_auth_users or RequireAndVerifyClientCert).
    #[arg(long)]
    pub allow_remote: bool,
    /// TLS and basic authentication for the endpoint: the web
    /// configuration file of Prometheus' exporters (node_exporter's
    /// --web.config.file): tls_server_config (cert_file, key_file,
    /// client_ca_file, client_auth_type, min_version, max_version) and
    /// basic_auth_users (user: bcrypt hash). Other keys are refused.
    /// Re-read on SIGHUP, with the files it names (docs/monitor.md).
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// How often measurements are written to the store: what a crash can
    /// lose at most (default 10s).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub persist: Option<String>,
    /// Read kernel tracepoints and explain every sample above --threshold
    /// as an episode.
    #[arg(long)]
    pub trace: bool,
    /// With --trace: which tracer (see `run --trace-backend`).
    #[arg(long = "trace-backend", value_enum, value_name = "BACKEND")]
    pub trace_backend: Option<TraceBackendArg>,
    /// With --trace: kernel stacks, as `run --stacks` at its default
    /// period (with perf, also where each blocking thread yielded).
    #[arg(long)]
    pub stacks: bool,
    /// Samples above it are counted (and with --trace explained); default
    /// 500us.
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub threshold: Option<String>,
    /// The noise probe beside the timer for a duty cycle ON/EVERY, e.g.
    /// 1s/60s: one second of spinning a minute per CPU, the CPUs staggered,
    /// the CPU's timer thread asleep meanwhile (default: off).
    #[arg(long, value_name = "ON/EVERY")]
    pub noise: Option<String>,
    /// A TOML file with the same settings, re-read on SIGHUP.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The store: a SQLite file (default latscope.db; or `store` in
    /// --config, or $LATSCOPE_STORE) or postgres://USER@HOST[:PORT]/DB.
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
    /// On every episode: `exec:COMMAND` (run with `sh -c`, the episode as
    /// JSON on stdin) or `snapshot[:DIR]` (its trace window as a Perfetto
    /// file in DIR, default ./latscope-snapshots). Repeatable.
    #[arg(long = "on-threshold", value_name = "ACTION")]
    pub on_threshold: Vec<String>,
    /// At most COUNT episodes get actions in any PERIOD (default 10/h).
    #[arg(long = "action-limit", value_name = "COUNT/PERIOD")]
    pub action_limit: Option<String>,
}

#[derive(Args, Debug)]
pub struct MicroArgs {
    /// Benchmarks to run: groups (`syscall`), benchmarks
    /// (`syscall.getppid`) or memory kinds (`memory.random`),
    /// comma-separated. Default: all.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub bench: Vec<String>,
    /// Timed iterations per benchmark (default 50, as in the study; 10 with
    /// --quick).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: Option<u32>,
    /// The measuring CPU, then the partner's CPU for the benchmarks across
    /// two (default: the last online CPU and the one before it).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Fewer iterations and one memory size per octave: under a minute.
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print only errors (the table is still stored).
    #[arg(long, short)]
    pub quiet: bool,
    /// List the benchmarks and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

/// Latency limits for CI gates (cyclictest's `-b`, rtla's `-T`), on the
/// probe's main figure: timer latency, noise gap, UDP path.
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// End the run at the first value above DURATION (checked every
    /// 100 ms): the run is stored, the exit code is 3; with --trace the
    /// value is an episode.
    #[arg(
        long = "stop-above",
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub stop_above: Option<String>,
    /// Measure to the end, then exit with 3 if any value exceeded
    /// DURATION (the run is stored either way).
    #[arg(
        long = "fail-above",
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub fail_above: Option<String>,
}

/// Kernel tracing of `run` and `suite`.
#[derive(Args, Debug, Clone, Default)]
pub struct TraceArgs {
    /// Read kernel tracepoints: decompose every sample into timer.irq /
    /// timer.sched / timer.return, keep interrupt and deferred-work
    /// statistics, and explain every sample above --threshold (default
    /// 100us with --trace) as an episode.
    #[arg(long)]
    pub trace: bool,
    /// With --trace: which tracer reads the kernel's events (auto: BPF
    /// where its programs load, perf otherwise; docs/tracing.md).
    #[arg(
        long = "trace-backend",
        value_enum,
        default_value_t,
        value_name = "BACKEND"
    )]
    pub trace_backend: TraceBackendArg,
    /// With --trace: sample kernel call chains (cpu-clock) on the measured
    /// CPUs and list the functions sampled during each episode.
    #[arg(long)]
    pub stacks: bool,
}

/// The background load of `run` and `suite`.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Intensity of the workloads.
    #[arg(long = "load-level", value_enum, default_value = "normal")]
    pub load_level: LoadLevelArg,
    /// How long each workload runs before its cell starts measuring.
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
    /// Write the run as JSON to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Do not hold /dev/cpu_dma_latency at 0 while measuring.
    #[arg(long)]
    pub no_dma_latency: bool,
    /// No progress bar and no summary on the terminal.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args, Debug, Clone)]
pub struct StoreArg {
    /// The store holding results: a SQLite file or
    /// postgres://USER@HOST[:PORT]/DB (or $LATSCOPE_STORE; a password comes
    /// from the URL, PGPASSWORD or ~/.pgpass and is never shown).
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
    /// The store to copy into.
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// Runs to copy (ids, latest, HOST:latest); default: every finished run.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `latscope pull --from STORE [RUN...]`.
#[derive(Args, Debug)]
pub struct PullArgs {
    /// The store to copy from.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// Runs of that store to copy; default: every finished run.
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProbeName {
    /// Timer wake-up latency.
    Timer,
    /// Interruptions of a CPU-bound loop (OS noise).
    Noise,
    /// UDP/IP stack send and receive latency (a sender and a receiver thread).
    Udp,
    /// A periodic pipeline: a producer filling --buffers buffers of
    /// --period, --compute of work each, for a device clock; counts real
    /// buffer underruns (docs/app-probe.md).
    App,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum TraceBackendArg {
    /// BPF where its programs load, perf otherwise.
    #[default]
    Auto,
    /// In-kernel decomposition and aggregation (BPF programs).
    Bpf,
    /// Every tracepoint record through perf rings.
    Perf,
}

impl From<TraceBackendArg> for latscope_engine::TraceBackend {
    fn from(a: TraceBackendArg) -> Self {
        match a {
            TraceBackendArg::Auto => latscope_engine::TraceBackend::Auto,
            TraceBackendArg::Bpf => latscope_engine::TraceBackend::Bpf,
            TraceBackendArg::Perf => latscope_engine::TraceBackend::Perf,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum UdpPathArg {
    /// 127.0.0.1 in latscope's own network namespace.
    Loopback,
    /// A veth pair between two private network namespaces (needs root).
    Veth,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoadLevelArg {
    Light,
    Normal,
    Heavy,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
    Deadline,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimerApiArg {
    #[value(name = "clock_nanosleep")]
    ClockNanosleep,
    Nanosleep,
    Timerfd,
    #[value(name = "posix-timer")]
    PosixTimer,
    Epoll,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    Fixed,
    Random,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The probe to run.
    #[arg(long, value_enum, default_value = "timer")]
    pub probe: ProbeName,
    /// CPUs to measure, e.g. `0,1` or `0-3` (default: every online CPU; for
    /// --probe udp the sender's and the receiver's CPU, default the first
    /// two online CPUs).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Wake-up period, e.g. `1ms`, `100us` (default 1ms; 10ms, one datagram
    /// each, for --probe udp).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    /// UDP probe: the way datagrams travel.
    #[arg(long, value_enum, value_name = "PATH")]
    pub path: Option<UdpPathArg>,
    /// UDP probe: payload bytes per datagram (16-65507, default 64).
    #[arg(long, value_name = "BYTES")]
    pub payload: Option<usize>,
    /// App probe: buffers in the ring (1-64, default 2, or the --app
    /// preset's).
    #[arg(long, value_name = "N")]
    pub buffers: Option<u32>,
    /// App probe: the producer's work per buffer, a calibrated busy loop,
    /// e.g. `250us` (default 0, or the --app preset's).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub compute: Option<String>,
    /// App probe: the buffering scheme of an application preset
    /// (`latscope forecast --apps` lists them); --period, --buffers and
    /// --compute override its parts.
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// How long to measure, e.g. `30s`, `10m`, `8h`.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "30s"
    )]
    pub duration: String,
    /// Scheduling policy of the measuring threads, as chrt names them:
    /// `fifo` and `rr` (real-time, with --priority), `other` and `batch`
    /// (fair-share, with --nice), `idle`, `deadline` (with --sched-runtime
    /// and --sched-deadline, its period is --period). batch, idle,
    /// deadline and --nice: timer probe only.
    #[arg(long, value_enum, default_value = "fifo")]
    pub policy: PolicyArg,
    /// Real-time priority of the measuring threads, 1-99 (default 95;
    /// --policy fifo or rr only).
    #[arg(long, value_name = "N")]
    pub priority: Option<u32>,
    /// Timer or noise probe: several priorities measured at once, e.g.
    /// `95,50,1` or `90,rr:50,other` (`fifo:N`, `batch` and `idle` too):
    /// one thread per item and CPU, timer threads woken for the same
    /// expiries, noise threads spinning from the same instant (without
    /// pause unless --pause); a fifo or rr priority may be listed twice
    /// (`rr:50,rr:50`: the second is `rr 50 #2`); each item is stored as
    /// a cell of its own (in place of --policy,
    /// --priority and --nice; not with --trace).
    #[arg(long, value_name = "LIST")]
    pub priorities: Option<String>,
    /// Timer probe, --policy other or batch: the measuring threads' nice
    /// value, -20..19 (default: the one inherited).
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub nice: Option<i32>,
    /// Timer probe, --policy deadline: the CPU time reserved every
    /// --period, as chrt's --sched-runtime (default: a tenth of --period).
    #[arg(
        long = "sched-runtime",
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub sched_runtime: Option<String>,
    /// Timer probe, --policy deadline: the time from each period's start
    /// within which the runtime is due, as chrt's --sched-deadline
    /// (default: --period).
    #[arg(
        long = "sched-deadline",
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub sched_deadline: Option<String>,
    /// The timer service under test.
    #[arg(long = "timer-api", value_enum, default_value = "clock_nanosleep")]
    pub timer_api: TimerApiArg,
    /// Timer probe: the measuring threads' timer slack, `default` (the
    /// kernel's, 50us for a normal thread) or a duration such as `50us`
    /// (default: 1ns, the least; real-time threads get none anyway).
    #[arg(long = "timer-slack", value_name = "default|DURATION")]
    pub timer_slack: Option<String>,
    /// `random`: a random busy delay (0..period) before each relative sleep.
    #[arg(long, value_enum, default_value = "fixed")]
    pub phase: PhaseArg,
    /// Count samples above this latency, per second and in total (e.g. `100us`).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub threshold: Option<String>,
    #[command(flatten)]
    pub output: RunOutputArgs,
    /// Add log-scale count tables (1–2, 2–4, 4–8 µs ...) to the summary.
    #[arg(long)]
    pub histogram: bool,
    /// How often to write results to the store while measuring.
    #[arg(
        long,
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub checkpoint: String,
    /// Background load(s): one cell per workload, e.g. `cpu`,
    /// `idle,cpu,net`, `hackbench`, `rt:90,500us/10ms,x2,cpu1` (SCHED_FIFO
    /// threads busy 500 µs every 10 ms), `custom:CMD ARGS` (see
    /// docs/workloads.md).
    #[arg(long, value_name = "NAME[,NAME...]")]
    pub workload: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Noise probe: length of each active (spinning) period.
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub runtime: Option<String>,
    /// Noise probe: sleep between active periods (`0`: spin continuously).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub pause: Option<String>,
    /// Noise probe: an iteration at least this many times the base one is
    /// an interruption (default 4).
    #[arg(long = "gap-ratio", value_name = "N")]
    pub gap_ratio: Option<u32>,
    /// Noise probe: ... or at least this long, whichever is longer.
    #[arg(long = "gap-min", allow_hyphen_values = true, value_name = "DURATION")]
    pub gap_min: Option<String>,
    /// Noise probe: floating-point work in every iteration.
    #[arg(long)]
    pub fp: bool,
    #[command(flatten)]
    pub trace: TraceArgs,
    /// With --stacks: the sampling period.
    #[arg(
        long = "stack-period",
        allow_hyphen_values = true,
        value_name = "DURATION",
        default_value = "200us"
    )]
    pub stack_period: String,
    /// With --trace: episodes kept in full; later ones are counted and summed.
    #[arg(long = "episode-cap", value_name = "N", default_value_t = 1000)]
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
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only runs measured on this host (its hostname).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Only runs started within this long before now (e.g. 7d, 12h).
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// Only runs of this kernel release or series: 6.18 matches 6.18 and
    /// 6.18.44-rt12, not 6.180.
    #[arg(long, value_name = "RELEASE")]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A run id, or `latest`.
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Print the run as JSON (the schema of `run --json`).
    #[arg(long)]
    pub json: bool,
    /// Add log-scale count tables.
    #[arg(long)]
    pub histogram: bool,
    /// Add every episode kept by `run --trace`, with its causes.
    #[arg(long)]
    pub episodes: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The run as JSON (the schema of `run --json`).
    Json,
    /// Summaries per cell, metric and CPU as CSV (nanoseconds).
    Csv,
    /// Histogram buckets per cell, metric and CPU as CSV (nanoseconds).
    #[value(name = "csv-buckets")]
    CsvBuckets,
    /// HdrHistogram interval log (HistogramLogProcessor and friends).
    Hdr,
    /// cyclictest's `-h` histogram text of timer.latency.
    Cyclictest,
    /// The JSON file `cyclictest --json` writes, of timer.latency.
    #[value(name = "rt-tests-json")]
    RtTestsJson,
    /// Prometheus text exposition of the run's histograms.
    Prometheus,
    /// Chrome / Perfetto JSON trace of one episode (needs --episode).
    Perfetto,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum HdrUnitArg {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
}

/// The unit of `export --format rt-tests-json` and of an imported
/// cyclictest histogram text.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum UnitArg {
    /// Microseconds (cyclictest's default).
    Us,
    /// Nanoseconds (cyclictest -N).
    Ns,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A run id, or `latest`.
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// With `--format perfetto`: the episode's number, as `show --episodes`
    /// lists it.
    #[arg(long, allow_hyphen_values = true, value_name = "K")]
    pub episode: Option<u32>,
    /// The output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// With `--format hdr`: the unit of the logged values.
    #[arg(long = "hdr-unit", value_enum, default_value = "ns")]
    pub hdr_unit: HdrUnitArg,
    /// With `--format cyclictest`: histogram size in microseconds (as
    /// cyclictest's `-h`).
    #[arg(
        long = "max-us",
        value_name = "US",
        default_value_t = 1000,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub max_us: u32,
    /// With `--format rt-tests-json`: the unit of the values (default us,
    /// as cyclictest; ns as cyclictest -N).
    #[arg(long, value_enum)]
    pub unit: Option<UnitArg>,
    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArg,
}

/// `import --format`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImportFormatArg {
    /// Tell the format from the file's content.
    Auto,
    /// `cyclictest --json=FILE`.
    #[value(name = "cyclictest-json")]
    CyclictestJson,
    /// cyclictest's standard output with `-h N` (or `-H N`).
    #[value(name = "cyclictest-hist")]
    CyclictestHist,
    /// `oslat --json=FILE`.
    #[value(name = "oslat-json")]
    OslatJson,
    /// `rtla timerlat hist`'s standard output.
    #[value(name = "rtla-hist")]
    RtlaHist,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file another tool wrote.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The file's format (default: told from its content).
    #[arg(long, value_enum, default_value = "auto")]
    pub format: ImportFormatArg,
    /// A label for the run, shown by list and show.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The background load the tool ran under, as latscope names workloads
    /// (default none), so compare pairs the run with latscope's own.
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// The timer's period, for files that do not record it (cyclictest's
    /// histogram text without status lines, rtla).
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION")]
    pub period: Option<String>,
    /// The measuring threads' policy, for files that do not record it.
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// Their priority (1-99), for files that do not record it.
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub priority: Option<i64>,
    /// The unit of a cyclictest histogram text (default us; ns for
    /// cyclictest -N).
    #[arg(long, value_enum)]
    pub unit: Option<UnitArg>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct SuiteArgs {
    /// A few minutes: timer, noise and udp probes under idle, cpu, memory
    /// and net, 10 s cells (the default).
    #[arg(long, conflicts_with_all = ["standard", "long"])]
    pub quick: bool,
    /// About 45 minutes: every probe under every workload, 45 s cells, at
    /// FIFO 95 and as a normal thread.
    #[arg(long, conflicts_with = "long")]
    pub standard: bool,
    /// Hours: every workload, 5 min cells, FIFO 95 and normal threads, so
    /// that per-hour statistics mean something.
    #[arg(long)]
    pub long: bool,
    /// Probes to run (overrides the preset), e.g. `timer,noise,udp`.
    #[arg(long, value_name = "LIST")]
    pub probes: Option<String>,
    /// Workloads (overrides the preset), e.g. `idle,cpu,net` or
    /// `idle,hackbench,rt:90,500us/10ms`.
    #[arg(long, value_name = "LIST")]
    pub workloads: Option<String>,
    /// Length of each cell (overrides the preset).
    #[arg(
        long = "cell-duration",
        allow_hyphen_values = true,
        value_name = "DURATION"
    )]
    pub cell_duration: Option<String>,
    /// Priorities to compare, e.g. `95,50,other` (overrides the preset);
    /// `rr:N`, `fifo:N`, `batch` and `idle` also work.
    #[arg(long, value_name = "LIST")]
    pub priorities: Option<String>,
    /// The timer cells' timer slack (see `run --timer-slack`).
    #[arg(long = "timer-slack", value_name = "default|DURATION")]
    pub timer_slack: Option<String>,
    /// CPUs to measure (default: every online CPU).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Count samples above this latency (episodes with --trace).
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
    /// The run: an id or `latest` (with `--against`, several: `1,3,5`).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Only these cells (index list, e.g. `0,2`); default all.
    #[arg(long, value_name = "LIST")]
    pub cell: Option<String>,
    /// Buffering scheme: the period of one buffer in ms (e.g. `1.333`).
    #[arg(long = "period-ms", value_name = "MS", requires = "buffers")]
    pub period_ms: Option<f64>,
    /// Buffering scheme: number of buffers.
    #[arg(long, value_name = "N", requires = "period_ms")]
    pub buffers: Option<u32>,
    /// Buffering scheme: compute time per buffer in ms (default 0).
    #[arg(long = "compute-ms", value_name = "MS", default_value_t = 0.0)]
    pub compute_ms: f64,
    /// Verdict for one application preset (see --apps for the list).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// Verdicts for every application preset.
    #[arg(long)]
    pub apps: bool,
    /// Usage model for worst case per day and week: office, workstation,
    /// games, web, or continuous (24 h x 7 d, 1x).
    #[arg(long, value_name = "NAME", default_value = "continuous")]
    pub usage: String,
    /// Write the MTTF grid over buffer counts and sizes as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub grid_csv: Option<PathBuf>,
    /// Hold the forecast against an application-probe run (an id or
    /// `latest`): for each of its cells, the underruns per hour this run
    /// predicts for the cell's scheme beside those it counted, with an exact
    /// test (exit 3 when a forecast is refuted at p < 0.01). Both RUN and
    /// APP_RUN may list several runs (`2,4,6`), the blocks of an
    /// interleaved measurement: cells of one scheme and workload are pooled.
    #[arg(
        long,
        value_name = "APP_RUN",
        conflicts_with_all = ["period_ms", "buffers", "app", "apps", "grid_csv", "cell"]
    )]
    pub against: Option<String>,
    /// Print the forecast as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Exit with 3 when a finding of severity `hazard` is found (warnings
    /// and info never fail).
    #[arg(long)]
    pub strict: bool,
    /// Print the findings as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Quote what a traced run measured of the hypervisor (its episodes'
    /// hypervisor share and /proc/stat steal) in the steal findings: a run
    /// id or `latest`.
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct SchedArgs {
    /// The task set: a TOML file of `[[task]]` tables (see docs/cli.md).
    #[arg(value_name = "TASKS.toml")]
    pub tasks: PathBuf,
    /// The run whose timer.latency gives the pseudo worst case: an id or
    /// `latest`.
    #[arg(long, value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Permissible miss rate of the pseudo worst case, e.g. `1/hour`,
    /// `1/10min`, `1/day`.
    #[arg(
        long = "miss-rate",
        allow_hyphen_values = true,
        value_name = "N/PERIOD",
        default_value = "1/hour"
    )]
    pub miss_rate: String,
    /// Only this cell of the run (its index); default every timer cell.
    #[arg(long, allow_hyphen_values = true, value_name = "INDEX")]
    pub cell: Option<String>,
    /// Print the analysis as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The baseline run (an id, `latest` or HOST:latest), then the runs to
    /// compare with it.
    #[arg(value_name = "RUN", num_args = 2.., required_unless_present = "hosts")]
    pub runs: Vec<String>,
    /// Compare the latest run of every host in the store, one row per
    /// host (hosts in name order; the first is the baseline).
    #[arg(long, conflicts_with = "runs")]
    pub hosts: bool,
    /// Exit with 3 when a compared run's p99.9 exceeds the baseline's by more
    /// than PCT percent and the exceedance test finds its tail worse.
    #[arg(long = "fail-if-worse", value_name = "PCT")]
    pub fail_if_worse: Option<f64>,
    /// Micro runs: exit with 3 when a benchmark of a compared run is
    /// SLOWER than the baseline's by more than PCT percent.
    #[arg(long = "fail-if-slower", value_name = "PCT")]
    pub fail_if_slower: Option<f64>,
    /// Also write an HTML page with overlaid CCDF plots to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArg,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run id, or `latest`.
    #[arg(value_name = "RUN", default_value = "latest")]
    pub run: String,
    /// Where to write the page; `-` for standard output. Default
    /// `latscope-report-<id>.html` in the current directory.
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
    /// The study: cota-robles-held, jones-regehr, bernadat or chen-et-al.
    #[arg(value_name = "NAME", required_unless_present = "list")]
    pub name: Option<String>,
    /// The short design (seconds of measuring, for CI) instead of the
    /// study's own scale (docs/studies.md gives each one's duration).
    #[arg(long)]
    pub quick: bool,
    /// List the studies with their quick and full designs, and exit.
    #[arg(long)]
    pub list: bool,
    /// Also write the paired tables as JSON to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Print only errors (the run is still stored).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArg,
}
