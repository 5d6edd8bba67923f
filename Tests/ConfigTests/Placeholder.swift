import Testing
@Test func configPlaceholder() {}
