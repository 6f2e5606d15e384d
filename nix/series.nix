# The series of each glibc release in patches/, as Nix reads them. Plain builtins only, no
# nixpkgs: the flake's `lib` evaluates with any Nix, before nixpkgs is fetched.
let
  dir = ../patches;

  # patches/<X.Y>/ with a `series` file; patches/ holds other things too (resolutions/, scope).
  isRelease = name: type:
    type == "directory"
    && builtins.match "[0-9]+\\.[0-9]+" name != null
    && builtins.pathExists (dir + "/${name}/series");

  entries = builtins.readDir dir;

  releases = builtins.filter (name: isRelease name entries.${name}) (builtins.attrNames entries);

  # The patch file names of a series file, in its order: one a line, `#` lines are comments.
  names = text:
    builtins.filter (line: builtins.isString line && line != "" && builtins.substring 0 1 line != "#")
      (builtins.split "\n" text);

  # "2.42" of nixpkgs' "2.42", "2.42-67" or "2.42.9000".
  majorMinor = version:
    let parts = builtins.splitVersion version;
    in "${builtins.elemAt parts 0}.${builtins.elemAt parts 1}";
in
{
  # The releases this checkout has a series for: [ "2.36" "2.40" ... ].
  inherit releases;

  # The patches to add to a glibc of `version` (nixpkgs' `glibc.version`), in the order of
  # their series file; evaluation stops with the reason for a release without one.
  patchesFor = version:
    let
      release = majorMinor version;
      series = dir + "/${release}/series";
    in
    if builtins.elem release releases then
      map (name: dir + "/${release}/${name}") (names (builtins.readFile series))
    else
      throw "ld-fallback has no series for glibc ${release} (nixpkgs' glibc is ${version}); this checkout has one for ${builtins.concatStringsSep ", " releases}";
}
