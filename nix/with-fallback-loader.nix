# `withFallbackLoader app`: app's programs, copied, each with the patched glibc's loader as
# its interpreter (with-fallback-loader.sh says what is copied and why). The copy's closure
# holds that glibc, so the garbage collector keeps it while the copy is kept.
{ lib, runCommand, patchelf, glibc-fallback }:

app:
runCommand "${app.name}-fallback-loader"
  {
    nativeBuildInputs = [ patchelf ];
    meta = lib.optionalAttrs (app ? meta.mainProgram) { inherit (app.meta) mainProgram; };
  }
  ''
    bash ${./with-fallback-loader.sh} ${glibc-fallback} $out/bin ${app}/bin/*
  ''
