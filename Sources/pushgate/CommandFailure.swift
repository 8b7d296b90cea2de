/// A command that ran and failed (a refusal, a timeout): ArgumentParser prints `Error: <description>`
/// and exits with status 1, without the usage text a mistyped flag (`ValidationError`) gets.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
