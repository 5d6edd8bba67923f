import Testing
@Test func physioPlaceholder() {}
