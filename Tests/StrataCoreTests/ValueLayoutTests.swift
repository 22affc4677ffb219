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

  @Test func idsHashByKeyAndFillSetsAndDictionaries() {
    let movies = (1...10_000).map { ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: Int64($0)) }
    let temporaries = (0..<1_000).map { _ in ObjectID.makeTemporary(entityName: "Movie") }
    var seen = Set(movies + temporaries)
    #expect(seen.count == movies.count + temporaries.count)
    #expect(movies.allSatisfy { seen.contains($0) } && temporaries.allSatisfy { seen.contains($0) })
    #expect(!seen.contains(ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 10_001)))
    let again = ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: 7)
    #expect(again.bucketHash(seed: 42) == movies[6].bucketHash(seed: 42))
    #expect(again.hashValue == movies[6].hashValue)
    seen.subtract(movies)
    #expect(seen == Set(temporaries))
    let next = temporaries[0].nextTemporary()
    #expect(next.isTemporary && next.entityName == "Movie" && !temporaries.contains(next))
    // Hashes spread over a table: 10,000 consecutive keys land in many buckets, not a few.
    let buckets = Set(movies.map { $0.bucketHash(seed: 0) & 4095 })
    #expect(buckets.count > 3_000)
    // So do keys of any stride, including those that share their low bits.
    for stride in [2, 16, 1_024, 65_536] {
      let strided = (1...4_000).map { ObjectID(entityName: "Movie", storeIdentifier: "S1", primaryKey: Int64($0 * stride)) }
      #expect(Set(strided.map { $0.bucketHash(seed: 0) & 4095 }).count > 2_500, "stride \(stride)")
    }
    // Runs of 8 consecutive keys (from a multiple of 8) fill one block of 8 neighbouring buckets: what
    // keeps a large table's lookups in a few cache lines.
    let run = movies[15..<23].map { $0.bucketHash(seed: 9) & 0xFFFF }
    #expect(Set(run).count == 8 && Set(run.map { $0 >> 3 }).count == 1)
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
