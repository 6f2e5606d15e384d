//! One run's root: the host's driver files where that host keeps them, the host's own
//! libraries (Debian's real ones) in its multiarch directory, the app's Nix store paths with
//! the RUNPATH and DT_NEEDED entries the approach gives them (patchelf, as Nix), the board's
//! `/etc/nv_tegra_release`; then the app's run, with the approach's variables.

use std::path::Path;

use anyhow::{bail, Result};

use super::cache::CompatEntry;
use super::edited::EditedCopy;
use super::fixtures::{board_libs, nvrm_dependencies, HELPERS};
use super::outcome::{self, Places};
use super::paths::Paths;
use super::{
    cache, cudart_soname, l4t_release, App, Approach, Column, CompatRunpath, CudartRunpath,
    DeclaredCache, Host, HostLibs, JetsonFixtures, Kernel, Launcher, OptOut, Origin, Program,
    RunKey, RunReport, Testbed,
};
use crate::probe::{Invocation, Output};
use crate::root::{Ctx, Root, Run};

/// The name of a run's root, unique within the bench.
pub fn run_name(approach: &Approach, column: &Column, key: RunKey) -> String {
    let way = match key.way {
        None => String::new(),
        Some(way) => format!("-{}", way_name(way)),
    };
    // PTX runs keep the names they had before the kernel was a dimension.
    let kernel = match key.kernel {
        Kernel::Ptx => String::new(),
        other => format!("-{}", other.name()),
    };
    format!(
        "jetson-{}-{}{way}-{}-{}-{}{kernel}-{}",
        approach.number,
        column.id,
        key.linkage.name(),
        key.app.name(),
        key.origin.name(),
        key.flavour
    )
}

fn way_name(way: OptOut) -> &'static str {
    match way {
        OptOut::LibraryPathAtDriver => "llp-driver",
        OptOut::LibraryPathAtL4tCuda => "llp-l4t-cuda",
        OptOut::PreloadDriver => "preload",
        OptOut::Nothing => "nothing",
    }
}

/// Builds the run's root, runs the app, and says what happened. `compat_entry` says whether
/// the container toolkit's `00-compat-*.conf` is the hook's decision (every run of the
/// replay) or forced (a test's).
pub(super) fn run(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
    compat_entry: CompatEntry,
) -> RunReport {
    run_keeping(testbed, approach, column, key, compat_entry).0
}

/// What one run met in its root: the app's output (or why it could not run), the hook's
/// decision, the command. A run whose root is written down as this one's was (equal recipes
/// and commands: one world) meets the same, and is reported from it ([`report_shared`]).
#[derive(Clone)]
pub(super) struct Met {
    result: Result<Output, String>,
    hook: Option<cache::Hook>,
    invocation: Option<Invocation>,
}

/// [`run`], and what the run met.
pub(super) fn run_keeping(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
    compat_entry: CompatEntry,
) -> (RunReport, Met) {
    let cx = Ctx::new(testbed.bench, &run_name(approach, column, key));
    let (scene, made) = Scene::build(&cx, testbed, approach, column, key, compat_entry);
    let (hook, made) = match made {
        Ok(hook) => (hook, Ok(())),
        Err(err) => (None, Err(err)),
    };
    let result = made
        .and_then(|()| loader_reads_as_declared(&scene.root.path, approach.cache))
        .and_then(|()| scene.command().output())
        .map_err(|err| format!("{err:#}"));
    let met = Met {
        result,
        hook,
        invocation: cx.last_invocation(),
    };
    (scene.report(key, &met), met)
}

/// The report of a run whose world is the one `met` was met in (its recipe and command equal
/// that run's: [`recipe`]). Its root is only written down, not built: what the report takes
/// from the run's own scene (the places it names, the host as the app sees it, what the user
/// sets) is this run's; what the loader did is the shared world's.
pub(super) fn report_shared(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
    met: &Met,
) -> RunReport {
    let cx = Ctx::new(testbed.bench, &run_name(approach, column, key));
    let (scene, _) = Scene::written_down(&cx, testbed, approach, column, key);
    scene.report(key, met)
}

/// The run's root built and its command, not run: what [`run`] would run, or the outcome of
/// a run that cannot be made (as [`run`] reports it).
pub(super) fn world(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
) -> Result<Invocation, String> {
    let cx = Ctx::new(testbed.bench, &run_name(approach, column, key));
    let (scene, made) = Scene::build(
        &cx,
        testbed,
        approach,
        column,
        key,
        CompatEntry::AsTheHookDecides,
    );
    made.and_then(|_| loader_reads_as_declared(&scene.root.path, approach.cache))
        .and_then(|()| scene.command().invocation())
        .map_err(|err| RunReport::not_run(key, &format!("{err:#}")).outcome)
}

/// [`world`]'s root only written down: its recipe, and the command the run would make in it
/// (naming a root that is not there); `None` where the recipe cannot say (a step failed).
/// Two runs of one bench with equal recipes and commands are one world.
pub(super) fn recipe(
    testbed: &Testbed,
    approach: &Approach,
    column: &Column,
    key: RunKey,
) -> Option<(Vec<String>, Invocation)> {
    let cx = Ctx::new(testbed.bench, &run_name(approach, column, key));
    let (scene, made) = Scene::written_down(&cx, testbed, approach, column, key);
    made.ok()?;
    let invocation = scene.command().invocation().ok()?;
    Some((scene.root.recipe()?, invocation))
}

/// One run's root as built, with what its run needs.
struct Scene {
    root: Root,
    /// The host as the app sees it (a container's host, for the container row).
    column: Column,
    places: Places,
    env: Vec<(String, String)>,
    /// What the user sets in the opt-out column.
    action: Option<String>,
    app: String,
}

impl Scene {
    /// The root built, and the declared cache made in it (with the hook's decision, for the
    /// container row).
    fn build(
        cx: &Ctx,
        testbed: &Testbed,
        approach: &Approach,
        column: &Column,
        key: RunKey,
        compat_entry: CompatEntry,
    ) -> (Scene, Result<Option<cache::Hook>>) {
        Scene::build_with(cx, false, testbed, approach, column, key, compat_entry)
    }

    /// The scene of a replay run (the hook deciding) in a root only written down: its recipe,
    /// and what a report reads from the scene, without a file made.
    fn written_down(
        cx: &Ctx,
        testbed: &Testbed,
        approach: &Approach,
        column: &Column,
        key: RunKey,
    ) -> (Scene, Result<Option<cache::Hook>>) {
        let hook = CompatEntry::AsTheHookDecides;
        Scene::build_with(cx, true, testbed, approach, column, key, hook)
    }

    /// [`Scene::build`], with `only_written_down` in a root only written down
    /// (`Ctx::recipe_root`).
    fn build_with(
        cx: &Ctx,
        only_written_down: bool,
        testbed: &Testbed,
        approach: &Approach,
        column: &Column,
        key: RunKey,
        compat_entry: CompatEntry,
    ) -> (Scene, Result<Option<cache::Hook>>) {
        let Testbed {
            bench,
            fixtures,
            host,
        } = *testbed;
        let triplet = bench.sysroot.target.triplet();
        // The container row's root is the container: its host as the container sees it.
        let container = approach.cache == Some(DeclaredCache::ContainerToolkit);
        let seen_column = if container {
            cache::container_column(column)
        } else {
            *column
        };
        let column = &seen_column;
        let paths = if container {
            Paths::container(column, triplet)
        } else {
            Paths::new(column, triplet)
        };
        let mut root = match only_written_down {
            true => cx.recipe_root(),
            false => cx.root(),
        };
        let uses_compat_system_wide = approach.impure_binding
            && column.host == Host::NixOs
            && (column.board.driver < column.app_needs || column.opt_out);
        let slibdir = &bench.layout.slibdir;
        // nixpkgs' glibc ships a copy of libgcc_s.so.1 in its own lib directory (its default
        // directory), for libc's own dlopen of it.
        root.host_file(
            &host.file("libgcc_s.so.1"),
            &format!("{slibdir}/libgcc_s.so.1"),
            None,
        );
        gcc_lib(&mut root, host, &paths);
        board(
            &mut root,
            fixtures,
            host,
            column,
            &paths,
            uses_compat_system_wide,
        );
        match column.program {
            _ if container => cache::container_image(&mut root, fixtures, column, &paths, key),
            Program::Nix | Program::NixWithoutCompat => {
                app(&mut root, fixtures, approach, column, &paths, key, slibdir)
            }
            Program::Wheel => wheel(&mut root, fixtures, column, &paths, key, slibdir),
        }
        if approach.launcher == Launcher::NixGlHost {
            gl_host(&mut root, fixtures, column, &paths);
        }

        let made = cache::make(&mut root, approach.cache, column, &paths, compat_entry);
        let (env, action) = environment(approach, column, &paths, key);
        let places = Places::new(&paths, &bench.layout, column);
        let scene = Scene {
            root,
            column: seen_column,
            places,
            env,
            action,
            app: paths.app,
        };
        (scene, made)
    }

    /// The app's run, with the approach's variables.
    fn command(&self) -> Run<'_> {
        let mut run = self.root.command(&self.app);
        for (name, value) in &self.env {
            run = run.env(name, value);
        }
        run
    }

    /// What the app's run in this scene showed, from what it `met`.
    fn report(&self, key: RunKey, met: &Met) -> RunReport {
        let command = met
            .invocation
            .as_ref()
            .map(|i| i.display())
            .unwrap_or_default();
        match &met.result {
            Ok(out) => {
                let mut seen = outcome::classify(out, &self.places, &self.column);
                // A forced entry is the test's choice, not the hook's: no rule of the hook.
                if let Some(rule) = met.hook.as_ref().and_then(cache::toolkit_rule) {
                    seen.basis = seen.basis.max(rule.basis());
                }
                RunReport {
                    key,
                    action: self.action.clone(),
                    outcome: seen.text,
                    works: seen.works,
                    jit: seen.jit,
                    basis: seen.basis,
                    command,
                    loaded: seen.loaded,
                    invocation: met.invocation.clone(),
                }
            }
            Err(err) => {
                let mut report = RunReport::not_run(key, err);
                report.action = self.action.clone();
                report.command = command;
                report
            }
        }
    }
}

/// The variables of the run, and in the opt-out column what the user sets (for the cell).
fn environment(
    approach: &Approach,
    column: &Column,
    paths: &Paths,
    key: RunKey,
) -> (Vec<(String, String)>, Option<String>) {
    let way = key.way;
    let mut env: Vec<(String, String)> = Vec::new();
    match approach.launcher {
        Launcher::None => {}
        Launcher::NixGlHost => env.push((
            "LD_LIBRARY_PATH".into(),
            format!("{}:{}", paths.gl_host_cuda, paths.gl_host_lib),
        )),
        Launcher::Probe => {
            env.push((
                "SAXPY_PROBE_COMPAT".into(),
                format!("{}/libcuda.so.1", paths.compat_dir),
            ));
        }
    }
    match key.kernel {
        Kernel::Ptx => {}
        Kernel::Sass => env.push(("SAXPY_KERNEL".into(), "sass".into())),
        Kernel::PtxJitDisabled => env.push(("CUDA_DISABLE_PTX_JIT".into(), "1".into())),
        Kernel::PtxOtherHelpers => env.push(("SAXPY_HELPERS".into(), "1".into())),
    }
    if let Some(variable) = approach.variable {
        let mut value = paths.driver_dir.clone();
        if column.nss {
            value = format!("{value}:{}", paths.host_lib);
        }
        env.push((variable.name().to_string(), value));
    }
    let mut action = None;
    if let Some(way) = way {
        let set = match way {
            OptOut::LibraryPathAtDriver => Some(("LD_LIBRARY_PATH", paths.driver_dir.clone())),
            OptOut::LibraryPathAtL4tCuda => {
                Some(("LD_LIBRARY_PATH", paths.system_l4t_cuda.clone()))
            }
            OptOut::PreloadDriver => {
                Some(("LD_PRELOAD", format!("{}/libcuda.so.1", paths.driver_dir)))
            }
            OptOut::Nothing => None,
        };
        action = Some(match &set {
            Some((name, value)) => format!("{name}={value}"),
            None => "nothing to set".to_string(),
        });
        if let Some((name, value)) = set {
            match env.iter_mut().find(|(n, _)| n == name) {
                Some((_, old)) => *old = value,
                None => env.push((name.to_string(), value)),
            }
        }
    }
    if column.nss {
        env.push(("SAXPY_NSS".into(), "1".into()));
    }
    (env, action)
}

/// The loader under test reads `/etc/ld.so.cache` and `/etc/ld.so.preload`; a Nix glibc reads
/// `<its prefix>/etc/ld.so.cache` (which nixpkgs deletes) and `/etc/ld-nix.so.preload`. With
/// none of these files in the root the two search the same places: the replay's stand-in
/// for a Nix glibc holds only then. The one exception is a row that declares its cache
/// ([`DeclaredCache`]): its root must have the cache, and still no preload file.
pub(super) fn loader_reads_as_declared(root: &Path, declared: Option<DeclaredCache>) -> Result<()> {
    for file in ["etc/ld.so.preload", "etc/ld-nix.so.preload"] {
        if root.join(file).exists() {
            bail!(
                "the root has /{file}: the loader under test would read what a Nix glibc does not \
                 (docs/jetson.md, \"The loader\")"
            );
        }
    }
    let has_cache = root.join("etc/ld.so.cache").exists();
    match declared {
        None if has_cache => bail!(
            "the root has /etc/ld.so.cache, which its row does not declare: the loader under \
             test would read what a Nix glibc does not (docs/jetson.md, \"The loader\")"
        ),
        Some(cache) if !has_cache => bail!(
            "the row declares {} but its root has no /etc/ld.so.cache",
            cache.name()
        ),
        _ => Ok(()),
    }
}

/// gcc's `lib` output of the Nix closures: what a C++ app and the l4t store paths link.
/// `libstdc++.so.6` finds its `libgcc_s.so.1` through its RUNPATH, as Nix links it.
fn gcc_lib(root: &mut Root, host: &HostLibs, paths: &Paths) {
    let dir = &paths.gcc_lib;
    root.edited_copy(
        &host.file("libstdc++.so.6"),
        &format!("{dir}/libstdc++.so.6"),
        &["--set-rpath", dir],
    )
    .host_file(
        &host.file("libgcc_s.so.1"),
        &format!("{dir}/libgcc_s.so.1"),
        None,
    );
}

/// The board's driver where the host keeps it, its libraries, the host's own libraries, and
/// `/etc/nv_tegra_release`.
fn board(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    host: &HostLibs,
    column: &Column,
    paths: &Paths,
    compat_in_driver_dir: bool,
) {
    let l4t = column.board.l4t;
    let revision = l4t_release(l4t).split_once('.').map_or("0.0", |(_, r)| r);
    root.write(
        "/etc/nv_tegra_release",
        &format!(
            "# R{l4t} (release), REVISION: {revision}, GCID: 0, BOARD: generic, EABI: aarch64\n"
        ),
    )
    // The stand-in's channel for the running driver's version (jetson.h).
    .write(
        "/etc/jetson-replay-board",
        &format!("driver={}\n", column.board.driver),
    )
    // Ubuntu's (and JetPack's) configuration; `nobody` is left out of /etc/passwd, so that a
    // lookup of it reaches the systemd module, as any user /etc/passwd does not list does.
    .write(
        "/etc/nsswitch.conf",
        "passwd: files systemd\ngroup: files systemd\n",
    )
    .write("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    .write("/etc/group", "root:x:0:\n");
    let driver_version = column.board.driver;
    // R35's container list has no libcudadebugger.so.1; R36's has it in tegra/.
    let board_helpers: Vec<&str> = HELPERS
        .iter()
        .copied()
        .filter(|h| l4t >= 36 || *h != "libcudadebugger.so.1")
        .collect();
    match column.host {
        Host::NixOs => {
            // l4t-core and l4t-cuda as autoPatchelf leaves them (each library's RUNPATH names
            // the store paths of its dependencies), joined into /run/opengl-driver/lib by
            // jetpack-nixos' symlinkJoin.
            let core = &paths.system_l4t_core;
            let core_runpath = format!("{core}:{}", paths.gcc_lib);
            for lib in board_libs(l4t) {
                root.edited_copy(
                    &fixtures.board_lib(l4t, lib.name),
                    &format!("{core}/{}", lib.name),
                    &["--set-rpath", &core_runpath],
                );
            }
            let cuda = &paths.system_l4t_cuda;
            root.edited_copy(
                &fixtures.board_cuda(column.board),
                &format!("{cuda}/libcuda.so.1.1"),
                &["--set-rpath", &format!("{cuda}:{core}")],
            )
            .symlink("libcuda.so.1.1", &format!("{cuda}/libcuda.so.1"));
            for helper in &board_helpers {
                root.host_file(
                    &fixtures.helper(driver_version, helper),
                    &format!("{cuda}/{helper}"),
                    None,
                );
            }
            let driver = &paths.driver_dir;
            for lib in board_libs(l4t) {
                root.symlink(
                    &format!("{core}/{}", lib.name),
                    &format!("{driver}/{}", lib.name),
                );
            }
            root.symlink(
                &format!("{cuda}/libcuda.so.1.1"),
                &format!("{driver}/libcuda.so.1.1"),
            );
            for helper in &board_helpers {
                root.symlink(&format!("{cuda}/{helper}"), &format!("{driver}/{helper}"));
            }
            let libcuda = if compat_in_driver_dir {
                // Approach 3: the system's choice, for every program.
                format!("{}/libcuda.so.1", paths.compat_dir)
            } else {
                format!("{cuda}/libcuda.so.1")
            };
            root.symlink(&libcuda, &format!("{driver}/libcuda.so.1"));
        }
        Host::JetPack5 | Host::JetPack6 | Host::JetPack7 => {
            // As L4T installs them: no RUNPATH (the host's ld.so.cache finds them for the
            // host's glibc; a Nix glibc does not read it).
            let driver = &paths.driver_dir;
            for lib in board_libs(l4t) {
                root.host_file(
                    &fixtures.board_lib(l4t, lib.name),
                    &format!("{driver}/{}", lib.name),
                    None,
                );
            }
            root.host_file(
                &fixtures.board_cuda(column.board),
                &format!("{driver}/libcuda.so.1.1"),
                None,
            )
            .symlink("libcuda.so.1.1", &format!("{driver}/libcuda.so.1"));
            for helper in &board_helpers {
                // R36 and R38 keep the debugger library in tegra/, the directory R35 used for
                // all.
                let dir = if *helper == "libcudadebugger.so.1" {
                    format!("{}/tegra", paths.host_lib)
                } else {
                    driver.clone()
                };
                root.host_file(
                    &fixtures.helper(driver_version, helper),
                    &format!("{dir}/{helper}"),
                    None,
                );
            }
            // The host's own libraries, built against the host's glibc.
            for name in super::host::FILES {
                root.host_file(
                    &host.file(name),
                    &format!("{}/{name}", paths.host_lib),
                    None,
                );
            }
        }
    }
}

/// The app's closure: saxpy, its CUDA runtime, cuda_compat (and l4t-core for approach 6).
fn app(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    approach: &Approach,
    column: &Column,
    paths: &Paths,
    key: RunKey,
    glibc_lib: &str,
) {
    // Nix links every program with the directories of its libraries in RUNPATH, its glibc's
    // last.
    let app_runpath = match key.app {
        App::Cxx => format!("{}:{}:{glibc_lib}", paths.cudart_dir, paths.gcc_lib),
        App::C => format!("{}:{glibc_lib}", paths.cudart_dir),
    };
    root.edited_copy(
        &fixtures.saxpy(key.app, column.app_needs),
        &paths.app,
        &["--set-rpath", &app_runpath],
    );
    let compat_libcuda = format!("{}/libcuda.so.1", paths.compat_dir);
    let with_compat = column.program != Program::NixWithoutCompat;
    let cudart_runpath = match approach.cudart_runpath {
        // Without cuda_compat, autoAddCudaCompatRunpath has nothing to add.
        CudartRunpath::CompatFirst if !with_compat => "/run/opengl-driver/lib:$ORIGIN".to_string(),
        CudartRunpath::CompatFirst => {
            format!("{}:/run/opengl-driver/lib:$ORIGIN", paths.compat_dir)
        }
        CudartRunpath::DriverOnly => "/run/opengl-driver/lib:$ORIGIN".to_string(),
        CudartRunpath::StubsFirst => {
            format!("{}:/run/opengl-driver/lib:$ORIGIN", paths.stubs_dir)
        }
    };
    if approach.cudart_runpath == CudartRunpath::StubsFirst {
        root.host_file(
            &fixtures.stub_cuda(),
            &format!("{}/libcuda.so.1", paths.stubs_dir),
            None,
        );
    }
    let mut cudart_edit = vec!["--set-rpath", cudart_runpath.as_str()];
    if approach.cudart_needs_compat {
        cudart_edit.extend(["--add-needed", compat_libcuda.as_str()]);
    }
    root.edited_copy(
        &fixtures.cudart(column.app_needs),
        &format!("{}/{}", paths.cudart_dir, cudart_soname(column.app_needs)),
        &cudart_edit,
    );
    if !with_compat {
        return;
    }
    let compat_runpath = compat_runpath(approach.compat_runpath, key.origin, paths);
    let mut compat_edit = vec!["--set-rpath".to_string(), compat_runpath];
    if approach.compat_runpath == CompatRunpath::AppendTegra {
        // #273389 targets JetPack 5: what R35's libnvrm_* need from the directory.
        for name in nvrm_dependencies(35) {
            compat_edit.extend(["--add-needed".to_string(), name.to_string()]);
        }
    }
    let compat_edit: Vec<&str> = compat_edit.iter().map(String::as_str).collect();
    root.edited_copy(
        &fixtures.compat_cuda(column.compat, key.linkage),
        &compat_libcuda,
        &compat_edit,
    );
    // cuda_compat ships its helpers beside its libcuda.so.1.
    for helper in HELPERS {
        root.host_file(
            &fixtures.helper(column.compat.version, helper),
            &format!("{}/{helper}", paths.compat_dir),
            None,
        );
    }
    if approach.compat_runpath == CompatRunpath::L4tCoreAfterDriver {
        let core = &paths.app_l4t_core;
        let core_runpath = format!("{core}:{}", paths.gcc_lib);
        for lib in board_libs(column.compat.l4t) {
            root.edited_copy(
                &fixtures.board_lib(column.compat.l4t, lib.name),
                &format!("{core}/{}", lib.name),
                &["--set-rpath", &core_runpath],
            );
        }
    }
}

/// cuda_compat's RUNPATH under an approach, with `$ORIGIN` where `origin` puts it.
fn compat_runpath(runpath: CompatRunpath, origin: Origin, paths: &Paths) -> String {
    let driver = "/run/opengl-driver/lib".to_string();
    let (entries, nixpkgs_at) = match runpath {
        CompatRunpath::Driver => (vec![driver], 1),
        // #273389 appends JetPack 5's directory, whatever the host, after what nixpkgs gave.
        CompatRunpath::AppendTegra => (vec![driver, format!("{}/tegra", paths.host_lib)], 1),
        // autoPatchelf: the found dependencies' directory, then `$ORIGIN` (appendRunpaths);
        // autoAddDriverRunpath prepends the driver directory after it.
        CompatRunpath::L4tCoreAfterDriver => (vec![driver, paths.app_l4t_core.clone()], 2),
    };
    origin.runpath(&entries, nixpkgs_at)
}

/// A program nixpkgs did not build: saxpy with its own runtime in a directory of its own
/// (RUNPATH `$ORIGIN`, as a pip wheel's `nvidia/cuda_runtime/lib` has), the C++ one with
/// gcc's `lib` as nix-ld's environment would give it. No cuda_compat: no approach that
/// changes nixpkgs' packages reaches it.
fn wheel(
    root: &mut Root,
    fixtures: &JetsonFixtures,
    column: &Column,
    paths: &Paths,
    key: RunKey,
    glibc_lib: &str,
) {
    let app_runpath = match key.app {
        App::Cxx => format!("$ORIGIN:{}:{glibc_lib}", paths.gcc_lib),
        App::C => format!("$ORIGIN:{glibc_lib}"),
    };
    root.edited_copy(
        &fixtures.saxpy(key.app, column.app_needs),
        &paths.app,
        &["--set-rpath", &app_runpath],
    )
    .edited_copy(
        &fixtures.cudart(column.app_needs),
        &format!("{}/{}", paths.wheel_dir, cudart_soname(column.app_needs)),
        &["--set-rpath", "$ORIGIN"],
    );
}

/// nix-gl-host's cache: the host's files that match its patterns (`CUDA_DSO_PATTERNS`:
/// `libcudadebugger`, `libcuda`; among the generic ones `libnvidia-ptxjitcompiler`,
/// `libnvidia-nvvm`, `libnvtegrahv`), copied from the driver directory; no `libnvrm_*`.
fn gl_host(root: &mut Root, fixtures: &JetsonFixtures, column: &Column, paths: &Paths) {
    let l4t = column.board.l4t;
    root.host_file(
        &fixtures.board_cuda(column.board),
        &format!("{}/libcuda.so.1", paths.gl_host_cuda),
        None,
    );
    for helper in HELPERS {
        if l4t < 36 && helper == "libcudadebugger.so.1" {
            continue;
        }
        root.host_file(
            &fixtures.helper(column.board.driver, helper),
            &format!("{}/{helper}", paths.gl_host_lib),
            None,
        );
    }
    if board_libs(l4t).any(|lib| lib.name == "libnvtegrahv.so") {
        root.host_file(
            &fixtures.board_lib(l4t, "libnvtegrahv.so"),
            &format!("{}/libnvtegrahv.so", paths.gl_host_lib),
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_with_an_undeclared_cache_or_a_preload_file_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        let refused = |declared| {
            loader_reads_as_declared(root.path(), declared)
                .map_err(|e| format!("{e:#}"))
                .err()
        };
        assert_eq!(refused(None), None);
        assert_eq!(
            refused(Some(DeclaredCache::NixLdSoCache)).as_deref(),
            Some("the row declares a NIX_LD_SO_CACHE cache but its root has no /etc/ld.so.cache")
        );
        std::fs::write(root.path().join("etc/ld.so.cache"), "").unwrap();
        assert_eq!(
            refused(None).as_deref(),
            Some(
                "the root has /etc/ld.so.cache, which its row does not declare: the loader \
                 under test would read what a Nix glibc does not (docs/jetson.md, \"The loader\")"
            )
        );
        assert_eq!(refused(Some(DeclaredCache::ContainerToolkit)), None);
        for file in ["etc/ld.so.preload", "etc/ld-nix.so.preload"] {
            std::fs::write(root.path().join(file), "").unwrap();
            for declared in [None, Some(DeclaredCache::ContainerToolkit)] {
                assert_eq!(
                    refused(declared),
                    Some(format!(
                        "the root has /{file}: the loader under test would read what a Nix \
                         glibc does not (docs/jetson.md, \"The loader\")"
                    ))
                );
            }
            std::fs::remove_file(root.path().join(file)).unwrap();
        }
    }

    #[test]
    fn every_row_but_the_declared_ones_is_refused_a_cache() {
        let declaring: Vec<u8> = crate::replay::APPROACHES
            .iter()
            .filter(|a| a.cache.is_some())
            .map(|a| a.number)
            .collect();
        assert_eq!(declaring, [12, 13]);
    }

    #[test]
    fn compat_runpaths_are_nixpkgs_with_origin_moved() {
        let paths = Paths::new(
            crate::replay::column("nixos-jp6-wheel"),
            "aarch64-linux-gnu",
        );
        assert_eq!(
            compat_runpath(CompatRunpath::Driver, Origin::Last, &paths),
            "/run/opengl-driver/lib:$ORIGIN"
        );
        assert_eq!(
            compat_runpath(CompatRunpath::AppendTegra, Origin::Last, &paths),
            "/run/opengl-driver/lib:$ORIGIN:/usr/lib/aarch64-linux-gnu/tegra"
        );
        // jetpack-nixos: autoPatchelf's `<l4t-core>/lib:$ORIGIN`, the driver dir prepended.
        assert_eq!(
            compat_runpath(CompatRunpath::L4tCoreAfterDriver, Origin::Last, &paths),
            format!("/run/opengl-driver/lib:{}:$ORIGIN", paths.app_l4t_core)
        );
        assert_eq!(
            compat_runpath(CompatRunpath::L4tCoreAfterDriver, Origin::Absent, &paths),
            format!("/run/opengl-driver/lib:{}", paths.app_l4t_core)
        );
    }
}
