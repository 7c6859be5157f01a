import Testing

/// PLACEHOLDER: replaced by real tests.
@Test func placeholder() {}
