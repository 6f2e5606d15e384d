//! What the loader reads from an ELF file, through the `object` crate: the header checks of
//! `open_verify` (which decide between "take it", "skip it" and "fail the load"), and the
//! dynamic entries the search uses (DT_NEEDED, DT_RPATH, DT_RUNPATH, DT_SONAME, DF_1_NODEFLIB).

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::read::StringTable;
use object::Endianness;

use model::Target;

use super::Bytes;

/// What `open_verify` makes of a file's first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// An ELF object this loader can map.
    Usable,
    /// ELFCLASS32 for a 64-bit loader: skipped, the search goes on.
    WrongClass,
    /// Another architecture: skipped, the search goes on.
    WrongMachine,
    /// Anything else (not ELF, too short, a directory...): the load fails with this message.
    Fatal(&'static str),
}

/// The size of the header a 64-bit loader reads before it checks anything.
const EHDR64: usize = 64;

/// `open_verify`'s checks, in its order, for a 64-bit little-endian loader of `target`.
pub fn verify(head: &[u8], target: Target) -> Verified {
    if head.len() < EHDR64 {
        return Verified::Fatal("file too short");
    }
    // The ELF64 header's layout, unchecked: the checks below are glibc's, in its order.
    let Ok((header, _)) = object::pod::from_bytes::<elf::FileHeader64<Endianness>>(head) else {
        return Verified::Fatal("file too short");
    };
    let ident = &header.e_ident;
    let osabi_ok = |abi: u8, version: u8| {
        version == 0 && (abi == elf::ELFOSABI_SYSV.0 || abi == elf::ELFOSABI_GNU.0)
    };
    let expected = ident.magic == elf::ELFMAG
        && ident.class == elf::ELFCLASS64
        && ident.data == elf::ELFDATA2LSB
        && ident.version == elf::EV_CURRENT
        && osabi_ok(ident.os_abi.0, ident.abi_version)
        && ident.padding == [0; 7];
    if !expected {
        // The same order of questions as glibc, so the same message.
        return if ident.magic != elf::ELFMAG {
            Verified::Fatal("invalid ELF header")
        } else if ident.class != elf::ELFCLASS64 {
            Verified::WrongClass
        } else if ident.data != elf::ELFDATA2LSB {
            Verified::Fatal("ELF file data encoding not little-endian")
        } else if ident.version != elf::EV_CURRENT {
            Verified::Fatal("ELF file version ident does not match current one")
        } else if !osabi_ok(ident.os_abi.0, 0) {
            Verified::Fatal("ELF file OS ABI invalid")
        } else if ident.abi_version != 0 {
            Verified::Fatal("ELF file ABI version invalid")
        } else {
            Verified::Fatal("nonzero padding in e_ident")
        };
    }
    let endian = Endianness::Little;
    if header.e_version(endian) != u32::from(elf::EV_CURRENT.0) {
        return Verified::Fatal("ELF file version does not match current one");
    }
    if header.e_machine(endian) != machine(target) {
        return Verified::WrongMachine;
    }
    let kind = header.e_type(endian);
    if kind != elf::ET_DYN && kind != elf::ET_EXEC {
        return Verified::Fatal("only ET_DYN and ET_EXEC can be loaded");
    }
    if usize::from(header.e_phentsize(endian)) != size_of::<elf::ProgramHeader64<Endianness>>() {
        return Verified::Fatal("ELF file's phentsize not the expected size");
    }
    Verified::Usable
}

/// The `e_machine` of a target.
pub(crate) fn machine(target: Target) -> elf::Machine {
    match target {
        Target::X86_64 => elf::EM_X86_64,
        Target::Aarch64 => elf::EM_AARCH64,
    }
}

/// The dynamic section of an object, as far as the search needs it; every string as the
/// bytes the file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// PT_INTERP: the loader a program asks for.
    pub interpreter: Option<Bytes>,
    /// Whether it has a PT_DYNAMIC segment at all (a static program has none).
    pub is_dynamic: bool,
    pub needed: Vec<Bytes>,
    pub soname: Option<Bytes>,
    pub rpath: Option<Bytes>,
    pub runpath: Option<Bytes>,
    /// DF_1_NODEFLIB (`-z nodefaultlib`).
    pub nodeflib: bool,
    /// DT_AUXILIARY and DT_FILTER names (filters: reported, not followed).
    pub filters: Vec<Bytes>,
}

/// Reads the dynamic entries of an ELF file of either class.
pub fn dynamic(data: &[u8]) -> Result<Dynamic, String> {
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf64) => read::<elf::FileHeader64<Endianness>>(data),
        Ok(object::FileKind::Elf32) => read::<elf::FileHeader32<Endianness>>(data),
        Ok(other) => Err(format!("not an ELF file ({other:?})")),
        Err(err) => Err(format!("not an ELF file: {err}")),
    }
}

fn read<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Dynamic, String> {
    let header = Elf::parse(data).map_err(|e| format!("bad ELF header: {e}"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("bad ELF header: {e}"))?;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| format!("bad program headers: {e}"))?;
    let mut facts = Dynamic::default();
    let mut entries: &[Elf::Dyn] = &[];
    for phdr in phdrs {
        if let Ok(Some(interp)) = phdr.interpreter(endian, data) {
            facts.interpreter = Some(Bytes::from(interp));
        }
        if let Some(dynamic) = phdr
            .dynamic(endian, data)
            .map_err(|e| format!("bad PT_DYNAMIC: {e}"))?
        {
            facts.is_dynamic = true;
            entries = dynamic;
        }
    }
    // The string table is named by address (DT_STRTAB): the loader reads it from memory,
    // so it is found through the PT_LOAD segment that maps that address.
    let value = |tag: elf::DynamicTag| {
        entries
            .iter()
            .take_while(|d| d.tag(endian) != elf::DT_NULL)
            .find(|d| d.tag(endian) == tag)
            .map(|d| d.val(endian))
    };
    let strings = match (value(elf::DT_STRTAB), value(elf::DT_STRSZ)) {
        (Some(address), Some(size)) => {
            let offset = phdrs.iter().find_map(|p| {
                let (start, size) = (p.p_vaddr(endian).into(), p.p_filesz(endian).into());
                (p.p_type(endian) == elf::PT_LOAD && address >= start && address < start + size)
                    .then(|| address - start + p.p_offset(endian).into())
            });
            match offset {
                Some(offset) => StringTable::new(data, offset, offset + size),
                None => return Err("DT_STRTAB lies outside every PT_LOAD segment".into()),
            }
        }
        _ if entries.is_empty() => StringTable::default(),
        _ => return Err("the dynamic section has no string table".into()),
    };
    let text = |d: &Elf::Dyn| -> Result<Bytes, String> {
        d.string(endian, strings)
            .map(Bytes::from)
            .map_err(|e| format!("bad dynamic string: {e}"))
    };
    for d in entries.iter().take_while(|d| d.tag(endian) != elf::DT_NULL) {
        match d.tag(endian) {
            elf::DT_NEEDED => facts.needed.push(text(d)?),
            elf::DT_SONAME => facts.soname = Some(text(d)?),
            elf::DT_RPATH => facts.rpath = Some(text(d)?),
            elf::DT_RUNPATH => facts.runpath = Some(text(d)?),
            elf::DT_AUXILIARY | elf::DT_FILTER => facts.filters.push(text(d)?),
            elf::DT_FLAGS_1 => {
                facts.nodeflib = d.val(endian) & elf::DF_1_NODEFLIB.0 != 0;
            }
            _ => {}
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(class: u8, machine: u16, kind: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&elf::ELFMAG);
        h[4] = class;
        h[5] = 1; // little-endian
        h[6] = 1; // EV_CURRENT
        h[16..18].copy_from_slice(&kind.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[54..56].copy_from_slice(&56u16.to_le_bytes());
        h
    }

    #[test]
    fn open_verify_takes_skips_or_fails() {
        let x86 = elf::EM_X86_64.0;
        let arm = elf::EM_AARCH64.0;
        let dyn_ = elf::ET_DYN.0;
        assert_eq!(
            verify(&header(2, x86, dyn_), Target::X86_64),
            Verified::Usable
        );
        assert_eq!(
            verify(&header(1, x86, dyn_), Target::X86_64),
            Verified::WrongClass
        );
        assert_eq!(
            verify(&header(2, arm, dyn_), Target::X86_64),
            Verified::WrongMachine
        );
        assert_eq!(
            verify(&header(2, x86, elf::ET_REL.0), Target::X86_64),
            Verified::Fatal("only ET_DYN and ET_EXEC can be loaded")
        );
        assert_eq!(
            verify(b"#!/bin/sh\n", Target::X86_64),
            Verified::Fatal("file too short")
        );
        assert_eq!(
            verify(&[b'x'; 64], Target::Aarch64),
            Verified::Fatal("invalid ELF header")
        );
    }

    #[test]
    fn the_test_binary_itself_has_a_dynamic_section() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let facts = dynamic(&me).unwrap();
        assert!(facts.is_dynamic);
        assert!(facts.interpreter.is_some());
        assert!(facts.needed.iter().any(|n| n.starts_with(b"libc.so")));
    }
}
