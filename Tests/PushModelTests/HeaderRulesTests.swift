import Testing

@testable import PushModel

@Suite struct HeaderRulesTests {
    func head(_ build: (inout RequestHead) -> Void) -> RequestHead {
        var head = RequestHead()
        head.method = "POST"
        head.path = "/3/device/" + String(repeating: "a", count: 64)
        head.topic = "com.example.app"
        build(&head)
        return head
    }

    @Test func parsesTypedValues() throws {
        let parsed = try head {
            $0.set(.apnsID, "123E4567-E89B-12D3-A456-426614174000")
            $0.set(.apnsPushType, "voip")
            $0.set(.apnsPriority, "5")
            $0.set(.apnsExpiration, "1800000000")
            $0.set(.apnsCollapseID, "c")
        }.parse().get()
        #expect(parsed.apnsID?.value == "123E4567-E89B-12D3-A456-426614174000")
        #expect(parsed.pushType == .voip)
        #expect(parsed.priority == .conservePower)
        #expect(parsed.expiration == .at(unixSeconds: 1_800_000_000))
        #expect(parsed.collapseID?.value == "c")
        #expect(parsed.deviceToken.hex == String(repeating: "a", count: 64))
    }

    @Test func duplicateHeadersAreNamed() {
        let parsed = head {
            $0.set(.apnsTopic, "a")
            $0.set(.apnsTopic, "b")
        }
        #expect(parsed.duplicated == .apnsTopic)
        #expect(parsed.parse().failureReason == .duplicateHeaders)
    }

    @Test func tokenCaseIsNormalised() throws {
        let upper = try head { $0.path = "/3/device/" + String(repeating: "AB", count: 32) }.parse().get()
        #expect(upper.deviceToken.hex == String(repeating: "ab", count: 32))
        #expect(
            head { $0.path = "/3/device/" + String(repeating: "a", count: 63) }.parse().failureReason == .badDeviceToken
        )
        #expect(
            head { $0.path = "/3/device/" + String(repeating: "a", count: 66) }.parse(tokenLengths: 64...200)
                .failureReason == nil)
    }

    @Test func headerNamesRoundTrip() {
        for name in HeaderName.allCases { #expect(HeaderName(wireName: name.rawValue) == name) }
        #expect(HeaderName(wireName: "apns-unknown") == nil)
        #expect(HeaderName(wireName: "APNS-ID") == nil)
    }

    @Test func pushTypeInferenceAndTopics() {
        let silent = PayloadSummary.silent
        #expect(PushType.infer(topic: Topic("com.a.voip")!, payload: silent) == .voip)
        #expect(PushType.infer(topic: Topic("com.a.voip-ptt")!, payload: silent) == .pushtotalk)
        #expect(PushType.infer(topic: Topic("com.a.push-type.liveactivity")!, payload: silent) == .liveactivity)
        #expect(PushType.infer(topic: Topic("com.a")!, payload: silent) == .background)
        #expect(PushType.infer(topic: Topic("com.a")!, payload: PayloadSummary()) == .alert)
        #expect(Topic("com.a.complication")!.bundleID(for: .complication) == "com.a")
        #expect(Topic("com.a")!.bundleID(for: .complication) == nil)
        #expect(Topic(".voip")!.bundleID(for: .voip) == nil)
        #expect(PushType.allCases.count == 11)
    }

    @Test func classification() {
        #expect(NotificationClass.classify(pushType: .alert, payload: .silent) == .silent)
        #expect(NotificationClass.classify(pushType: .background, payload: .silent) == .silent)
        var alerting = PayloadSummary()
        alerting.hasBadge = true
        #expect(NotificationClass.classify(pushType: .alert, payload: alerting) == .alerting)
        #expect(NotificationClass.classify(pushType: .voip, payload: alerting) == .other)
        #expect(NotificationClass.classify(pushType: .alert, payload: PayloadSummary()) == .other)
    }

    @Test func generatedIDsAreCanonicalLowerCase() {
        for _ in 0..<100 {
            let id = APNsID.generate()
            #expect(APNsID(header: id.value) != nil)
            #expect(id.value == id.value.lowercased())
        }
    }

    @Test func hexRoundTripsAndRefusesWhatIsNotHex() {
        #expect(Hex.encode([0, 15, 16, 255]) == "000f10ff")
        #expect(Hex.decode("000f10FF") == [0, 15, 16, 255])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func timeOrderedIDsSortByTheirMillisecond() throws {
        var random = FastRandom()
        let earlier = APNsID.generate(at: UnixTime(milliseconds: 1_800_000_000_000), using: &random)
        let later = APNsID.generate(at: UnixTime(milliseconds: 1_800_000_000_001), using: &random)
        #expect(earlier.value.hasPrefix("01a3185c-5000-7"), "48 bits of milliseconds, then version 7")
        #expect(earlier.value < later.value)
        let variant = try #require(earlier.value.split(separator: "-").dropFirst(3).first?.first)
        #expect("89ab".contains(variant), "RFC 4122 variant")
        #expect(APNsID(header: later.value) == later)
    }

    @Test(arguments: [
        "0a9f4c1e-7b2d-4e8f-9a3c-5d6e7f8a9b0c", "0A9F4C1E-7B2D-4E8F-9A3C-5D6E7F8A9B0C",
        "0a9F4c1E-7b2D-4E8f-9A3c-5d6E7f8A9b0C",
    ])
    func idsAreAnsweredInTheCaseSent(text: String) {
        let id = APNsID(header: text)
        #expect(id?.value == text)
        #expect(id == APNsID(header: text.lowercased()), "compared as UUIDs, whatever the case")
    }

    @Test func tokenBucket() {
        let start = UnixTime(seconds: 100)
        let rate = TokenBucket.Rate(capacity: 2, refillIntervalMilliseconds: 1000)
        var bucket = TokenBucket(now: start)
        #expect(bucket.isUntouched && bucket.isFull(rate, at: start))
        let taken = [
            bucket.take(rate, now: start), bucket.take(rate, now: start), bucket.take(rate, now: start),
            bucket.take(rate, now: start.adding(milliseconds: 999)),
            bucket.take(rate, now: start.adding(milliseconds: 1000)),
        ]
        #expect(taken == [true, true, false, false, true])
        #expect(!bucket.hasToken(rate, at: start.adding(milliseconds: 1999)))
        #expect(bucket.hasToken(rate, at: start.adding(milliseconds: 2000)))
        #expect(bucket.isFull(rate, at: start.adding(seconds: 10)))
        // A smaller capacity cuts a fuller bucket at once; a token given back never overflows it.
        let later = start.adding(seconds: 10)
        #expect(bucket.left(TokenBucket.Rate(capacity: 1, refillIntervalMilliseconds: 1000), now: later) == 1)
        bucket.refill(rate, to: later)
        bucket.giveBack(capacity: 2)
        #expect(bucket.left(rate, now: later) == 2)
        bucket.empty()
        #expect(bucket.left(rate, now: later) == 0 && bucket.tokens == 0 && !bucket.isUntouched)
        #expect(bucket.left(rate, now: later.adding(milliseconds: 1000)) == 1)
    }
}

extension PayloadSummary {
    static var silent: PayloadSummary {
        var summary = PayloadSummary()
        summary.contentAvailable = true
        return summary
    }
}

extension Result where Failure == Rejection {
    var failureReason: RejectionReason? {
        if case .failure(let rejection) = self { return rejection.reason }
        return nil
    }
}
