#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's limit on open descriptors (the soft limit): the gateway's connection caps and the
/// simulator's connections to its content server are sized from it.
public enum DescriptorLimit {
    public static func current() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is all ones; anything past a million counts as a million.
        return Int(min(limit.rlim_cur, 1 << 20))
    }
}
