// swift-tools-version:6.0
import PackageDescription

/// Release builds of the request-path modules skip dynamic exclusivity checks (measured: ~3 % of the
/// provider request path; ~5 % of a forecast, in DeviceRuntime and Forecast); debug builds and the tests
/// keep them.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "pushgate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pushgate", targets: ["pushgate"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // Typed values, the reason table, header and payload validation. No NIO.
        .target(name: "PushModel", swiftSettings: hotPath),
        // Work handed from event-loop code to a service's task group (no unstructured tasks).
        .target(name: "JobQueue"),
        // Child processes started with posix_spawn (`pushgate fleet`'s nodes and its PostgreSQL, the tests'
        // gateways and tools): not Foundation's `Process` (see the type's comment).
        .target(name: "ChildProcess"),
        // The silent-push policy: pure state machines (throttle, piggyback, deadlines, expiry). No I/O, no clock.
        .target(name: "PushPolicy", dependencies: ["PushModel"], swiftSettings: hotPath),
        // The gateway's decisions as one pure machine (the policy, the delivery queues, the channels, who is
        // connected): driven by the device hub on the wall clock and by the forecast in virtual time.
        .target(name: "GatewayCore", dependencies: ["PushModel", "PushPolicy"], swiftSettings: hotPath),
        // What the gateway measures: every metric's name, and the handles the request path records into
        // (swift-metrics; the gateway gives them a Prometheus factory).
        .target(
            name: "PushMetrics",
            dependencies: ["PushModel", .product(name: "CoreMetrics", package: "swift-metrics")],
            swiftSettings: hotPath),
        // The system's wall clock, the one seam where the I/O shells read the time (policy is handed it).
        .target(name: "WallClock", dependencies: ["PushModel"]),
        // The process's descriptor limit, which both sides size connections from.
        .target(name: "DescriptorLimit"),
        // Where the provider API hands accepted notifications: the intake protocol the device hub
        // implements (so neither imports the other).
        .target(
            name: "PushIntake",
            dependencies: ["PushModel", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: hotPath),
        // The door of each listener: connection caps (total, per source address) and the handshake timeout.
        .target(
            name: "ConnectionLimits",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        // A simulated iPhone's background rules (app states, background tasks, fetch, silent and location
        // wakes, background URL sessions) as a pure state machine per device. No NIO, no clock.
        .target(name: "DeviceRuntime", dependencies: ["PushModel"], swiftSettings: hotPath),
        // A day of a fleet in virtual time: the simulated iPhones and the gateway's policy on one event
        // queue, no sockets (`pushgate forecast`). No NIO, no clock.
        .target(
            name: "Forecast", dependencies: ["PushModel", "PushPolicy", "GatewayCore", "DeviceRuntime"],
            swiftSettings: hotPath),
        // The content server simulated apps fetch from: versioned manifest and items over HTTP/1.1, resumable,
        // paced, publishing on a schedule, logging who fetched what (`pushgate origin`, the demo's own).
        .target(
            name: "ContentOrigin",
            dependencies: [
                "PushModel", "DeviceProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The device protocol's messages (JSON over WebSocket). No NIO.
        .target(name: "DeviceProtocol"),
        // The device hub: device connections (WebSocket), the device registry, delivery, and the policy engine.
        .target(
            name: "DeviceHub",
            dependencies: [
                "DeviceProtocol", "PushModel", "PushPolicy", "GatewayCore", "PushIntake", "PushStore",
                "ConnectionLimits", "JobQueue", "WallClock",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // SQLite without a system library: vapor/sqlite-nio compiles SQLite from its sources (C target
        // `VaporCSQLite`); this is a thin layer over its C functions (connections, statements, rows bound
        // in place, the checkpointer), since SQLiteNIO's own API hops threads per query.
        .target(
            name: "EmbeddedSQLite",
            dependencies: [.product(name: "SQLiteNIO", package: "sqlite-nio")],
            swiftSettings: hotPath),
        // What must survive a restart: devices, tokens, notifications and budgets, behind one protocol
        // with in-memory, SQLite and PostgreSQL backends; group commit.
        .target(
            name: "PushStore",
            dependencies: [
                "PushModel", "PushPolicy",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "EmbeddedSQLite",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The simulated device: the tests, `pushgate simulate` and the load generator reuse it.
        .target(
            name: "DeviceAgent",
            dependencies: [
                "DeviceProtocol", "PushModel", "DeviceRuntime", "DescriptorLimit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // ES256 provider tokens, the key registry and the per-connection token state. No NIO.
        .target(
            name: "ProviderAuth",
            dependencies: [
                "PushModel",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: hotPath
        ),
        // libnghttp2 (C: the HTTP/2 library of nghttpd and curl), the provider API's other codec: the few
        // functions it uses declared from its public API, linked against the runtime library Debian's curl
        // depends on (libnghttp2.so.14), so no -dev package is needed (docs/provider-api.md, "The codec").
        .target(name: "CNGHTTP2", linkerSettings: [.linkedLibrary(":libnghttp2.so.14")]),
        // The HTTP/2 front door: listeners, the frame-level request handler, limits.
        .target(
            name: "ProviderAPI",
            dependencies: [
                "PushModel", "PushIntake", "ProviderAuth", "PushMetrics", "ConnectionLimits", "WallClock", "CNGHTTP2",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: hotPath
        ),
        // An HTTP/2 client of the provider API (pushgate send, tests, the load generator, and the node links).
        .target(
            name: "ProviderClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // A fleet of simulated iPhones as the CLI and the tests make one: the mix of kinds (`--iphones`,
        // the shipped profiles compiled in), the content scenario (origin, publications, announcements,
        // freshness figures), the Live Activity channels it announces on.
        .target(
            name: "IPhoneFleet",
            dependencies: [
                "PushModel", "DeviceRuntime", "DeviceAgent", "ContentOrigin", "LoadGenerator", "ProviderAuth",
                "ProviderClient", "JobQueue", "WallClock",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
            ],
            // The shipped kinds of iPhone (links to Config/iphone), compiled in: simulate, demo and forecast
            // run outside the repository too.
            resources: ["chat", "misbehaving", "news", "podcast", "sports"].map { .embedInCode("iphone/\($0).yaml") }
        ),
        // The load generator: open- and closed-loop HTTP/2 traffic to any APNs-compatible server, its
        // scenarios, measurements and reports (`pushgate bench`, `pushgate demo`); a content scenario's
        // announcements, and a simulated fleet's freshness figures (report, timeline, Prometheus text).
        .target(
            name: "LoadGenerator",
            dependencies: [
                "PushModel", "PushPolicy", "ProviderAuth", "ProviderClient", "DeviceRuntime",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // The files the gateway keeps in data_dir: the registries of provider keys, client certificates
        // and device tokens (read and reloaded by the gateway, edited by the CLI), the development
        // certificate authority, the enrolment secret.
        .target(
            name: "GatewayFiles",
            dependencies: [
                "PushModel", "ProviderAuth",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Yams", package: "Yams"),
            ]),
        // The admin API: its routes, the HTTP/1 server, the live feed and dashboard, the metrics it
        // exposes, its OpenAPI description, and its client (the CLI's lookups, the tests).
        .target(
            name: "AdminAPI",
            dependencies: [
                "PushModel", "PushPolicy", "PushMetrics", "PushStore", "DeviceHub", "ConnectionLimits", "JobQueue",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The links between the nodes of a fleet: a push stored on one node for a device another runs goes
        // to that node over HTTP/2 (its provider API), many pushes a request, with the fleet's own token.
        .target(
            name: "NodeLinks",
            dependencies: [
                "PushModel", "PushIntake", "ProviderAuth", "ProviderClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Configuration (each key declared once; file, environment, flags) and composition of the services.
        .target(
            name: "Gateway",
            dependencies: [
                "PushModel", "PushPolicy", "PushIntake", "ProviderAuth", "ProviderAPI", "DeviceHub", "ConnectionLimits",
                "NodeLinks",
                "PushStore", "AdminAPI", "GatewayFiles", "WallClock", "DescriptorLimit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Several gateway nodes on this machine on one PostgreSQL (`pushgate fleet`): where each node goes,
        // starting and stopping them (and the fleet's own PostgreSQL), what was started, and its status.
        .target(
            name: "GatewayNodes",
            dependencies: [
                "Gateway", "GatewayFiles", "AdminAPI", "DeviceHub", "PushStore", "ChildProcess",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "pushgate",
            dependencies: [
                "ContentOrigin", "WallClock", "ChildProcess", "AdminAPI", "GatewayFiles", "Gateway", "PushModel",
                "ProviderAuth", "ProviderAPI", "ProviderClient", "DeviceAgent", "DeviceProtocol", "DeviceHub",
                "DeviceRuntime", "LoadGenerator", "Forecast", "IPhoneFleet", "GatewayNodes",
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // Fuzzing: every parser of peer or user input as a function of bytes (Fuzz/run.sh builds the
        // driver with libFuzzer; FuzzRegressionTests replays the corpus through the same functions).
        .target(
            name: "FuzzTargets",
            dependencies: [
                "GatewayFiles", "PushModel", "ProviderAuth", "ProviderAPI", "PushIntake", "DeviceProtocol", "Gateway",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            path: "Fuzz/Targets"),
        .executableTarget(name: "pushgate-fuzz", dependencies: ["FuzzTargets"], path: "Fuzz/Driver"),
        // Benchmarks (not tests): Benchmarks/*.sh build and run them in release mode.
        .executableTarget(
            name: "PolicyBenchmark", dependencies: ["PushPolicy", "PushModel"], path: "Benchmarks/PolicyBenchmark",
            swiftSettings: hotPath),
        .testTarget(name: "PushModelTests", dependencies: ["PushModel"]),
        .testTarget(name: "EmbeddedSQLiteTests", dependencies: ["EmbeddedSQLite"]),
        .testTarget(
            name: "DeviceRuntimeTests",
            dependencies: ["DeviceRuntime", "DeviceProtocol", "PushModel", .product(name: "Yams", package: "Yams")]),
        .testTarget(name: "ForecastTests", dependencies: ["Forecast", "DeviceRuntime", "PushModel", "PushPolicy"]),
        .testTarget(name: "JobQueueTests", dependencies: ["JobQueue"]),
        .testTarget(name: "DeviceProtocolTests", dependencies: ["DeviceProtocol", "PushModel"]),
        .testTarget(
            name: "DeviceAgentTests",
            dependencies: [
                "DeviceAgent", "DeviceRuntime", "DescriptorLimit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        .testTarget(
            name: "ContentOriginTests",
            dependencies: [
                "ContentOrigin", "DeviceRuntime", "DeviceProtocol", "PushModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets", "ProviderAPI", "PushModel"]),
        .testTarget(name: "PushPolicyTests", dependencies: ["PushPolicy", "PushModel"]),
        .testTarget(name: "GatewayCoreTests", dependencies: ["GatewayCore", "PushPolicy", "PushModel"]),
        .testTarget(
            name: "PushStoreTests",
            dependencies: [
                "PushStore", "PushPolicy", "PushModel", "TestSupport", "EmbeddedSQLite",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "PushModel",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "DeviceHubTests",
            dependencies: [
                "GatewayFiles", "DeviceHub", "DeviceAgent", "DeviceProtocol", "PushModel", "PushPolicy", "GatewayCore",
                "ProviderAPI", "ProviderAuth",
                "ProviderClient", "Gateway", "TestSupport", "PushStore", "PushIntake",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ProviderAuthTests",
            dependencies: ["ProviderAuth", "PushModel", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "ProviderAPITests",
            dependencies: [
                "GatewayFiles", "ProviderAPI", "PushIntake", "ProviderAuth", "PushModel", "Gateway", "ProviderClient",
                "TestSupport", "ChildProcess", "CNGHTTP2", "NodeLinks",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "LoadGeneratorTests",
            dependencies: [
                "AdminAPI", "LoadGenerator", "Gateway", "DeviceAgent", "DeviceHub", "DeviceRuntime", "PushModel",
                "PushPolicy",
                "ProviderClient", "ProviderAuth",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // Child processes killed with SIGKILL and SIGTERM (needs the pushgate binary, built by `swift test`).
        .testTarget(
            name: "CrashSafetyTests",
            dependencies: [
                "AdminAPI", "DeviceHub", "GatewayFiles", "Gateway", "DeviceAgent", "ProviderAuth", "ProviderClient",
                "PushModel",
                "PushStore", "TestSupport", "DeviceProtocol", "WallClock", "ChildProcess",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "PushPolicy", "ContentOrigin", "DeviceRuntime", "LoadGenerator", "ChildProcess",
                .product(name: "AsyncHTTPClient", package: "async-http-client"), "IPhoneFleet", "AdminAPI",
                "GatewayFiles", "Gateway", "PushModel", "ProviderAuth", "ProviderClient", "DeviceAgent",
                "DeviceProtocol", "PushMetrics",
                "ConnectionLimits", "PushStore", "TestSupport", "Forecast", "DeviceHub", "ProviderAPI", "WallClock",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
    ]
)

// Where each module lives: Sources/<side>/<module>, so that the tree shows the architecture — what is
// shared (the model, the device protocol, the wall clock's seam), the gateway (policy, provider API,
// hub, store, admin, composition) and the simulator (the iPhone's rules, devices, content, load,
// forecast). The executable is Sources/pushgate.
let sides: [String: [String]] = [
    "Shared": [
        "PushModel", "WallClock", "JobQueue", "DeviceProtocol", "ChildProcess", "DescriptorLimit", "ProviderClient",
    ],
    "Gateway": [
        "PushPolicy", "GatewayCore", "PushMetrics", "PushIntake", "ConnectionLimits", "ProviderAuth", "CNGHTTP2",
        "ProviderAPI",
        "DeviceHub", "NodeLinks", "EmbeddedSQLite", "PushStore", "GatewayFiles", "AdminAPI", "Gateway", "GatewayNodes",
    ],
    "Simulator": [
        "DeviceRuntime", "DeviceAgent", "ContentOrigin", "Forecast", "LoadGenerator", "IPhoneFleet",
    ],
]
for (side, modules) in sides {
    for module in modules {
        guard let target = package.targets.first(where: { $0.name == module }) else {
            fatalError("Package.swift: the side \(side) names \(module), which is no target")
        }
        target.path = "Sources/\(side)/\(module)"
    }
}

// Every target: a module uses only what it imports (MemberImportVisibility), and existential types say
// `any` (ExistentialAny), so the compiler keeps the module arrows and imports honest.
for target in package.targets {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("MemberImportVisibility"), .enableUpcomingFeature("ExistentialAny"),
        ]
}
