import Foundation
import StrataLMDB
import StrataStoreKit
import Testing

/// Damaged B-tree pages of `data.mdb` — node offsets, child page numbers, node sizes, page bounds,
/// overflow counts and overflow page numbers, page headers, bit flips — never end the process that
/// opens and reads the store with a signal: `lmdb-worker read` (a child process) exits 1 with one line,
/// or 0.
@Suite struct LMDBPageCorruptionTests {
  /// 400 notes in 10 saves; every 7th has a 6,000-byte payload and every 13th a 20,000-byte one (overflow
  /// pages), the rest 100 bytes.
  private func makeStore(_ dir: TemporaryDirectory) throws -> (data: Data, expected: String) {
    let store = try LMDBStore(url: dir.store, model: try noteModel())
    var lines: [(text: String, n: Int, size: Int, sum: Int)] = []
    for batch in 0..<10 {
      var changes: [ObjectChange] = []
      for i in batch * 40..<(batch + 1) * 40 {
        let size = i % 13 == 0 ? 20_000 : i % 7 == 0 ? 6_000 : 100
        let text = "note-" + String(1000 + i)
        changes.append(note(text, i, payload: Data(repeating: UInt8(i & 0xFF), count: size)))
        lines.append((text, i, size, size * (i & 0xFF)))
      }
      _ = try store.save(ChangeSet(inserted: changes))
    }
    store.close()
    // What `lmdb-worker read` prints, computed from what was saved: by text, then by n.
    let byText = lines.sorted { $0.text < $1.text }.map { "\($0.text) \($0.n) \($0.size) \($0.sum)\n" }
    let byN = lines.sorted { $0.n < $1.n }.map { "\($0.text) \($0.n) \($0.size) \($0.sum)\n" }
    return (try Data(contentsOf: dir.store.appending(path: "data.mdb")), (byText + byN).joined())
  }

  /// A small seeded generator (SplitMix64), so a failing case can be run again.
  private struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
  }

  private enum Damage: CaseIterable {
    case nodeOffset, childPage, nodeSizes, bounds, overflowCount, bigDataPage, pageHeader, flips
  }

  @Test func damagedPagesNeverCrashTheReader() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let (original, expected) = try makeStore(dir)
    let pageSize = Int(original.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 16 + 24, as: UInt32.self) })
    #expect(pageSize == 4096)
    // The pages by type, from their own headers (P_BRANCH 1, P_LEAF 2, P_OVERFLOW 4).
    var pages: [UInt16: [Int]] = [1: [], 2: [], 4: []]
    var page = 2
    while page < original.count / pageSize {
      let (flags, run) = original.withUnsafeBytes {
        (
          $0.loadUnaligned(fromByteOffset: page * pageSize + 10, as: UInt16.self),
          Int($0.loadUnaligned(fromByteOffset: page * pageSize + 12, as: UInt32.self))
        )
      }
      for kind in pages.keys where flags & kind != 0 { pages[kind, default: []].append(page) }
      // The rest of an overflow run is the value's bytes, without page headers.
      page += flags & 4 != 0 ? max(run, 1) : 1
    }
    #expect(pages[1]?.isEmpty == false && pages[2]?.isEmpty == false && pages[4]?.isEmpty == false)
    let seed = UInt64(ProcessInfo.processInfo.environment["STRATA_CORRUPT_SEED"] ?? "") ?? 25
    let cases = Int(ProcessInfo.processInfo.environment["STRATA_CORRUPT_CASES"] ?? "") ?? 160
    var random = Random(state: seed)
    var outcomes = (read: 0, readDifferent: 0, refused: 0)
    var differing: [String: Int] = [:]
    for index in 0..<cases {
      var data = original
      let damage = Damage.allCases[index % Damage.allCases.count]
      let kind: UInt16 =
        damage == .childPage ? 1 : damage == .overflowCount ? 4 : damage == .bigDataPage ? 2 : [1, 2, 2, 4][random.below(4)]
      let candidates = pages[kind] ?? []
      let page = candidates[random.below(candidates.count)]
      let base = page * pageSize
      func u16(_ offset: Int) -> Int {
        let offset = min(max(offset, 0), pageSize - 2)
        return Int(data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: base + offset, as: UInt16.self) })
      }
      func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) {
          data.replaceSubrange(base + offset..<base + offset + MemoryLayout<T>.size, with: $0)
        }
      }
      let count = min(max((u16(12) - 16) / 2, 1), 500)
      let node = { (i: Int) in min(u16(16 + 2 * i), pageSize - 16) }
      let anyValue = { (random: inout Random) -> UInt64 in
        [UInt64(random.below(8)), UInt64(random.below(pageSize * 2)), random.next()][random.below(3)]
      }
      var description = "\(damage) on page \(page)"
      switch damage {
      case .nodeOffset:
        let i = random.below(count)
        put(UInt16(truncatingIfNeeded: anyValue(&random)), at: 16 + 2 * i)
        description += ", node \(i)"
      case .childPage:
        let at = node(random.below(count))
        put(
          UInt32(truncatingIfNeeded: [UInt64(random.below(original.count / pageSize * 2)), random.next()][random.below(2)]),
          at: at)
      case .nodeSizes:
        let at = node(random.below(count))
        put(UInt16(truncatingIfNeeded: anyValue(&random)), at: at + [0, 2, 6][random.below(3)])
      case .bounds:
        put(UInt16(truncatingIfNeeded: anyValue(&random)), at: [12, 14][random.below(2)])
      case .overflowCount:
        put(UInt32(truncatingIfNeeded: anyValue(&random)), at: 12)
      case .bigDataPage:
        // A node of this leaf that holds a big value (F_BIGDATA): its overflow page number.
        let big = (0..<count).map(node).filter { u16($0 + 4) & 1 != 0 }
        let at = big.isEmpty ? node(random.below(count)) : big[random.below(big.count)]
        put(UInt64(truncatingIfNeeded: anyValue(&random)), at: min(at + 8 + u16(at + 6), pageSize - 8))
      case .pageHeader:
        if random.below(2) == 0 { put(UInt16(truncatingIfNeeded: random.next()), at: 10) } else { put(anyValue(&random), at: 0) }
      case .flips:
        for _ in 0..<(1 + random.below(16)) {
          let at = base + random.below(pageSize)
          data[at] ^= UInt8(1 << random.below(8))
        }
      }
      let url = dir.url.appending(path: "copy-\(index)")
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
      try data.write(to: url.appending(path: "data.mdb"))
      let started = try Worker.start(["read", url.path])
      let output = String(decoding: started.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      let (status, stderr) = Worker.finish(started)
      #expect(started.0.terminationReason == .exit, "seed \(seed) case \(index): \(description): signal \(status)")
      switch status {
      case 0:
        if output == expected {
          outcomes.read += 1
        } else {
          outcomes.readDifferent += 1
          differing["\(damage)", default: 0] += 1
        }
      case 1:
        outcomes.refused += 1
        #expect(stderr.split(separator: "\n").count == 1, "seed \(seed) case \(index): \(description): \(stderr)")
      default:
        Issue.record("seed \(seed) case \(index): \(description): exit \(status): \(stderr)")
      }
      try? FileManager.default.removeItem(at: url)
    }
    print(
      "page-corruption seed=\(seed) cases=\(cases) read=\(outcomes.read) readDifferent=\(outcomes.readDifferent) refused=\(outcomes.refused) differentBy=\(differing.sorted { $0.key < $1.key })"
    )
    // The undamaged store reads back exactly what was saved.
    let clean = dir.url.appending(path: "clean")
    try FileManager.default.createDirectory(at: clean, withIntermediateDirectories: true)
    try original.write(to: clean.appending(path: "data.mdb"))
    let started = try Worker.start(["read", clean.path])
    let output = String(decoding: started.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(Worker.finish(started).status == 0)
    #expect(output == expected)
  }
}
