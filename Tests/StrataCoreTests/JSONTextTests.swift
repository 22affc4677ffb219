import Foundation
import Testing

@testable import StrataCore

@Suite("Canonical JSON of Codable attributes")
struct JSONTextTests {
  @Test func keysAreSortedAndWhiteSpaceDropped() throws {
    let text = #"{ "b" : 1, "a" : [true, null, "x\u00e9\n", -2.5e3], "é": {}, "Z": [] }"#
    #expect(JSONText.canonical(text) == #"{"Z":[],"a":[true,null,"xé\n",-2500],"b":1,"é":{}}"#)
    // Foundation reads the canonical text as the same document.
    let canonical = try #require(JSONText.canonical(text))
    let original = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary
    let reread = try JSONSerialization.jsonObject(with: Data(canonical.utf8)) as? NSDictionary
    #expect(original == reread)
  }

  @Test func numbersAreIntegersWhenTheyHaveNoFractionOrExponent() {
    #expect(JSONText.parse("12") == .scalar(.int(12)))
    #expect(JSONText.parse("-9223372036854775808") == .scalar(.int(.min)))
    #expect(JSONText.parse("9223372036854775808") == .scalar(.double(9_223_372_036_854_775_808)))
    #expect(JSONText.parse("1.5") == .scalar(.double(1.5)))
    #expect(JSONText.parse("1e2") == .scalar(.double(100)))
  }

  @Test(arguments: [
    "", "{", "[1,]", "[1 2]", "{\"a\" 1}", "nul", "tru", "\"abc", "\"\\ud800\"", "\"\\x\"", "-", "1.2.3x", "{\"a\":}",
    "\"a\u{01}b\"", "[1]]",
  ])
  func malformedTextIsNotJSON(_ text: String) {
    #expect(JSONText.parse(text) == nil, "\(text)")
  }

  @Test func deepNestingIsRefusedNotACrash() {
    #expect(JSONText.parse(String(repeating: "[", count: 100_000)) == nil)
    #expect(JSONText.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)) != nil)
  }

  @Test func randomTreesSurviveTextAndBack() {
    var rng = SplitMix64(seed: 26)
    func tree(_ depth: Int) -> JSONText.Node {
      let pick = Int(rng.next() % (depth > 3 ? 5 : 7))
      switch pick {
      case 0: return .scalar(.int(Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)))
      case 1: return .scalar(.double(Double(Int64(bitPattern: rng.next()) >> 20) / 1024))
      case 2:
        let scalars = (0..<Int(rng.next() % 8)).compactMap { _ in Unicode.Scalar(UInt32(rng.next() % 0x2FFFF)) }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return .scalar(.string(String(view)))
      case 3: return .scalar(.bool(rng.next() % 2 == 0))
      case 4: return .scalar(.null)
      case 5: return .array((0..<Int(rng.next() % 4)).map { _ in tree(depth + 1) })
      default:
        var members: [String: JSONText.Node] = [:]
        for i in 0..<Int(rng.next() % 4) { members["k\(rng.next() % 100)-\(i)"] = tree(depth + 1) }
        return .object(members)
      }
    }
    for _ in 0..<500 {
      let node = tree(0)
      let text = JSONText.text(of: node)
      let reread = JSONText.parse(text)
      #expect(reread.map(JSONText.text(of:)) == text, "\(text)")
      #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) != nil, "\(text)")
    }
  }
}
