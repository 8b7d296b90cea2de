import Foundation
import Testing
import Yams

@testable import Gateway

/// The image's and compose file's settings are configuration keys with valid values: a renamed key
/// would otherwise be ignored with a warning in a container nobody reads the log of. (docker/check.sh
/// checks that the image's build stage builds.)
@Suite struct ContainerFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// `ENV` instructions of the Dockerfile's last stage, continuation lines joined.
    static func imageEnvironment() throws -> [String: String] {
        let joined = try text("docker/Dockerfile").replacingOccurrences(of: "\\\n", with: " ")
        let lastStage = joined.components(separatedBy: "\nFROM ").last ?? joined
        var environment: [String: String] = [:]
        for line in lastStage.split(separator: "\n") where line.hasPrefix("ENV ") {
            for pair in line.dropFirst(4).split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { environment[String(parts[0])] = String(parts[1]) }
            }
        }
        return environment
    }

    /// Each service's `environment` mapping, with YAML merge keys (`<<: *shared`) followed.
    static func composeEnvironments() throws -> [String: [String: String]] {
        let root = try #require(try Yams.compose(yaml: text("docker/compose.yaml")))
        func flattened(_ node: Node) -> [String: String] {
            guard let mapping = node.mapping else { return [:] }
            var values: [String: String] = [:]
            for (key, value) in mapping {
                if key.string == "<<" {
                    values.merge(flattened(value)) { mine, _ in mine }
                } else if let name = key.string, let scalar = value.string {
                    values[name] = scalar
                }
            }
            return values
        }
        var result: [String: [String: String]] = [:]
        for (name, service) in root["services"]?.mapping ?? [:] {
            guard let name = name.string, let environment = service["environment"] else { continue }
            result[name] = flattened(environment)
        }
        return result
    }

    @Test func theImagesVariablesAreKeysWithValidValues() throws {
        let image = try Self.imageEnvironment()
        #expect(image["PUSHGATE_CONFIG"] == "/etc/pushgate/pushgate.yaml")
        #expect(try Self.text("docker/Dockerfile").contains("COPY Config/pushgate.yaml /etc/pushgate/pushgate.yaml"))
        let raw = try RawConfiguration(
            fileYAML: Self.text("Config/pushgate.yaml"), filePath: "/etc/pushgate/pushgate.yaml",
            environment: image)
        #expect(raw.warnings.isEmpty, "\(raw.warnings)")
        _ = try GatewayConfiguration(raw)
        #expect(image.keys.filter { $0.hasPrefix("PUSHGATE_") }.count >= 4)
    }

    @Test func composesVariablesAreKeysWithValidValues() throws {
        let image = try Self.imageEnvironment()
        let services = try Self.composeEnvironments()
        #expect(Set(services.keys) == ["postgres", "node-1", "node-2", "node-3"], "as `pushgate fleet up --nodes 3`")
        for (name, environment) in services where name.hasPrefix("node") {
            #expect(environment["PUSHGATE_STORE_BACKEND"] == "postgres", "\(name)")
            let raw = try RawConfiguration(
                fileYAML: Self.text("Config/pushgate.yaml"), filePath: "/etc/pushgate/pushgate.yaml",
                environment: image.merging(environment) { _, service in service })
            #expect(raw.warnings.isEmpty, "\(name): \(raw.warnings)")
            let configuration = try GatewayConfiguration(raw)
            #expect(configuration.store.backend == .postgres, "\(name)")
        }
        // The nodes differ in their node id.
        let ids = ["node-1", "node-2", "node-3"].compactMap { services[$0]?["PUSHGATE_STORE_POSTGRES_NODE_ID"] }
        #expect(Set(ids).count == 3)
    }
}
