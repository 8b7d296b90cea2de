/// Apple's `apns-unique-id`: in the development environment APNs answers a push with a second id, its
/// own, that names the push in the Push Notifications Console's delivery log (the `apns-id` is the
/// provider's choice and may repeat). Pushgate derives it from the apns-id by a fixed permutation of the
/// 128 bits — four Feistel rounds over the two halves, each mixed by SplitMix64's finaliser — so it
/// needs no storage, is the same on every node and after a restart, looks random like Apple's, and
/// leads back to the apns-id for a lookup. It is an identifier, not a secret: the keys are constants.
extension APNsID {
    /// The round keys (arbitrary odd constants).
    private static let roundKeys: [UInt64] = [
        0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93,
    ]

    private static func mix(_ value: UInt64, _ key: UInt64) -> UInt64 {
        var z = value ^ key
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The `apns-unique-id` of the push with this apns-id.
    public var uniqueID: APNsID {
        var (left, right) = (high, low)
        for key in Self.roundKeys { (left, right) = (right, left ^ Self.mix(right, key)) }
        return APNsID(high: left, low: right)
    }

    /// The apns-id of the push whose `apns-unique-id` is `uniqueID` (the inverse of `uniqueID`).
    public init(uniqueID: APNsID) {
        var (left, right) = (uniqueID.high, uniqueID.low)
        for key in Self.roundKeys.reversed() { (left, right) = (right ^ Self.mix(left, key), left) }
        self.init(high: left, low: right)
    }
}
