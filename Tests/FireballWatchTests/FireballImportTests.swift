import FireballWatch
import Foundation
import Strata
import StrataMemory
import Testing

@Suite("FireballWatch import")
struct FireballImportTests {
  @Test func theShippedSnapshotIsTheResourceAndDecodesAsItsRowsSay() throws {
    let url = try FireballWatch.bundledSnapshotURL()
    #expect(try Data(contentsOf: url) == Data(contentsOf: JPLFile.shipped))
    let file = try JPLFile(JPLFile.shipped)
    let records = try FireballData.decode(try Data(contentsOf: url))
    #expect(records == (try file.records()))
    #expect(records.count == file.rows.count && String(records.count) == file.object["count"] as? String)
    #expect(records.contains { ($0.latitude ?? 0) < 0 } && records.contains { ($0.longitude ?? 0) < 0 })
    let southern = file.rows.filter { file.value($0, "lat-dir") == "S" }.count
    #expect(records.filter { ($0.latitude ?? 0) < 0 }.count == southern)
    let western = file.rows.filter { file.value($0, "lon-dir") == "W" }.count
    #expect(records.filter { ($0.longitude ?? 0) < 0 }.count == western)
  }

  @Test func nullsStayNilNeverZero() throws {
    let file = try JPLFile(try JPLFile.newer())
    let records = try FireballData.decode(try file.data())
    #expect(records == (try file.records()))
    let columns: [(String, KeyPath<FireballRecord, Double?>)] = [
      ("energy", \.radiatedEnergy), ("impact-e", \.impactEnergy), ("lat", \.latitude), ("lon", \.longitude),
      ("alt", \.altitude), ("vel", \.velocity),
    ]
    for (field, keyPath) in columns {
      #expect(records.filter { $0[keyPath: keyPath] == nil }.count == file.nullCount(field), "\(field)")
    }
    #expect(file.nullCount("vel") > 0 && file.nullCount("lat") > 0)
  }

  @Test func columnsAreFoundByNameInAnyOrder() throws {
    var file = try JPLFile(JPLFile.shipped)
    let expected = try file.records()
    let order = Array(file.fields.indices.reversed())
    file.object["fields"] = order.map { file.fields[$0] }
    file.rows = file.rows.map { row in order.map { row[$0] } }
    #expect(try FireballData.decode(try file.data()) == expected)

    var partial = try JPLFile(JPLFile.shipped)
    let kept = ["vel", "date", "energy"]
    let positions = kept.compactMap { partial.fields.firstIndex(of: $0) }
    partial.rows = partial.rows.map { row in positions.map { row[$0] } }
    partial.object["fields"] = kept
    let records = try FireballData.decode(try partial.data())
    #expect(records.map(\.dateTimeStamp) == expected.map(\.dateTimeStamp))
    #expect(
      records.map(\.velocity) == expected.map(\.velocity) && records.allSatisfy { $0.latitude == nil && $0.altitude == nil })
  }

  struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var row: Int?
    var dateReadable = true
    var reason: String
    var edit: @Sendable (inout JPLFile) -> Void

    var testDescription: String { name }

    static func cell(_ row: Int, _ field: String, _ value: Any) -> @Sendable (inout JPLFile) -> Void {
      nonisolated(unsafe) let value = value
      return { file in
        guard let column = file.fields.firstIndex(of: field) else { return }
        file.rows[row - 1][column] = value
      }
    }
  }

  static let badInputs: [BadInput] = [
    BadInput(name: "unknown field", reason: "unknown field 'mass'") { file in
      file.object["fields"] = file.fields + ["mass"]
      file.rows = file.rows.map { $0 + ["1.0"] }
    },
    BadInput(name: "no date field", reason: "no 'date'") { file in
      file.object["fields"] = Array(file.fields.dropFirst())
      file.rows = file.rows.map { Array($0.dropFirst()) }
    },
    BadInput(name: "field named twice", reason: "field 'energy' is named twice") { file in
      file.object["fields"] = file.fields + ["energy"]
      file.rows = file.rows.map { $0 + ["1.0"] }
    },
    BadInput(name: "longitude without its direction field", reason: "'fields' has 'lon' without 'lon-dir'") { file in
      guard let column = file.fields.firstIndex(of: "lon-dir") else { return }
      file.object["fields"] = file.fields.filter { $0 != "lon-dir" }
      file.rows = file.rows.map { row in row.enumerated().filter { $0.offset != column }.map(\.element) }
    },
    BadInput(name: "count disagrees with data", reason: "'count' is 973 but 'data' holds 972 rows") { file in
      file.rows.removeLast()
    },
    BadInput(name: "short row", row: 5, reason: "8 values, but 'fields' names 9") { file in file.rows[4].removeLast() },
    BadInput(name: "long row", row: 973, reason: "10 values") { file in file.rows[972].append("1") },
    BadInput(
      name: "energy not a number", row: 7, reason: "energy 'lots' is not a number", edit: BadInput.cell(7, "energy", "lots")),
    BadInput(name: "velocity nan", row: 12, reason: "vel 'nan' is not a number", edit: BadInput.cell(12, "vel", "nan")),
    BadInput(name: "number not a string", row: 4, reason: "not a string or null", edit: BadInput.cell(4, "impact-e", 0.13)),
    BadInput(
      name: "impossible date", row: 3, dateReadable: false, reason: "date '2023-02-30 10:00:00'",
      edit: BadInput.cell(3, "date", "2023-02-30 10:00:00")),
    BadInput(
      name: "date in another format", row: 9, dateReadable: false, reason: "is not yyyy-MM-dd HH:mm:ss",
      edit: BadInput.cell(9, "date", "2023/10/01 10:00")),
    BadInput(
      name: "missing date", row: 2, dateReadable: false, reason: "date is missing", edit: BadInput.cell(2, "date", NSNull())),
    BadInput(
      name: "bad latitude direction", row: 10, reason: "lat-dir 'X' is not N or S", edit: BadInput.cell(10, "lat-dir", "X")),
    BadInput(
      name: "bad longitude direction", row: 11, reason: "lon-dir 'N' is not E or W", edit: BadInput.cell(11, "lon-dir", "N")),
    BadInput(
      name: "latitude without direction", row: 1, reason: "lat is given but lat-dir is missing",
      edit: BadInput.cell(1, "lat-dir", NSNull())),
    BadInput(name: "repeated date", row: 20, reason: "the same date as row 19") { file in
      file.rows[19][0] = file.rows[18][0]
    },
  ]

  @Test(arguments: badInputs)
  func badInputNamesTheRowAndImportsNothing(_ input: BadInput) async throws {
    var file = try JPLFile(JPLFile.shipped)
    input.edit(&file)
    let data = try file.data()
    do {
      _ = try FireballData.decode(data)
      Issue.record("\(input.name) should be refused")
    } catch let error as FireballDataError {
      #expect(error.row == input.row)
      #expect(error.reason.contains(input.reason), "\(error)")
      if let row = input.row {
        #expect(error.description.hasPrefix("row \(row)"), "\(error)")
        if input.dateReadable {
          let date = try #require(file.date(ofRow: row - 1))
          #expect(error.date == date && error.description.contains("(\(date))"), "\(error)")
        }
      }
    }
    let preloaded = try JPLFile(JPLFile.shipped).records(first: 3)
    let url = try JPLFile.write(data)
    for backend in Backend.allCases {
      let watch = try backend.makeWatch()
      try await watch.importFireballs(preloaded)
      let before = try watch.fireballs()
      await #expect(throws: FireballDataError.self) { try await watch.importFireballs(from: url) }
      #expect(try watch.fireballs() == before, "\(backend)")
    }
  }

  @Test func truncatedJSONIsRefused() async throws {
    let data = try Data(contentsOf: JPLFile.shipped)
    for cut in [data.count / 2, data.count - 3] {
      let url = FileManager.default.temporaryDirectory.appending(path: "truncated-\(UUID().uuidString).json")
      try data.prefix(cut).write(to: url)
      let watch = try Backend.memory.makeWatch()
      do {
        try await watch.importFireballs(from: url)
        Issue.record("a truncated file should be refused")
      } catch let error as FireballDataError {
        #expect(error.description.hasPrefix(url.path + ": "), "\(error)")
        #expect(error.reason.contains("not valid JSON"), "\(error)")
      }
      #expect(try watch.fireballCount() == 0)
    }
  }

  @Test func aMissingFileIsNamed() async throws {
    let watch = try Backend.memory.makeWatch()
    let url = URL(fileURLWithPath: "/nonexistent/fireballs.json")
    await #expect { try await watch.importFireballs(from: url) } throws: { error in
      "\(error)".hasPrefix("/nonexistent/fireballs.json: cannot be read")
    }
  }

  @Test(arguments: Backend.allCases)
  func importingTwiceAddsNothing(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    let expected = try JPLFile(JPLFile.shipped).records()
    let progress = Locked<[Int]>([])
    let first = try await watch.importFireballs { done, total in
      #expect(total == expected.count)
      progress.withLock { $0.append(done) }
    }
    #expect(first == FireballWatch.ImportSummary(inserted: expected.count, updated: 0, unchanged: 0))
    #expect(progress.withLock { $0 } == Array(1...expected.count))
    let second = try await watch.importFireballs()
    #expect(second == FireballWatch.ImportSummary(inserted: 0, updated: 0, unchanged: expected.count))
    #expect(try watch.fireballCount() == expected.count)
    #expect(try watch.fireballs() == expected.newestFirst)
  }

  @Test(arguments: Backend.allCases)
  func importingOverlappingNewerDataUpserts(_ backend: Backend) async throws {
    let watch = try backend.makeWatch()
    let old = try JPLFile(JPLFile.shipped).records()
    let new = try JPLFile(try JPLFile.newer()).records()
    let oldByDate = Dictionary(uniqueKeysWithValues: old.map { ($0.dateTimeStamp, $0) })
    let newDates = Set(new.map(\.dateTimeStamp))
    try await watch.importFireballs()
    let summary = try await watch.importFireballs(from: try JPLFile.newer())
    let overlapping = new.filter { oldByDate[$0.dateTimeStamp] != nil }
    let changed = overlapping.filter { oldByDate[$0.dateTimeStamp] != $0 }
    #expect(!changed.isEmpty && overlapping.count < new.count)
    #expect(
      summary
        == FireballWatch.ImportSummary(
          inserted: new.count - overlapping.count, updated: changed.count, unchanged: overlapping.count - changed.count))
    let expected = (new + old.filter { !newDates.contains($0.dateTimeStamp) }).newestFirst
    #expect(try watch.fireballs() == expected)
    #expect(try FireballWatch(container: watch.container).fireballs() == expected)
    let cleared = changed.filter { record in
      let before = oldByDate[record.dateTimeStamp]
      return (before?.altitude != nil && record.altitude == nil) || (before?.velocity != nil && record.velocity == nil)
    }
    for record in cleared { #expect(try watch.fireball(at: record.dateTimeStamp) == record) }
  }

  @Test func previewHoldsItsFireballsAndGroups() throws {
    let registry = StoreRegistry([MemoryStoreFactory()])
    let watch = try FireballWatch.preview(registry: registry)
    #expect(try watch.fireballs() == FireballWatch.previewFireballs.newestFirst)
    let shipped = Set(try JPLFile(JPLFile.shipped).records())
    #expect(FireballWatch.previewFireballs.allSatisfy(shipped.contains), "preview fireballs are real ones")
    let expected = FireballWatch.previewGroups.map { FireballGroupRecord(name: $0.name, fireballCount: $0.dates.count) }
    #expect(try watch.groups() == expected.sorted { $0.name < $1.name })
  }
}
