import AdminAPI
import DeviceHub
import Foundation
import Logging
import ProviderAPI
import PushModel
import PushPolicy
import Testing

@testable import Gateway

@Suite struct ConfigurationTests {
    @Test func defaultsAreValid() throws {
        let configuration = try GatewayConfiguration(RawConfiguration())
        #expect(configuration.tlsListener.port == 2197)
        #expect(configuration.h2cListener.port == 2198)
        #expect(configuration.provider.environment == .development)
        #expect(configuration.keysFile == "./data/provider-keys.yaml")
    }

    /// Code that builds a settings value without a configuration (the forecast's policy, the tests, a
    /// hub of its own) gets the same defaults as `pushgate serve`: each struct's own defaults are its
    /// keys' defaults.
    @Test func eachSettingsDefaultsAreItsKeysDefaults() throws {
        let configuration = try GatewayConfiguration(RawConfiguration())
        #expect(configuration.policy == PolicySettings())
        #expect(configuration.provider == ProviderSettings())
        #expect(configuration.adminLive == LiveFeedSettings())
        #expect(configuration.store.cluster == ClusterSettings())
        var store = configuration.store
        store.nodeID = ""  // settled from the host name and the device port
        #expect(store == StoreSettings())
        var hub = configuration.hub
        #expect(hub.enrolmentSecret == nil, "none configured: data_dir's, read at start")
        hub.enrolmentSecret = nil
        #expect(hub == HubSettings())
    }

    @Test func keyNamesAndVariablesAreUnique() {
        #expect(Set(ConfigKeys.all.map(\.name)).count == ConfigKeys.all.count)
        #expect(Set(ConfigKeys.all.map(\.environmentVariable)).count == ConfigKeys.all.count)
    }

    /// Each key arrives through each path: file, environment, flag — the later one winning.
    @Test(arguments: ConfigKeys.all.map(\.name))
    func everyKeyArrivesThroughEveryPath(_ name: String) throws {
        let key = try #require(ConfigKeys.byName[name])
        let parts = name.split(separator: ".")
        var yaml = ""
        for (depth, part) in parts.enumerated() {
            yaml +=
                String(repeating: "  ", count: depth) + part + ":"
                + (depth == parts.count - 1 ? " \"file-value\"\n" : "\n")
        }
        let fromFile = try RawConfiguration(fileYAML: yaml, filePath: "test.yaml")
        #expect(fromFile.value(name).value == "file-value")
        #expect(fromFile.value(name).source == .file("test.yaml"))
        let fromEnvironment = try RawConfiguration(fileYAML: yaml, environment: [key.environmentVariable: "env-value"])
        #expect(fromEnvironment.value(name).value == "env-value")
        let fromFlag = try RawConfiguration(
            fileYAML: yaml, environment: [key.environmentVariable: "env-value"], flags: ["\(name)=flag-value"])
        #expect(fromFlag.value(name).value == "flag-value")
        #expect(fromFlag.value(name).source == .flag)
    }

    @Test func badValuesNameTheKeyAndTheSource() {
        #expect(
            throws: ConfigError(
                key: "provider.tls.port", source: .flag, message: "expected a whole number from 0 to 65535, got '70000'"
            )
        ) {
            try GatewayConfiguration(RawConfiguration(flags: ["provider.tls.port=70000"]))
        }
        #expect(
            throws: ConfigError(
                key: "environment", source: .environment("PUSHGATE_ENVIRONMENT"),
                message: "expected development or production, got 'staging'")
        ) {
            try GatewayConfiguration(RawConfiguration(environment: ["PUSHGATE_ENVIRONMENT": "staging"]))
        }
        #expect(
            throws: ConfigError(
                key: "provider.h2c.enabled", source: .file("x.yaml"), message: "expected true or false, got 'maybe'")
        ) {
            try GatewayConfiguration(
                RawConfiguration(fileYAML: "provider:\n  h2c:\n    enabled: maybe\n", filePath: "x.yaml"))
        }
    }

    @Test func aModuleLogsAtItsOwnLevel() throws {
        let configuration = try GatewayConfiguration(
            RawConfiguration(flags: ["log.level=notice", "log.modules=store=debug, cluster=error"]))
        #expect(configuration.logLevel(forLabel: "pushgate.store") == .debug)
        #expect(configuration.logLevel(forLabel: "pushgate.store.postgres") == .debug)
        #expect(configuration.logLevel(forLabel: "pushgate.cluster") == .error)
        #expect(configuration.logLevel(forLabel: "pushgate.devices") == .notice)
        #expect(configuration.logLevel(forLabel: "somebody.else") == .notice)
        #expect(
            throws: ConfigError(
                key: "log.modules", source: .flag,
                message:
                    "expected module=level pairs separated by commas (modules: provider, channels, devices, store, cluster, admin; levels: trace, debug, info, notice, warning, error, critical), got 'polcy=debug'"
            )
        ) {
            try GatewayConfiguration(RawConfiguration(flags: ["log.modules=store=debug,polcy=debug"]))
        }
    }

    @Test func secretsAreMaskedWhenPrinted() {
        #expect(ConfigKeys.printable("admin.token", "s3cret") == "***")
        #expect(ConfigKeys.printable("admin.token", "") == "")
        #expect(ConfigKeys.printable("store.postgres.url", "postgres://u:pw@h:5432/db") == "postgres://u:***@h:5432/db")
        #expect(ConfigKeys.printable("log.level", "debug") == "debug")
    }

    @Test func unknownKeysAreRefusedWherever() {
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "provider:\n  tsl:\n    port: 1\n") }
        #expect(throws: ConfigError.self) { try RawConfiguration(flags: ["provider.tsl.port=1"]) }
        #expect(throws: ConfigError.self) { try RawConfiguration(flags: ["provider.tls.port"]) }
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "- a\n- b\n") }
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "provider: [\n") }
        // Keys that are no plain text (fuzzing found that Yams' `load` traps on them) and lists.
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "? [a, b]\n: 1\n") }
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "provider:\n  ? {a: 1}\n  : 2\n") }
        #expect(throws: ConfigError.self) { try RawConfiguration(fileYAML: "log:\n  level: [info]\n") }
        // Variables that are not keys are left alone.
        #expect(throws: Never.self) {
            try RawConfiguration(environment: ["PUSHGATE_CONFIG": "x.yaml", "HOME": "/root"])
        }
    }

    /// A wrapper script's PUSHGATE_BIN, or a typo, is named in a warning and does not stop the command; a
    /// known key with a bad value still does.
    @Test func anUnknownPushgateVariableIsAWarningNotAnError() throws {
        let raw = try RawConfiguration(environment: [
            "PUSHGATE_BIN": "/opt/pushgate", "PUSHGATE_PROVIDER_TSL_PORT": "1",
        ])
        #expect(raw.warnings.count == 2)
        #expect(raw.warnings.contains { $0.contains("PUSHGATE_BIN") && $0.contains("ignored") })
        #expect(try GatewayConfiguration(raw).tlsListener.port == 2197)
        #expect(throws: ConfigError.self) {
            try GatewayConfiguration(RawConfiguration(environment: ["PUSHGATE_PROVIDER_TLS_PORT": "tls"]))
        }
    }

    @Test func policySettingsArriveTyped() throws {
        let configuration = try GatewayConfiguration(
            RawConfiguration(flags: [
                "policy.held.storage=up_to", "policy.held.limit=7", "policy.piggyback.alert_scope=same_app",
                "policy.budget.capacity=2", "policy.cooling.slowdown=8",
            ]))
        #expect(configuration.policy.heldStorage == .upTo(7))
        #expect(configuration.policy.alertPiggybackScope == .sameApp)
        #expect(configuration.policy.budgetCapacity == 2)
        #expect(configuration.policy.coolingSlowdown == 8)
        #expect(throws: ConfigError.self) {
            try GatewayConfiguration(RawConfiguration(flags: ["policy.held.storage=all"]))
        }
    }

    @Test func crossKeyRules() {
        #expect(throws: ConfigError.self) {
            try GatewayConfiguration(RawConfiguration(flags: ["provider.device_token.min_length=80"]))
        }
        #expect(throws: ConfigError.self) {
            try GatewayConfiguration(RawConfiguration(flags: ["provider.tls.certificate=/x.pem"]))
        }
    }

    /// Config/pushgate.yaml documents every key at its default: it is the rendered table.
    @Test func shippedFileIsTheRenderedTable() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let shipped = try String(contentsOf: root.appendingPathComponent("Config/pushgate.yaml"), encoding: .utf8)
        #expect(
            shipped == ConfigDocument.yaml(), "regenerate with: swift run pushgate config --yaml > Config/pushgate.yaml"
        )
        let raw = try RawConfiguration(fileYAML: shipped)
        for key in ConfigKeys.all { #expect(raw.value(key.name).value == key.defaultValue) }
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(
            readme.contains(ConfigDocument.markdown()),
            "regenerate the README's table with: swift run pushgate config --markdown")
    }
}
