import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Scans release the map's pages behind them: after reading far more of the data file than the store
/// keeps resident (32 MiB), this process maps only what it read since, and every value read — before
/// and after a release, by a walk, a fetch and by ID — is still exactly what was saved.
@Suite struct LMDBMapResidencyTests {
  @Test func scansReleaseTheMapAndReadExactValues() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let count = 48
    // One mebibyte per note, each different, so a page read from another note would not compare equal:
    // byte j of note i is j * 31 + i * 7 (mod 256), a 256-byte period repeated.
    let payloads = (0..<count).map { i in
      let period = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i &* 7) }
      var payload = Data(capacity: 1 << 20)
      for _ in 0..<(1 << 20) / 256 { payload.append(contentsOf: period) }
      return payload
    }
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    defer { store.close() }
    for chunk in stride(from: 0, to: count, by: 8) {
      _ = try store.save(ChangeSet(inserted: (chunk..<chunk + 8).map { note("note \($0)", $0, payload: payloads[$0]) }))
    }
    let dataFile = dir.store.appending(path: "data.mdb")
    // Below the limit nothing is released: what the fetch read stays mapped (this checks the measure).
    var first = FetchDescription(entityName: "Note")
    first.fetchLimit = 16
    guard case .snapshots(let some) = try store.fetch(first, generation: nil) else {
      Issue.record("the fetch returned no snapshots")
      return
    }
    #expect(some.count == 16)
    let before = try #require(mappedResidentBytes(of: dataFile))
    #expect(before >= 16 << 20, "\(before) bytes mapped after reading 16 MiB")
    for _ in 0..<2 {
      guard case .snapshots(let rows) = try store.fetch(FetchDescription(entityName: "Note"), generation: nil) else {
        Issue.record("the fetch returned no snapshots")
        return
      }
      #expect(rows.count == count)
      for row in rows {
        guard case .int(let n) = row.attributes[1], payloads.indices.contains(Int(n)) else {
          Issue.record("unexpected note \(row.attributes)")
          continue
        }
        #expect(row.attributes[2] == .data(payloads[Int(n)]), "note \(n) reads back exact")
      }
      let resident = try #require(mappedResidentBytes(of: dataFile))
      #expect(resident < 40 << 20, "\(resident) bytes of the data file stay mapped after reading \(count) MiB")
    }
    guard
      case .objectIDs(let ids) = try store.fetch(FetchDescription(entityName: "Note", resultType: .objectIDs), generation: nil)
    else {
      Issue.record("the ID fetch returned no IDs")
      return
    }
    let byID = try store.snapshots(for: ids.reversed(), generation: nil)
    #expect(byID.count == count)
    for row in byID {
      guard case .int(let n) = row.attributes[1], payloads.indices.contains(Int(n)) else { continue }
      #expect(row.attributes[2] == .data(payloads[Int(n)]), "note \(n) reads back exact by ID")
    }
  }
}

/// How many bytes of `file` this process has resident through its mappings (`/proc/self/smaps`).
private func mappedResidentBytes(of file: URL) -> Int? {
  // Read to the end by hand: `/proc` files report no size, and Foundation stops after one short read.
  let descriptor = open("/proc/self/smaps", O_RDONLY)
  guard descriptor >= 0 else { return nil }
  defer { close(descriptor) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard n > 0 else { break }
    bytes += chunk[0..<n]
  }
  let smaps = String(decoding: bytes, as: UTF8.self)
  let path = file.standardizedFileURL.resolvingSymlinksInPath().path
  var total = 0
  var inFile = false
  for line in smaps.split(separator: "\n") {
    if let first = line.first, first.isHexDigit, line.contains("-") && line.split(separator: " ").count >= 5 {
      inFile = line.hasSuffix(path)
    } else if inFile, line.hasPrefix("Rss:") {
      let kib = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
      total += kib * 1024
    }
  }
  return total
}
