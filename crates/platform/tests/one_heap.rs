//! `one_heap`: after it, a new thread that allocates gets no glibc heap of
//! its own. Its own process, so no other test's threads change the count
//! of heaps. glibc reserves each thread heap as a 64 MiB mapping. The part
//! not yet in use has no access rights, which /proc/self/maps shows as
//! `---p`. A thread stack's guard page is `---p` too, but it is one page.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

/// Anonymous mappings of at least 1 MiB with no access rights: the unused
/// tails of glibc's thread heaps.
fn reserved_heaps() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 5 || f[1] != "---p" {
                return false;
            }
            let Some((a, b)) = f[0].split_once('-') else {
                return false;
            };
            let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
                return false;
            };
            b - a >= 1 << 20
        })
        .count()
}

/// A thread that has allocated and keeps its memory (and its heap, if it
/// got one) until it is dropped.
struct Allocating {
    stop: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Allocating {
    fn start() -> Allocating {
        let (stop, rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let v: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4096]).collect();
            done_tx.send(()).expect("send");
            let _ = rx.recv();
            drop(v);
        });
        done_rx.recv().expect("thread allocated");
        Allocating {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Allocating {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_thread_started_after_one_heap_gets_no_heap_of_its_own() {
    // Control: without it, a new allocating thread gets its own heap (the
    // test's thread and the main thread have two heaps at most, far below
    // glibc's default limit of eight per CPU). It stays alive, so its heap
    // is not free for the next thread to take over.
    let before = reserved_heaps();
    let _control = Allocating::start();
    let control = reserved_heaps();
    println!("heap reservations: {before} before, {control} with a new thread");
    assert!(
        control > before,
        "the control thread got no heap of its own: this check cannot see heaps here"
    );

    latscope_platform::one_heap();
    let _second = Allocating::start();
    let after = reserved_heaps();
    println!("after one_heap: {control} before, {after} with a new thread");
    assert_eq!(after, control, "a thread started after one_heap got a heap");
}
