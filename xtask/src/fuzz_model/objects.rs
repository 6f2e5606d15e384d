//! The ELF files of a world, without a compiler per trial: two templates compiled once (a
//! library and a program, neither linked with libc: the loader needs nothing of theirs),
//! whose dynamic sections carry placeholders: a long SONAME, a long DT_RUNPATH and
//! [`MAX_NEEDED`] DT_NEEDED entries. Each object of a world is a template with its strings
//! written over the placeholders and its dynamic array rewritten in place (entries dropped,
//! DT_RUNPATH turned into DT_RPATH, DF_1_NODEFLIB set), padded with DT_NULL.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use loader_tests::host::Toolchain;
use model::Target;

use super::world::{Object, Places, Search, Tag, MAX_NEEDED};

const PLACEHOLDER_LEN: usize = 64;
const SEARCH_PLACEHOLDER_LEN: usize = 1024;
const NEEDED_MARK: &str = "FZNEEDED";
const SONAME_MARK: &str = "FZSONAME";

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
const DF_1_NODEFLIB: u64 = 0x800;

/// The templates of a target: a program that exits at once and a library that does
/// nothing; where the worlds make `dlopen` calls, the probe (`c-fixtures/probe.c`) and the
/// shim library (`c-fixtures/libshim.c`) built with the same placeholders, against the
/// glibc under test.
pub(crate) struct Templates {
    library: Vec<u8>,
    program: Vec<u8>,
    calling: Option<Calling>,
}

/// The probe and the shim with placeholders: both need `libc.so.6` (for `dlopen`).
struct Calling {
    library: Vec<u8>,
    program: Vec<u8>,
}

fn padded(mark: &str, len: usize) -> String {
    format!("{mark}{}", "x".repeat(len - mark.len()))
}

/// A program that exits at once: no libc, so its start is a system call.
fn program_source(target: Target) -> &'static str {
    match target {
        Target::X86_64 => {
            "void _start(void) { __asm__ volatile(\"mov $60, %eax\\n xor %edi, %edi\\n syscall\"); }\n"
        }
        Target::Aarch64 => {
            "void _start(void) { __asm__ volatile(\"mov x8, #93\\n mov x0, #0\\n svc #0\"); }\n"
        }
    }
}

impl Templates {
    /// Compiles both templates for `target` in `dir` (a scratch directory).
    pub(crate) fn compile(target: Target, loader: &str, dir: &Path) -> Result<Templates> {
        let toolchain = Toolchain::for_target(target);
        toolchain.require()?;
        let cc = toolchain.cc.program;
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text)
                .with_context(|| format!("cannot write {}", dir.join(name).display()))
        };
        write("lib.c", "int fz_marker(void) { return 0; }\n")?;
        write("prog.c", program_source(target))?;
        let mut stubs = Vec::new();
        for i in 0..MAX_NEEDED {
            let stub = dir.join(format!("stub{i}.so"));
            let soname = padded(&format!("{NEEDED_MARK}{i}"), PLACEHOLDER_LEN);
            run(Command::new(cc)
                .args(["-nostdlib", "-shared", "-fPIC"])
                .arg(format!("-Wl,-soname,{soname}"))
                .arg("-o")
                .arg(&stub)
                .arg(dir.join("lib.c")))?;
            stubs.push(stub);
        }
        let runpath = format!(
            "-Wl,--enable-new-dtags,-rpath,{}",
            "R".repeat(SEARCH_PLACEHOLDER_LEN)
        );
        // `-z now` gives every object a DT_FLAGS_1 to set DF_1_NODEFLIB in.
        let common = ["-nostdlib", "-Wl,-z,now", "-Wl,--no-as-needed"];
        run(Command::new(cc)
            .args(common)
            .args(["-shared", "-fPIC"])
            .arg(format!(
                "-Wl,-soname,{}",
                padded(SONAME_MARK, PLACEHOLDER_LEN)
            ))
            .arg(&runpath)
            .arg("-o")
            .arg(dir.join("library.so"))
            .arg(dir.join("lib.c"))
            .args(&stubs))?;
        run(Command::new(cc)
            .args(common)
            .args(["-no-pie", "-fno-pie"])
            .arg(format!("-Wl,--dynamic-linker={loader}"))
            .arg(&runpath)
            .arg("-o")
            .arg(dir.join("program"))
            .arg(dir.join("prog.c"))
            .args(&stubs))?;
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .with_context(|| format!("cannot read {}", dir.join(name).display()))
        };
        Ok(Templates {
            library: read("library.so")?,
            program: read("program")?,
            calling: None,
        })
    }

    /// Adds the probe and the shim, compiled in `dir` (where [`Templates::compile`] left
    /// its stubs) against `sysroot`'s glibc.
    pub(crate) fn with_calls(
        mut self,
        sysroot: &model::Sysroot,
        layout: &loader_tests::layout::Layout,
        dir: &Path,
    ) -> Result<Templates> {
        let mut link = vec![
            "-Wl,-z,now".to_string(),
            "-Wl,--no-as-needed".to_string(),
            format!(
                "-Wl,--enable-new-dtags,-rpath,{}",
                "R".repeat(SEARCH_PLACEHOLDER_LEN)
            ),
        ];
        link.extend((0..MAX_NEEDED).map(|i| dir.join(format!("stub{i}.so")).display().to_string()));
        let compile = |name: &str, source: &str, flags: &[String]| {
            loader_tests::fixtures::compile_variant(
                sysroot, layout, dir, name, source, flags, &link,
            )
            .with_context(|| format!("cannot compile the {name} template"))?;
            std::fs::read(dir.join(name))
                .with_context(|| format!("cannot read {}", dir.join(name).display()))
        };
        let program = compile("probe", "probe.c", &[])?;
        let library = compile(
            "shim.so",
            "libshim.c",
            &[
                "-shared".into(),
                "-fPIC".into(),
                format!("-Wl,-soname,{}", padded(SONAME_MARK, PLACEHOLDER_LEN)),
            ],
        )?;
        self.calling = Some(Calling { library, program });
        Ok(self)
    }

    fn pair(&self, calls: bool) -> Result<(&[u8], &[u8])> {
        match (calls, &self.calling) {
            (false, _) => Ok((&self.library, &self.program)),
            (true, Some(c)) => Ok((&c.library, &c.program)),
            (true, None) => bail!("a world with dlopen calls, and no probe template"),
        }
    }

    /// Library `soname`'s file (the shim, in a world with `calls`).
    pub(crate) fn library(
        &self,
        calls: bool,
        soname: &str,
        needed: &[String],
        object: &Object,
        places: &Places,
    ) -> Result<Vec<u8>> {
        edit(self.pair(calls)?.0, Some(soname), needed, object, places)
    }

    /// The program's file (the probe, in a world with `calls`).
    pub(crate) fn program(
        &self,
        calls: bool,
        needed: &[String],
        object: &Object,
        places: &Places,
    ) -> Result<Vec<u8>> {
        edit(self.pair(calls)?.1, None, needed, object, places)
    }
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> Result<u16> {
    let bytes = b.get(at..at + 2).context("ELF file too short")?;
    Ok(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64> {
    let bytes = b.get(at..at + 8).context("ELF file too short")?;
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    Ok(u64::from_le_bytes(word))
}

fn put_u64(b: &mut [u8], at: usize, value: u64) {
    b[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Where the template's dynamic array and string table are in the file.
struct Dynamic {
    /// (file offset, tag, value) of every entry before DT_NULL.
    entries: Vec<(usize, u64, u64)>,
    /// Entries the array has room for, DT_NULL included.
    slots: usize,
    start: usize,
    strtab: usize,
}

/// Reads a 64-bit little-endian ELF file's dynamic array (both targets are such).
fn dynamic(b: &[u8]) -> Result<Dynamic> {
    ensure!(
        b.get(..6) == Some(b"\x7fELF\x02\x01"),
        "not a 64-bit LSB ELF file"
    );
    let phoff = usize::try_from(u64_at(b, 0x20)?)?;
    let phentsize = usize::from(u16_at(b, 0x36)?);
    let phnum = usize::from(u16_at(b, 0x38)?);
    let mut loads = Vec::new();
    let mut dynamic = None;
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let kind = u16_at(b, ph)?;
        let (offset, vaddr, filesz) =
            (u64_at(b, ph + 8)?, u64_at(b, ph + 16)?, u64_at(b, ph + 32)?);
        match kind {
            1 => loads.push((offset, vaddr, filesz)),
            2 => dynamic = Some((offset, filesz)),
            _ => {}
        }
    }
    let (start, size) = dynamic.context("no PT_DYNAMIC")?;
    let start = usize::try_from(start)?;
    let slots = usize::try_from(size)? / 16;
    let mut entries = Vec::new();
    let mut strtab = None;
    for i in 0..slots {
        let at = start + i * 16;
        let (tag, value) = (u64_at(b, at)?, u64_at(b, at + 8)?);
        if tag == DT_NULL {
            break;
        }
        if tag == DT_STRTAB {
            strtab = Some(value);
        }
        entries.push((at, tag, value));
    }
    let strtab = strtab.context("no DT_STRTAB")?;
    let (offset, vaddr, _) = loads
        .iter()
        .find(|(_, vaddr, filesz)| (*vaddr..vaddr + filesz).contains(&strtab))
        .context("DT_STRTAB outside every PT_LOAD")?;
    Ok(Dynamic {
        entries,
        slots,
        start,
        strtab: usize::try_from(strtab - vaddr + offset)?,
    })
}

fn string_at(b: &[u8], at: usize) -> &[u8] {
    let rest = &b[at.min(b.len())..];
    &rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())]
}

/// Writes `text` over the placeholder at `at` (NUL-terminated, within the placeholder).
fn overwrite(b: &mut [u8], at: usize, text: &str) -> Result<()> {
    let room = string_at(b, at).len();
    ensure!(
        text.len() <= room && !text.as_bytes().contains(&0),
        "{text:?} does not fit a placeholder of {room} bytes"
    );
    b[at..at + text.len()].copy_from_slice(text.as_bytes());
    b[at + text.len()] = 0;
    Ok(())
}

fn edit(
    template: &[u8],
    soname: Option<&str>,
    needed: &[String],
    object: &Object,
    places: &Places,
) -> Result<Vec<u8>> {
    let mut b = template.to_vec();
    let d = dynamic(&b)?;
    let mut kept: Vec<(u64, u64)> = Vec::new();
    for &(_, tag, value) in &d.entries {
        let at = d.strtab + usize::try_from(value)?;
        match tag {
            DT_NEEDED => {
                let name = String::from_utf8_lossy(string_at(&b, at)).into_owned();
                let Some(rest) = name.strip_prefix(NEEDED_MARK) else {
                    // The probe's and the shim's libc.so.6.
                    kept.push((tag, value));
                    continue;
                };
                let Some(index) = rest.get(..1).and_then(|digit| digit.parse::<usize>().ok())
                else {
                    bail!("the template needs {name}, not a placeholder");
                };
                if let Some(real) = needed.get(index) {
                    overwrite(&mut b, at, real)?;
                    kept.push((tag, value));
                }
            }
            DT_SONAME => {
                if let Some(soname) = soname {
                    overwrite(&mut b, at, soname)?;
                    kept.push((tag, value));
                }
            }
            DT_RUNPATH => {
                if let Some(Search { tag, entries }) = &object.search {
                    let words: Vec<String> = entries.iter().map(|e| e.text(places)).collect();
                    overwrite(&mut b, at, &words.join(":"))?;
                    let tag = match tag {
                        Tag::Runpath => DT_RUNPATH,
                        Tag::Rpath => DT_RPATH,
                    };
                    kept.push((tag, value));
                }
            }
            DT_FLAGS_1 if object.nodefaultlib => kept.push((tag, value | DF_1_NODEFLIB)),
            _ => kept.push((tag, value)),
        }
    }
    ensure!(
        needed.len() <= MAX_NEEDED,
        "{} DT_NEEDED entries, the templates have {MAX_NEEDED}",
        needed.len()
    );
    for slot in 0..d.slots {
        let (tag, value) = kept.get(slot).copied().unwrap_or((DT_NULL, 0));
        put_u64(&mut b, d.start + slot * 16, tag);
        put_u64(&mut b, d.start + slot * 16 + 8, value);
    }
    Ok(b)
}
