//! The study's BitBlt test: moving 256×256 images with the X server, at
//! depths of 1, 8 and 24 bits. Chen et al. timed a batch of X requests
//! that put an image from the client into the server (`XPutImage`) and
//! that copied a region on the screen (`XCopyArea`), ending the batch
//! with a round trip so that the time includes the server doing the work,
//! not only the client queueing the requests.
//!
//! Here every benchmark talks to an Xvfb of its own (started when it is
//! built, never the user's `$DISPLAY`: the numbers must come from a server
//! we control, with nothing else drawing on it) through `x11rb`, a client
//! library in Rust that speaks the protocol over the Unix socket. The
//! server runs a 1024×768 screen of depth 24, with no screen saver and no
//! cursor; it inherits the measuring thread's CPU, so client and server
//! share one CPU, as they shared the single CPU of the study's machines.
//!
//! - `put_image_{1,8,24}bit`: one operation is one PutImage (ZPixmap) of
//!   a 256×256 image at that depth into a pixmap of that depth. The image
//!   data (a fixed pattern) is made when the benchmark is built; 24-bit
//!   images travel as 32 bits per pixel, as the server's pixmap format
//!   says (256 KiB a request, which needs BIG-REQUESTS; x11rb enables it).
//! - `copy_area_{1,8,24}bit`: one operation is one CopyArea of 256×256
//!   from one pixmap to another of the same depth (the study copied
//!   screen to screen; pixmaps are its off-screen equivalent).
//! - `copy_area_window_24bit`: one CopyArea of 256×256 within a mapped
//!   window of the screen's depth, from its left half to its right half:
//!   the study's screen-to-screen copy.
//!
//! Each `run(ops)` sends the `ops` requests and then makes one round trip
//! (GetInputFocus), so that the requests have been carried out when the
//! iteration's clock stops; the round trip is shared by all of them, as
//! the study's batch was. Iterations last at least 10 ms for the round
//! trip's share to be small. The GCs have graphics exposures off, so that
//! a copy sends back no NoExposure event; any X error the server reports
//! fails the run.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use latscope_platform::process::{signal_process, Signal};
use tempfile::TempPath;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{
    ConnectionExt as _, CreateGCAux, CreateWindowAux, Drawable, Gcontext, ImageFormat, WindowClass,
};
use x11rb::protocol::Event;
use x11rb::rust_connection::RustConnection;

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// The side of every image and area (pixels), as in the study.
pub const SIDE: u16 = 256;

/// Why a blit benchmark is skipped where there is no Xvfb.
pub const NEEDS_XVFB: &str = "needs Xvfb (apt-get install xvfb)";

/// How long Xvfb may take to start, and to stop on SIGTERM. The start
/// bound only ends the wait for a server that will never answer: on a busy
/// 2-CPU CI machine Xvfb once took over 5 s to report its display (two
/// tests failed at once with the earlier 5 s bound; why it was slow was not
/// found).
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(2);

/// The shortest iteration (ns): each ends with a round trip of some tens
/// of microseconds, which 10 ms of requests makes a small share.
const ITERATION_NS: u64 = 10_000_000;

/// The depth of the screen Xvfb is started with.
const SCREEN_DEPTH: u8 = 24;

/// `name` in the directories of `path` (a `PATH` value), if there is an
/// executable file of that name.
fn find_program(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// An Xvfb of our own, stopped when dropped.
struct Xvfb {
    child: Child,
    /// The display number it chose (`:N`).
    display: u32,
    /// Its standard error, kept to explain a failed start (removed when
    /// dropped).
    log: TempPath,
}

impl Xvfb {
    /// Starts the `Xvfb` found on `$PATH`.
    fn start() -> Result<Xvfb, BenchError> {
        Xvfb::start_from(&std::env::var_os("PATH").unwrap_or_default())
    }

    /// Starts the `Xvfb` found in `path` (a `PATH` value) on a free display,
    /// which it reports on its standard output (`-displayfd 1`) once it
    /// accepts connections.
    fn start_from(path: &OsStr) -> Result<Xvfb, BenchError> {
        let program =
            find_program("Xvfb", path).ok_or_else(|| BenchError::Setup(NEEDS_XVFB.into()))?;
        // A new file of a name nobody can guess, mode 0600: latscope runs
        // as root and the temporary directory is everyone's.
        let (log_file, log) = tempfile::Builder::new()
            .prefix("latscope-xvfb-")
            .suffix(".log")
            .tempfile()
            .map_err(|e| BenchError::Os {
                what: format!("creating Xvfb's log in {}", std::env::temp_dir().display()),
                source: e,
            })?
            .into_parts();
        // `-terminate`: it exits once its last client (ours) has gone, even
        // if latscope dies without stopping it. A process group of its own
        // keeps a Ctrl-C at the terminal from killing it under a benchmark
        // that is finishing: latscope stops it when the benchmark is dropped.
        let child = Command::new(&program)
            .args(["-displayfd", "1", "-screen", "0"])
            .arg(format!("1024x768x{SCREEN_DEPTH}"))
            .args(["-terminate", "-nolisten", "tcp", "-s", "0", "-nocursor"])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                return Err(BenchError::Os {
                    what: format!("starting {}", program.display()),
                    source: e,
                });
            }
        };
        // From here on, dropping `server` stops the child.
        let mut server = Xvfb {
            child,
            display: 0,
            log,
        };
        let stdout = server
            .child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Setup("Xvfb's standard output was not piped".into()))?;
        // A thread reads the display number so that the wait can time out.
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("xvfb-displayfd".into())
            .spawn(move || {
                let mut line = String::new();
                let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
                let _ = tx.send(read);
            })
            .map_err(|e| BenchError::Os {
                what: "starting a thread to wait for Xvfb".into(),
                source: e,
            })?;
        let line = match rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                return Err(BenchError::Os {
                    what: "reading Xvfb's display number".into(),
                    source: e,
                })
            }
            Err(_) => {
                return Err(server.failed(&format!(
                    "did not report its display within {} s",
                    START_TIMEOUT.as_secs()
                )))
            }
        };
        if line.is_empty() {
            return Err(server.failed("exited before reporting a display"));
        }
        match line.trim().parse() {
            Ok(n) => server.display = n,
            Err(_) => {
                return Err(server.failed(&format!(
                    "reported {:?} instead of a display number",
                    line.trim()
                )))
            }
        }
        Ok(server)
    }

    /// The display's name, `:N`.
    fn name(&self) -> String {
        format!(":{}", self.display)
    }

    /// A connection to the server, and its screen's number; tried until
    /// the start timeout has passed.
    fn connect(&self) -> Result<(RustConnection, usize), BenchError> {
        let name = self.name();
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match RustConnection::connect(Some(&name)) {
                Ok(c) => return Ok(c),
                Err(e) if Instant::now() >= deadline => {
                    return Err(BenchError::Setup(format!(
                        "cannot connect to our Xvfb on {name}: {e}"
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// Stops the server, and says why it failed to start (with the last
    /// lines it wrote to standard error).
    fn failed(&mut self, what: &str) -> BenchError {
        // A server that closed its output is exiting: a moment for its
        // status.
        let deadline = Instant::now() + Duration::from_millis(200);
        let mut exited = None;
        while exited.is_none() && Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(s)) => exited = Some(s),
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        let status = exited.map_or_else(String::new, |s| format!(" ({s})"));
        self.stop();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(4)..].join("; ");
        let said = if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        };
        BenchError::Setup(format!("Xvfb {what}{status}{said}"))
    }

    /// SIGTERM, for Xvfb to remove its socket; SIGKILL if it has not
    /// exited within [`STOP_TIMEOUT`]; then reaped.
    fn stop(&mut self) {
        match self.child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) => {
                // Not reaped, so the pid is still our child's.
                if let Ok(pid) = i32::try_from(self.child.id()) {
                    let _ = signal_process(pid, Signal::Term);
                }
                let deadline = Instant::now() + STOP_TIMEOUT;
                while Instant::now() < deadline {
                    match self.child.try_wait() {
                        Ok(Some(_)) => return,
                        Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                        Err(_) => break,
                    }
                }
            }
            Err(_) => {}
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An X error as a benchmark error.
fn x_error(what: &'static str) -> impl Fn(x11rb::errors::ConnectionError) -> BenchError {
    move |e| BenchError::Setup(format!("{what}: {e}"))
}

/// The request a benchmark repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    Put,
    Copy,
}

/// What a benchmark draws into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Pixmaps of a depth.
    Pixmap(u8),
    /// A mapped window of the screen's depth.
    Window,
}

/// A fixed, uneven pattern of `len` bytes.
fn pattern(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// A blit benchmark: its server, the connection, and what it draws.
struct Blit {
    /// Declared before `server`, so closed before the server is stopped.
    conn: RustConnection,
    request: Request,
    src: Drawable,
    dst: Drawable,
    gc: Gcontext,
    depth: u8,
    /// Where the copy lands (the window's right half; 0 in a pixmap).
    dst_x: i16,
    /// One image, as the server's pixmap format of `depth` lays it out.
    data: Vec<u8>,
    server: Xvfb,
}

impl Blit {
    /// Starts an Xvfb and sets up `request` on `target`.
    fn new(request: Request, target: Target) -> Result<Blit, BenchError> {
        let server = Xvfb::start()?;
        Blit::on(server, request, target)
    }

    fn on(server: Xvfb, request: Request, target: Target) -> Result<Blit, BenchError> {
        let (conn, screen_num) = server.connect()?;
        let setup = conn.setup();
        let screen = setup
            .roots
            .get(screen_num)
            .ok_or_else(|| BenchError::Setup(format!("the X server has no screen {screen_num}")))?;
        let (root, root_depth, root_visual, black) = (
            screen.root,
            screen.root_depth,
            screen.root_visual,
            screen.black_pixel,
        );
        let depth = match target {
            Target::Pixmap(d) => d,
            Target::Window => root_depth,
        };
        if target == Target::Window && depth != SCREEN_DEPTH {
            return Err(BenchError::Setup(format!(
                "the X server's screen has depth {depth}, not {SCREEN_DEPTH}"
            )));
        }
        let format = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == depth)
            .ok_or_else(|| {
                BenchError::Setup(format!("needs an X server with depth-{depth} pixmaps"))
            })?;
        let pad = usize::from(format.scanline_pad.max(8));
        let stride =
            (usize::from(SIDE) * usize::from(format.bits_per_pixel)).div_ceil(pad) * pad / 8;
        let data = pattern(stride * usize::from(SIDE));
        let max = conn.maximum_request_bytes();
        if data.len() + 24 > max {
            return Err(BenchError::Setup(format!(
                "a {}-byte PutImage exceeds the X server's {max}-byte requests",
                data.len() + 24
            )));
        }

        let id = |conn: &RustConnection| {
            conn.generate_id()
                .map_err(|e| BenchError::Setup(format!("allocating an X resource id: {e}")))
        };
        let (src, dst, dst_x) = match target {
            Target::Pixmap(_) => {
                let dst = id(&conn)?;
                conn.create_pixmap(depth, dst, root, SIDE, SIDE)
                    .map_err(x_error("creating a pixmap"))?;
                let src = if request == Request::Copy {
                    let src = id(&conn)?;
                    conn.create_pixmap(depth, src, root, SIDE, SIDE)
                        .map_err(x_error("creating a pixmap"))?;
                    src
                } else {
                    dst
                };
                (src, dst, 0)
            }
            Target::Window => {
                let win = id(&conn)?;
                conn.create_window(
                    depth,
                    win,
                    root,
                    0,
                    0,
                    2 * SIDE,
                    SIDE,
                    0,
                    WindowClass::INPUT_OUTPUT,
                    root_visual,
                    &CreateWindowAux::new()
                        .background_pixel(black)
                        .override_redirect(1),
                )
                .map_err(x_error("creating a window"))?;
                conn.map_window(win).map_err(x_error("mapping a window"))?;
                (win, win, SIDE as i16)
            }
        };
        let gc = id(&conn)?;
        conn.create_gc(
            gc,
            dst,
            &CreateGCAux::new().foreground(black).graphics_exposures(0),
        )
        .map_err(x_error("creating a GC"))?;
        let mut blit = Blit {
            conn,
            request,
            src,
            dst,
            gc,
            depth,
            dst_x,
            data,
            server,
        };
        // The copy's source holds the image (put once, untimed).
        if request == Request::Copy {
            blit.put(blit.src)?;
        }
        blit.round_trip()?;
        // A first run proves the setup.
        blit.run(1)?;
        Ok(blit)
    }

    /// One PutImage of the image into `drawable` at (0, 0).
    fn put(&self, drawable: Drawable) -> Result<(), BenchError> {
        self.conn
            .put_image(
                ImageFormat::Z_PIXMAP,
                drawable,
                self.gc,
                SIDE,
                SIDE,
                0,
                0,
                0,
                self.depth,
                &self.data,
            )
            .map_err(x_error("sending PutImage"))?;
        Ok(())
    }

    /// One CopyArea of the square at (0, 0) of the source to the
    /// destination.
    fn copy(&self) -> Result<(), BenchError> {
        self.conn
            .copy_area(self.src, self.dst, self.gc, 0, 0, self.dst_x, 0, SIDE, SIDE)
            .map_err(x_error("sending CopyArea"))?;
        Ok(())
    }

    /// A round trip (GetInputFocus), after which every request sent
    /// before has been carried out; then any X error the server reported
    /// for them fails the run.
    fn round_trip(&self) -> Result<(), BenchError> {
        self.conn
            .get_input_focus()
            .map_err(x_error("sending GetInputFocus"))?
            .reply()
            .map_err(|e| BenchError::Setup(format!("waiting for the X server: {e}")))?;
        while let Some(event) = self
            .conn
            .poll_for_event()
            .map_err(x_error("reading X events"))?
        {
            if let Event::Error(e) = event {
                return Err(BenchError::Setup(format!(
                    "our Xvfb on {} refused a request: {:?} (major opcode {}, sequence {})",
                    self.server.name(),
                    e.error_kind,
                    e.major_opcode,
                    e.sequence
                )));
            }
        }
        Ok(())
    }
}

impl Operation for Blit {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        match self.request {
            Request::Put => {
                for _ in 0..ops {
                    self.put(self.dst)?;
                }
            }
            Request::Copy => {
                for _ in 0..ops {
                    self.copy()?;
                }
            }
        }
        self.round_trip()
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let mut v = Vec::new();
    let mut add = |name: String, operation: String, request: Request, target: Target| {
        v.push(
            Benchmark::new("blit", name, operation, false, move |_: Placement| {
                Ok(Box::new(Blit::new(request, target)?))
            })
            .with_pace(ITERATION_NS, 0),
        );
    };
    for depth in [1u8, 8, 24] {
        add(
            format!("put_image_{depth}bit"),
            format!("PutImage of a 256x256 {depth}-bit image into a depth-{depth} pixmap"),
            Request::Put,
            Target::Pixmap(depth),
        );
    }
    for depth in [1u8, 8, 24] {
        add(
            format!("copy_area_{depth}bit"),
            format!("CopyArea of 256x256 between two depth-{depth} pixmaps"),
            Request::Copy,
            Target::Pixmap(depth),
        );
    }
    add(
        "copy_area_window_24bit".into(),
        "CopyArea of 256x256 within a mapped depth-24 window".into(),
        Request::Copy,
        Target::Window,
    );
    v
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Whether `Xvfb` is on `$PATH`.
    fn xvfb_on_path() -> bool {
        find_program("Xvfb", &std::env::var_os("PATH").unwrap_or_default()).is_some()
    }

    fn placement() -> Placement {
        Placement {
            cpu: 0,
            other_cpu: None,
        }
    }

    #[test]
    fn the_group_is_complete() {
        let names: Vec<String> = benchmarks().iter().map(|b| b.id()).collect();
        assert_eq!(
            names,
            [
                "blit.put_image_1bit",
                "blit.put_image_8bit",
                "blit.put_image_24bit",
                "blit.copy_area_1bit",
                "blit.copy_area_8bit",
                "blit.copy_area_24bit",
                "blit.copy_area_window_24bit",
            ]
        );
        assert!(benchmarks().iter().all(|b| !b.two_cpus));
    }

    #[test]
    fn the_pattern_is_fixed_and_uneven() {
        let a = pattern(4096);
        assert_eq!(a, pattern(4096));
        let distinct = a.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct > 200, "{distinct}");
    }

    /// With Xvfb: every blit benchmark builds and runs; without it, each
    /// is skipped with the message the issue asks for.
    #[test]
    fn every_blit_benchmark_runs_or_is_skipped() {
        let present = xvfb_on_path();
        for b in benchmarks() {
            match (b.build)(placement()) {
                Ok(mut op) => {
                    assert!(present, "{} built without Xvfb", b.id());
                    op.run(10).unwrap_or_else(|e| panic!("{}: {e}", b.id()));
                    op.run(1).unwrap_or_else(|e| panic!("{}: {e}", b.id()));
                }
                Err(e) => {
                    assert!(!present, "{}: {e}", b.id());
                    assert_eq!(e.to_string(), NEEDS_XVFB, "{}", b.id());
                }
            }
        }
        if !present {
            eprintln!("skipped: needs Xvfb");
        }
    }

    /// Where no Xvfb can be found the build says what to install.
    #[test]
    fn no_xvfb_is_a_skip_with_the_install_hint() {
        let empty = std::env::temp_dir().join(format!("latscope-no-xvfb-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let e = Xvfb::start_from(empty.as_os_str()).err().unwrap();
        assert_eq!(e.to_string(), "needs Xvfb (apt-get install xvfb)");
        assert!(matches!(e, BenchError::Setup(_)));
        let e = Xvfb::start_from(OsStr::new("")).err().unwrap();
        assert_eq!(e.to_string(), NEEDS_XVFB);
        std::fs::remove_dir(&empty).unwrap();
    }

    /// The server a benchmark started is gone (reaped, its socket removed)
    /// once the benchmark is dropped.
    #[test]
    fn the_server_goes_with_the_benchmark() {
        if !xvfb_on_path() {
            eprintln!("skipped: needs Xvfb");
            return;
        }
        let mut blit = Blit::new(Request::Put, Target::Pixmap(24)).unwrap();
        blit.run(3).unwrap();
        let pid = blit.server.child.id();
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{}", blit.server.display));
        let log = blit.server.log.to_path_buf();
        assert!(proc_dir.exists());
        let had_socket = socket.exists();
        drop(blit);
        assert!(!proc_dir.exists(), "Xvfb {pid} is still there");
        if had_socket {
            assert!(!socket.exists(), "{} was left behind", socket.display());
        }
        assert!(!log.exists());
    }

    /// Should latscope die without stopping its server, the server exits
    /// once latscope's connection has gone (`-terminate`).
    #[test]
    fn the_server_exits_when_its_client_goes() {
        if !xvfb_on_path() {
            eprintln!("skipped: needs Xvfb");
            return;
        }
        let mut server = Xvfb::start().unwrap();
        let (conn, _) = server.connect().unwrap();
        conn.get_input_focus().unwrap().reply().unwrap();
        assert!(server.child.try_wait().unwrap().is_none());
        drop(conn);
        let deadline = Instant::now() + STOP_TIMEOUT;
        while server.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "Xvfb outlived its client");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Two servers started at once choose different displays.
    #[test]
    fn servers_started_together_choose_their_own_displays() {
        if !xvfb_on_path() {
            eprintln!("skipped: needs Xvfb");
            return;
        }
        let a = std::thread::spawn(Xvfb::start);
        let b = std::thread::spawn(Xvfb::start);
        let a = a.join().unwrap().unwrap();
        let b = b.join().unwrap().unwrap();
        assert_ne!(a.display, b.display);
        a.connect().unwrap();
        b.connect().unwrap();
    }

    /// A program that is not an X server fails the start with a reason.
    #[test]
    fn a_server_that_reports_no_display_is_an_error() {
        let dir = std::env::temp_dir().join(format!("latscope-fake-xvfb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("Xvfb");
        std::fs::write(&fake, "#!/bin/sh\necho 'no screens found' >&2\nexit 1\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = Xvfb::start_from(dir.as_os_str()).err().unwrap();
        let msg = e.to_string();
        assert!(
            msg.starts_with("Xvfb exited before reporting a display (exit status: 1)"),
            "{msg}"
        );
        assert!(msg.contains("no screens found"), "{msg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn programs_are_found_only_where_executable() {
        let dir = std::env::temp_dir().join(format!("latscope-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("Xvfb");
        std::fs::write(&f, "").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(find_program("Xvfb", dir.as_os_str()), None);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([Path::new("/nonexistent"), &dir]).unwrap();
        assert_eq!(find_program("Xvfb", &path), Some(f));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
