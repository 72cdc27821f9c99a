use super::*;

use latscope_model::metric;

fn all() -> Vec<Study> {
    load().expect("the embedded studies parse")
}

#[test]
fn every_file_parses_with_its_tables() {
    let studies = all();
    let ids: Vec<&str> = studies.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["cota-robles-held", "jones-regehr", "bernadat", "chen-et-al"]
    );
    for study in &studies {
        assert!(!study.tables.is_empty(), "{}", study.id);
        assert!(!study.terms.is_empty(), "{}", study.id);
        for table in &study.tables {
            assert!(!table.rows.is_empty(), "{} {}", study.id, table.number);
            let figures = table.rows.iter().flat_map(|r| &r.figures);
            let printed = figures.filter(|f| f.value != Value::Blank).count();
            assert!(printed > 0, "{} table {}", study.id, table.number);
            assert!(!table.page.is_empty() && !table.section.is_empty());
            println!(
                "{} table {}: {} rows x {} columns, {} figures ({} printed, not blank)",
                study.id,
                table.number,
                table.rows.len(),
                table.columns.len(),
                table.figure_count(),
                printed
            );
        }
    }
}

#[test]
fn the_headline_tables_are_there() {
    let studies = studies().expect("studies");
    let table = |id: &str, number: &str| {
        study(id)
            .expect("studies")
            .and_then(|s| s.table(number))
            .unwrap_or_else(|| panic!("{id} table {number}"))
    };
    assert_eq!(studies.len(), 4);
    let t3 = table("cota-robles-held", "3");
    assert_eq!(t3.rows[0].figures[0].value, Value::Below(1.0));
    assert_eq!(t3.rows[1].figures[7].value, Value::Added(2.1));
    assert_eq!(
        table("jones-regehr", "1").rows[1].figures[1].value,
        Value::Number(18114.0)
    );
    assert_eq!(table("jones-regehr", "2").rows.len(), 21);
    let t6 = table("bernadat", "6");
    assert_eq!(t6.unit_of(0, 0), "occurrences");
    assert_eq!(t6.unit_of(16, 2), "µs");
    assert_eq!(t6.rows[17].figures[0].value, Value::Duration(417.0));
    let t15 = table("bernadat", "15");
    assert_eq!(t15.rows[3].group.as_deref(), Some("Interrupts"));
    assert_eq!(t15.rows[3].figures[2].value, Value::Number(765.0));
    let t7 = table("chen-et-al", "VII");
    assert_eq!((t7.unit_of(0, 0), t7.unit_of(0, 4)), ("s", "KB"));
    assert!(study("nobody").expect("studies").is_none());
}

/// The metric names the mapping uses exist in `latscope_model::metric`
/// (a family such as `softirq.delay.<VEC>` by its prefix).
#[test]
fn mapped_metrics_exist() {
    let names = [
        metric::TIMER_LATENCY,
        metric::TIMER_INTERVAL,
        metric::TIMER_IRQ,
        metric::TIMER_SCHED,
        metric::TIMER_RETURN,
        metric::NOISE_GAP,
        metric::NMI_EXEC,
        metric::UDP_SEND,
        metric::UDP_SEND_SCHED,
        metric::UDP_RECV,
        metric::UDP_PATH,
        metric::APP_UNDERRUN,
        metric::APP_WAKEUP,
        metric::APP_RESPONSE,
    ];
    let prefixes = [
        metric::SOFTIRQ_DELAY_PREFIX,
        metric::SOFTIRQ_EXEC_PREFIX,
        metric::IRQ_EXEC_PREFIX,
        metric::WORKQUEUE_EXEC_PREFIX,
        metric::DEFERRED_EXEC_PREFIX,
    ];
    let mut checked = 0;
    for study in all() {
        for term in study.terms.iter().filter(|t| t.kind == TermKind::Metric) {
            let name = term.latscope.as_str();
            let known = match name.split_once('<') {
                Some((prefix, _)) => prefixes.contains(&prefix),
                None => names.contains(&name),
            };
            assert!(known, "{}: '{name}' is not a latscope metric", study.id);
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked}");
}

/// The micro benchmarks the mapping names are in docs/micro.md's table of
/// benchmarks, in their group's row.
#[test]
fn mapped_micro_benchmarks_exist() {
    let micro = include_str!("../../../docs/micro.md");
    for study in all() {
        for term in study.terms.iter().filter(|t| t.kind == TermKind::Micro) {
            let (group, name) = term.latscope.split_once('.').expect("group.name");
            let row = micro
                .lines()
                .find(|l| l.starts_with(&format!("| `{group}` |")))
                .unwrap_or_else(|| panic!("no micro group {group}"));
            assert!(
                row.contains(&format!("`{name}`")),
                "{}: {}",
                study.id,
                term.latscope
            );
        }
    }
}

#[test]
fn a_bad_file_is_one_typed_error() {
    let good = FILES[2].1;
    let mistyped = good.replacen(
        "\"4080 - 8192\", figures = [\"500\"",
        "\"4080 - 8192\", figures = [\"5O0\"",
        1,
    );
    assert_ne!(mistyped, good);
    let e = parse("bernadat.toml", &mistyped).expect_err("a mistyped figure");
    assert!(matches!(e, StudyError::Parse { .. }), "{e}");
    assert!(e.to_string().contains("'5O0' is not a figure"), "{e}");

    let short = good.replacen(
        "figures = [\"278\", \"\", \"\", \"\"]",
        "figures = [\"278\", \"\", \"\"]",
        1,
    );
    let e = parse("bernadat.toml", &short).expect_err("a short row");
    assert_eq!(
        e.to_string(),
        "study bernadat, table 6: row 9 has 3 figures for 4 columns"
    );

    let unknown = good.replacen("unit = \"occurrences\"", "units = \"occurrences\"", 1);
    let e = parse("bernadat.toml", &unknown).expect_err("an unknown field");
    assert!(
        e.to_string().starts_with("studies data bernadat.toml:"),
        "{e}"
    );

    let blank =
        "id = \"x\"\ntitle = \"\"\nauthors = \"\"\npublished = \"\"\npaper = \"\"\nterms = []\n\
        [[tables]]\nnumber = \"1\"\ncaption = \"\"\nsection = \"\"\npage = \"\"\nunit = \"\"\n\
        columns = [{ label = \"a\" }]\nrows = [{ figures = [\"\"] }]\n";
    let e = parse("x.toml", blank).expect_err("an empty table");
    assert_eq!(e.to_string(), "study x, table 1: every figure is blank");
}
