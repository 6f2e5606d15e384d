# The stand-in as a flake, for `--override-input nixpkgs path:...`.
{
  outputs = { self }: {
    legacyPackages.x86_64-linux = import ./. { system = "x86_64-linux"; };
    legacyPackages.aarch64-linux = import ./. { system = "aarch64-linux"; };
  };
}
