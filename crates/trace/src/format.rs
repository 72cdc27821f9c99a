//! Parser for tracefs event format files (`events/<system>/<name>/format`).
//!
//! A tracepoint's raw record is a C struct whose layout is whatever the
//! running kernel compiled: fields are added (6.18's `hrtimer_start` gained
//! `was_armed`), removed or resized between versions. The only reliable
//! description is the format file the kernel publishes, so latscope parses
//! it at run time and looks every field up by name; no offset is hard-coded
//! anywhere.

use std::fmt;

/// Where a field's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataLoc {
    /// The bytes are at `offset` in the record (scalars, fixed arrays such
    /// as `char comm[16]`).
    Inline,
    /// `__data_loc`: a u32 at `offset` whose low 16 bits are the payload's
    /// offset from the record start and high 16 bits its length.
    Absolute,
    /// `__rel_loc`: like `__data_loc`, but the payload offset counts from
    /// the end of the u32 field.
    Relative,
}

/// One field of a tracepoint record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The declared type without the name and array suffix, e.g.
    /// `unsigned short`, `void *`, `char`, `__data_loc char[]`.
    pub type_text: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub loc: DataLoc,
    /// `N` of a fixed array `name[N]`, when N is a number.
    pub array_len: Option<usize>,
    /// A `common_*` field shared by every event.
    pub common: bool,
}

impl Field {
    /// Whether the field is a `__data_loc`/`__rel_loc` dynamic array.
    pub fn is_dynamic(&self) -> bool {
        self.loc != DataLoc::Inline
    }

    /// The field's own bytes (for dynamic arrays: the u32 locator).
    pub fn raw_bytes<'a>(&self, record: &'a [u8]) -> Option<&'a [u8]> {
        record.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// An integer field, zero-extended (sizes 1, 2, 4, 8).
    pub fn read_u64(&self, record: &[u8]) -> Option<u64> {
        read_uint(self.raw_bytes(record)?)
    }

    /// An integer field, sign-extended when the format says it is signed.
    pub fn read_i64(&self, record: &[u8]) -> Option<i64> {
        let b = self.raw_bytes(record)?;
        read_int(b, self.signed)
    }

    /// The payload of an array field: the fixed array itself, or what a
    /// `__data_loc`/`__rel_loc` locator points at.
    pub fn read_array<'a>(&self, record: &'a [u8]) -> Option<&'a [u8]> {
        match self.loc {
            DataLoc::Inline => self.raw_bytes(record),
            DataLoc::Absolute | DataLoc::Relative => {
                let loc = u32::try_from(read_uint(self.raw_bytes(record)?)?).ok()?;
                let mut off = (loc & 0xffff) as usize;
                let len = (loc >> 16) as usize;
                if self.loc == DataLoc::Relative {
                    off = off.checked_add(self.offset)?.checked_add(self.size)?;
                }
                record.get(off..off.checked_add(len)?)
            }
        }
    }
}

/// Reads a native-endian unsigned integer of 1, 2, 4 or 8 bytes.
pub(crate) fn read_uint(b: &[u8]) -> Option<u64> {
    Some(match b.len() {
        1 => u64::from(b[0]),
        2 => u64::from(u16::from_ne_bytes(b.try_into().ok()?)),
        4 => u64::from(u32::from_ne_bytes(b.try_into().ok()?)),
        8 => u64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Reads a native-endian integer of 1, 2, 4 or 8 bytes, sign-extending if
/// `signed`.
pub(crate) fn read_int(b: &[u8], signed: bool) -> Option<i64> {
    if !signed {
        return read_uint(b).map(|v| v as i64);
    }
    Some(match b.len() {
        1 => i64::from(b[0] as i8),
        2 => i64::from(i16::from_ne_bytes(b.try_into().ok()?)),
        4 => i64::from(i32::from_ne_bytes(b.try_into().ok()?)),
        8 => i64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// A parsed format file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    /// The tracepoint id (perf `config`, and `common_type` in records).
    pub id: u64,
    /// All fields, common ones first, in file order.
    pub fields: Vec<Field>,
}

/// Why a format file could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl EventFormat {
    /// Parses the text of a format file. `system` is the directory the file
    /// came from (the file itself names only the event).
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, FormatError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for (lineno, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("name:") {
                name = Some(rest.trim().to_string());
            } else if let Some(rest) = line.strip_prefix("ID:") {
                let v = rest.trim();
                id = Some(
                    v.parse::<u64>()
                        .map_err(|_| FormatError(format!("line {}: bad ID {v:?}", lineno + 1)))?,
                );
            } else if line.starts_with("field:") {
                let f = parse_field(line)
                    .map_err(|e| FormatError(format!("line {}: {e}", lineno + 1)))?;
                fields.push(f);
            } else if line.starts_with("print fmt:") {
                // The rest is the printk format, not layout.
                break;
            }
        }
        let name = name.ok_or_else(|| FormatError("no `name:` line".to_string()))?;
        let id = id.ok_or_else(|| FormatError("no `ID:` line".to_string()))?;
        if fields.is_empty() {
            return Err(FormatError("no fields".to_string()));
        }
        Ok(EventFormat {
            system: system.to_string(),
            name,
            id,
            fields,
        })
    }

    /// `system:name`, as perf and the docs write it.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }

    /// A field by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The event's own fields (without `common_*`).
    pub fn own_fields(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().filter(|f| !f.common)
    }
}

/// Parses `field:<decl>;\toffset:N;\tsize:N;\tsigned:N;`.
fn parse_field(line: &str) -> Result<Field, String> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts
        .next()
        .and_then(|d| d.strip_prefix("field:"))
        .ok_or("missing declaration")?
        .trim();
    let mut offset = None;
    let mut size = None;
    let mut signed = None;
    for part in parts {
        let Some((key, value)) = part.split_once(':') else {
            continue;
        };
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad {key} {v:?}"))
        };
        match key.trim() {
            "offset" => offset = Some(parse(value)?),
            "size" => size = Some(parse(value)?),
            "signed" => signed = Some(parse(value)? != 0),
            _ => {}
        }
    }
    let (name, type_text, array_len) = parse_decl(decl)?;
    let loc = if type_text.starts_with("__data_loc") {
        DataLoc::Absolute
    } else if type_text.starts_with("__rel_loc") {
        DataLoc::Relative
    } else {
        DataLoc::Inline
    };
    let common = name.starts_with("common_");
    Ok(Field {
        name,
        type_text,
        offset: offset.ok_or("no offset")?,
        size: size.ok_or("no size")?,
        // Formats before 2.6.31 had no `signed:`; unsigned is the safe
        // reading for the pointer and id fields they carried.
        signed: signed.unwrap_or(false),
        loc,
        array_len,
        common,
    })
}

/// Splits a C declaration into (name, type without name, array length).
/// `char comm[16]` → ("comm", "char", Some(16));
/// `__data_loc char[] name` → ("name", "__data_loc char[]", None);
/// `void * hrtimer` → ("hrtimer", "void *", None).
fn parse_decl(decl: &str) -> Result<(String, String, Option<usize>), String> {
    let mut head = decl.trim_end();
    let mut array_len = None;
    let mut suffix = "";
    if head.ends_with(']') {
        let open = head
            .rfind('[')
            .ok_or_else(|| format!("bad array in {decl:?}"))?;
        let inner = &head[open + 1..head.len() - 1];
        let before = head[..open].trim_end();
        // Brackets right after an identifier make the field an array; the
        // `[]` of `__data_loc char[] name` never reaches here (the name
        // comes last).
        if before
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            array_len = inner.trim().parse::<usize>().ok();
            if array_len.is_none() {
                suffix = &head[open..];
            }
            head = before;
        }
    }
    let name_start = head
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_ascii_alphanumeric() || c == '_')
        .last()
        .map(|(i, _)| i)
        .ok_or_else(|| format!("no field name in {decl:?}"))?;
    let name = &head[name_start..];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("no field name in {decl:?}"));
    }
    let mut type_text = head[..name_start].trim_end().to_string();
    type_text.push_str(suffix);
    Ok((name.to_string(), type_text, array_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations() {
        assert_eq!(
            parse_decl("char comm[16]").unwrap(),
            ("comm".into(), "char".into(), Some(16))
        );
        assert_eq!(
            parse_decl("__data_loc char[] name").unwrap(),
            ("name".into(), "__data_loc char[]".into(), None)
        );
        assert_eq!(
            parse_decl("void * hrtimer").unwrap(),
            ("hrtimer".into(), "void *".into(), None)
        );
        assert_eq!(
            parse_decl("void *hrtimer").unwrap(),
            ("hrtimer".into(), "void *".into(), None)
        );
        assert_eq!(
            parse_decl("unsigned long args[6]").unwrap(),
            ("args".into(), "unsigned long".into(), Some(6))
        );
        assert_eq!(
            parse_decl("u8 buf[LEN]").unwrap(),
            ("buf".into(), "u8[LEN]".into(), None)
        );
        assert!(parse_decl("").is_err());
        assert!(parse_decl("[]").is_err());
    }

    #[test]
    fn integers() {
        assert_eq!(read_int(&[0xff], true), Some(-1));
        assert_eq!(read_int(&[0xff], false), Some(255));
        assert_eq!(read_int(&(-5i32).to_ne_bytes(), true), Some(-5));
        assert_eq!(read_uint(&[1, 2, 3]), None);
    }
}
