//! Format parsing on format files captured from a 6.18 kernel and on
//! hand-written layouts of other kernels: fields are found by name wherever
//! they are.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{all_fixture_events, format, format_text};
use latscope_trace::decode::check_format;
use latscope_trace::format::DataLoc;
use latscope_trace::EventFormat;

#[test]
fn every_captured_format_parses_and_is_decodable() {
    let events = all_fixture_events();
    assert!(events.len() >= 19, "{events:?}");
    for (sys, name) in events {
        let f = format(&sys, &name);
        assert_eq!(f.name, name);
        assert_eq!(f.system, sys);
        assert!(f.id > 0);
        assert_eq!(f.field("common_type").unwrap().offset, 0);
        assert!(f.fields.iter().filter(|x| x.common).count() >= 4);
        check_format(&f).unwrap_or_else(|e| panic!("{sys}:{name}: {e}"));
    }
}

#[test]
fn hrtimer_start_on_6_18_has_was_armed() {
    let f = format("timer", "hrtimer_start");
    assert_eq!(f.id, 460);
    let armed = f.field("was_armed").unwrap();
    assert_eq!((armed.offset, armed.size, armed.signed), (44, 1, false));
    assert_eq!(armed.type_text, "bool");
    let e = f.field("expires").unwrap();
    assert_eq!((e.offset, e.size, e.signed), (24, 8, true));
    assert_eq!(e.type_text, "s64");
    assert_eq!(f.field("softexpires").unwrap().offset, 32);
    let h = f.field("hrtimer").unwrap();
    assert_eq!((h.offset, h.type_text.as_str()), (8, "void *"));
    assert_eq!(f.field("mode").unwrap().type_text, "enum hrtimer_mode");
    assert_eq!(f.own_fields().count(), 6);
}

#[test]
fn hrtimer_start_before_6_18_lacks_was_armed() {
    let f = EventFormat::parse(
        "timer",
        &format_text("formats-old", "timer", "hrtimer_start"),
    )
    .unwrap();
    assert!(f.field("was_armed").is_none());
    assert_eq!(f.field("expires").unwrap().offset, 24);
    assert_eq!(f.field("softexpires").unwrap().offset, 32);
    check_format(&f).unwrap();
}

#[test]
fn shifted_and_reordered_layout_is_found_by_name() {
    let f = EventFormat::parse(
        "timer",
        &format_text("formats-rt", "timer", "hrtimer_start"),
    )
    .unwrap();
    assert_eq!(f.id, 301);
    assert_eq!(f.field("function").unwrap().offset, 16);
    assert_eq!(f.field("hrtimer").unwrap().offset, 24);
    assert_eq!(f.field("expires").unwrap().offset, 32);
    assert_eq!(f.field("softexpires").unwrap().offset, 40);
    assert!(f.field("common_preempt_lazy_count").unwrap().common);
    check_format(&f).unwrap();
}

#[test]
fn comm_arrays_and_data_loc_strings() {
    let f = format("sched", "sched_switch");
    let c = f.field("prev_comm").unwrap();
    assert_eq!((c.offset, c.size, c.array_len), (8, 16, Some(16)));
    assert_eq!(c.type_text, "char");
    assert_eq!(c.loc, DataLoc::Inline);
    let s = f.field("prev_state").unwrap();
    assert_eq!((s.offset, s.size, s.signed), (32, 8, true));
    assert_eq!(f.field("next_pid").unwrap().offset, 56);

    let f = format("irq", "irq_handler_entry");
    let n = f.field("name").unwrap();
    assert_eq!(n.loc, DataLoc::Absolute);
    assert!(n.is_dynamic());
    assert_eq!((n.offset, n.size), (12, 4));
    assert_eq!(n.type_text, "__data_loc char[]");
    // A record with the name "virtio0" after the fixed part.
    let mut rec = vec![0u8; 16];
    rec.extend_from_slice(b"virtio0\0");
    let loc: u32 = 16 | (8 << 16);
    rec[12..16].copy_from_slice(&loc.to_ne_bytes());
    assert_eq!(n.read_array(&rec), Some(&b"virtio0\0"[..]));
    // A locator pointing past the end reads nothing instead of panicking.
    let bad: u32 = 60 | (8 << 16);
    rec[12..16].copy_from_slice(&bad.to_ne_bytes());
    assert_eq!(n.read_array(&rec), None);
}

#[test]
fn rel_loc_strings() {
    let text = "name: t\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:__rel_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;\n";
    let f = EventFormat::parse("test", text).unwrap();
    let m = f.field("msg").unwrap();
    assert_eq!(m.loc, DataLoc::Relative);
    let mut rec = vec![0u8; 12];
    rec.extend_from_slice(b"hi\0");
    // Relative to the end of the field (offset 12): payload at +0.
    rec[8..12].copy_from_slice(&(3u32 << 16).to_ne_bytes());
    assert_eq!(m.read_array(&rec), Some(&b"hi\0"[..]));
}

#[test]
fn broken_formats_are_errors() {
    assert!(EventFormat::parse("x", "").is_err());
    assert!(EventFormat::parse("x", "name: a\nformat:\n").is_err());
    assert!(EventFormat::parse("x", "name: a\nID: zz\n").is_err());
    assert!(EventFormat::parse(
        "x",
        "name: a\nID: 3\nformat:\n\tfield:int x;\toffset:q;\tsize:4;\n"
    )
    .is_err());
    assert!(EventFormat::parse("x", "name: a\nID: 3\nformat:\n\tfield:int x;\tsize:4;\n").is_err());
    // An event that lacks a field the decoder needs is refused with the field's name.
    let text = format_text("formats", "timer", "hrtimer_start").replace("softexpires", "soft");
    let f = EventFormat::parse("timer", &text).unwrap();
    let e = check_format(&f).unwrap_err();
    assert!(e.contains("softexpires"), "{e}");
}
