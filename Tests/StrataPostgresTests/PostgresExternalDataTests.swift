import Foundation
import StrataPostgres
import StrataStoreKit
import Testing

/// The PostgreSQL store keeps large values of attributes that allow external storage in
/// `_strata_external_data`, beside the row that names them, and removes at open the old rows no row names.
@Suite struct PostgresExternalDataTests {
  @Test func largeValuesLiveInTheirTableAndOldOrphansGoAtOpen() throws {
    _ = try PostgresTestServer.uri()
    let model = try ObjectModel(entities: [
      EntityDescription(
        name: "Film",
        attributes: [AttributeDescription(name: "poster", type: .data, allowsExternalBinaryDataStorage: true)])
    ])
    let location = PostgresTestServer.freshLocation()
    let schema = location.path.split(separator: "/").last.map(String.init) ?? ""
    let factory = PostgresStoreFactory()
    let poster = Data((0..<(AttributeDescription.externalStorageThreshold + 1)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    let store = try factory.openStore(at: location, model: model, options: StoreOptions())
    _ = try store.save(
      ChangeSet(inserted: [ObjectChange(objectID: .makeTemporary(entityName: "Film"), attributes: [.data(poster)], toOne: [])]))
    let storage = try #require((store as? ExternalDataStore)?.storage)
    let (recent, old) = (UUID(), UUID())
    try storage.write([(recent, Data([1])), (old, Data([2]))])
    store.close()
    let table = "\"\(schema)\"._strata_external_data"
    #expect(
      try PostgresTestServer.psql("SELECT octet_length(bytes) FROM \(table) ORDER BY 1 DESC LIMIT 1") == "\(poster.count)\n")
    #expect(
      try PostgresTestServer.psql("SELECT octet_length(\"poster\") FROM \"\(schema)\".\"Film\"") == "32\n",
      "the row holds a reference")
    _ = try PostgresTestServer.psql("UPDATE \(table) SET written = now() - interval '1 hour' WHERE name = '\(old.uuidString)'")

    let again = try factory.openStore(at: location, model: model, options: StoreOptions())
    defer { again.close() }
    let names = try #require((again as? ExternalDataStore)?.storage).names()
    #expect(names.count == 2 && names[recent] != nil && names[old] == nil, "\(names)")
    guard case .snapshots(let films) = try again.fetch(FetchDescription(entityName: "Film"), generation: nil) else {
      Issue.record("no snapshots")
      return
    }
    #expect(films.map(\.attributes) == [[.data(poster)]])
  }
}
