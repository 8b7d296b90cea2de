/// Comparison of secrets (the admin token, a device's secret hash, the enrolment secret) in time that
/// depends only on the expected value's length: where a wrong guess first differs is not measurable
/// from outside.
public enum ConstantTime {
    public static func equal(_ presented: some Collection<UInt8>, _ expected: some Collection<UInt8>) -> Bool {
        let given = Array(presented)
        let wanted = Array(expected)
        var difference = UInt8(given.count == wanted.count ? 0 : 1)
        for index in wanted.indices {
            difference |= wanted[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }
}
