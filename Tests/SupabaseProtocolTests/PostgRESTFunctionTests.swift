import SwitchboardCore
import Testing
@testable import SupabaseProtocol

@Suite struct PostgRESTFunctionTests {
    let add = PostgRESTFunction(name: "add", arguments: [.init(name: "a", type: "integer"),
                                                         .init(name: "b", type: "integer", hasDefault: true)],
                                returns: .scalar, isVolatile: false)

    @Test("a call binds each named argument with its declared type; the result's shape decides the statement")
    func callStatements() throws {
        let scalar = try add.call([("b", .number("2")), ("a", .string("40"))])
        #expect(scalar.sql == #"SELECT to_json("public"."add"("b" => $1::integer, "a" => $2::integer))::text"#)
        #expect(scalar.parameters == ["2", "40"])
        var rows = add
        rows.returns = .set
        #expect(try rows.call([("a", .number("1"))]).sql
            == #"SELECT coalesce(json_agg(_pgrst_r), '[]')::text FROM "public"."add"("a" => $1::integer) _pgrst_r"#)
        rows.returns = .row
        #expect(try rows.call([]).sql == #"SELECT to_json(_pgrst_r)::text FROM "public"."add"() _pgrst_r"#)
        rows.returns = .void
        #expect(try rows.call([]).sql == #"SELECT "public"."add"()"#)
        let json = PostgRESTFunction(name: "tag", arguments: [.init(name: "meta", type: "jsonb")], returns: .scalar)
        #expect(try json.call([("meta", .object([("k", .string("v"))]))]).parameters == [#"{"k":"v"}"#])
    }

    @Test("overloads resolve by argument names: missing required or unknown names are PGRST202, two fits PGRST203")
    func resolution() throws {
        #expect(try PostgRESTFunction.resolve([add], name: "add", keys: ["a"]) == add)
        #expect(try PostgRESTFunction.resolve([add], name: "add", keys: ["a", "b"]) == add)
        let missing = pgError { _ = try PostgRESTFunction.resolve([add], name: "add", keys: ["b"]) }
        #expect(missing?.status == 404)
        #expect(missing?.code == "PGRST202")
        #expect(missing?.message == "Could not find the function public.add(b) in the schema cache")
        #expect(pgError { _ = try PostgRESTFunction.resolve([add], name: "add", keys: ["a", "c"]) }?.code == "PGRST202")
        #expect(pgError { _ = try PostgRESTFunction.resolve([], name: "nope", keys: []) }?.code == "PGRST202")
        let other = PostgRESTFunction(name: "add", arguments: [.init(name: "a", type: "text")], returns: .scalar)
        let ambiguous = pgError { _ = try PostgRESTFunction.resolve([add, other], name: "add", keys: ["a"]) }
        #expect(ambiguous?.status == 300)
        #expect(ambiguous?.code == "PGRST203")
        #expect(try PostgRESTFunction.resolve([add, other], name: "add", keys: ["a", "b"]) == add)
    }

    @Test("an argument type that is not a plain type name never reaches the statement")
    func argumentTypesChecked() {
        let odd = PostgRESTFunction(name: "f", arguments: [.init(name: "x", type: "int) ; DROP TABLE t; --")], returns: .scalar)
        #expect(pgError { _ = try odd.call([("x", .number("1"))]) }?.status == 500)
    }
}
