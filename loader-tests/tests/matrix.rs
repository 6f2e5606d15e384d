//! The matrix, one test per scenario, against the patched loader and against the unpatched
//! one (where scenarios that need the patch must fail the documented way).

mod util;

use loader_tests::matrix::MATRIX;

macro_rules! scenarios {
    ($($name:ident => $id:literal,)*) => {
        mod patched {
            use loader_tests::Target;
            $(#[test] fn $name() { crate::util::check(Target::X86_64, true, $id); })*
        }
        mod unpatched {
            use loader_tests::Target;
            $(#[test] fn $name() { crate::util::check(Target::X86_64, false, $id); })*
        }
        #[test]
        fn every_scenario_has_a_test() {
            let tested = [$($id),*];
            for s in MATRIX {
                assert!(tested.contains(&s.id), "scenario {} has no test", s.id);
            }
            assert_eq!(tested.len(), MATRIX.len());
        }
    };
}

scenarios! {
    row01_needed_bug => "01-needed-bug",
    row01_dlopen_bug => "01-dlopen-bug",
    row01_rpath_order => "01-rpath-order",
    row02_needed_fix => "02-needed-fix",
    row02_dlopen_fix => "02-dlopen-fix",
    row03_needed_runpath_miss => "03-needed-runpath-miss",
    row03_dlopen_runpath_miss => "03-dlopen-runpath-miss",
    row04_needed_nothing_set => "04-needed-nothing-set",
    row04_dlopen_nothing_set => "04-dlopen-nothing-set",
    row04_list_nothing_set => "04-list-nothing-set",
    row04_ldd_script_nothing_set => "04-ldd-script-nothing-set",
    row04_ldd_nothing_set => "04-ldd-nothing-set",
    row05_shim_runpath => "05-shim-runpath",
    row06_shim_plain => "06-shim-plain",
    row07_needed_nvrm => "07-needed-nvrm",
    row07_dlopen_nvrm => "07-dlopen-nvrm",
    row08_needed_default_dir => "08-needed-default-dir",
    row08_dlopen_default_dir => "08-dlopen-default-dir",
    row09_needed_cache => "09-needed-cache",
    row09_dlopen_cache => "09-dlopen-cache",
    row10_needed_llp_empty => "10-needed-llp-empty",
    row10_dlopen_llp_empty => "10-dlopen-llp-empty",
    row11_already_loaded => "11-already-loaded",
    row12_secure_dynamic => "12-secure-dynamic",
    row12_secure_needed => "12-secure-needed",
    row13_static_dlopen => "13-static-dlopen",
    row13_static_default_dir => "13-static-default-dir",
    row13_static_secure => "13-static-secure",
    row14_needed_nodefaultlib => "14-needed-nodefaultlib",
    row14_dlopen_nodefaultlib => "14-dlopen-nodefaultlib",
    row15_needed_inhibit_cache => "15-needed-inhibit-cache",
    row15_dlopen_inhibit_cache => "15-dlopen-inhibit-cache",
    row16_empty_entry => "16-empty-entry",
    row16_semicolon_empty_entries => "16-semicolon-empty-entries",
    row16_only_empty_entries => "16-only-empty-entries",
    row17_needed_origin => "17-needed-origin",
    row17_dlopen_origin => "17-dlopen-origin",
    row17_lib => "17-lib",
    row17_platform => "17-platform",
    row18_needed_wrong_class => "18-needed-wrong-class",
    row18_dlopen_wrong_class => "18-dlopen-wrong-class",
    row19_needed_missing_dirs => "19-needed-missing-dirs",
    row19_dlopen_missing_dirs => "19-dlopen-missing-dirs",
    row19_many_entries => "19-many-entries",
    row19_long_value => "19-long-value",
    row20_needed_option_overrides => "20-needed-option-overrides",
    row20_dlopen_option_overrides => "20-dlopen-option-overrides",
    row21_debug_label => "21-debug-label",
    row21_debug_label_option => "21-debug-label-option",
    row21_help => "21-help",
    row21_serinfo => "21-serinfo",
    row21_audit => "21-audit",
    row21_list => "21-list",
    row21_ldd_script => "21-ldd-script",
    row21_ldd => "21-ldd",
    row22_dlmopen => "22-dlmopen",
    row22_dlmopen_default_dir => "22-dlmopen-default-dir",
    j1_jetson_llp => "J1-jetson-llp",
    j2_jetson_nothing => "J2-jetson-nothing",
    j3_jetson_fallback => "J3-jetson-fallback",
}
