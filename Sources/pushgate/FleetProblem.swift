import DeviceAgent
import GatewayFiles

/// What a device-side command says when its fleet cannot run: what was refused and how to fix it.
extension FleetError {
    /// The message, naming the flags and settings that fix it. `dataDir`: where the secret was read from
    /// (nil when --enrolment-secret gave it).
    func explained(host: String, port: Int, dataDir: String?) -> String {
        switch self {
        case .refused("auth_failed", let devices, let total):
            let source =
                dataDir.map { "the secret read from \(EnrolmentSecret.path(dataDirectory: $0))" }
                ?? "the secret given with --enrolment-secret"
            return
                "the gateway at \(host):\(port) refused \(devices) of \(total) devices' registration (auth_failed): "
                + "\(source) is not its enrolment secret. Give the gateway's devices.enrolment_secret with "
                + "--enrolment-secret, or --data-dir naming the gateway's data directory (it keeps the secret it "
                + "made in \(EnrolmentSecret.fileName) there)."
        case .refused("enrolment_limited", let devices, let total):
            return
                "the gateway at \(host):\(port) refused \(devices) of \(total) devices' registration "
                + "(enrolment_limited): this address registered more devices per minute than it allows. Raise "
                + "devices.enrolments_per_minute_per_address on the gateway (0: no limit), or enrol from loopback."
        case .refused(let reason, let devices, let total):
            return "the gateway at \(host):\(port) refused \(devices) of \(total) devices (\(reason))"
        case .notConnected(let connected, let total, let seconds):
            return
                "only \(connected) of \(total) devices connected and installed their apps in \(seconds) s: is a "
                + "gateway's device port at \(host):\(port) (--host, --port) and reachable?"
        }
    }
}
