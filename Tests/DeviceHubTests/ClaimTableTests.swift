import Testing

@testable import DeviceHub

/// The claim bookkeeping with plain values: both orders of a claim and a routed push, concurrent
/// claims of one device, and placement by owner.
@Suite struct ClaimTableTests {
    @Test func placementFollowsTheOwner() {
        let table = ClaimTable<String>()
        #expect(table.place(1, owner: nil, me: "a") == .here, "no owner recorded: this node")
        #expect(table.place(1, owner: "a", me: "a") == .here)
        #expect(table.place(1, owner: "b", me: "a") == .elsewhere("b"))
        #expect(table.place(1, owner: "b", me: nil) == .elsewhere("b"))
    }

    @Test func aPushArrivingDuringAClaimIsDecidedAfterIt() {
        // The claim first, then the push: the push waits, and runs when the claim ends.
        var table = ClaimTable<String>()
        let r1 = table.begin(1, then: "let the device in")
        #expect(r1)
        #expect(table.place(1, owner: "b", me: "a") == nil)
        table.wait(1, "routed push")
        let r2 = table.finish(1)
        #expect(r2 == ["let the device in", "routed push"])
        #expect(table.place(1, owner: "a", me: "a") == .here, "then it runs here")
        let r3 = table.finish(1)
        #expect(r3.isEmpty)
    }

    @Test func aPushPlacedBeforeTheClaimGoesToTheOldOwner() {
        // The push first (placed on the old owner), then the claim: the push is not held by the claim;
        // the hub looks at it again once committed and runs it here if the claim took the device.
        var table = ClaimTable<String>()
        #expect(table.place(1, owner: "b", me: "a") == .elsewhere("b"))
        let r4 = table.begin(1, then: "let the device in")
        #expect(r4)
        #expect(table.isClaiming(1))
        let r5 = table.finish(1)
        #expect(r5 == ["let the device in"])
    }

    @Test func concurrentClaimsOfOneDeviceMakeOneStoreClaim() {
        var table = ClaimTable<String>()
        let r6 = table.begin(7, then: "first connection")
        #expect(r6)
        let r7 = table.begin(7, then: "second connection")
        #expect(!r7, "waits for the first claim")
        let r8 = table.begin(8, then: "another device")
        #expect(r8, "claims of other devices are independent")
        let r9 = table.finish(7)
        #expect(r9 == ["first connection", "second connection"])
        #expect(!table.isClaiming(7))
        #expect(table.isClaiming(8))
    }
}
