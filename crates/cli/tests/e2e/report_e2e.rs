//! `latscope report` end to end: real runs (a traced timer run under a
//! cpu load, and a suite of timer and noise cells with workload
//! characterization) rendered to HTML, checked for their sections, for
//! references to anything outside the page, for well-formed markup, and
//! loaded in a real headless browser (Debian `chromium`) that must log no
//! console error and paint a screenshot that is not blank.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::common::browser::{browse, chromium, console_lines, png_colours};
use crate::common::*;

/// The store shared by the tests: run 1 is a traced timer run under the
/// cpu workload, run 2 a suite of timer and noise cells under idle.
struct Fixture {
    _dir: tempfile::TempDir,
    store: PathBuf,
    /// Run 1's report and run 2's.
    traced: String,
    suite: String,
    /// Where run 1's report was written.
    traced_path: PathBuf,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let _guard = serial();
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let s = store.to_str().unwrap();
        let o = latscope(&[
            "run",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
            "--workload",
            "cpu",
            "--trace",
            "--stacks",
            "--threshold",
            "100us",
            "--quiet",
            "--store",
            s,
        ]);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(3),
            "run: {}",
            stderr(&o)
        );
        let o = latscope(&[
            "suite",
            "--workloads",
            "idle",
            "--probes",
            "timer,noise",
            "--cell-duration",
            "2s",
            "--warmup",
            "500ms",
            "--quiet",
            "--store",
            s,
        ]);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(3),
            "suite: {}",
            stderr(&o)
        );
        let traced_path = dir.path().join("run1.html");
        let o = latscope(&[
            "report",
            "1",
            "--html",
            traced_path.to_str().unwrap(),
            "--store",
            s,
        ]);
        assert_eq!(o.status.code(), Some(0), "report: {}", stderr(&o));
        let traced = std::fs::read_to_string(&traced_path).unwrap();
        let o = latscope(&["report", "latest", "--html", "-", "--store", s]);
        assert_eq!(o.status.code(), Some(0), "report: {}", stderr(&o));
        let suite = stdout(&o);
        Fixture {
            _dir: dir,
            store,
            traced,
            suite,
            traced_path,
        }
    })
}

fn assert_has(html: &str, what: &[&str]) {
    for w in what {
        assert!(html.contains(w), "missing {w:?} in the report");
    }
}

#[test]
fn a_traced_run_has_every_section_its_data_allows() {
    let f = fixture();
    let html = &f.traced;
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    assert_has(
        html,
        &[
            "<title>latscope report · run 1</title>",
            "id=\"system\"",
            "id=\"matrix\"",
            "id=\"cell-0\"",
            "id=\"forecast\"",
            "<h3 id=\"cell-0-timer-latency\">timer.latency</h3>",
            "latency (µs, log scale)",
            "samples per bin (log scale)",
            "P(latency &gt; x) (log scale)",
            "time since the cell started (s)",
            "mean time to underrun (s, log scale)",
            "Application verdicts",
            "Workload characterization",
        ],
    );
    // Plots: per metric a histogram, an exceedance curve and a time plot,
    // and the forecast's MTTF curves.
    assert!(html.matches("<svg class=\"plot\"").count() >= 4);
    if html.contains("<dt>tracepoints</dt><dd>yes</dd>") {
        assert_has(
            html,
            &[
                "Decomposition of the wake-up (traced)",
                "timer.irq",
                "Interrupts and deferred work",
                // The interrupt level's own forecast.
                "<h3>Cell 0 · timer.irq (expiry → our timer",
            ],
        );
    } else {
        eprintln!("skipped: needs kernel tracepoints (decomposition and sources not checked)");
    }
    // A section without data does not appear: no run this short has whole
    // hours.
    assert!(!html.contains("Worst case per hour"));
}

#[test]
fn a_traced_run_forecasts_the_timer_interrupt_with_its_per_second_checks() {
    let f = fixture();
    if !f.traced.contains("<dt>tracepoints</dt><dd>yes</dd>") {
        eprintln!("skipped: needs kernel tracepoints");
        return;
    }
    let o = latscope(&[
        "forecast",
        "1",
        "--json",
        "--store",
        f.store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "forecast: {}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let metrics = doc["cells"][0]["metrics"].as_array().unwrap();
    let names: Vec<&str> = metrics
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    println!("forecast metrics of the traced run: {names:?}");
    assert_eq!(names[..2], ["timer.latency", "timer.irq"], "{names:?}");
    let irq = &metrics[1];
    // Its per-second maxima were stored: one CPU's checks per measured
    // CPU, as for the thread's latency.
    let checks = |m: &serde_json::Value| m["diagnostics"]["checks"].as_array().unwrap().len();
    assert_eq!(checks(irq), checks(&metrics[0]), "{irq:#}");
    assert!(irq["samples"].as_u64().unwrap() > 0);
    // A softirq vector is forecast too, saying which checks it lacks.
    if let Some(s) = metrics
        .iter()
        .find(|m| m["name"].as_str().unwrap().starts_with("softirq.delay."))
    {
        assert!(
            s["diagnostics"]["validation_skipped"]
                .as_str()
                .unwrap()
                .contains("no per-second timeline"),
            "{s:#}"
        );
    }
}

#[test]
fn a_suite_has_its_matrix_workloads_and_noise() {
    let f = fixture();
    let html = &f.suite;
    assert_has(
        html,
        &[
            "id=\"workloads\"",
            "id=\"matrix\"",
            "timer.latency · fifo 95",
            "noise.gap",
            "Noise on the CPU-bound loop",
            "id=\"cell-1\"",
        ],
    );
}

#[test]
fn the_page_references_nothing_outside_itself() {
    let f = fixture();
    for html in [&f.traced, &f.suite] {
        let lower = html.to_ascii_lowercase();
        for bad in [
            "http://", "https://", "<script", "src=", "url(", "@import", "<link", "<img", "<iframe",
        ] {
            assert!(!lower.contains(bad), "the report contains {bad:?}");
        }
    }
}

/// Elements that have no end tag.
const VOID: [&str; 6] = ["meta", "br", "hr", "img", "input", "link"];

/// Checks that every element is closed in order and that no `&` starts
/// anything but an entity; returns the elements' names in order.
fn check_markup(html: &str) -> Vec<String> {
    let body = html.strip_prefix("<!DOCTYPE html>").expect("doctype first");
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = body;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt]);
        let after = &rest[lt + 1..];
        let gt = after.find('>').expect("unclosed tag");
        let tag = &after[..gt];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        rest = &after[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().unwrap_or_else(|| panic!("stray </{name}>"));
            assert_eq!(open, name.trim(), "</{name}> closes <{open}>");
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(!name.is_empty(), "bad tag <{tag}>");
        // Attribute values are quoted and hold no markup.
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes: <{tag}>"
        );
        seen.push(name.clone());
        let closed_here = tag.ends_with('/');
        if !closed_here && !VOID.contains(&name.as_str()) {
            // Text-only elements keep their contents as they are.
            if name == "style" || name == "title" {
                let end = format!("</{name}>");
                let at = rest.find(&end).expect("closed style/title");
                if name == "title" {
                    check_text(&rest[..at]);
                }
                rest = &rest[at + end.len()..];
                continue;
            }
            stack.push(name);
        }
    }
    check_text(rest);
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    seen
}

fn check_text(text: &str) {
    assert!(!text.contains('>'), "unescaped '>' in text: {text}");
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        let end = entity
            .find(';')
            .unwrap_or_else(|| panic!("bare '&': {entity}"));
        let name = &entity[1..end];
        assert!(
            !name.is_empty()
                && name.len() <= 8
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '#'),
            "bad entity &{name};"
        );
    }
}

#[test]
fn the_markup_is_well_formed() {
    let f = fixture();
    for html in [&f.traced, &f.suite] {
        let tags = check_markup(html);
        assert!(tags.iter().any(|t| t == "svg"));
        assert!(tags.iter().any(|t| t == "table"));
    }
}

#[test]
fn the_default_file_name_carries_the_run_id() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["report", "1", "--store", f.store.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = dir.path().join("latscope-report-1.html");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, f.traced, "the same run renders the same page");
}

#[test]
fn an_unknown_run_is_one_clear_error() {
    let f = fixture();
    let o = latscope(&["report", "99", "--store", f.store.to_str().unwrap()]);
    assert_one_line_error(&o, 1);
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    let o = latscope(&["report", "--store", missing.to_str().unwrap()]);
    assert_one_line_error(&o, 1);
}

#[test]
fn a_real_browser_loads_the_page_without_errors_and_paints_it() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: needs chromium (apt-get install chromium)");
        return;
    };
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profile");

    // The detector must see a console error where there is one, or its
    // silence below would prove nothing.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><p>x</p><script>undefinedFunction();</script></body></html>",
    )
    .unwrap();
    let (_, err) = browse(&browser, &profile, &["--dump-dom".to_string()], &bad);
    assert!(
        !console_lines(&err).is_empty(),
        "chromium did not report a deliberate script error; stderr: {err}"
    );

    // One load of the page gives its DOM, its console and its screenshot.
    let shot = dir.path().join("report.png");
    let (dom, err) = browse(
        &browser,
        &profile,
        &[
            "--dump-dom".to_string(),
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000".to_string(),
        ],
        &f.traced_path,
    );
    let console = console_lines(&err);
    assert!(console.is_empty(), "console messages: {console:#?}");
    for want in ["id=\"cell-0\"", "id=\"forecast\"", "<svg class=\"plot\""] {
        assert!(dom.contains(want), "the loaded page lacks {want}");
    }
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {err}"));
    let colours = png_colours(&png);
    eprintln!(
        "browser: {} (screenshot {} bytes, {colours} colours)",
        browser.display(),
        png.len()
    );
    // Text is anti-aliased and the plots are coloured: a painted page has
    // hundreds of colours, a blank one one.
    assert!(
        colours > 50,
        "the screenshot looks blank: {colours} colours"
    );
}
