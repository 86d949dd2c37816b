#ifndef CLAZYCURL_H
#define CLAZYCURL_H

/// libcurl's entry points, defined in the `moodledger` binary itself so that it does not need libcurl to start.
///
/// The release binary links Foundation statically; FoundationNetworking calls libcurl for `https://` remotes only.
/// Linked by its name, libcurl brings 34 shared libraries (OpenSSL, GnuTLS, Kerberos, LDAP, nghttp2…) onto every
/// command's startup path. Here each function FoundationNetworking uses is a trampoline: its first call opens
/// `libcurl.so.4` and binds every function at once; later calls jump straight through. The sync client opens the
/// library itself before it builds a session (`SharedLibrary.open`), so a machine without libcurl gets a clear error,
/// never a failed trampoline.
///
/// Returns 1 when the binary carries the trampolines (Linux), 0 elsewhere.
int clazycurl_present(void);

#endif
