import SupabaseProtocol
import SwitchboardCore
import Testing

@Suite struct JWTHMACTests {
    private func hex(_ key: [UInt8], _ message: [UInt8]) -> String { Digest.hex(HMAC.sha256(key: key, message: message)) }

    @Test func rfc4231Vectors() {
        #expect(hex([UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(hex([UInt8](repeating: 0xAA, count: 20), [UInt8](repeating: 0xDD, count: 50))
            == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        let longKey = [UInt8](repeating: 0xAA, count: 131)
        #expect(hex(longKey, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        let longData = "This is a test using a larger than block-size key and a larger than block-size data. "
            + "The key needs to be hashed before being used by the HMAC algorithm."
        #expect(hex(longKey, Array(longData.utf8)) == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
    }

    @Test func constantTimeEquals() {
        #expect(HMAC.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!HMAC.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!HMAC.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(HMAC.constantTimeEquals([], []))
    }

    @Test func base64URL() {
        #expect(JWTBase64URL.encode(Array("f".utf8)) == "Zg")
        #expect(JWTBase64URL.encode(Array("fo".utf8)) == "Zm8")
        #expect(JWTBase64URL.encode(Array("foo".utf8)) == "Zm9v")
        #expect(JWTBase64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(JWTBase64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(JWTBase64URL.decode("Zm9v") == Array("foo".utf8))
        #expect(JWTBase64URL.decode("") == [])
        #expect(JWTBase64URL.decode("Zg==") == nil)
        #expect(JWTBase64URL.decode("Z") == nil)
        #expect(JWTBase64URL.decode("Zh") == nil)  // non-zero trailing bits
        #expect(JWTBase64URL.decode("a+b/") == nil)
    }
}
