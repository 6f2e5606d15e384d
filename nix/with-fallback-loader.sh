#!/usr/bin/env bash
# with-fallback-loader.sh GLIBC OUT PROGRAM...
#
# Copies each PROGRAM into the directory OUT with GLIBC's loader as its interpreter, so that
# the copy runs on that loader (a patched glibc's, which reads LD_FALLBACK_PATH) while the
# original stays as it is (a store path cannot be changed). The loader is the file of GLIBC's
# lib/ named as the program's own interpreter is (ld-linux-aarch64.so.1,
# ld-linux-x86-64.so.2). A copy is named as PROGRAM is given (a profile's link included).
#
# Many nixpkgs programs are makeWrapper scripts, which set variables and then
# `exec -a "$0" /nix/store/...-foo/bin/.foo-wrapped "$@"`: the script is no ELF file, and the
# program is the file it starts. A script is copied with every file of its own directory it
# names (its .foo-wrapped program, a chain of wrappers), each handled the same way, and the
# copy names the copies: the variables it sets are kept. A binary wrapper (makeBinaryWrapper:
# an ELF program with a .foo-wrapped beside it) starts the original by a path compiled into
# it, which a copy cannot change: it is refused, with the reason.
set -euo pipefail

die() {
    echo "with-fallback-loader: $*" >&2
    exit 1
}

note() {
    echo "with-fallback-loader: $*" >&2
}

[[ $# -ge 3 ]] || die "usage: with-fallback-loader.sh GLIBC OUT PROGRAM..."
[[ -d $1/lib ]] || die "$1 has no lib/: not an installed glibc"
glibc=$(cd "$1" && pwd) # logical: an out-link stays in the loader's path, and keeps it alive
mkdir -p "$2"
out=$(cd "$2" && pwd) # the copied scripts name it: absolute
shift 2

# copy FILE NAME: FILE (a real path) into $out as NAME, re-pointed if it is an ELF program,
# naming the copies if it is a script.
copy() {
    local file=$1 name=$2 dest interpreter loader dir content word started=
    dest=$out/$name
    # A file that two wrappers start is copied once.
    [[ -e $dest ]] && return 0
    dir=${file%/*}
    if [[ $(head -c 4 "$file" | tail -c 3) == ELF ]]; then
        if ! interpreter=$(patchelf --print-interpreter "$file" 2>/dev/null); then
            note "$file has no interpreter (a static program, or a library): copied as it is"
            cp --no-preserve=mode "$file" "$dest"
            chmod +x "$dest"
            return 0
        fi
        if [[ -e $dir/.${file##*/}-wrapped ]]; then
            die "$file is a binary wrapper (makeBinaryWrapper) of $dir/.${file##*/}-wrapped: it starts that program by its store path, compiled into it, which a copy cannot change"
        fi
        loader=$glibc/lib/${interpreter##*/}
        [[ -e $loader ]] || die "$glibc has no lib/${interpreter##*/}, the loader $file names ($interpreter)"
        cp --no-preserve=mode "$file" "$dest"
        chmod +x "$dest"
        patchelf --set-interpreter "$loader" "$dest"
    elif [[ $(head -c 2 "$file") == '#!' ]]; then
        content=$(<"$file")
        # Exact text, not a pattern: a store path's dots are dots.
        printf '%s\n' "${content//"$dir/"/"$out/"}" >"$dest"
        chmod +x "$dest"
        while IFS= read -r word; do
            if [[ $word == "$dir"/* && -f $word ]]; then
                started=1
                copy "$word" "${word##*/}"
            fi
        done < <(grep -o "[^\"' =:]*" "$file" | sort -u)
        if [[ -z $started ]]; then
            note "$file is a script that starts no program of its directory: copied as it is; it runs on its interpreter's loader ($(head -n 1 "$file"))"
        fi
    else
        note "$file is neither an ELF program nor a script: copied as it is"
        cp --no-preserve=mode "$file" "$dest"
    fi
}

for program in "$@"; do
    [[ -f $program ]] || die "$program: no such file"
    copy "$(readlink -f "$program")" "${program##*/}"
done
