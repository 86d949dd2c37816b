#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// The C math library's functions that the standard library does not have (statistics need them).
public enum LibM {
    /// e raised to `x`.
    public static func exp(_ x: Double) -> Double {
        #if canImport(Darwin)
            Darwin.exp(x)
        #else
            Glibc.exp(x)
        #endif
    }

    /// The natural logarithm of `x`.
    public static func log(_ x: Double) -> Double {
        #if canImport(Darwin)
            Darwin.log(x)
        #else
            Glibc.log(x)
        #endif
    }

    /// The natural logarithm of the absolute value of the gamma function at `x`.
    public static func logGamma(_ x: Double) -> Double {
        #if canImport(Darwin)
            Darwin.lgamma(x)
        #else
            Glibc.lgamma(x)
        #endif
    }
}
