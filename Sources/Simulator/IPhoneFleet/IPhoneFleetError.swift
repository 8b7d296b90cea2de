/// Why a simulated fleet could not be made: a flag or a profile file that says something wrong (a usage
/// mistake, which the CLI answers with its usage), or a service that refused (a failure). The message
/// names the flag, the file and line, or the address.
public struct IPhoneFleetError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// A mistake in what was asked, not a failure of what was asked for.
    public let isUsage: Bool

    static func usage(_ description: String) -> IPhoneFleetError {
        IPhoneFleetError(description: description, isUsage: true)
    }

    static func failure(_ description: String) -> IPhoneFleetError {
        IPhoneFleetError(description: description, isUsage: false)
    }
}
