# Without flakes: `nix-build /path/to/ld-fallback -A glibc-fallback` builds the patched glibc
# of <nixpkgs> (on NixOS: the system's channel, the revision its programs come from);
# `(import /path/to/ld-fallback { inherit pkgs; }).withFallbackLoader app` re-points app.
{ pkgs ? import <nixpkgs> { } }:

rec {
  glibc-fallback = pkgs.callPackage ./nix/glibc-fallback.nix { };
  withFallbackLoader = pkgs.callPackage ./nix/with-fallback-loader.nix { inherit glibc-fallback; };
}
