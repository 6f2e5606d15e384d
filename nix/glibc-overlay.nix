# The whole system on the patched glibc: nixpkgs' glibc itself gets the series. Every
# package, stdenv's bootstrap included, is then built against it: nothing comes from the
# binary cache.
final: prev: {
  glibc = import ./glibc-fallback.nix { inherit (prev) glibc; };
}
