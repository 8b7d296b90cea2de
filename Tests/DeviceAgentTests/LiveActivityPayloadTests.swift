import DeviceRuntime
import Testing

@testable import DeviceAgent

/// What a simulated device reads from an ActivityKit push beside its `aps` event: whether it alerts
/// (an `aps.alert` lights the device, [LA]), and the content version an announcement carries.
@Suite struct LiveActivityPayloadTests {
    @Test func anAlertAndAVersionAreRead() {
        let update = LiveActivityPayload(
            #"{"aps":{"event":"update","timestamp":1800000000,"content-state":{"version":7}},"version":7}"#)
        #expect(update.version == 7 && !update.alerts)
        #expect(
            update.push == LiveActivityPush(event: .update, timestamp: 1_800_000_000, contentState: #"{"version":7}"#))
        let alerting = LiveActivityPayload(
            #"{"aps":{"event":"update","timestamp":1800000000,"content-state":{"home":1},"alert":{"title":"Goal"}}}"#)
        #expect(alerting.alerts)
        #expect(alerting.version == nil, "no version in its content")
        for text in ["not json", "[]", #"{"aps":{"alert":"x"}}"#] {
            let payload = LiveActivityPayload(text)
            #expect(payload.push == nil && payload.version == nil)
        }
        #expect(LiveActivityPayload(#"{"aps":{"alert":"x"}}"#).alerts, "an alert without an event still alerts")
    }
}
