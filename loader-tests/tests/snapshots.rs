//! Snapshots of the matrix report and of normalised `LD_DEBUG=libs` traces, per glibc
//! release (glibc's own trace lines change between releases).

mod util;

use loader_tests::matrix;
use loader_tests::report;
use loader_tests::Target;

fn flavour(patched: bool) -> &'static str {
    if patched {
        "patched"
    } else {
        "unpatched"
    }
}

fn report_snapshot(patched: bool) {
    let bench = util::bench(Target::X86_64, patched);
    let outcomes = report::run(bench, None);
    let name = format!(
        "report-{}-x86_64-{}",
        bench.sysroot.release,
        flavour(patched)
    );
    insta::assert_snapshot!(name, report::table(&outcomes));
}

fn trace_snapshot(patched: bool, id: &str) {
    let bench = util::bench(Target::X86_64, patched);
    let scenario = matrix::find(id).unwrap();
    let trace = report::trace(bench, scenario).unwrap_or_else(|err| panic!("{err:#}"));
    let name = format!(
        "trace-{id}-{}-x86_64-{}",
        bench.sysroot.release,
        flavour(patched)
    );
    insta::assert_snapshot!(name, trace);
}

#[test]
fn report_patched() {
    report_snapshot(true);
}

#[test]
fn report_unpatched() {
    report_snapshot(false);
}

#[test]
fn trace_fallback_label_patched() {
    trace_snapshot(true, "21-debug-label");
}

#[test]
fn trace_fallback_label_unpatched() {
    trace_snapshot(false, "21-debug-label");
}

#[test]
fn trace_fallback_option_label_patched() {
    trace_snapshot(true, "21-debug-label-option");
}

#[test]
fn trace_compat_nvrm_patched() {
    trace_snapshot(true, "07-dlopen-nvrm");
}

#[test]
fn trace_compat_nvrm_unpatched() {
    trace_snapshot(false, "07-dlopen-nvrm");
}
