#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// The calling thread's identity, for checks that a thread does not take a lock it already holds.
public enum ThreadIdentity {
    /// A nonzero number unique among the process's live threads (`pthread_self`).
    public static var current: UInt {
        #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
        #else
            UInt(pthread_self())
        #endif
    }
}
