//! `tty-pump`: the studies' COM1→COM2 transfer on pseudo-terminals. Bytes
//! written to a pty master go through the tty layer (the flip buffer and the
//! line discipline's receive work) to the slave, where a reader drains them.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use latscope_platform::process::open_pty;

use super::args::arg;
use super::pace::Pacer;

/// `tty-pump PAIRS RATE CHUNK`: PAIRS pty pairs, each with a writer on the
/// master (CHUNK-byte writes, RATE bytes a second, 0 for as fast as it
/// goes) and a reader on the slave. Runs until killed; exits 1 if a pair
/// breaks.
pub(super) fn main(args: &[String]) -> Result<i32, String> {
    let pairs: usize = arg(args, 0, "pair count")?;
    let rate: u64 = arg(args, 1, "rate")?;
    let chunk: usize = arg(args, 2, "chunk size")?;
    if pairs == 0 || chunk == 0 {
        return Err("pair count and chunk size must be positive".into());
    }
    let (tx, rx) = mpsc::channel::<String>();
    let stop = Arc::new(AtomicBool::new(false));
    let moved = Arc::new(AtomicU64::new(0));
    for _ in 0..pairs {
        let tx = tx.clone();
        let stop = Arc::clone(&stop);
        let moved = Arc::clone(&moved);
        thread::spawn(move || {
            if let Err(e) = pump_pair(rate, chunk, &stop, &moved) {
                let _ = tx.send(e);
            }
        });
    }
    drop(tx);
    match rx.recv() {
        Ok(e) => Err(e),
        Err(_) => Ok(0),
    }
}

/// One pair: opens a raw pty, writes to the master and reads from the slave
/// until `stop`, adding every byte read to `moved`. Errors are one line.
pub(super) fn pump_pair(
    rate: u64,
    chunk: usize,
    stop: &Arc<AtomicBool>,
    moved: &Arc<AtomicU64>,
) -> Result<(), String> {
    let pty = open_pty().map_err(|e| e.to_string())?;
    let path = pty.slave_path.clone();
    let mut slave = pty.slave;
    let reader_moved = Arc::clone(moved);
    // The reader drains until the master is closed, never stopping on its
    // own: a reader that left first would leave the writer blocked for ever
    // in a write to a full pty.
    let reader = thread::spawn(move || -> Result<(), String> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match slave.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    reader_moved.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // EIO: the master side was closed, the pair is done.
                Err(e) if e.raw_os_error() == Some(5) => return Ok(()),
                Err(e) => return Err(format!("reading {path}: {e}")),
            }
        }
    });
    let mut master = pty.master;
    let pattern = b"latscope tty load\r\n";
    let data: Vec<u8> = (0..chunk).map(|i| pattern[i % pattern.len()]).collect();
    let mut pacer = Pacer::new(rate);
    let mut result = Ok(());
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = master.write_all(&data) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                result = Err(format!("writing the pty master: {e}"));
                break;
            }
        }
        pacer.sent(chunk as u64);
    }
    // Closing the master wakes the reader with EIO.
    drop(master);
    match reader.join() {
        Ok(r) => result.and(r),
        Err(_) => Err("pty reader panicked".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bytes_go_through_the_pty() {
        let stop = Arc::new(AtomicBool::new(false));
        let moved = Arc::new(AtomicU64::new(0));
        let (s, m) = (Arc::clone(&stop), Arc::clone(&moved));
        let t = thread::spawn(move || pump_pair(0, 4096, &s, &m));
        thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap().unwrap();
        let n = moved.load(Ordering::Relaxed);
        assert!(n > 1_000_000, "only {n} bytes in 0.3 s");
    }

    #[test]
    fn paced_pair_keeps_its_rate() {
        let stop = Arc::new(AtomicBool::new(false));
        let moved = Arc::new(AtomicU64::new(0));
        let (s, m) = (Arc::clone(&stop), Arc::clone(&moved));
        let t = thread::spawn(move || pump_pair(100_000, 1000, &s, &m));
        thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap().unwrap();
        let n = moved.load(Ordering::Relaxed);
        assert!(
            (30_000..=80_000).contains(&n),
            "{n} bytes at 100 kB/s in 0.5 s"
        );
    }
}
