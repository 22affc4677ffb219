import Foundation
import Strata
import StrataMirroring
import StrataPostgresHub
import Testing

final class Specimen: ManagedObject {
  @Attribute var count: Int64
  @Attribute var weight: Double
  @Attribute var label: String
  @Attribute var ripe: Bool
  @Attribute var tag: UUID
  @Attribute var picked: Date
  @Attribute var photo: Data
  @Attribute var price: Decimal
  @Attribute var link: URL
  @Attribute var note: String?
  @Relationship(inverse: "specimens") var tray: Tray?
}

final class Tray: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "tray") var specimens: [Specimen]
}

let specimenModel: ObjectModel = {
  do {
    return try MirrorModel.adding(to: ObjectModel(Specimen.self, Tray.self))
  } catch {
    preconditionFailure("the test model is invalid: \(error)")
  }
}()

/// The objects' states and log entries a PostgreSQL hub stores (written as JSON text by the hub) read back
/// as exactly what a memory hub holds after the same pushes: every kind of value, strings that need escaping,
/// references set and unset, an ordered list, an update, a delete.
@Suite("PostgreSQL hub payloads")
struct PostgresHubPayloadTests {
  @Test func storedStatesAndEntriesReadBackAsPushed() async throws {
    let schema = String("mirror_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20))
    let hub = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: schema, model: specimenModel)
    let memory = MemoryHub(model: specimenModel)
    let replica = UUID()
    let tray = UUID()
    let labels = [
      "plain", "quote \" and backslash \\", "lines\nand\ttabs\r", "control \u{01}\u{1F}", "Grüße 🥔", "slash / end", "",
    ]
    let weights = [0.1, -2.5, 1e-300, 6.02e23, 3.0, -0.0, Double.leastNonzeroMagnitude]
    var specimens: [UUID] = []
    var changes = [
      MirrorChange(
        globalID: tray, entityName: "Tray", kind: .insert, fields: ["name": .value(.string("top")), "specimens": .references([])])
    ]
    for (index, label) in labels.enumerated() {
      let id = UUID()
      specimens.append(id)
      changes.append(
        MirrorChange(
          globalID: id, entityName: "Specimen", kind: .insert,
          fields: [
            "count": .value(.int(Int64(index) * 1_000_000_007 - 3)), "weight": .value(.double(weights[index])),
            "label": .value(.string(label)), "ripe": .value(.bool(index % 2 == 0)), "tag": .value(.uuid(UUID())),
            "picked": .value(.date(Date(timeIntervalSince1970: 1_700_000_000.25 + Double(index)))),
            "photo": .value(.data(Data([0, 1, 2, 255, UInt8(index)]))),
            "price": .value(.decimal(Decimal(string: "12.3\(index)") ?? 0)),
            "link": .value(.url(URL(string: "https://example.com/p?q=\(index)&r=\"x\"") ?? URL(filePath: "/"))),
            "note": .value(index == 0 ? .null : .string("note \(index)")),
            "tray": .reference(index == 1 ? nil : tray),
          ]))
    }
    let pushes = [
      MirrorTransaction(replicaID: replica, localSequence: 1, basePosition: 0, changes: changes),
      MirrorTransaction(
        replicaID: replica, localSequence: 2, basePosition: 1,
        changes: [
          MirrorChange(
            globalID: tray, entityName: "Tray", kind: .update, fields: ["specimens": .references(specimens.reversed())]),
          MirrorChange(
            globalID: specimens[2], entityName: "Specimen", kind: .update, fields: ["label": .value(.string("é \" \\ ok"))]),
        ]),
      MirrorTransaction(
        replicaID: replica, localSequence: 3, basePosition: 2,
        changes: [MirrorChange(globalID: specimens[3], entityName: "Specimen", kind: .delete)]),
    ]
    for transaction in pushes {
      let stored = try await hub.push(transaction)
      let expected = try await memory.push(transaction)
      #expect(stored == expected)
    }
    let entries = try await hub.pull(after: 0, limit: 10)
    let expectedEntries = try await memory.pull(after: 0, limit: 10)
    #expect(entries.count == 3)
    #expect(entries == expectedEntries)
    let live = try hub.liveObjects()
    #expect(live.count == labels.count)
    #expect(live == memory.ledger.liveObjects)
    // A second hub on the schema reads every object back from its stored state, tombstones included.
    let again = try PostgresHub(uri: try PostgresHubTests.serverURI(), schema: schema, model: specimenModel)
    #expect(try again.liveObjects() == memory.ledger.liveObjects)
  }
}
