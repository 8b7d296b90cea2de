import DeviceAgent
import DeviceHub
import Foundation
import Gateway
import TestSupport
import Testing

/// `/openapi.json` describes what the admin API answers: real answers of a gateway with a device (every
/// key declared, every required key present, each value of its type) and its error answers.
/// (`Interop/admin-api.sh` runs schemathesis on the same document in `.ci/run`.)
@Suite(.timeLimit(.minutes(5))) struct AdminAPIDocumentTests {
    @Test func realAnswersConformToTheDocument() async throws {
        try await GatewayWithDevice.run(topic: "com.example.openapi", settings: []) { setup in
            let id = "01a3185c-5000-7abc-8def-0123456789ab"
            #expect(try await setup.post(silent: false, id: id) == 200)
            let deviceID = try #require(setup.agent.identity?.deviceID)
            try await eventually("delivered") { setup.gateway.services.hub.counters.delivered == 1 }

            let (status, body) = try await setup.admin("/openapi.json")
            #expect(status == 200)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            #expect(
                Set(paths.keys) == [
                    "/health", "/ready", "/metrics", "/openapi.json", "/v1/counters", "/v1/notifications/{apnsID}",
                    "/v1/devices/{deviceID}", "/v1/tokens/{token}", "/v1/live", "/dashboard", "/v1/fleet",
                    "/v1/broadcasts",
                ])
            let checker = SchemaChecker(document: document)
            let requests: [(path: String, template: String, status: Int)] = [
                ("/health", "/health", 200), ("/ready", "/ready", 200), ("/v1/counters", "/v1/counters", 200),
                ("/v1/notifications/\(id)", "/v1/notifications/{apnsID}", 200),
                ("/v1/notifications/not-an-id", "/v1/notifications/{apnsID}", 400),
                ("/v1/notifications/01a3185c-5000-7abc-8def-000000000000", "/v1/notifications/{apnsID}", 404),
                ("/v1/devices/\(deviceID)", "/v1/devices/{deviceID}", 200),
                ("/v1/devices/nobody", "/v1/devices/{deviceID}", 404),
                ("/v1/tokens/\(setup.token)", "/v1/tokens/{token}", 200),
                ("/v1/tokens/zz", "/v1/tokens/{token}", 400),
                ("/v1/fleet", "/v1/fleet", 404), ("/v1/broadcasts", "/v1/broadcasts", 200),
            ]
            for request in requests {
                let (status, body) = try await setup.admin(request.path)
                #expect(status == request.status, "\(request.path): \(body)")
                let operation = try #require(paths[request.template]?["get"] as? [String: Any])
                let schema = try checker.responseSchema(operation, status: status)
                let value = try JSONSerialization.jsonObject(with: Data(body.utf8), options: .fragmentsAllowed)
                let problems = checker.problems(value, schema, at: request.path)
                #expect(problems.isEmpty, "\(problems)")
            }
        }
    }
}

extension AdminAPIDocumentTests {
    /// The checker finds what drift looks like (so that its silence above means something).
    @Test func theCheckerFindsUndeclaredMissingAndMistypedKeys() throws {
        let document: [String: Any] = [
            "components": [
                "schemas": ["Thing": ["type": "object", "required": ["a"], "properties": ["a": ["type": "integer"]]]]
            ]
        ]
        let checker = SchemaChecker(document: document)
        let schema = ["$ref": "#/components/schemas/Thing"]
        #expect(checker.problems(["a": 1], schema, at: "$").isEmpty)
        #expect(checker.problems(["a": 1, "b": 2], schema, at: "$") == ["$.b: not in the document"])
        #expect(checker.problems([String: Any](), schema, at: "$") == ["$.a: required, missing"])
        #expect(checker.problems(["a": "x"], schema, at: "$") == ["$.a: not an integer"])
    }
}

/// Just enough of JSON Schema for the document's own constructs: $ref, type, const, enum, properties,
/// required, additionalProperties, items, minimum.
struct SchemaChecker {
    let document: [String: Any]

    func resolve(_ schema: [String: Any]) -> [String: Any] {
        guard let reference = schema["$ref"] as? String else { return schema }
        var node: Any = document
        for part in reference.dropFirst(2).split(separator: "/") {
            node = (node as? [String: Any])?[String(part)] ?? [:]
        }
        return resolve(node as? [String: Any] ?? [:])
    }

    func responseSchema(_ operation: [String: Any], status: Int) throws -> [String: Any] {
        let responses = try #require(operation["responses"] as? [String: Any])
        let response = resolve(
            try #require(responses[String(status)] as? [String: Any], "status \(status) undocumented"))
        let content = try #require(response["content"] as? [String: Any])
        let json = try #require(content["application/json"] as? [String: Any])
        return resolve(try #require(json["schema"] as? [String: Any]))
    }

    func problems(_ value: Any, _ schema: [String: Any], at path: String) -> [String] {
        let schema = resolve(schema)
        var found: [String] = []
        if let constant = schema["const"], "\(constant)" != "\(value)" { found.append("\(path): not \(constant)") }
        if let choices = schema["enum"] as? [Any], !choices.contains(where: { "\($0)" == "\(value)" }) {
            found.append("\(path): \(value) is none of \(choices)")
        }
        if let minimum = schema["minimum"] as? Double, let number = value as? Double, number < minimum {
            found.append("\(path): below \(minimum)")
        }
        switch schema["type"] as? String {
        case "object":
            guard let object = value as? [String: Any] else { return found + ["\(path): not an object"] }
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                found.append("\(path).\(key): required, missing")
            }
            for (key, member) in object {
                if let declared = properties[key] {
                    found += problems(member, declared, at: "\(path).\(key)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    found += problems(member, additional, at: "\(path).\(key)")
                } else {
                    found.append("\(path).\(key): not in the document")
                }
            }
        case "array":
            guard let array = value as? [Any] else { return found + ["\(path): not an array"] }
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { found += problems(item, items, at: "\(path)[\(index)]") }
            }
        case "string": if !(value is String) { found.append("\(path): not a string") }
        case "boolean": if !(value is Bool) { found.append("\(path): not a boolean") }
        case "integer":
            let number = value as? NSNumber
            if number == nil || number!.doubleValue.rounded() != number!.doubleValue {
                found.append("\(path): not an integer")
            }
        case "number": if !(value is NSNumber) { found.append("\(path): not a number") }
        default: break
        }
        return found
    }
}
