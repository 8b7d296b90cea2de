import ArgumentParser
import Foundation
import Gateway
import GatewayFiles

struct CertsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "certs", abstract: "Development TLS certificates and provider client certificates.",
        subcommands: [Init.self, Issue.self])

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Create the development CA and server certificate in data_dir/tls (serve does this on first start).")

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let configuration = try failing { try options.load() }
            let development = DevelopmentCertificates(dataDirectory: configuration.dataDirectory)
            let created = try development.ensure()
            print(created ? "created" : "exists:", development.caCertificatePath, development.serverCertificatePath)
        }
    }

    struct Issue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a provider client certificate bound to topics (certificate-based auth) and register it.")

        @OptionGroup var options: ConfigOptions

        @Option(help: "Bundle id the certificate may push to; repeatable.")
        var topic: [String]

        @Option(help: "Team id recorded with the certificate.")
        var teamId: String?

        @Option(help: "Limit to one environment: development or production.")
        var environment: String?

        @Option(help: "Directory for client.pem and client-key.pem.")
        var outputDirectory = "."

        func validate() throws {
            guard !topic.isEmpty else { throw ValidationError("give at least one --topic") }
            if let environment, environment != "development", environment != "production" {
                throw ValidationError("--environment must be development or production, got '\(environment)'")
            }
        }

        func run() async throws {
            let configuration = try failing { try options.load() }
            let development = DevelopmentCertificates(dataDirectory: configuration.dataDirectory)
            let issued = try development.issueClientCertificate(topic: topic[0], teamID: teamId)
            try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
            let certificatePath = (outputDirectory as NSString).appendingPathComponent("client.pem")
            let keyPath = (outputDirectory as NSString).appendingPathComponent("client-key.pem")
            try issued.certificate.write(toFile: certificatePath, atomically: true, encoding: .utf8)
            try issued.privateKey.write(toFile: keyPath, atomically: true, encoding: .utf8)
            chmod(keyPath, 0o600)
            try failing {
                try RegistryFiles.addCertificate(
                    .init(sha256: issued.sha256, team_id: teamId, topics: topic, environment: environment),
                    to: configuration.certificatesFile)
            }
            print("wrote \(certificatePath) and \(keyPath); sha256 \(issued.sha256)")
        }
    }
}
