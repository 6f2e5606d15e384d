//! Whether the program can start at all, before any library is searched: the kernel maps
//! the program and the interpreter its PT_INTERP names (`load_elf_binary` in the kernel's
//! `fs/binfmt_elf.c`: the interpreter is opened as an executable, must be an ELF file of the
//! machine and be ET_EXEC or ET_DYN), and jumps to the interpreter, which must be a glibc
//! loader for the search modelled here to happen. A `#!` script, `/etc/passwd`, a loader of
//! another architecture or a static program named as the interpreter never load the
//! program's libraries: each gets its own verdict, never "starts".

use object::elf;
use object::read::elf::FileHeader;
use object::Endianness;

use model::Target;

use super::fs::Opened;
use super::{elf as elf_read, Bytes};

/// A loader file as read: what the kernel and the model need of it.
#[derive(Debug, Clone)]
pub(crate) struct LoaderRead {
    pub opened: Opened,
    /// The whole file when it is an ELF file; its first bytes otherwise.
    pub bytes: Vec<u8>,
    /// Whether anyone may execute it (an execute bit is set): the kernel opens an
    /// interpreter as an executable.
    pub executable: bool,
}

/// A loader's file, or why it cannot be opened (the loader's path is said with it).
pub(crate) type LoaderFile = Result<LoaderRead, String>;

/// What a file named as a loader is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoaderKind {
    /// glibc's dynamic loader for the program's machine (DT_SONAME `ld-linux-x86-64.so.2` or
    /// `ld-linux-aarch64.so.1`, no interpreter of its own): the model's subject.
    Glibc,
    /// nix-ld's shim (`NIX_LD`): it loads the loader `NIX_LD` names and hands it the program
    /// (nix-community/nix-ld, `src/main.rs`).
    NixLd,
    /// Anything else, and why it loads no libraries of the program.
    Other(String),
}

/// The soname of glibc's loader for `target`: the file name of its PT_INTERP path.
pub fn loader_soname(target: Target) -> &'static str {
    let path = target.loader_path();
    path.rsplit('/').next().unwrap_or(path)
}

/// What `bytes` (a whole ELF file) is as a loader for programs of `target`.
pub fn loader_kind(bytes: &[u8], target: Target) -> LoaderKind {
    let soname = loader_soname(target);
    let Ok(dynamic) = elf_read::dynamic(bytes) else {
        return LoaderKind::Other("not an ELF file".into());
    };
    if let Some(interp) = &dynamic.interpreter {
        return LoaderKind::Other(format!(
            "a dynamic program (its own interpreter is {interp}), not a loader"
        ));
    }
    if dynamic.soname.as_ref().is_some_and(|s| *s == soname) {
        return LoaderKind::Glibc;
    }
    // nix-ld names the variable it reads in its code (`b"NIX_LD_LIBRARY_PATH"`), and
    // glibc's loader never does.
    if super::bytes::find(bytes, b"NIX_LD_LIBRARY_PATH").is_some() {
        return LoaderKind::NixLd;
    }
    LoaderKind::Other(match &dynamic.soname {
        Some(other) => format!("a library (DT_SONAME {other}), not glibc's {soname}"),
        None => format!(
            "a static program or another libc's loader (no DT_SONAME {soname}): not glibc's loader"
        ),
    })
}

/// Why the kernel refuses `interp` as the interpreter of a program whose ELF header is
/// `program` (ELF class and machine), if it does: the checks `load_elf_binary` makes before
/// it maps an interpreter.
pub(crate) fn kernel_refuses(file: &LoaderRead, program: &[u8]) -> Option<String> {
    if file.opened.is_dir {
        return Some("it is a directory: the kernel cannot execute it".into());
    }
    if !file.executable {
        return Some("it is not executable (no execute permission): the kernel refuses it".into());
    }
    let head = &file.bytes;
    if !head.starts_with(&elf::ELFMAG) {
        let what = if head.starts_with(b"#!") {
            "a script (`#!`)".to_string()
        } else {
            "not an ELF file".to_string()
        };
        return Some(format!(
            "it is {what}: the kernel maps only an ELF file as an interpreter, and refuses this one"
        ));
    }
    let class_of = |h: &[u8]| h.get(4).copied();
    if class_of(head) != class_of(program) || head.get(5) != program.get(5) {
        return Some(
            "its ELF class or byte order is not the program's: the kernel refuses it".into(),
        );
    }
    let machine_of = |h: &[u8]| h.get(18..20).map(|m| u16::from_le_bytes([m[0], m[1]]));
    if machine_of(head) != machine_of(program) {
        return Some(format!(
            "it is built for another machine ({}) than the program: the kernel refuses it",
            machine_name(machine_of(head).unwrap_or(0))
        ));
    }
    let Ok(header) = elf::FileHeader64::<Endianness>::parse(&head[..]) else {
        return Some("its ELF header is cut short: the kernel refuses it".into());
    };
    let endian = Endianness::Little;
    let kind = header.e_type(endian);
    if kind != elf::ET_EXEC && kind != elf::ET_DYN {
        return Some(
            "it is neither an executable nor a shared object (ET_EXEC, ET_DYN): the kernel refuses it"
                .into(),
        );
    }
    None
}

/// `e_machine` in words, for the machines a user meets.
fn machine_name(machine: u16) -> String {
    match machine {
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        3 => "i386".into(),
        40 => "arm".into(),
        243 => "riscv".into(),
        other => format!("e_machine {other}"),
    }
}

/// The verdict on a program whose interpreter the kernel starts but which is no glibc
/// loader.
pub(crate) fn not_a_loader(interp: &Bytes, why: &str) -> String {
    format!(
        "its interpreter {interp} is {why}: the kernel starts it in the program's place, and explain models only glibc's loader"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_loaders_are_known_by_their_soname() {
        assert_eq!(loader_soname(Target::X86_64), "ld-linux-x86-64.so.2");
        assert_eq!(loader_soname(Target::Aarch64), "ld-linux-aarch64.so.1");
        assert_eq!(
            loader_kind(b"#!/bin/sh\n", Target::X86_64),
            LoaderKind::Other("not an ELF file".into())
        );
    }
}

/// The loader's own object (`_dl_rtld_map`) as the walk maps it.
#[derive(Debug, Clone)]
pub(crate) struct Rtld {
    /// `l_name`: the program's PT_INTERP when the kernel (or nix-ld) started the loader in
    /// its place; the loader's path as run when it was started as a command.
    pub realname: Bytes,
    /// `l_libname`: the program's PT_INTERP (or, without one, `l_name`); the walk adds the
    /// loader's soname.
    pub names: Vec<Bytes>,
    pub file: LoaderRead,
}

/// How the program gets its loader: the one that runs, and what the header says of it.
pub(crate) struct Chosen {
    /// `None` for a static program, which has no loader.
    pub rtld: Option<Rtld>,
    /// The loader's path, as the header names it.
    pub path: Option<Bytes>,
    pub started_by: Option<String>,
}

/// Why no search happens: the verdict, and the loader file named (for the header).
pub(crate) struct Refused {
    pub why: String,
    pub path: Option<Bytes>,
    pub bytes: Vec<u8>,
}

/// The loader that runs `program` (its ELF header `head`, its dynamic section `dynamic`)
/// as `config` starts it, or why none does: `interpreter` is its PT_INTERP and that file,
/// `runs` a loader named in its place (`config.loader`).
pub(crate) fn choose(
    config: &super::Config,
    head: &[u8],
    dynamic: &elf_read::Dynamic,
    interpreter: Option<(Bytes, LoaderFile)>,
    runs: Option<(Bytes, LoaderFile)>,
) -> Result<Chosen, Refused> {
    let source = config
        .loader
        .as_ref()
        .map_or_else(String::new, |l| l.source.clone());
    let refused = |why: String, path: Option<&Bytes>, file: Option<&LoaderRead>| Refused {
        why,
        path: path.cloned(),
        bytes: file.map(|f| f.bytes.clone()).unwrap_or_default(),
    };
    // A loader named in the interpreter's place must be glibc's, of the program's machine.
    let glibc = |path: &Bytes, file: &LoaderFile, what: &str| -> Result<LoaderRead, Refused> {
        let read = file.as_ref().map_err(|why| {
            refused(
                format!("{what} {path} cannot be opened ({why})"),
                Some(path),
                None,
            )
        })?;
        if let Some(why) = kernel_refuses(read, head) {
            return Err(refused(
                format!("{what} {path}: {why}"),
                Some(path),
                Some(read),
            ));
        }
        match loader_kind(&read.bytes, config.target) {
            LoaderKind::Glibc => Ok(read.clone()),
            LoaderKind::NixLd => Err(refused(
                format!("{what} {path} is nix-ld's shim, not glibc's loader (nix-ld runs the loader NIX_LD names)"),
                Some(path),
                Some(read),
            )),
            LoaderKind::Other(why) => Err(refused(
                format!("{what} {path} is {why}"),
                Some(path),
                Some(read),
            )),
        }
    };
    if config.via_loader {
        // `LOADER PROGRAM`: the kernel starts the loader as a program; PT_INTERP only names it.
        let Some((path, file)) = runs.as_ref().or(interpreter.as_ref()) else {
            return Ok(Chosen {
                rtld: None,
                path: None,
                started_by: None,
            });
        };
        let what = if runs.is_some() {
            format!("the loader ({source})")
        } else {
            "the loader".to_string()
        };
        let read = glibc(path, file, &what)?;
        let realname = path.clone();
        let names = vec![interpreter
            .as_ref()
            .map_or_else(|| realname.clone(), |(interp, _)| interp.clone())];
        let started_by = runs.as_ref().map(|_| {
            format!(
                "{path} ({source}) runs the program as a command (`{path} PROGRAM`){}",
                interpreter
                    .as_ref()
                    .map(|(interp, _)| format!(", not its interpreter {interp}"))
                    .unwrap_or_default()
            )
        });
        return Ok(Chosen {
            rtld: Some(Rtld {
                realname,
                names,
                file: read,
            }),
            path: Some(path.clone()),
            started_by,
        });
    }
    let Some((interp, interp_file)) = interpreter else {
        if let Some(first) = dynamic.needed.first() {
            return Err(refused(
                format!(
                    "it names no interpreter (PT_INTERP) and needs libraries ({first}, DT_NEEDED): the kernel starts it without a loader, and nothing loads them"
                ),
                None,
                None,
            ));
        }
        return Ok(Chosen {
            rtld: None,
            path: None,
            started_by: None,
        });
    };
    let read = interp_file.map_err(|why| {
        refused(
            format!(
                "its interpreter {interp} cannot be opened ({why}): the kernel cannot start the program"
            ),
            Some(&interp),
            None,
        )
    })?;
    if let Some(why) = kernel_refuses(&read, head) {
        return Err(refused(
            format!("its interpreter {interp}: {why}"),
            Some(&interp),
            Some(&read),
        ));
    }
    let (file, path, started_by) = match (loader_kind(&read.bytes, config.target), &runs) {
        (LoaderKind::Glibc, None) => (read, interp.clone(), None),
        (LoaderKind::NixLd, Some((path, file))) => {
            let what = format!("the loader nix-ld's shim starts ({source})");
            let read = glibc(path, file, &what)?;
            let said = format!("{interp}, the program's interpreter, is nix-ld's shim: it hands the program to {path} ({source})");
            (read, path.clone(), Some(said))
        }
        (LoaderKind::NixLd, None) => {
            return Err(refused(
                format!("its interpreter {interp} is nix-ld's shim, which runs the loader NIX_LD names, and none is named"),
                Some(&interp),
                Some(&read),
            ))
        }
        (LoaderKind::Glibc, Some((path, file))) => {
            // A loader named in place of a glibc interpreter, yet not run as a command: it
            // takes the interpreter's place as nix-ld's would.
            let what = format!("the loader ({source})");
            let read = glibc(path, file, &what)?;
            let said = format!("{path} ({source}) runs the program in place of its interpreter {interp}");
            (read, path.clone(), Some(said))
        }
        (LoaderKind::Other(why), _) => {
            return Err(refused(not_a_loader(&interp, &why), Some(&interp), Some(&read)))
        }
    };
    Ok(Chosen {
        rtld: Some(Rtld {
            realname: interp.clone(),
            names: vec![interp],
            file,
        }),
        path: Some(path),
        started_by,
    })
}
