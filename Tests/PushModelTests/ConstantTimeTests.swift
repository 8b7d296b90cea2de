import PushModel
import Testing

/// Secrets are compared without an early exit (the time does not tell how much of a guess was right).
@Suite struct ConstantTimeTests {
    @Test func onlyTheSameSecretMatches() {
        func same(_ presented: String, _ expected: String) -> Bool { ConstantTime.equal(presented.utf8, expected.utf8) }
        #expect(same("Bearer s3cret", "Bearer s3cret"))
        #expect(!same("Bearer s3creT", "Bearer s3cret"))
        #expect(!same("Bearer s3cre", "Bearer s3cret"), "a prefix")
        #expect(!same("Bearer s3cret!", "Bearer s3cret"), "longer")
        #expect(!same("", "Bearer s3cret"))
        #expect(ConstantTime.equal([UInt8](), [UInt8]()))
        #expect(!ConstantTime.equal([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
    }
}
