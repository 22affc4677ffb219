import Foundation
import Testing

@testable import StrataCore

@Suite struct ValueComparisonTests {
  /// UUIDs order as their uppercase strings do (how sorts and comparisons of UUID attributes have always
  /// read), whatever bytes differ first.
  @Test func uuidsOrderAsTheirStrings() {
    var generator = SystemRandomNumberGenerator()
    var uuids = (0..<200).map { _ in UUID() }
    // Pairs that differ only in one byte, each byte in turn, both ways.
    for index in 0..<16 {
      var bytes = withUnsafeBytes(of: UUID().uuid, Array.init)
      let other = bytes
      bytes[index] = bytes[index] &+ UInt8.random(in: 1...255, using: &generator)
      for bytes in [bytes, other] {
        uuids.append(bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) })
      }
    }
    let pairs = Array(zip(uuids, uuids.dropFirst())) + Array(zip(uuids, uuids.shuffled(using: &generator)))
    for (a, b) in pairs {
      let byString = a.uuidString.uppercased() < b.uuidString.uppercased() ? -1 : a == b ? 0 : 1
      #expect(ValueComparison.compare(.uuid(a), .uuid(b)) == byString, "\(a) \(b)")
      #expect(ValueComparison.compare(.uuid(a), .uuid(a)) == 0)
    }
  }
}
