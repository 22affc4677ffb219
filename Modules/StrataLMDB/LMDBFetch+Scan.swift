import CLMDB
import Foundation
import StrataStoreKit

extension LMDBFetch {
  /// Hands each object of ``scannedTables`` that matches to `body`, in primary-key order (a hierarchy's
  /// tables merged as they are read, never collected), with about how many records follow it, until
  /// `body` returns false.
  ///
  /// A record is decoded only when it may be handed over: the first `skipping` matches are passed over
  /// (without a predicate, without decoding them), a record the predicate's ``RecordProbe`` rejects is
  /// passed over, and so is one `admits` (given its table's position, key and bytes) refuses.
  ///
  /// With `undecoded` (and neither `skipping` nor `admits`), a record the probe alone shows to match is
  /// handed to it instead of `body`, without being decoded: a count's matches need no snapshot.
  func scanMatches(
    _ txn: LMDBTransaction, _ reader: LMDBReader, skipping: Int,
    admits: ((_ table: Int, _ pk: Int64, _ record: UnsafeRawBufferPointer) throws -> Bool)?,
    undecoded: ((_ remaining: Int) throws -> Bool)? = nil,
    _ body: (consuming Snapshot, _ remaining: Int) throws -> Bool
  ) throws {
    let tables = scannedTables
    var skip = max(skipping, 0)
    var remaining = 0
    for table in tables { remaining += try txn.entries(table.records) }
    let counter = LMDBReader.decodeCounter
    let inheritance = scope.model.inheritance
    let resolves = tables.map { table in
      table.entity.toOneRelationships.contains { inheritance.hasSubentities($0.destination) }
    }
    let evaluator = self.evaluator
    let probes = self.probes
    // The first table's decoder held once: `tables[index].decoder` copied the table and its decoder (a
    // retain of every field of the entity description) per record.
    guard let decoder = tables.first?.decoder else { return }
    var tally = MapReadTally(txn)
    defer { tally.flush() }
    try Self.merged(txn, tables) { index, pk, key, value in
      tally.add(key, value)
      remaining = max(remaining - 1, 0)
      if evaluator == nil && skip > 0 {
        skip -= 1
        return true
      }
      if let probe = probes[index] {
        switch probe.verdict(value) {
        case .no: return true
        case .yes:
          if let undecoded, skip == 0, admits == nil { return try undecoded(remaining) }
        case .maybe: break
        }
      }
      if let admits, !(try admits(index, pk, value)) { return true }
      counter?.add()
      var snapshot: Snapshot
      if index == 0 {
        snapshot = try decoder.decode(value, primaryKey: pk)
      } else {
        snapshot = try tables[index].decoder.decode(value, primaryKey: pk)
      }
      if resolves[index] { snapshot = try reader.resolvingReferences(snapshot) }
      if let evaluator, !(try evaluator.evaluate(snapshot, source: reader)) { return true }
      if skip > 0 {
        skip -= 1
        return true
      }
      return try body(snapshot, remaining)
    }
  }

  /// Walks the records of `tables` in primary-key order, merged (keys are unique across a hierarchy), with
  /// one cursor per table: `body` gets the position of the record's table, its key and its bytes (valid for
  /// the transaction), until it returns false.
  static func merged(
    _ txn: LMDBTransaction, _ tables: [LMDBSchema.Table],
    _ body: (_ table: Int, _ pk: Int64, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool
  ) throws {
    typealias Head = (pk: Int64, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    func head(_ entry: LMDBCursor.Entry?) throws -> Head? {
      guard let entry else { return nil }
      return (try KeyCoding.primaryKey(entry.key), entry.key, entry.value)
    }
    try withCursors(txn, tables[...], []) { cursors in
      if cursors.count == 1, let cursor = cursors.first {
        var entry = try cursor.next(.first)
        while let (key, value) = entry {
          guard try body(0, try KeyCoding.primaryKey(key), key, value) else { return }
          entry = try cursor.next(.next)
        }
        return
      }
      var heads: [Head?] = try cursors.map { try head($0.next(.first)) }
      while true {
        var best: (index: Int, head: Head)?
        for (index, candidate) in heads.enumerated() {
          guard let candidate else { continue }
          if let current = best, current.head.pk <= candidate.pk { continue }
          best = (index, candidate)
        }
        guard let best else { return }
        guard try body(best.index, best.head.pk, best.head.key, best.head.value) else { return }
        heads[best.index] = try head(cursors[best.index].next(.next))
      }
    }
  }

  private static func withCursors<R>(
    _ txn: LMDBTransaction, _ tables: ArraySlice<LMDBSchema.Table>, _ opened: [LMDBCursor],
    _ body: ([LMDBCursor]) throws -> R
  ) throws -> R {
    guard let first = tables.first else { return try body(opened) }
    return try txn.withCursor(first.records) { cursor in
      try withCursors(txn, tables.dropFirst(), opened + [cursor], body)
    }
  }

  // MARK: Sorted top-N

  /// The positions of the attributes `sorts` name, when each names an attribute of `entity` itself (not a
  /// key path); `nil` otherwise.
  static func sortAttributes(_ sorts: [QuerySort], entity: EntityDescription) -> [Int]? {
    guard !sorts.isEmpty else { return nil }
    var positions: [Int] = []
    for sort in sorts {
      guard !sort.keyPath.contains("."),
        let index = entity.attributes.firstIndex(where: { $0.name == sort.keyPath && !$0.isTransient })
      else { return nil }
      positions.append(index)
    }
    return positions
  }

  /// The first `count` matches in sort order, kept in a heap of `count` while the records are read: memory
  /// bounded by the page, not the store. When the sort keys are attributes of the entity, a record whose
  /// sort values (read from its bytes) cannot enter the full heap is not decoded.
  func topMatches(_ txn: LMDBTransaction, _ reader: LMDBReader, count: Int) throws -> [Snapshot] {
    guard count > 0 else { return [] }
    var heap = TopHeap(capacity: count, sorter: sorter)
    let tables = scannedTables
    var admits: ((Int, Int64, UnsafeRawBufferPointer) throws -> Bool)?
    if let positions = sortAttributes {
      let fields = tables.map { table in
        table.entity.attributes.map { $0.isTransient ? RecordField.transient : RecordField($0.type) }
      }
      let templates = tables.map(\.decoder.idTemplate)
      let sorter = self.sorter
      let sorts = request.sortDescriptors
      // One string key in code-point order (the commonest sort): its bytes compared where they lie.
      let byBytes = positions.count == 1 && sorts.count == 1 && sorts[0].comparator == .default
      let ascending = sorts.first?.ascending ?? true
      admits = { index, pk, record in
        guard let worst = heap.worst else { return true }
        if byBytes, case .string(let worstText) = worst.values[0],
          let bytes = Self.stringBytes(at: positions[0], of: record, fields: fields[index])
        {
          let order = worstText.withUTF8Contents { StringMatcher.compare(bytes, $0) }
          if order != 0 { return ascending ? order < 0 : order > 0 }
        }
        guard let values = Self.values(at: positions, of: record, fields: fields[index]) else { return true }
        return sorter.order((values, templates[index].withPrimaryKey(pk)), worst) < 0
      }
    }
    try eachMatch(txn, reader, skipping: 0, admits: admits) { snapshot, _ in
      let values = try sorter.sortValues(of: snapshot, source: reader)
      heap.insert(values, snapshot)
      return true
    }
    return heap.sorted()
  }

  /// The UTF-8 of the string attribute at `position` in a stored record, where it lies; `nil` when the value
  /// is nil, not a string or damaged.
  static func stringBytes(
    at position: Int, of record: UnsafeRawBufferPointer, fields: [RecordField]
  )
    -> UnsafeBufferPointer<UInt8>?
  {
    guard fields.indices.contains(position), fields[position] == .string else { return nil }
    var reader = RecordReader(bytes: record)
    do throws(RecordHeaderDamage) {
      _ = try reader.header()
    } catch {
      return nil
    }
    for field in fields[..<position] {
      guard reader.skipValue(field) else { return nil }
    }
    guard reader.byte() == RecordField.string.rawValue, let slice = reader.slice() else { return nil }
    return slice.assumingMemoryBound(to: UInt8.self)
  }

  /// The values of the attributes at `positions` in a stored record, as decoding would give them; `nil`
  /// when the record is damaged (decoding it then reports how).
  static func values(at positions: [Int], of record: UnsafeRawBufferPointer, fields: [RecordField]) -> [Value]? {
    var values: [Value] = []
    values.reserveCapacity(positions.count)
    for position in positions {
      guard fields.indices.contains(position) else { return nil }
      var reader = RecordReader(bytes: record)
      do throws(RecordHeaderDamage) {
        _ = try reader.header()
      } catch {
        return nil
      }
      for field in fields[..<position] {
        guard reader.skipValue(field) else { return nil }
      }
      guard reader.appendValue(fields[position], to: &values) else { return nil }
    }
    return values
  }
}

/// The `capacity` first snapshots in a sorter's order among those inserted: a binary heap whose root is
/// the last of them, so a snapshot that does not precede it is refused in one comparison.
struct TopHeap {
  let capacity: Int
  let sorter: SnapshotSorter
  private var items: [(values: [Value], id: ObjectID, snapshot: Snapshot)] = []

  init(capacity: Int, sorter: SnapshotSorter) {
    self.capacity = capacity
    self.sorter = sorter
  }

  /// The sort values and ID of the last snapshot kept, once the heap is full; `nil` before.
  var worst: (values: [Value], id: ObjectID)? {
    guard items.count >= capacity, let root = items.first else { return nil }
    return (root.values, root.id)
  }

  private func after(_ i: Int, _ j: Int) -> Bool {
    sorter.order((items[i].values, items[i].id), (items[j].values, items[j].id)) > 0
  }

  mutating func insert(_ values: [Value], _ snapshot: Snapshot) {
    let item = (values: values, id: snapshot.objectID, snapshot: snapshot)
    if items.count < capacity {
      items.append(item)
      var child = items.count - 1
      while child > 0 {
        let parent = (child - 1) / 2
        guard after(child, parent) else { break }
        items.swapAt(child, parent)
        child = parent
      }
      return
    }
    guard let root = items.first, sorter.order((values, item.id), (root.values, root.id)) < 0 else { return }
    items[0] = item
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var largest = parent
      if left < items.count && after(left, largest) { largest = left }
      if right < items.count && after(right, largest) { largest = right }
      guard largest != parent else { return }
      items.swapAt(parent, largest)
      parent = largest
    }
  }

  /// The snapshots kept, in sort order.
  func sorted() -> [Snapshot] {
    items.sorted { sorter.order(($0.values, $0.id), ($1.values, $1.id)) < 0 }.map(\.snapshot)
  }
}
