import IPhoneFleet
import ArgumentParser
import ContentOrigin
import DeviceAgent
import DeviceRuntime
import Foundation
import LoadGenerator
import NIOCore
import PushModel
import WallClock

/// The flags `pushgate simulate` and `pushgate demo` share for a fleet of iPhones and its content.
struct IPhoneOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Kinds of iPhone and their weights: names in Config/iphone (news, chat, podcast, misbehaving, sports) or YAML files.",
            valueName: "name=weight,…"))
    var iphones = IPhoneMix.defaultFlag

    @Option(
        help: ArgumentHelp(
            "The content server the apps fetch from (http://host:port serving /manifest and /items/<n>); default: a built-in one on a free loopback port.",
            valueName: "url"))
    var origin: String?

    @Option(help: "The built-in content server's item size, in bytes (an app's item_bytes overrides it).")
    var itemBytes = 200_000

    @Option(
        help: "The built-in content server's bytes per second per response (background sessions get less); 0: unpaced.")
    var linkBytesPerSecond = 0

    @Option(
        help:
            "Publish a new version every this many seconds (0: only at the start, and what the server publishes itself). Default: 300 in simulate, 5 in demo."
    )
    var publishEvery: Double?

    @Option(
        help:
            "Extra app opens per device per hour, added to every profile's users (so a short real-time run sees opens; the profiles' own habits are over a day). Default: 0 in simulate, 60 in demo."
    )
    var opensPerHour: Double?

    @Option(help: "Seed of the devices' runtimes and users (device i gets seed + i): the same seed, the same run.")
    var seed: UInt64 = 1

    func check() throws {
        guard itemBytes >= 1 else { throw ValidationError("--item-bytes: expected at least 1, got \(itemBytes)") }
        guard linkBytesPerSecond >= 0 else { throw ValidationError("--link-bytes-per-second: must not be negative") }
        if let publishEvery, !(publishEvery >= 0) { throw ValidationError("--publish-every: must not be negative") }
        if let opensPerHour, !(opensPerHour >= 0) { throw ValidationError("--opens-per-hour: must not be negative") }
        if let origin, URL(string: origin)?.scheme != "http" || URL(string: origin)?.host == nil {
            throw ValidationError("--origin: expected http://host:port, got '\(origin)'")
        }
    }

    /// The mix with the extra opens added.
    func mix(devices: Int, opensPerHour: Double) throws -> (
        IPhoneMix, [(name: String, profile: IPhoneProfile, devices: Int)]
    ) {
        let mix = try failing { try IPhoneMix(flag: iphones) }
        return (mix, try failing { try mix.counts(devices: devices, opensPerHour: opensPerHour) })
    }

    /// The content scenario and the fleet of iPhones that fetch from it (not started).
    /// `channels`: makes the broadcast channels the mix's Live Activities follow (nil: none are made,
    /// and activities on channels are not started).
    func start(
        devices: Int, endpoints: [DeviceAgent.Endpoint], enrolment: String?, opensPerHour: Double,
        channels: ((IPhoneMix) async throws -> [String: [String]])? = nil, group: any EventLoopGroup
    ) async throws -> (ContentScenario, SimulatedFleet, IPhoneMix, [String: [String]]) {
        let (mix, counts) = try mix(devices: devices, opensPerHour: opensPerHour)
        let made = try await channels?(mix) ?? [:]
        var settings = OriginServer.Settings()
        settings.itemBytes = itemBytes
        settings.linkBytesPerSecond = linkBytesPerSecond
        let scenario = try await ContentScenario(url: origin, settings: settings, group: group)
        let fleet = SimulatedFleet(
            endpoints: endpoints, mix: counts, origin: scenario.originURL, enrolment: enrolment, seed: seed,
            channels: made, group: group, clock: UnixTime.now)
        return (scenario, fleet, mix, made)
    }
}

/// Writes a fleet's figures as JSON and as an HTML page, when asked.
func write(_ figures: FleetFigures, json: String?, html: String?) throws {
    if let json {
        try figures.json().write(to: URL(fileURLWithPath: json))
        print("figures written to \(json)")
    }
    if let html {
        try figures.html.write(toFile: html, atomically: true, encoding: .utf8)
        print("report written to \(html)")
    }
}
