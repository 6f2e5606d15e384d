# nixpkgs' glibc with the series of its release added after nixpkgs' own patches, in the
# order of the series file. Build it from the nixpkgs revision whose programs it will run:
# its loader then differs from their libc.so.6 by the series alone.
{ glibc }:

glibc.overrideAttrs (old: {
  patches = (old.patches or [ ]) ++ (import ./series.nix).patchesFor glibc.version;
})
