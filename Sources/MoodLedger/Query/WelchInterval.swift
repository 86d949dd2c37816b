import Platform

/// Welch's two-sample comparison of means: the difference, the Welch–Satterthwaite degrees of freedom and a 95 %
/// confidence interval from Student's t (`Specs/analytics.md`, *Factor effects*).
public struct WelchInterval: Sendable, Equatable {
    public var difference: Double
    public var degreesOfFreedom: Double
    public var low: Double
    public var high: Double

    /// The interval for mean(a) − mean(b); `nil` unless each side has at least 2 values.
    public static func of(_ a: [Double], _ b: [Double]) -> WelchInterval? {
        guard a.count >= 2, b.count >= 2 else { return nil }
        let (ma, va) = meanAndVariance(a)
        let (mb, vb) = meanAndVariance(b)
        let qa = va / Double(a.count)
        let qb = vb / Double(b.count)
        let se = (qa + qb).squareRoot()
        let difference = ma - mb
        guard se > 0 else {
            return WelchInterval(
                difference: difference, degreesOfFreedom: Double(a.count + b.count - 2), low: difference,
                high: difference)
        }
        let df = (qa + qb) * (qa + qb) / (qa * qa / Double(a.count - 1) + qb * qb / Double(b.count - 1))
        let t = studentQuantile(0.975, degreesOfFreedom: df)
        return WelchInterval(
            difference: difference, degreesOfFreedom: df, low: difference - t * se, high: difference + t * se)
    }

    /// Mean and the sample variance (n − 1).
    static func meanAndVariance(_ values: [Double]) -> (Double, Double) {
        let mean = values.reduce(0, +) / Double(values.count)
        let squares = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        return (mean, squares / Double(values.count - 1))
    }

    /// The p-quantile (p > 0.5) of Student's t with `df` degrees of freedom, by bisection on its distribution
    /// function (accurate to 1e-10, far below the 4 decimals shown).
    public static func studentQuantile(_ p: Double, degreesOfFreedom df: Double) -> Double {
        var low = 0.0
        var high = 1.0
        while studentCDF(high, df) < p { high *= 2 }
        for _ in 0..<200 {
            let mid = (low + high) / 2
            if studentCDF(mid, df) < p { low = mid } else { high = mid }
            if high - low < 1e-12 { break }
        }
        return (low + high) / 2
    }

    /// P(T ≤ t) for t ≥ 0: 1 − I_x(df/2, 1/2) / 2 with x = df / (df + t²).
    static func studentCDF(_ t: Double, _ df: Double) -> Double {
        1 - 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5)
    }

    /// The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz's method).
    static func regularizedBeta(_ x: Double, _ a: Double, _ b: Double) -> Double {
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        let front = LibM.exp(
            LibM.logGamma(a + b) - LibM.logGamma(a) - LibM.logGamma(b) + a * LibM.log(x) + b * LibM.log(1 - x))
        if x > (a + 1) / (a + b + 2) { return 1 - regularizedBeta(1 - x, b, a) }
        let tiny = 1e-300
        var c = 1.0
        var d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var f = d
        for m in 1...300 {
            let m = Double(m)
            var numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
            d = 1 + numerator * d; if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c; if abs(c) < tiny { c = tiny }
            d = 1 / d
            f *= c * d
            numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
            d = 1 + numerator * d; if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c; if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = c * d
            f *= delta
            if abs(delta - 1) < 1e-15 { break }
        }
        return front * f / a
    }
}
