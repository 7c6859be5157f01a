/// A configuration mistake, naming the field.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The field path, e.g. `pairs[0].a.url`.
    public let field: String
    /// What is wrong with it.
    public let problem: String
    /// An error for `field`.
    public init(_ field: String, _ problem: String) {
        self.field = field
        self.problem = problem
    }
    /// `field: problem`.
    public var description: String { "\(field): \(problem)" }
}
