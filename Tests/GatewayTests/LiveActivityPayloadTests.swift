import Testing

@testable import DeviceAgent

/// What a simulated device reads from an ActivityKit push beside its `aps` event: whether it alerts
/// (an `aps.alert` lights the device, [LA]), and the content version an announcement carries.
@Suite struct LiveActivityPayloadTests {
    @Test func anAlertAndAVersionAreRead() {
        let update = #"{"aps":{"event":"update","timestamp":1,"content-state":{"version":7}},"version":7}"#
        #expect(LiveActivityPayload.version(update) == 7)
        #expect(!LiveActivityPayload.alerts(update))
        let alerting =
            #"{"aps":{"event":"update","timestamp":1,"content-state":{"home":1},"alert":{"title":"Goal"}}}"#
        #expect(LiveActivityPayload.alerts(alerting))
        #expect(LiveActivityPayload.version(alerting) == nil, "no version in its content")
        #expect(LiveActivityPayload.version("not json") == nil && !LiveActivityPayload.alerts("[]"))
    }
}
