//! Kernel symbols from `/proc/kallsyms`, to name the addresses tracepoints
//! and stack samples carry (hrtimer and workqueue callbacks, call chains).
//!
//! Only text symbols (`t`/`T`) are kept: every address latscope resolves is
//! code. The table is one sorted array of addresses with names packed into
//! a single string, so the ~100k symbols of a kernel cost a few MiB and a
//! lookup is a binary search. When `kptr_restrict` hides addresses (all
//! read as zero) the table is reported unavailable instead of resolving
//! everything to the first symbol.

use std::fs;

use crate::error::TraceError;

/// Offsets beyond this from the nearest symbol are not believed: the
/// address is in a gap (data, unmapped module space), not in that function.
const MAX_SYMBOL_SIZE: u64 = 1 << 20;

/// A resolved address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    pub name: &'a str,
    /// The module, for module symbols; None for the kernel image.
    pub module: Option<&'a str>,
    /// Bytes from the symbol's start.
    pub offset: u64,
}

impl std::fmt::Display for Symbol<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)?;
        if self.offset != 0 {
            write!(f, "+{:#x}", self.offset)?;
        }
        if let Some(m) = self.module {
            write!(f, " [{m}]")?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    addr: u64,
    name_start: u32,
    name_len: u32,
    /// Index into `modules` plus one; 0 for the kernel image.
    module: u32,
    /// `T` (global) rather than `t`.
    global: bool,
    /// The name does not start with an underscore.
    plain: bool,
}

/// The kernel's text symbols, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    entries: Vec<Entry>,
    names: String,
    modules: Vec<String>,
}

impl Kallsyms {
    /// Loads `/proc/kallsyms`, a line at a time.
    ///
    /// The file is about 8 MiB on a distribution kernel. It is not read
    /// whole, and the table is sorted in place: glibc's allocator serves a
    /// large block with mmap, and freeing one raises its mmap threshold
    /// (and its trim threshold, to twice that) to the block's size, after
    /// which the large temporaries that follow can stay in the heap (the
    /// likely reason, not traced allocation by allocation). Read this way, a
    /// traced run's resident size 30 s after its start was 35.4 MiB
    /// against 38.6 MiB (one run each, minutes apart).
    pub fn load() -> Result<Kallsyms, TraceError> {
        use std::io::BufRead;
        let unreadable = |e: std::io::Error| {
            TraceError::SymbolsUnavailable(format!("cannot read /proc/kallsyms: {e}"))
        };
        let file = fs::File::open("/proc/kallsyms").map_err(unreadable)?;
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
        let mut k = Kallsyms::default();
        let mut any_text = false;
        let mut line = String::with_capacity(256);
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(unreadable)? == 0 {
                break;
            }
            any_text |= k.add_line(&line);
        }
        k.finish(any_text)
    }

    /// Parses the text of `/proc/kallsyms`
    /// (`ffffffff81000000 T _stext` or `... t name\t[module]`).
    pub fn parse(text: &str) -> Result<Kallsyms, TraceError> {
        let mut k = Kallsyms::default();
        let mut any_text = false;
        for line in text.lines() {
            any_text |= k.add_line(line);
        }
        k.finish(any_text)
    }

    /// Adds one line's symbol if it is a text symbol with an address;
    /// whether the line was a text symbol at all (hidden addresses read 0).
    fn add_line(&mut self, line: &str) -> bool {
        let mut f = line.split_ascii_whitespace();
        let (Some(addr), Some(ty), Some(name)) = (f.next(), f.next(), f.next()) else {
            return false;
        };
        if !matches!(ty, "t" | "T") {
            return false;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            return true;
        };
        if addr == 0 {
            return true;
        }
        let module = match f.next() {
            Some(m) => {
                let m = m.trim_start_matches('[').trim_end_matches(']');
                match self.modules.iter().position(|x| x == m) {
                    Some(i) => i + 1,
                    None => {
                        self.modules.push(m.to_string());
                        self.modules.len()
                    }
                }
            }
            None => 0,
        };
        let (Ok(name_start), Ok(name_len), Ok(module)) = (
            u32::try_from(self.names.len()),
            u32::try_from(name.len()),
            u32::try_from(module),
        ) else {
            return true;
        };
        self.names.push_str(name);
        self.entries.push(Entry {
            addr,
            name_start,
            name_len,
            module,
            global: ty == "T",
            plain: !name.starts_with('_'),
        });
        true
    }

    /// Sorts the table once every line is in.
    fn finish(mut self, any_text: bool) -> Result<Kallsyms, TraceError> {
        if self.entries.is_empty() {
            return Err(TraceError::SymbolsUnavailable(if any_text {
                "addresses are hidden (kptr_restrict; run as root)".to_string()
            } else {
                "no text symbols".to_string()
            }));
        }
        // Among aliases at one address, the preferred name sorts last, where
        // the lookup lands: a global symbol over a local one, then a name
        // without a leading underscore. The keys are unique (name_start), so
        // the in-place unstable sort orders them as a stable one would,
        // without a stable sort's buffer of half the table. The key is the
        // entry's own fields, read without looking at the name: the sort
        // compares about two million pairs of a kernel's symbols.
        self.entries
            .sort_unstable_by_key(|e| (e.addr, e.global, e.plain, e.name_start));
        self.entries.shrink_to_fit();
        self.names.shrink_to_fit();
        Ok(self)
    }

    fn name_of(&self, e: &Entry) -> &str {
        let start = e.name_start as usize;
        self.names
            .get(start..start + e.name_len as usize)
            .unwrap_or("?")
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The function containing `addr`: the nearest symbol at or below it,
    /// if `addr` is before the next symbol and within a plausible distance.
    pub fn resolve(&self, addr: u64) -> Option<Symbol<'_>> {
        let i = self.entries.partition_point(|e| e.addr <= addr);
        let e = self.entries.get(i.checked_sub(1)?)?;
        let offset = addr - e.addr;
        if offset >= MAX_SYMBOL_SIZE {
            return None;
        }
        let module = match e.module {
            0 => None,
            m => self.modules.get(m as usize - 1).map(String::as_str),
        };
        Some(Symbol {
            name: self.name_of(e),
            module,
            offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t helper
ffffffff81000200 D some_data
ffffffff81000300 T do_work
ffffffffc0001000 t mod_fn\t[mymod]
ffffffffc0001080 T mod_fn2\t[mymod]
";

    #[test]
    fn resolves() {
        let k = Kallsyms::parse(TEXT).unwrap();
        assert_eq!(k.len(), 6);
        let s = k.resolve(0xffffffff81000000).unwrap();
        assert_eq!((s.name, s.offset, s.module), ("startup_64", 0, None));
        let s = k.resolve(0xffffffff81000210).unwrap();
        assert_eq!((s.name, s.offset), ("helper", 0x110));
        assert_eq!(k.resolve(0xffffffff80ffffff), None);
        let s = k.resolve(0xffffffffc0001004).unwrap();
        assert_eq!((s.name, s.offset, s.module), ("mod_fn", 4, Some("mymod")));
        assert_eq!(s.to_string(), "mod_fn+0x4 [mymod]");
        assert_eq!(k.resolve(0xffffffffb0000000), None);
    }

    /// Among aliases at one address the lookup names a global symbol over
    /// a local one, then a name without a leading underscore, whatever
    /// order the lines came in; lines out of address order are sorted.
    #[test]
    fn aliases_prefer_global_then_plain_names_in_any_line_order() {
        let text = "\
ffffffffc0001000 t mod_fn\t[mymod]
ffffffff81000000 T startup_64
ffffffff81000000 T _stext
ffffffff81000100 T do_work
ffffffff81000100 t do_work_alias
ffffffff81000200 T __sys_call
ffffffff81000200 t sys_call
";
        let k = Kallsyms::parse(text).unwrap();
        assert_eq!(k.resolve(0xffffffff81000000).unwrap().name, "startup_64");
        assert_eq!(k.resolve(0xffffffff81000104).unwrap().name, "do_work");
        // Global before plain: the global name with underscores wins.
        assert_eq!(k.resolve(0xffffffff81000200).unwrap().name, "__sys_call");
        assert_eq!(k.resolve(0xffffffff810000ff).unwrap().name, "startup_64");
        let m = k.resolve(0xffffffffc0001000).unwrap();
        assert_eq!((m.name, m.module), ("mod_fn", Some("mymod")));
    }

    #[test]
    fn hidden_addresses_are_unavailable() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t helper\n";
        let e = Kallsyms::parse(hidden).unwrap_err();
        assert!(e.to_string().contains("kptr_restrict"), "{e}");
    }
}
