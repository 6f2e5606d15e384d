# The cheap way: the patched glibc as a package of its own, `glibc-fallback`, beside nixpkgs'
# glibc, which stays as it is (nothing is rebuilt); and `withFallbackLoader`, which gives a
# package's programs that glibc's loader.
final: prev: {
  glibc-fallback = final.callPackage ./glibc-fallback.nix { };
  withFallbackLoader = final.callPackage ./with-fallback-loader.nix { };
}
