//! Hermetic scenario roots: a hard-linked copy of the sysroot's runtime plus the scenario's
//! files, run with bubblewrap so that `/lib64`, `/usr/lib64` and `/etc/ld.so.cache` are the
//! glibc-under-test's own.

use std::cell::RefCell;
use std::fs;
use std::io;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{anyhow, bail, Context, Result};
use tempfile::TempDir;

use crate::fixtures::{Fixtures, Role};
use crate::layout::Layout;
use crate::probe::{Invocation, Output};
use model::Sysroot;

/// What every root of one matrix run shares.
#[derive(Debug)]
pub struct Bench {
    pub sysroot: Sysroot,
    pub layout: Layout,
    pub fixtures: Fixtures,
    /// `qemu-aarch64-static` when the target is not native.
    pub qemu: Option<PathBuf>,
    scratch: TempDir,
    /// LD_FALLBACK_KEEP_ROOTS=1: the roots stay for a look after the run.
    keep: bool,
    /// Numbers roots: tests may run the same scenario concurrently on one bench.
    roots: std::sync::atomic::AtomicUsize,
}

impl Bench {
    pub fn new(sysroot: Sysroot, cache: &Path) -> Result<Bench> {
        let layout = Layout::new(&sysroot)?;
        let fixtures = Fixtures::ensure(&sysroot, &layout, cache)?;
        let qemu = match crate::host::emulator(sysroot.target) {
            None => None,
            Some(tool) => {
                crate::host::require(&[tool])?;
                crate::host::find_program(tool.program)
            }
        };
        sandbox_works()?;
        // Next to the sysroot so that hard links work (same filesystem).
        let scratch_parent = cache.join("roots");
        fs::create_dir_all(&scratch_parent)
            .with_context(|| format!("cannot create {}", scratch_parent.display()))?;
        // LD_FALLBACK_KEEP_ROOTS=1 keeps the roots for a look with bwrap after the run.
        let keep = std::env::var_os("LD_FALLBACK_KEEP_ROOTS").is_some_and(|v| v == "1");
        sweep_scratch_of_dead_runs(&scratch_parent);
        // The process id in the name lets a later run tell a scratch directory whose run is
        // gone (kept ones are named apart, and left for the user).
        let prefix = match keep {
            true => format!("kept-{}-", std::process::id()),
            false => format!("{SCRATCH_PREFIX}{}-", std::process::id()),
        };
        let scratch = tempfile::Builder::new()
            .prefix(&prefix)
            .disable_cleanup(keep)
            .tempdir_in(&scratch_parent)
            .context("cannot create a scratch directory for scenario roots")?;
        Ok(Bench {
            sysroot,
            layout,
            fixtures,
            qemu,
            scratch,
            keep,
            roots: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    pub(crate) fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// Removes every root made so far, `workers` at a time (kept ones stay): a differential
    /// run makes a root per run, and one thread unlinking them all took as long as tracing
    /// them.
    pub fn remove_roots(&self, workers: usize) -> Result<()> {
        if self.keep {
            return Ok(());
        }
        let roots = fs::read_dir(self.scratch())
            .and_then(|entries| {
                entries
                    .map(|e| e.map(|e| e.path()))
                    .collect::<io::Result<Vec<_>>>()
            })
            .with_context(|| format!("cannot list the roots in {}", self.scratch().display()))?;
        model::parallel_map(&roots, workers, |root| {
            fs::remove_dir_all(root).with_context(|| format!("cannot remove {}", root.display()))
        })
        .into_iter()
        .collect()
    }

    fn next_root(&self, name: &str) -> PathBuf {
        let n = self
            .roots
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.scratch().join(format!("{name}-{n}"))
    }
}

const SCRATCH_PREFIX: &str = "matrix-";

/// Every scenario runs in a bubblewrap sandbox: where bwrap cannot make one (no user
/// namespaces, or `/` not a mount point, as in a plain chroot), say so once, instead of every
/// scenario failing with bwrap's words as its outcome.
fn sandbox_works() -> Result<()> {
    crate::host::require(&[crate::host::tools::BWRAP])?;
    let out = std::process::Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .output()
        .context("cannot run bwrap")?;
    if out.status.success() {
        return Ok(());
    }
    Err(anyhow!(
        "bubblewrap cannot make a sandbox on this machine, and every scenario runs in one: \
         `bwrap --ro-bind / / --proc /proc --dev /dev true` {}: {} (it needs user or mount \
         namespaces, and `/` must be a mount point: in a chroot, bind-mount the root onto itself)",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Removes the scratch directories under `parent` whose run has ended. A bench normally
/// removes its own when dropped, but one a test binary holds for its whole life (a static)
/// never is, and a killed run leaves its roots too: without this they pile up under
/// `<cache>/roots/`. A directory names its process (`matrix-<pid>-...`); one from before
/// that naming is removed once a day old. Best effort: what cannot be removed stays.
fn sweep_scratch_of_dead_runs(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(SCRATCH_PREFIX)) else {
            continue;
        };
        let ended = match rest
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        {
            Some(pid) => !Path::new("/proc").join(pid.to_string()).exists(),
            None => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 24 * 3600),
        };
        if ended {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// One scenario's context: the roots it made (kept until the scenario is reported, so a
/// miss can be rerun) and its last invocation.
pub struct Ctx<'b> {
    pub bench: &'b Bench,
    pub layout: &'b Layout,
    name: String,
    pub(crate) last: Rc<RefCell<Option<Invocation>>>,
}

impl<'b> Ctx<'b> {
    pub fn new(bench: &'b Bench, name: &str) -> Ctx<'b> {
        Ctx {
            bench,
            layout: &bench.layout,
            name: name.to_string(),
            last: Rc::new(RefCell::new(None)),
        }
    }

    /// A fresh root with the sysroot's runtime, the probes and the shims in it.
    pub(crate) fn root(&self) -> Root {
        let mut root = self.unmade(None);
        let result = root.populate(&self.bench.sysroot.path);
        root.note(result);
        root
    }

    /// A root that is only written down: every step that would change it is added to its
    /// recipe ([`Root::recipe`]) instead, and nothing is made or run. Two roots of one bench
    /// with equal recipes are built alike.
    pub(crate) fn recipe_root(&self) -> Root {
        let mut root = self.unmade(Some(RefCell::new(Vec::new())));
        let result = root.populate(&self.bench.sysroot.path);
        root.note(result);
        root
    }

    fn unmade(&self, recipe: Option<RefCell<Vec<String>>>) -> Root {
        let path = match recipe {
            Some(_) => self.bench.scratch().join(format!("{}-recipe", self.name)),
            None => self.bench.next_root(&self.name),
        };
        Root {
            path,
            bench_layout: self.layout.clone(),
            fixtures: self.bench.fixtures.clone(),
            qemu: self.bench.qemu.clone(),
            placed: Vec::new(),
            error: None,
            last: self.last.clone(),
            recipe,
        }
    }

    /// The last command a scenario ran, for a rerun with `LD_DEBUG=libs`.
    pub fn last_invocation(&self) -> Option<Invocation> {
        self.last.borrow().clone()
    }
}

/// A scenario's filesystem. Setup steps never fail on the spot: the first error is kept and
/// returned by the next run, so a scenario reads as a list of steps.
pub(crate) struct Root {
    pub path: PathBuf,
    bench_layout: Layout,
    fixtures: Fixtures,
    qemu: Option<PathBuf>,
    /// (directory, role) of each `libcuda.so.1` copy, to name a loaded path.
    placed: Vec<(String, String)>,
    error: Option<anyhow::Error>,
    last: Rc<RefCell<Option<Invocation>>>,
    /// A root only written down (`Ctx::recipe_root`): its steps, in order.
    recipe: Option<RefCell<Vec<String>>>,
}

impl Root {
    /// Puts the `libcuda.so.1` marker reporting `role` into `dir`.
    pub(crate) fn cuda(&mut self, role: Role, dir: &str) -> &mut Root {
        let from = self.fixtures.libcuda(role);
        let result = self.install(&from, &format!("{dir}/libcuda.so.1"));
        self.note(result);
        self.placed.push((dir.to_string(), role.to_string()));
        self
    }

    /// Puts the ELFCLASS32 impostor `libcuda.so.1` into `dir`.
    pub(crate) fn cuda32(&mut self, dir: &str) -> &mut Root {
        let from = self.fixtures.file("libcuda32.so.1");
        let result = self.install(&from, &format!("{dir}/libcuda.so.1"));
        self.note(result);
        self.placed.push((dir.to_string(), "elf32".to_string()));
        self
    }

    /// Puts `libnvrm_mem.so` and `libnvrm_gpu.so` into `dir`.
    pub(crate) fn nvrm(&mut self, dir: &str) -> &mut Root {
        for name in ["libnvrm_mem.so", "libnvrm_gpu.so"] {
            let from = self.fixtures.file(name);
            let result = self.install(&from, &format!("{dir}/{name}"));
            self.note(result);
        }
        self
    }

    /// Puts the host file `from` (say, one of NVIDIA's real libraries) at `to`, and records
    /// `role` for its directory when it is a `libcuda.so.1`, so that runs name it.
    pub(crate) fn host_file(&mut self, from: &Path, to: &str, role: Option<Role>) -> &mut Root {
        // Packages ship `libcuda.so.1` as a relative symlink: link the file it names.
        let result = fs::canonicalize(from)
            .with_context(|| format!("cannot resolve {}", from.display()))
            .and_then(|file| self.install(&file, to));
        self.note(result);
        if let (Some(role), Some(dir)) = (role, Path::new(to).parent()) {
            self.placed
                .push((dir.to_string_lossy().into_owned(), role.to_string()));
        }
        self
    }

    /// A private copy of the host file `from` at `to`, edited with `patchelf ARGS` (a RUNPATH
    /// or DT_NEEDED entry as Nix would set it); the original is not touched.
    pub(crate) fn patched_copy(&mut self, from: &Path, to: &str, patchelf: &[&str]) -> &mut Root {
        if self.written_down(|| format!("patched copy of {} at {to}: {patchelf:?}", from.display()))
        {
            return self;
        }
        let dest = self.inside(to);
        let result = (|| -> Result<()> {
            crate::host::require(&[crate::host::tools::PATCHELF])?;
            create_parent(&dest).with_context(|| format!("cannot create the directory of {to}"))?;
            fresh_file(&dest).with_context(|| format!("cannot replace {to}"))?;
            copy_file(from, &dest)?;
            // One patchelf run per option: patchelf 0.14 (Debian 12) writes the DT_NEEDED
            // name into DT_RUNPATH when --set-rpath and --add-needed come in one run.
            let mut operations: Vec<Vec<&str>> = Vec::new();
            for arg in patchelf {
                match operations.last_mut() {
                    Some(operation) if !arg.starts_with("--") => operation.push(arg),
                    _ => operations.push(vec![arg]),
                }
            }
            for operation in operations {
                let out = std::process::Command::new("patchelf")
                    .args(&operation)
                    .arg(&dest)
                    .output()
                    .context("cannot run patchelf")?;
                if !out.status.success() {
                    return Err(anyhow!(
                        "patchelf {} {to} failed: {}",
                        operation.join(" "),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
            }
            Ok(())
        })();
        self.note(result);
        self
    }

    /// Puts fixture `name` at `to` (an absolute path inside the root).
    pub(crate) fn fixture(&mut self, name: &str, to: &str) -> &mut Root {
        let from = self.fixtures.file(name);
        let result = self.install(&from, to);
        self.note(result);
        self
    }

    /// A symlink at `link` (absolute, inside the root) pointing to `target` as given.
    pub(crate) fn symlink(&mut self, target: &str, link: &str) -> &mut Root {
        if self.written_down(|| format!("symlink {link} -> {target}")) {
            return self;
        }
        let result = self
            .fresh_at(link)
            .and_then(|dest| symlink(target, dest))
            .with_context(|| format!("cannot link {link} to {target} in the root"));
        self.note(result);
        self
    }

    /// A file of its own at `path` (absolute, inside the root) holding `text`.
    pub(crate) fn write(&mut self, path: &str, text: &str) -> &mut Root {
        if self.written_down(|| format!("write {path}: {text:?}")) {
            return self;
        }
        let result = self
            .fresh_at(path)
            .and_then(|dest| fs::write(dest, text))
            .with_context(|| format!("cannot write {path} in the root"));
        self.note(result);
        self
    }

    pub(crate) fn mkdir(&mut self, dir: &str) -> &mut Root {
        if self.written_down(|| format!("mkdir {dir}")) {
            return self;
        }
        let result = fs::create_dir_all(self.inside(dir))
            .with_context(|| format!("cannot create {dir} in the root"));
        self.note(result);
        self
    }

    /// Writes `/etc/ld.so.conf` listing `dirs` and runs the sysroot's own `ldconfig` inside
    /// the root, so that `/etc/ld.so.cache` is in the format of the glibc under test.
    pub(crate) fn ldconfig(&mut self, dirs: &[&str]) -> &mut Root {
        if self.written_down(|| format!("ldconfig of {dirs:?}")) {
            return self;
        }
        let mut conf = dirs.join("\n");
        conf.push('\n');
        let result = fs::create_dir_all(self.inside("/etc"))
            .and_then(|()| fresh_file(&self.inside("/etc/ld.so.conf")))
            .and_then(|()| fs::write(self.inside("/etc/ld.so.conf"), conf))
            .context("cannot write /etc/ld.so.conf")
            .and_then(|()| {
                if self.inside("/sbin/ldconfig").exists() {
                    Ok(())
                } else {
                    Err(anyhow!(
                        "the sysroot has no /sbin/ldconfig to make a cache with"
                    ))
                }
            })
            .and_then(|()| {
                let out = self.command("/sbin/ldconfig").output_quiet()?;
                if out.code != Some(0) {
                    return Err(anyhow!(
                        "ldconfig failed in the root ({}):\n{}{}",
                        out.status_text(),
                        out.stdout,
                        out.stderr
                    ));
                }
                Ok(())
            });
        self.note(result);
        self
    }

    /// A probe from `/opt/probe/bin`.
    pub(crate) fn probe(&self, name: &str) -> Run<'_> {
        self.command(&format!("{}/{name}", self.bench_layout.bin))
    }

    /// The loader itself, run as a command (`ld.so --list`, `--fallback-path`, `--help`).
    pub(crate) fn ld_so(&self) -> Run<'_> {
        self.command(self.bench_layout.loader())
    }

    /// Any program inside the root.
    pub(crate) fn command(&self, program: &str) -> Run<'_> {
        Run::new(self, program)
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.bench_layout
    }

    pub(crate) fn qemu(&self) -> Option<&Path> {
        self.qemu.as_deref()
    }

    pub(crate) fn placed(&self) -> &[(String, String)] {
        &self.placed
    }

    pub(crate) fn setup_error(&self) -> Option<String> {
        self.error.as_ref().map(|e| format!("{e:#}"))
    }

    /// The steps of a root only written down, in order; `None` for a root that is made.
    pub(crate) fn recipe(&self) -> Option<Vec<String>> {
        self.recipe.as_ref().map(|steps| steps.borrow().clone())
    }

    /// For a root only written down: adds `step` to its recipe and says so (the caller then
    /// makes nothing). Every step that changes a root, or reads it, goes through here first.
    pub(crate) fn written_down(&self, step: impl FnOnce() -> String) -> bool {
        match &self.recipe {
            Some(steps) => {
                steps.borrow_mut().push(step());
                true
            }
            None => false,
        }
    }

    pub(crate) fn record(&self, invocation: Invocation) {
        *self.last.borrow_mut() = Some(invocation);
    }

    /// Makes the loader reachable in slibdir, as distributions do (Fedora's
    /// /lib64/ld-linux-aarch64.so.1, Debian's multiarch dir): glibc installs the aarch64
    /// loader only in /lib, outside the default dirs, and an LD_AUDIT module's namespace then
    /// cannot load libc.so.6, which has the loader in DT_NEEDED.
    pub(crate) fn loader_in_slibdir(&mut self) -> &mut Root {
        if self.written_down(|| "the loader in slibdir".into()) {
            return self;
        }
        let loader = self.bench_layout.loader();
        let name = loader.rsplit_once('/').map_or(loader, |(_, name)| name);
        let link = format!("{}/{name}", self.bench_layout.slibdir);
        if link != loader && !self.inside(&link).exists() {
            let result = symlink(loader, self.inside(&link))
                .with_context(|| format!("cannot link {link} to {loader}"));
            self.note(result);
        }
        self
    }

    /// The host's `/bin/bash` and the libraries it needs besides glibc's own, so that the
    /// sysroot's `ldd` script can run (native targets only).
    pub(crate) fn host_bash(&mut self) -> &mut Root {
        if self.written_down(|| "the host's bash".into()) {
            return self;
        }
        let result = self.install_host_bash();
        self.note(result);
        self
    }

    fn install_host_bash(&self) -> Result<()> {
        let listing = std::process::Command::new("ldd")
            .arg("/bin/bash")
            .output()
            .context("cannot run the host's ldd on /bin/bash")?;
        let listing = String::from_utf8_lossy(&listing.stdout);
        for (path, name) in listing.lines().filter_map(|line| {
            let path = line.split("=>").nth(1)?.split_whitespace().next()?;
            let name = Path::new(path).file_name()?.to_str()?;
            // glibc's own libraries come from the sysroot under test.
            let glibc = name.starts_with("libc.so") || name.starts_with("ld-linux");
            (!glibc && path.starts_with('/')).then_some((path, name))
        }) {
            let to = format!("{}/{name}", self.bench_layout.libdir);
            let libdir = self.inside(&self.bench_layout.libdir);
            fs::create_dir_all(&libdir)
                .with_context(|| format!("cannot create {}", libdir.display()))?;
            fresh_file(&self.inside(&to))?;
            copy_file(Path::new(path), &self.inside(&to))?;
        }
        fs::create_dir_all(self.inside("/bin")).context("cannot create /bin in the root")?;
        fresh_file(&self.inside("/bin/bash"))?;
        copy_file(Path::new("/bin/bash"), &self.inside("/bin/bash"))?;
        Ok(())
    }

    /// A setuid-root copy of the target's QEMU, for secure-mode runs under QEMU user mode.
    pub(crate) fn setuid_qemu(&mut self) -> &mut Root {
        if self.written_down(|| "a setuid QEMU".into()) {
            return self;
        }
        let Some(qemu) = self.qemu.clone() else {
            return self;
        };
        let dest = self.inside(crate::probe::SETUID_QEMU);
        let result = fresh_file(&dest)
            .map_err(anyhow::Error::from)
            .and_then(|()| copy_file(&qemu, &dest))
            .and_then(|()| {
                Ok(fs::set_permissions(
                    &dest,
                    fs::Permissions::from_mode(0o4755),
                )?)
            })
            .with_context(|| format!("cannot make a setuid copy of {}", qemu.display()));
        self.note(result);
        self
    }

    /// A setuid-root copy of probe `name` at `to`, for secure-mode runs.
    pub(crate) fn setuid_copy(&mut self, name: &str, to: &str) -> &mut Root {
        if self.written_down(|| format!("a setuid copy of {name} at {to}")) {
            return self;
        }
        let from = self.fixtures.file(name);
        let result = self
            .fresh_at(to)
            .map_err(anyhow::Error::from)
            .and_then(|dest| {
                copy_file(&from, &dest)?;
                Ok(fs::set_permissions(
                    &dest,
                    fs::Permissions::from_mode(0o4755),
                )?)
            })
            .with_context(|| format!("cannot make a setuid copy of {name} at {to}"));
        self.note(result);
        self
    }

    /// The host path of `path` inside the root.
    pub(crate) fn inside(&self, path: &str) -> PathBuf {
        self.path.join(path.trim_start_matches('/'))
    }

    /// The host path of `path` inside the root, made ready for a file of its own: its
    /// directory created, and whatever stood there (a hard link into the sysroot) removed.
    fn fresh_at(&self, path: &str) -> io::Result<PathBuf> {
        // The callers name what they were making; an error here is passed on as it is.
        let dest = self.inside(path);
        create_parent(&dest)
            .and_then(|()| fresh_file(&dest))
            .map(|()| dest)
    }

    fn note(&mut self, result: Result<()>) {
        if let (Err(err), None) = (result, &self.error) {
            self.error = Some(err);
        }
    }

    fn install(&self, from: &Path, to: &str) -> Result<()> {
        if self.written_down(|| format!("link {} at {to}", from.display())) {
            return Ok(());
        }
        let dest = self.inside(to);
        create_parent(&dest).with_context(|| format!("cannot create the directory of {to}"))?;
        link_or_copy(from, &dest).with_context(|| format!("cannot place {}", from.display()))
    }

    fn populate(&mut self, sysroot: &Path) -> Result<()> {
        if self.written_down(|| format!("the runtime of {}", sysroot.display())) {
            return Ok(());
        }
        fs::create_dir_all(&self.path)
            .with_context(|| format!("cannot create {}", self.path.display()))?;
        // A setuid probe runs as nobody and must be able to walk the root.
        fs::set_permissions(&self.path, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("cannot open up {}", self.path.display()))?;
        link_tree(sysroot, &self.path, Path::new(""))
            .with_context(|| format!("cannot copy {} into a root", sysroot.display()))?;
        let l = &self.bench_layout;
        for dir in [&l.cwd, &"/tmp".to_string(), &"/proc".into(), &"/dev".into()] {
            fs::create_dir_all(self.inside(dir))
                .with_context(|| format!("cannot create {dir} in the root"))?;
        }
        fs::set_permissions(self.inside("/tmp"), fs::Permissions::from_mode(0o1777))
            .context("cannot make /tmp in the root world-writable")?;
        for name in [
            "probe",
            "cudart-probe",
            "probe-runpath",
            "probe-nodeflib",
            "probe-static",
            "needed",
            "needed-runpath",
            "needed-rpath",
            "needed-nodeflib",
        ] {
            self.install(&self.fixtures.file(name), &format!("{}/{name}", l.bin))?;
        }
        for name in ["libshim-plain.so", "libshim-runpath.so", "libaudit.so"] {
            self.install(&self.fixtures.file(name), &format!("{}/{name}", l.shims))?;
        }
        Ok(())
    }
}

/// Skipped when copying a sysroot into a root: build-time files no run needs, and the
/// installed `ld.so.cache` (a scenario that wants a cache makes its own).
fn skipped(rel: &Path) -> bool {
    let text = rel.to_string_lossy();
    matches!(
        text.as_ref(),
        "usr/include" | "usr/share" | "usr/libexec" | "etc/ld.so.cache" | "var"
    ) || text.ends_with("/gconv")
        || text.ends_with(".a")
        || text.ends_with(".o")
}

fn link_tree(from_root: &Path, to_root: &Path, rel: &Path) -> Result<()> {
    let from = from_root.join(rel);
    for entry in fs::read_dir(&from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let rel = rel.join(entry.file_name());
        if skipped(&rel) {
            continue;
        }
        let path = entry.path();
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        let to = to_root.join(&rel);
        if kind.is_dir() {
            fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
            link_tree(from_root, to_root, &rel)?;
        } else if kind.is_symlink() {
            fs::read_link(&path)
                .and_then(|target| symlink(target, &to))
                .with_context(|| format!("cannot copy the symlink {}", path.display()))?;
        } else {
            link_or_copy(&path, &to)?;
        }
    }
    Ok(())
}

/// Creates the directory `path` goes into (a path inside a root always has one).
fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => fs::create_dir_all(dir),
        None => Ok(()),
    }
}

/// Removes `path` if it exists, so that writing it creates a new inode: files in a root are
/// hard links into the shared, read-only sysroot, and writing through one would change it.
fn fresh_file(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    match fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(to).with_context(|| format!("cannot replace {}", to.display()))?;
            link_or_copy(from, to)
        }
        Err(_) => copy_file(from, to),
    }
}

/// Copies `from` to `to` (mode kept) through a child `cp`, never through a descriptor of this
/// process: tests run scenarios on several threads, and a child that another thread forks
/// while this process holds the copy open for writing inherits that descriptor and keeps it
/// until it execs; an exec of the copy in that window (the copy is often a program the next
/// run starts) fails with ETXTBSY, "Text file busy". A descriptor held by `cp` is never
/// inherited by our other children.
fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let out = std::process::Command::new("cp")
        .arg("--preserve=mode")
        .arg("--")
        .args([from, to])
        .output()
        .context("cannot run cp")?;
    if !out.status.success() {
        bail!(
            "cannot copy {} to {}: cp said: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A command to run inside a root: `root.probe("needed").env("LD_FALLBACK_PATH", t).output()`.
pub(crate) struct Run<'r> {
    root: &'r Root,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    secure: bool,
}

impl<'r> Run<'r> {
    pub(crate) fn new(root: &'r Root, program: &str) -> Run<'r> {
        Run {
            root,
            argv: vec![program.to_string()],
            env: Vec::new(),
            secure: false,
        }
    }

    pub(crate) fn arg(mut self, arg: &str) -> Run<'r> {
        self.argv.push(arg.to_string());
        self
    }

    pub(crate) fn args(mut self, args: &[&str]) -> Run<'r> {
        self.argv.extend(args.iter().map(|a| a.to_string()));
        self
    }

    pub(crate) fn args_owned(mut self, args: Vec<String>) -> Run<'r> {
        self.argv.extend(args);
        self
    }

    pub(crate) fn env(mut self, name: &str, value: &str) -> Run<'r> {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Runs as uid 65534 through `chroot --userspec` instead of bwrap, so that a setuid-root
    /// program gets AT_SECURE (bwrap sets no_new_privs, which disables setuid).
    pub(crate) fn secure(mut self) -> Run<'r> {
        self.secure = true;
        self
    }

    /// Runs it and remembers it as the scenario's last invocation.
    pub(crate) fn output(self) -> Result<Output> {
        self.nothing_run_in_a_recipe()?;
        let invocation = self.invocation()?;
        self.root.record(invocation.clone());
        invocation.run(self.placements())
    }

    /// Runs a setup step (not remembered for explanations).
    pub(crate) fn output_quiet(self) -> Result<Output> {
        self.nothing_run_in_a_recipe()?;
        self.invocation()?.run(self.placements())
    }

    /// A root only written down has no files to run a command in.
    fn nothing_run_in_a_recipe(&self) -> Result<()> {
        match self.root.recipe {
            Some(_) => bail!("a root only written down runs nothing"),
            None => Ok(()),
        }
    }

    fn placements(&self) -> Vec<(String, String)> {
        self.root.placed().to_vec()
    }

    /// What [`Run::output`] runs, not run.
    pub(crate) fn invocation(&self) -> Result<Invocation> {
        if let Some(err) = self.root.setup_error() {
            return Err(anyhow!("scenario root setup failed: {err}"));
        }
        Ok(Invocation {
            root: self.root.path.clone(),
            cwd: self.root.layout().cwd.clone(),
            qemu: self.root.qemu().map(Path::to_path_buf),
            argv: self.argv.clone(),
            env: self.env.clone(),
            secure: self.secure,
            placed: self.placements(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race `copy_file` exists for: one thread copies a program and runs the copy, while
    /// another thread keeps forking. With the copy written through this process's own
    /// descriptor (`fs::copy`), some exec of a fresh copy fails with ETXTBSY within a few
    /// hundred rounds on a 2-core machine.
    #[test]
    fn a_copied_program_runs_while_other_threads_fork() {
        let dir = tempfile::tempdir().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let forker = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::process::Command::new("/bin/true").status().unwrap();
                }
            })
        };
        let failures: Vec<String> = (0..300)
            .filter_map(|i| {
                let copy = dir.path().join(format!("true-{i}"));
                copy_file(Path::new("/bin/true"), &copy).unwrap();
                match std::process::Command::new(&copy).status() {
                    Ok(status) if status.success() => None,
                    other => Some(format!("round {i}: {other:?}")),
                }
            })
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        forker.join().unwrap();
        assert_eq!(failures, Vec::<String>::new());
    }

    #[test]
    fn the_sweep_removes_only_scratch_of_ended_runs() {
        let parent = tempfile::tempdir().unwrap();
        // Above any pid_max Linux allows (2^22), so no process has it.
        let ended = format!("{SCRATCH_PREFIX}4999999-abcdef");
        let live = format!("{SCRATCH_PREFIX}{}-abcdef", std::process::id());
        let kept = "kept-4999999-abcdef";
        let fresh_old_style = format!("{SCRATCH_PREFIX}Ab3xYz");
        for name in [&ended, &live, kept, &fresh_old_style, "something-else"] {
            fs::create_dir_all(parent.path().join(name).join("a-root")).unwrap();
        }
        sweep_scratch_of_dead_runs(parent.path());
        let mut left: Vec<String> = fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut want = vec![
            live,
            kept.to_string(),
            fresh_old_style,
            "something-else".into(),
        ];
        want.sort();
        assert_eq!(left, want);
    }
}
