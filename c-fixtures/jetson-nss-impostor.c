/* libnss_compat.so.2 of the JetPack host's own glibc, in /usr/lib/aarch64-linux-gnu: built
   against another glibc, it must never be loaded into a Nix glibc's process.  This stand-in
   only has to be recognisable by where it was loaded from; it provides no NSS functions, so
   a lookup through it finds nothing.  */
int
host_nss_compat_marker (void)
{
  return 1;
}
