import SwitchboardCore

/// A function of the exposed schema, as `/rest/v1/rpc/<name>` calls it (filled by introspection).
public struct PostgRESTFunction: Sendable, Equatable {
    /// One input argument.
    public struct Argument: Sendable, Equatable {
        /// Argument name (what the caller's JSON keys or query parameters name).
        public var name: String
        /// PostgreSQL type name as `format_type` prints it.
        public var type: String
        /// Whether the argument has a default (the caller may leave it out).
        public var hasDefault: Bool

        /// Creates an argument description.
        public init(name: String, type: String, hasDefault: Bool = false) {
            self.name = name
            self.type = type
            self.hasDefault = hasDefault
        }
    }

    /// What the function returns, which decides the shape of the answer.
    public enum Returns: Sendable, Equatable {
        /// Nothing (`void`): 204 without a body.
        case void
        /// One scalar: the JSON value itself (`true`, `"text"`, `5`, `null`).
        case scalar
        /// One row of a composite type: a JSON object.
        case row
        /// A set (`SETOF`, `TABLE(...)`): a JSON array of values or objects.
        case set
    }

    /// Schema (namespace) the function lives in.
    public var schema: String
    /// Function name.
    public var name: String
    /// Input arguments, in order.
    public var arguments: [Argument]
    /// The shape of the result.
    public var returns: Returns
    /// Whether the function is `VOLATILE` (it may write: not callable with GET, which runs read-only).
    public var isVolatile: Bool

    /// Creates a function description.
    public init(schema: String = "public", name: String, arguments: [Argument], returns: Returns, isVolatile: Bool = true) {
        self.schema = schema
        self.name = name
        self.arguments = arguments
        self.returns = returns
        self.isVolatile = isVolatile
    }

    /// Whether a call naming exactly `keys` fits: each key is an argument and every argument without a default is
    /// among them.
    public func accepts(_ keys: Set<String>) -> Bool {
        let names = Set(arguments.map(\.name))
        return keys.isSubset(of: names) && arguments.allSatisfy { $0.hasDefault || keys.contains($0.name) }
    }

    /// Picks the overload of `candidates` (same name) that a call with `keys` fits: PostgREST's `PGRST202` when none
    /// does, `PGRST203` when several do.
    public static func resolve(_ candidates: [PostgRESTFunction], name: String, schema: String = "public",
                               keys: Set<String>) throws -> PostgRESTFunction {
        let fitting = candidates.filter { $0.accepts(keys) }
        let signature = "\(schema).\(name)(\(keys.sorted().joined(separator: ", ")))"
        guard fitting.count <= 1 else {
            throw PostgRESTError(status: 300, code: "PGRST203",
                                 message: "Could not choose the best candidate function between: "
                                     + fitting.map { "\($0.schema).\($0.name)(\($0.arguments.map { "\($0.name) => \($0.type)" }.joined(separator: ", ")))" }
                                         .joined(separator: ", "))
        }
        guard let function = fitting.first else {
            throw PostgRESTError(status: 404, code: "PGRST202",
                                 message: "Could not find the function \(signature) in the schema cache",
                                 hint: candidates.isEmpty ? nil : "Perhaps you meant to call the function with other arguments: "
                                     + candidates.map { "\($0.name)(\($0.arguments.map(\.name).joined(separator: ", ")))" }
                                         .joined(separator: ", "))
        }
        return function
    }

    /// The statement calling the function with `arguments` by name (`"a" => $1::type`, values bound), answering one
    /// row with one text column: the JSON of the result (nothing for `void`).
    public func call(_ arguments: [(name: String, value: JSONValue)]) throws -> (sql: String, parameters: [String?]) {
        var parameters: [String?] = []
        let list = try arguments.map { argument -> String in
            guard let declared = self.arguments.first(where: { $0.name == argument.name }) else {
                throw PostgRESTError(status: 404, code: "PGRST202", message: "Could not find the function \(schema).\(name) "
                                         + "with the argument \(argument.name) in the schema cache")
            }
            guard PostgRESTSelectItem.isTypeName(declared.type) else {
                throw PostgRESTError(status: 500, code: "XX000", message: "unsupported argument type name for \(argument.name)")
            }
            parameters.append(PostgRESTSQLBuilder.parameterText(argument.value, type: declared.type))
            return "\(PostgRESTSQLBuilder.quoteIdentifier(argument.name)) => $\(parameters.count)::\(declared.type)"
        }
        let call = PostgRESTSQLBuilder.quoteIdentifier(schema) + "." + PostgRESTSQLBuilder.quoteIdentifier(name)
            + "(" + list.joined(separator: ", ") + ")"
        let sql = switch returns {
        case .void: "SELECT \(call)"
        case .scalar: "SELECT to_json(\(call))::text"
        case .row: "SELECT to_json(_pgrst_r)::text FROM \(call) _pgrst_r"
        case .set: "SELECT coalesce(json_agg(_pgrst_r), '[]')::text FROM \(call) _pgrst_r"
        }
        return (sql, parameters)
    }
}
