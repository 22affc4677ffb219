import Foundation

/// Where each attribute of an entity lies in an ``AttributeValues``: a slot of one machine word for a number,
/// a Boolean or a date, two for a string, bytes or a UUID, three for any other value (kept as a ``Value``).
///
/// An entity's layout is made once with its description (``EntityDescription/valueLayout``); values that do
/// not fit their slot (a string assigned to a number's slot by key-value coding) move their storage to a
/// wider layout, so any ``Value`` can be held in any slot.
///
/// ```swift
/// let layout = AttributeLayout.of([.string, .int64, .date])
/// var values = AttributeValues(layout: layout)
/// values[1] = .int(42)
/// ```
public final class AttributeLayout: Sendable, CustomStringConvertible {
  /// Slot sizes in words, one per attribute.
  public let slotWords: [UInt8]
  /// The number of slots.
  public var count: Int { slotWords.count }
  /// What storage reads on every access, without reference counting (see ``LayoutTable``).
  @usableFromInline let table: LayoutTable

  private init(slotWords: [UInt8]) {
    self.slotWords = slotWords
    table = LayoutTable(slotWords)
    table.setOwner(self)
  }

  deinit { table.base.deallocate() }

  /// The interned layout of these slot sizes: one object per distinct layout, kept for the process's life.
  static func interned(_ slotWords: [UInt8]) -> AttributeLayout {
    internedLayouts.withLock { table in
      if let layout = table[slotWords] { return layout }
      let layout = AttributeLayout(slotWords: slotWords)
      table[slotWords] = layout
      return layout
    }
  }

  /// The layout of attributes of these types: one object per distinct layout, kept for the process's life
  /// (storage refers to its layout without counting references).
  public static func of(_ types: [AttributeType]) -> AttributeLayout {
    interned(types.map(AttributeLayout.words(for:)))
  }

  static func words(for type: AttributeType) -> UInt8 {
    switch type {
    case .int16, .int32, .int64, .double, .float, .bool, .date: 1
    case .string, .json, .data, .uuid: 2
    case .decimal, .url: 3
    }
  }

  /// This layout with slot `index` at least `words` wide.
  func widening(_ index: Int, to words: UInt8) -> AttributeLayout {
    var sizes = slotWords
    sizes[index] = max(sizes[index], words)
    return AttributeLayout.interned(sizes)
  }

  public var description: String { "AttributeLayout(\(slotWords.map(String.init).joined(separator: ",")))" }
}

private let internedLayouts = Locked<[[UInt8]: AttributeLayout]>([:])

/// A layout as storage reads it: one raw allocation (a trivial pointer, so reading it counts no reference),
/// made with its ``AttributeLayout`` and kept as long as it (for the process's life: layouts are interned).
/// Bytes 0–8 the slot count, 8–16 the storage's words, 16–24 the words of tags, 24–32 the layout (unretained),
/// then 8 bytes per slot: its word offset (`Int32`) and its size in words (`UInt8`).
// `@unchecked Sendable`: its bytes are written once, while its layout is made, and only read after.
@usableFromInline struct LayoutTable: @unchecked Sendable {
  @usableFromInline let base: UnsafeMutableRawPointer

  init(_ slotWords: [UInt8]) {
    base = .allocate(byteCount: 32 + 8 * slotWords.count, alignment: 8)
    let tagWords = (slotWords.count + 7) / 8
    var next = tagWords
    for (i, words) in slotWords.enumerated() {
      base.storeBytes(of: Int32(next), toByteOffset: 32 + 8 * i, as: Int32.self)
      base.storeBytes(of: UInt32(words), toByteOffset: 36 + 8 * i, as: UInt32.self)
      next += Int(words)
    }
    base.storeBytes(of: slotWords.count, as: Int.self)
    base.storeBytes(of: next, toByteOffset: 8, as: Int.self)
    base.storeBytes(of: tagWords, toByteOffset: 16, as: Int.self)
  }

  func setOwner(_ layout: AttributeLayout) {
    base.storeBytes(of: Unmanaged.passUnretained(layout).toOpaque(), toByteOffset: 24, as: UnsafeMutableRawPointer.self)
  }

  @inlinable var count: Int { base.load(as: Int.self) }
  @inlinable var totalWords: Int { base.load(fromByteOffset: 8, as: Int.self) }
  @inlinable var tagWords: Int { base.load(fromByteOffset: 16, as: Int.self) }
  @inlinable func offset(_ index: Int) -> Int { Int(base.load(fromByteOffset: 32 &+ 8 &* index, as: Int32.self)) }
  @inlinable func size(_ index: Int) -> UInt8 { base.load(fromByteOffset: 36 &+ 8 &* index, as: UInt8.self) }
  var layout: AttributeLayout {
    Unmanaged<AttributeLayout>.fromOpaque(base.load(fromByteOffset: 24, as: UnsafeRawPointer.self)).takeUnretainedValue()
  }
}

/// What a slot holds: the case of its ``Value`` and how its payload is kept.
@usableFromInline enum SlotTag: UInt8 {
  case null = 0, int, double, bool, date, string, data, uuid, boxed

  @inlinable var holdsReference: Bool { self == .string || self == .data || self == .boxed }
}

// The storage of `AttributeValues`: tag bytes, then each slot's payload, tail-allocated after the header (the
// layout). Mutated only through a uniquely referenced `AttributeValues`, as an array's storage is, which is
// what makes sharing it between threads safe (see `AttributeValues`'s conformance to `Sendable`).
@usableFromInline final class AttributeStorage: ManagedBuffer<LayoutTable, UInt64> {
  @inlinable static func make(_ table: LayoutTable) -> AttributeStorage {
    let storage = unsafeDowncast(
      AttributeStorage.create(minimumCapacity: table.totalWords) { _ in table }, to: AttributeStorage.self)
    // The tags say every slot is null; a slot's words are written with its first value.
    storage.withUnsafeMutablePointerToElements { words in
      words.initialize(repeating: 0, count: table.tagWords)
    }
    return storage
  }

  deinit {
    withUnsafeMutablePointers { header, words in
      let table = header.pointee
      let tags = UnsafeMutableRawPointer(words).assumingMemoryBound(to: UInt8.self)
      for i in 0..<table.count {
        guard let tag = SlotTag(rawValue: tags[i]), tag.holdsReference else { continue }
        AttributeStorage.destroy(tag, at: UnsafeMutableRawPointer(words + table.offset(i)))
      }
    }
  }

  @inlinable static func destroy(_ tag: SlotTag, at slot: UnsafeMutableRawPointer) {
    switch tag {
    case .string: slot.assumingMemoryBound(to: String.self).deinitialize(count: 1)
    case .data: slot.assumingMemoryBound(to: Data.self).deinitialize(count: 1)
    case .boxed: slot.assumingMemoryBound(to: Value.self).deinitialize(count: 1)
    default: break
    }
  }

  /// A copy of these values in `table` (this storage's own layout or a wider one).
  func copy(into table: LayoutTable) -> AttributeStorage {
    let copy = AttributeStorage.make(table)
    withUnsafeMutablePointers { header, words in
      let from = header.pointee
      copy.withUnsafeMutablePointerToElements { target in
        let tags = UnsafeMutableRawPointer(words).assumingMemoryBound(to: UInt8.self)
        let targetTags = UnsafeMutableRawPointer(target).assumingMemoryBound(to: UInt8.self)
        if from.base == table.base {
          target.update(from: words, count: table.totalWords)
          for i in 0..<table.count {
            guard let tag = SlotTag(rawValue: tags[i]), tag.holdsReference else { continue }
            let offset = table.offset(i)
            AttributeStorage.copy(
              tag, from: UnsafeMutableRawPointer(words + offset), to: UnsafeMutableRawPointer(target + offset))
          }
        } else {
          for i in 0..<from.count {
            let value = AttributeStorage.read(tags[i], at: UnsafeMutableRawPointer(words + from.offset(i)))
            AttributeStorage.initialize(value, tagAt: targetTags + i, slot: UnsafeMutableRawPointer(target + table.offset(i)))
          }
        }
      }
    }
    return copy
  }

  /// Initializes the slot at `to` (whose bits are a copy of those at `from`) with a counted copy.
  static func copy(_ tag: SlotTag, from: UnsafeMutableRawPointer, to: UnsafeMutableRawPointer) {
    switch tag {
    case .string: to.initializeMemory(as: String.self, to: from.load(as: String.self))
    case .data: to.initializeMemory(as: Data.self, to: from.load(as: Data.self))
    case .boxed: to.initializeMemory(as: Value.self, to: from.load(as: Value.self))
    default: break
    }
  }

  @inlinable @inline(__always) static func read(_ rawTag: UInt8, at slot: UnsafeMutableRawPointer) -> Value {
    switch SlotTag(rawValue: rawTag) ?? .null {
    case .null: .null
    case .int: .int(slot.load(as: Int64.self))
    case .double: .double(slot.load(as: Double.self))
    case .bool: .bool(slot.load(as: Bool.self))
    case .date: .date(slot.load(as: Date.self))
    case .string: .string(slot.load(as: String.self))
    case .data: .data(slot.load(as: Data.self))
    case .uuid: .uuid(slot.load(as: UUID.self))
    case .boxed: slot.load(as: Value.self)
    }
  }

  /// The words `value` needs in a slot.
  @inlinable @inline(__always) static func words(for value: Value) -> UInt8 {
    switch value {
    case .null, .int, .double, .bool, .date: 1
    case .string, .data, .uuid: 2
    default: 3
    }
  }

  /// Initializes an empty slot (its old payload destroyed or trivial) with `value`, which fits it.
  @inlinable @inline(__always) static func initialize(
    _ value: __owned Value, tagAt tag: UnsafeMutablePointer<UInt8>, slot: UnsafeMutableRawPointer
  ) {
    switch value {
    case .null: tag.pointee = SlotTag.null.rawValue
    case .int(let v):
      slot.storeBytes(of: v, as: Int64.self)
      tag.pointee = SlotTag.int.rawValue
    case .double(let v):
      slot.storeBytes(of: v, as: Double.self)
      tag.pointee = SlotTag.double.rawValue
    case .bool(let v):
      slot.storeBytes(of: 0, as: UInt64.self)
      slot.storeBytes(of: v, as: Bool.self)
      tag.pointee = SlotTag.bool.rawValue
    case .date(let v):
      slot.storeBytes(of: v, as: Date.self)
      tag.pointee = SlotTag.date.rawValue
    case .string(let v):
      slot.initializeMemory(as: String.self, to: v)
      tag.pointee = SlotTag.string.rawValue
    case .data(let v):
      slot.initializeMemory(as: Data.self, to: v)
      tag.pointee = SlotTag.data.rawValue
    case .uuid(let v):
      slot.storeBytes(of: v, as: UUID.self)
      tag.pointee = SlotTag.uuid.rawValue
    default:
      slot.initializeMemory(as: Value.self, to: value)
      tag.pointee = SlotTag.boxed.rawValue
    }
  }
}

/// An object's attribute values, aligned with its entity's attributes, each kept in its type's own
/// representation (``AttributeLayout``) in one allocation: an 8-byte slot for a number, a Boolean or a date,
/// 16 bytes for a string, bytes or a UUID, instead of a 24-byte ``Value`` each.
///
/// A value type with copy-on-write storage, shared by a managed object and its committed snapshot until one
/// of them changes. It reads and writes as a collection of ``Value``s, so code written against `[Value]`
/// (a backend outside Strata) reads it unchanged and hands `[Value]` to ``init(_:)``; stores that know the
/// entity make it in the entity's layout (``EntityDescription/valueLayout``) and set each slot as they
/// decode.
///
/// ```swift
/// let title = AttributeDescription(name: "title", type: .string)
/// let year = AttributeDescription(name: "year", type: .int64)
/// let movie = EntityDescription(name: "Movie", attributes: [title, year])
/// var values = AttributeValues(layout: movie.valueLayout)
/// values[0] = .string("Alien")
/// values[1] = .int(1979)
/// let asArray = Array(values)  // [.string("Alien"), .int(1979)]
/// ```
public struct AttributeValues: @unchecked Sendable {
  // `@unchecked Sendable` as `Array` is: the storage (a `ManagedBuffer`, which is not `Sendable`) is written
  // only through `set(_:at:)`, after `isKnownUniquelyReferenced` proved no other value shares it, and copied
  // first otherwise; shared storage is only read. The layout it names is immutable.
  @usableFromInline var storage: AttributeStorage

  /// Values in `layout`, each `.null`.
  @inlinable public init(layout: AttributeLayout) {
    storage = AttributeStorage.make(layout.table)
  }

  /// Values in `layout` set by `fill`, which a store's decoder gives each value it reads (the sink stores
  /// decode into: no copy-on-write check or reference count per value).
  ///
  /// ```swift
  /// let values = AttributeValues(layout: movie.valueLayout) { sink in
  ///   sink.initialize(.string("Alien"), at: 0)
  ///   sink.initialize(.int(1979), at: 1)
  /// }
  /// ```
  @inlinable @inline(__always)
  public init(layout: AttributeLayout, _ fill: (inout Sink) throws -> Void) rethrows {
    var sink = Sink(layout: layout)
    try fill(&sink)
    self = sink.finish()
  }

  @inlinable init(storage: AttributeStorage) { self.storage = storage }

  /// Values being decoded: new storage in a layout, given each value as a store reads it (no copy-on-write
  /// check or reference count per value), then ``finish()``ed into ``AttributeValues``.
  ///
  /// ```swift
  /// var sink = AttributeValues.Sink(layout: movie.valueLayout)
  /// sink.initialize(string: "Alien", at: 0)
  /// sink.initialize(int: 1979, at: 1)
  /// let values = sink.finish()
  /// ```
  public struct Sink: ~Copyable {
    @usableFromInline let storage: AttributeStorage
    @usableFromInline let tags: UnsafeMutablePointer<UInt8>
    @usableFromInline let words: UnsafeMutablePointer<UInt64>
    @usableFromInline let table: LayoutTable
    /// Values wider than their slot, set once the storage is made (in a wider layout).
    @usableFromInline var misfits: [(Int, Value)] = []

    /// New values in `layout`, each `.null`.
    @inlinable @inline(__always)
    public init(layout: AttributeLayout) {
      let table = layout.table
      storage = AttributeStorage.make(table)
      // The storage is held by the sink, so its tail stays where these point.
      words = storage.withUnsafeMutablePointerToElements { $0 }
      tags = UnsafeMutableRawPointer(words).assumingMemoryBound(to: UInt8.self)
      self.table = table
    }

    /// The values given.
    @inlinable @inline(__always)
    public consuming func finish() -> AttributeValues {
      var values = AttributeValues(storage: storage)
      if _slowPath(!misfits.isEmpty) {
        for (index, value) in misfits { values[index] = value }
      }
      return values
    }

    /// Sets the value at `index` (a later call for the same index replaces it).
    @inlinable @inline(__always)
    public mutating func initialize(_ value: __owned Value, at index: Int) {
      precondition(index >= 0 && index < table.count, "attribute index out of range")
      if _slowPath(!misfits.isEmpty) { misfits.removeAll { $0.0 == index } }
      guard _fastPath(AttributeStorage.words(for: value) <= table.size(index)) else {
        misfits.append((index, value))
        return
      }
      let slot = UnsafeMutableRawPointer(words + table.offset(index))
      if let old = SlotTag(rawValue: tags[index]), old.holdsReference { AttributeStorage.destroy(old, at: slot) }
      AttributeStorage.initialize(value, tagAt: tags + index, slot: slot)
    }

    // The typed forms name what a decoder read; inlined, the `Value` they make is folded away.

    /// Sets an integer at `index`.
    @inlinable @inline(__always)
    public mutating func initialize(int value: Int64, at index: Int) { initialize(.int(value), at: index) }

    /// Sets a double at `index`.
    @inlinable @inline(__always)
    public mutating func initialize(double value: Double, at index: Int) { initialize(.double(value), at: index) }

    /// Sets a Boolean at `index`.
    @inlinable @inline(__always)
    public mutating func initialize(bool value: Bool, at index: Int) { initialize(.bool(value), at: index) }

    /// Sets a date at `index`.
    @inlinable @inline(__always)
    public mutating func initialize(date value: Date, at index: Int) { initialize(.date(value), at: index) }

    /// Sets a string at `index`.
    @inlinable @inline(__always)
    public mutating func initialize(string value: __owned String, at index: Int) {
      initialize(.string(value), at: index)
    }

    /// Sets `.null` at `index`.
    @inlinable @inline(__always)
    public mutating func initializeNull(at index: Int) { initialize(.null, at: index) }
  }

  /// No values (a fault's, an entity without attributes).
  public init() {
    storage = AttributeValues.emptyStorage
  }

  nonisolated(unsafe) private static let emptyStorage = AttributeStorage.make(AttributeLayout.interned([]).table)

  /// These values in `layout` (the entity's, so that later writes of the declared types stay in place; a
  /// value wider than its slot widens it).
  public init(_ values: some Collection<Value>, layout: AttributeLayout) {
    let layout = layout.count == values.count ? layout : AttributeLayout.interned(values.map(AttributeStorage.words(for:)))
    var sink = Sink(layout: layout)
    for (index, value) in values.enumerated() { sink.initialize(value, at: index) }
    self = sink.finish()
  }

  /// These values, in a layout made from them (the adapter for code that builds `[Value]`).
  public init(_ values: some Collection<Value>) {
    if values.isEmpty {
      self.init()
      return
    }
    self.init(values, layout: AttributeLayout.interned(values.map(AttributeStorage.words(for:))))
  }

  /// The layout the values are kept in.
  // Read through a pointer: `ManagedBuffer.header` is a class's stored property, each access checked for
  // exclusivity at run time.
  public var layout: AttributeLayout { storage.withUnsafeMutablePointerToHeader { $0.pointee.layout } }

  /// The number of values.
  @inlinable public var count: Int { storage.withUnsafeMutablePointerToHeader { $0.pointee.count } }

  // Pointers into the storage, used while `storage` is held (the tail of a `ManagedBuffer` does not move).
  @inlinable @inline(__always) func pointers(_ index: Int) -> (tag: UnsafeMutablePointer<UInt8>, slot: UnsafeMutableRawPointer) {
    storage.withUnsafeMutablePointers { header, words in
      let tags = UnsafeMutableRawPointer(words).assumingMemoryBound(to: UInt8.self)
      return (tags + index, UnsafeMutableRawPointer(words + header.pointee.offset(index)))
    }
  }

  /// The value at `index`.
  @inlinable public subscript(index: Int) -> Value {
    @inline(__always) get {
      precondition(index >= 0 && index < count, "attribute index out of range")
      return withExtendedLifetime(storage) {
        let (tag, slot) = pointers(index)
        return AttributeStorage.read(tag.pointee, at: slot)
      }
    }
    @inline(__always) set {
      precondition(index >= 0 && index < count, "attribute index out of range")
      set(newValue, at: index)
    }
  }

  @inlinable @inline(__always) mutating func set(_ value: __owned Value, at index: Int) {
    // In place when no other value shares the storage and the value fits its slot (a value of the attribute's
    // declared type always does); else copied or widened first.
    let needed = AttributeStorage.words(for: value)
    let size = storage.withUnsafeMutablePointerToHeader { $0.pointee.size(index) }
    if _slowPath(needed > size || !isKnownUniquelyReferenced(&storage)) {
      makeRoom(needed: needed, at: index)
    }
    withExtendedLifetime(storage) {
      let (tag, slot) = pointers(index)
      if let old = SlotTag(rawValue: tag.pointee), old.holdsReference { AttributeStorage.destroy(old, at: slot) }
      AttributeStorage.initialize(value, tagAt: tag, slot: slot)
    }
  }

  /// Gives the values storage of their own in which a value of `needed` words fits slot `index`.
  @usableFromInline @inline(never) mutating func makeRoom(needed: UInt8, at index: Int) {
    let table = storage.withUnsafeMutablePointerToHeader { $0.pointee }
    storage = storage.copy(into: needed > table.size(index) ? table.layout.widening(index, to: needed).table : table)
  }

  /// A copy in storage of its own, made by copying bytes: for values none of which holds a counted
  /// reference (numbers, dates, Booleans, UUIDs, nils, the empty string and empty data), so that a new
  /// object's first write does not copy its entity's initial values first.
  package func bitwiseCopy() -> AttributeValues {
    AttributeValues(
      storage: storage.withUnsafeMutablePointers { header, words in
        let target = AttributeStorage.make(header.pointee)
        target.withUnsafeMutablePointerToElements { $0.update(from: words, count: header.pointee.totalWords) }
        return target
      })
  }

  /// Whether no value holds a counted reference (``bitwiseCopy()`` may copy them).
  package var isBitwiseCopyable: Bool {
    allSatisfy { value in
      switch value {
      case .null, .int, .double, .bool, .date, .uuid: true
      case .string(let s): s.isEmpty
      case .data(let d): d.isEmpty
      default: false
      }
    }
  }

  /// Whether the value at `index` is `.null` (read from its tag alone).
  @inlinable public func isNull(at index: Int) -> Bool {
    precondition(index >= 0 && index < count, "attribute index out of range")
    return withExtendedLifetime(storage) { pointers(index).tag.pointee == SlotTag.null.rawValue }
  }

  /// Whether both hold the same storage (equal without comparing).
  @inlinable public func sharesStorage(with other: AttributeValues) -> Bool { storage === other.storage }
}

extension AttributeValues: RandomAccessCollection, MutableCollection {
  public typealias Index = Int
  public typealias Indices = Range<Int>
  @inlinable public var startIndex: Int { 0 }
  @inlinable public var endIndex: Int { count }
  @inlinable public var indices: Range<Int> { 0..<count }
  @inlinable public func index(after i: Int) -> Int { i + 1 }
  @inlinable public func index(before i: Int) -> Int { i - 1 }
}

extension AttributeValues: ExpressibleByArrayLiteral {
  public init(arrayLiteral elements: Value...) { self.init(elements) }
}

extension AttributeValues: Hashable {
  public static func == (a: AttributeValues, b: AttributeValues) -> Bool {
    if a.storage === b.storage { return true }
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a[i] != b[i] { return false }
    return true
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(count)
    for value in self { hasher.combine(value) }
  }
}

extension AttributeValues: Codable {
  public init(from decoder: any Decoder) throws {
    self.init(try [Value](from: decoder))
  }

  public func encode(to encoder: any Encoder) throws {
    try Array(self).encode(to: encoder)
  }
}

extension AttributeValues: CustomStringConvertible {
  public var description: String { Array(self).description }
}
