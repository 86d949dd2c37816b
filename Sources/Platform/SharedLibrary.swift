#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// A shared library opened at run time, for a feature that only some commands use.
public enum SharedLibrary {
    /// Opens the library `name` (resolved as the dynamic linker resolves a dependency), binding its symbols now and
    /// making them visible to the process; opening it again costs nothing.
    /// - Returns: `nil` when it is open, or the dynamic linker's reason it is not (the library is missing, or one
    ///   of its dependencies is).
    public static func open(_ name: String) -> String? {
        guard dlopen(name, RTLD_NOW | RTLD_GLOBAL) == nil else { return nil }
        return dlerror().map { String(cString: $0) } ?? "\(name) cannot be opened"
    }
}
