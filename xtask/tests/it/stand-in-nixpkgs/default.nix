# nixpkgs as far as this repository's Nix files and the docs' expressions use it, for Debian's
# Nix 2.8 (older than nixpkgs' minimum) and without a network. The tests write params.nix
# beside it: the glibc version, and the paths of the stub files they lay out.
{ system ? "x86_64-linux", overlays ? [ ], config ? { } }:

let
  params = import ./params.nix;

  lib = {
    versions.majorMinor = v:
      builtins.concatStringsSep "." (builtins.genList (builtins.elemAt (builtins.splitVersion v)) 2);
    hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
    splitString = sep: s: builtins.filter builtins.isString (builtins.split sep s);
    optionalAttrs = cond: attrs: if cond then attrs else { };
    mkForce = content: { _type = "override"; priority = 50; inherit content; };
  };

  # A derivation as far as it is used: its attributes, and the path it would be built at.
  derivation' = attrs: attrs // { type = "derivation"; };

  # nixpkgs' glibc: its version, one patch of nixpkgs' own, and overrideAttrs as mkDerivation
  # has it (the function's attributes over the old ones), built at the patched glibc's path.
  glibc = derivation' {
    pname = "glibc";
    version = params.glibcVersion;
    name = "glibc-${params.glibcVersion}";
    patches = [ "nixpkgs-own.patch" ];
    outPath = params.glibc;
    overrideAttrs = f: derivation' (builtins.removeAttrs glibc [ "overrideAttrs" ] // f glibc // {
      outPath = params.glibcFallback;
    });
  };

  base = final: {
    inherit lib glibc system;
    # A directory with bin/patchelf, as nativeBuildInputs puts it on PATH.
    patchelf = params.patchelf;
    hello = derivation' {
      name = "hello-2.12.2";
      outPath = params.hello;
      meta.mainProgram = "hello";
    };
    stdenv.cc.bintools.dynamicLinker = "${glibc}/lib/${params.loader}";
    # The script is what the builder runs with bash; the tests run it the same way.
    runCommand = name: env: script: derivation' (env // {
      inherit name script;
      outPath = "/nix/store/00000000000000000000000000000000-${name}";
      drvPath = "/nix/store/00000000000000000000000000000000-${name}.drv";
    });
    writeText = name: text: derivation' {
      inherit name text;
      outPath = "/nix/store/00000000000000000000000000000000-${name}";
      drvPath = "/nix/store/00000000000000000000000000000000-${name}.drv";
    };
    callPackage = fn: args:
      let f = if builtins.isFunction fn then fn else import fn;
      in f (builtins.intersectAttrs (builtins.functionArgs f) final // args);
  };

  # The overlays over the base, as nixpkgs' fixed point applies them.
  pkgs = builtins.foldl' (prev: overlay: prev // overlay pkgs prev) (base pkgs) overlays;
in
pkgs // { extend = overlay: import ./. { inherit system config; overlays = overlays ++ [ overlay ]; }; }
