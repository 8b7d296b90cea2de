import PushModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension UnixTime {
    /// The system's wall clock. Only the I/O shell calls this; policy receives the value.
    @Sendable public static func now() -> UnixTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UnixTime(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }
}
