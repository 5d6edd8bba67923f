import Testing
@Test func dbusPlaceholder() {}
