import Testing

@testable import Gateway

/// The admin token is compared without an early exit (its time does not tell how much of a guess was right).
@Suite struct AdminTokenTests {
    @Test func onlyTheSameTokenMatches() {
        #expect(AdminServer.sameInConstantTime("Bearer s3cret", "Bearer s3cret"))
        #expect(!AdminServer.sameInConstantTime("Bearer s3creT", "Bearer s3cret"))
        #expect(!AdminServer.sameInConstantTime("Bearer s3cre", "Bearer s3cret"), "a prefix")
        #expect(!AdminServer.sameInConstantTime("Bearer s3cret!", "Bearer s3cret"), "longer")
        #expect(!AdminServer.sameInConstantTime(nil, "Bearer s3cret"))
        #expect(!AdminServer.sameInConstantTime("", "Bearer s3cret"))
    }
}
