#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How long a transfer takes in a forecast: the request's latency, then its bytes at the link's rate,
/// a background session's slower (R9's slowdown); the discretionary delay is the runtime's own.
public struct LinkModel: Sendable, Equatable {
    /// Bytes per second a device's transfer gets; 0: unpaced (latency only, as on loopback).
    public var bytesPerSecond: Int
    /// From the request to its first byte, in milliseconds: the median when the latency is spread.
    public var latencyMilliseconds: Int64
    /// The latency's 90th percentile: transfers' latencies then spread log-normally between the median
    /// and it, as a real run's do on a loaded machine (a replay takes both from the run). Nil: every
    /// transfer's latency is the median.
    public var latencyP90Milliseconds: Int64?
    /// The manifest's size.
    public var manifestBytes: Int

    public init(
        bytesPerSecond: Int = 1_000_000, latencyMilliseconds: Int64 = 100, latencyP90Milliseconds: Int64? = nil,
        manifestBytes: Int = 120
    ) {
        self.bytesPerSecond = bytesPerSecond
        self.latencyMilliseconds = latencyMilliseconds
        self.latencyP90Milliseconds = latencyP90Milliseconds
        self.manifestBytes = manifestBytes
    }

    /// The latency of transfer `transfer` of device `device`: the same in every run of a scenario (and
    /// however its devices are sharded), drawn from the spread when there is one.
    func latency(device: Int, transfer: Int, seed: UInt64) -> Int64 {
        guard let p90 = latencyP90Milliseconds, p90 > latencyMilliseconds, latencyMilliseconds > 0 else {
            return latencyMilliseconds
        }
        // Two uniforms from the device's and transfer's numbers, then Box–Muller for a standard normal.
        let bits = Self.mix(seed ^ Self.mix(UInt64(device) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(transfer)))
        let u1 = (Double(bits >> 32) + 0.5) / 4_294_967_296
        let u2 = Double(bits & 0xFFFF_FFFF) / 4_294_967_296
        let normal = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        // The 90th percentile of a standard normal.
        let sigma = log(Double(p90) / Double(latencyMilliseconds)) / 1.281_551_6
        return Int64((Double(latencyMilliseconds) * exp(sigma * normal)).rounded())
    }

    /// Milliseconds to move `bytes` at `slowdown` after `latency`.
    func milliseconds(bytes: Int64, slowdown: Double, latency: Int64) -> Int64 {
        guard bytesPerSecond > 0 else { return latency }
        return latency + Int64((Double(bytes) * max(1, slowdown) * 1000 / Double(bytesPerSecond)).rounded(.up))
    }

    /// Bytes moved `elapsed` milliseconds after the start, of `bytes` in all, after `latency`.
    func bytes(after elapsed: Int64, of bytes: Int64, slowdown: Double, latency: Int64) -> Int64 {
        guard elapsed > latency else { return 0 }
        guard bytesPerSecond > 0 else { return bytes }
        let moved = Double(elapsed - latency) * Double(bytesPerSecond) / (1000 * max(1, slowdown))
        return min(bytes, Int64(moved))
    }

    /// SplitMix64's finaliser.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
