{
  description = "LD_FALLBACK_PATH for a Nix glibc: a loader that searches a directory list strictly last";

  # Take it with `inputs.ld-fallback.inputs.nixpkgs.follows = "nixpkgs"`: the patched glibc
  # is then built from your nixpkgs, the revision of the programs its loader will run.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      series = import ./nix/series.nix;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      eachSystem = f: builtins.listToAttrs (map
        (system: { name = system; value = f system nixpkgs.legacyPackages.${system}; })
        systems);
    in
    {
      # No nixpkgs needed: the releases with a series, and a release's patches in series order.
      lib = { inherit (series) releases patchesFor; };

      # `glibc-fallback` and `withFallbackLoader` added, nixpkgs' glibc left alone.
      overlays.default = import ./nix/overlay.nix;
      # nixpkgs' glibc itself patched: the whole system rebuilt on it.
      overlays.glibc = import ./nix/glibc-overlay.nix;

      packages = eachSystem (system: pkgs: rec {
        glibc-fallback = pkgs.callPackage ./nix/glibc-fallback.nix { };
        default = glibc-fallback;
      });

      # `withFallbackLoader app`: app's programs on the patched loader (a function, so here
      # rather than in `packages`).
      legacyPackages = eachSystem (system: pkgs: {
        withFallbackLoader = pkgs.callPackage ./nix/with-fallback-loader.nix {
          inherit (self.packages.${system}) glibc-fallback;
        };
      });

      # Evaluated by `nix flake check --no-build`: the patch lists each output builds with,
      # against the nixpkgs taken. Nothing is built: the file below only carries the
      # checks, which its evaluation runs; a failed one stops it with what it found.
      checks = eachSystem (system: pkgs:
        let
          wanted = pkgs.glibc.patches ++ series.patchesFor pkgs.glibc.version;
          show = patches: builtins.concatStringsSep " " (map (p: baseNameOf (toString p)) patches);
          same = what: patches:
            patches == wanted
            || throw "${what} builds with the patches ${show patches}, not nixpkgs' glibc's then the series: ${show wanted}";
          app = self.legacyPackages.${system}.withFallbackLoader pkgs.hello;
        in
        {
          patch-lists =
            assert same "packages.${system}.glibc-fallback" self.packages.${system}.glibc-fallback.patches;
            assert same "overlays.glibc's glibc" (pkgs.extend self.overlays.glibc).glibc.patches;
            assert builtins.isString app.drvPath;
            pkgs.writeText "ld-fallback-patch-lists" "evaluated";
        });
    };
}
