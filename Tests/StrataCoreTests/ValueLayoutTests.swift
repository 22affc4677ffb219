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

@Suite("ObjectID")
struct ObjectIDTests {
  @Test func anIDIsSmallAndComparesByEntityStoreAndKey() throws {
    #expect(MemoryLayout<ObjectID>.stride <= 24)
    let a = ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 1)
    #expect(a == ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 1))
    #expect(a != ObjectID(entityName: "Movie", storeIdentifier: "S2", primaryKey: 1))
    #expect(a != ObjectID(entityName: "Director", storeIdentifier: "S1", primaryKey: 1))
    #expect(a != ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 2))
    #expect(Set([a, ObjectID(entityName: "Director", storeIdentifier: "S1", primaryKey: 1)]).count == 2)
    let temporary = ObjectID.makeTemporary(entityName: "Movie")
    #expect(temporary.isTemporary && temporary != ObjectID.makeTemporary(entityName: "Movie"))
  }

  @Test func anIDRoundTripsThroughJSONAndItsURI() throws {
    let id = ObjectID(entityName: "Movie", storeIdentifier: "3F2A", primaryKey: 12)
    let decoded = try JSONDecoder().decode(ObjectID.self, from: try JSONEncoder().encode(id))
    #expect(decoded == id)
    #expect(decoded.entityName == "Movie" && decoded.storeIdentifier == "3F2A" && decoded.primaryKey == 12)
    #expect(ObjectID(uriRepresentation: id.uriRepresentation) == id)
    let temporary = ObjectID.makeTemporary(entityName: "Movie")
    #expect(try JSONDecoder().decode(ObjectID.self, from: try JSONEncoder().encode(temporary)) == temporary)
  }
}
