import Foundation
import StrataCore
import Testing

@Suite("Value layout")
struct ValueLayoutTests {
  /// Every object keeps an array of values and every snapshot another: a new case with a large payload
  /// would double the memory of every fetch. Large payloads go behind `indirect`.
  @Test func aValueFitsInTwentyFourBytes() {
    #expect(MemoryLayout<Value>.stride <= 24)
  }

  @Test func boxedObjectIDsStillCompareAndHash() throws {
    let id = ObjectID(entityName: "Movie", storeIdentifier: "S", primaryKey: 3)
    let same = try #require(ObjectID(uriRepresentation: "strata://S/Movie/p3"))
    #expect(Value.objectID(id) == Value.objectID(same))
    #expect(Set([Value.objectID(id), Value.objectID(same)]).count == 1)
    #expect(Value.objectID(id) != Value.objectID(ObjectID(entityName: "Movie", storeIdentifier: "S", primaryKey: 4)))
  }
}
