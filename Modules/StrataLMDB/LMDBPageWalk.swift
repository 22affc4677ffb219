import Foundation
import StrataStoreKit

/// Walks every page reachable from a meta page of `data.mdb` — the free-list database, the main
/// database, every named database it records and every duplicate tree inside those — reading the file
/// with `pread` and checking each page the way liblmdb will use it, so that a damaged B-tree page gives
/// `.corrupted` instead of a `SIGSEGV` or `SIGBUS` inside liblmdb.
///
/// liblmdb 0.9 trusts what it maps: it follows a branch node's child page number, a node's offset in
/// `mp_ptrs`, its key and data sizes, and a big value's overflow page number without bounds checks.
/// The walk checks, for every page (64-bit layout of `MDB_page`, `MDB_node`, `MDB_db` from `mdb.c`):
/// the page number is in the environment (`<= mm_last_pg`, so inside the file, whose length
/// ``LMDBDataFile`` checked) and is the one the page records; its type is the one its depth calls for
/// (branch above the tree's depth, leaf or `LEAF2` at it); `mp_lower`/`mp_upper` lie inside it; every
/// node starts after the pointer array and its header, key and inline data end inside the page; every
/// overflow run starts with an overflow page, lies in the environment and holds its value; no page is
/// reached twice (a cycle or two trees sharing a page); every free-list entry is a well-formed page list.
struct LMDBPageWalk {
  /// `P_BRANCH`, `P_LEAF`, `P_OVERFLOW`, `P_LEAF2`, `P_SUBP` in `mp_flags`.
  static let branchFlag: UInt16 = 0x01
  static let leafFlag: UInt16 = 0x02
  static let overflowFlag: UInt16 = 0x04
  static let leaf2Flag: UInt16 = 0x20
  static let subPageFlag: UInt16 = 0x40
  /// `F_BIGDATA`, `F_SUBDATA`, `F_DUPDATA` in a leaf node's `mn_flags`.
  static let bigData: UInt16 = 0x01
  static let subData: UInt16 = 0x02
  static let dupData: UInt16 = 0x04
  /// `MDB_DUPSORT` and `MDB_DUPFIXED` in `md_flags`; every flag `mdb_dbi_open` accepts for a database.
  static let dupSort: UInt16 = 0x04
  static let dupFixed: UInt16 = 0x10
  static let knownDatabaseFlags: UInt16 = 0x7E
  /// `NODESIZE`, `PAGEHDRSZ`, `sizeof(MDB_db)`.
  static let nodeHeader = 8
  static let header = 16
  static let databaseRecord = 48
  /// liblmdb's `CURSOR_STACK`: no tree is deeper.
  static let maximumDepth = 32

  /// A damaged page: the message names the page and what is wrong with it.
  struct Damage: Error {
    var message: String
  }

  /// What a tree is, for what its leaves hold.
  private enum Tree {
    case free
    case main
    case named(flags: UInt16)
    /// The sorted duplicates of one key of a `MDB_DUPSORT` database; `fixedSize` for `MDB_DUPFIXED`.
    case duplicates(fixedSize: Int?)
  }

  private let descriptor: Int32
  private let pageSize: Int
  private let lastPage: UInt64
  private var visited: [UInt64]
  /// One page buffer per depth of the walk (trees nest: main, named, duplicates).
  private var buffers: [UnsafeMutableRawBufferPointer] = []
  /// Pages checked (branch, leaf and the first page of each overflow run).
  private(set) var pagesRead = 0

  /// Walks the trees of `meta` in the file open as `descriptor`.
  /// - Throws: ``Damage`` for the first damaged page, `StoreError(.io)` when the file cannot be read.
  static func check(_ descriptor: Int32, meta: LMDBDataFile.Meta) throws -> Int {
    var walk = LMDBPageWalk(descriptor: descriptor, meta: meta)
    defer { for buffer in walk.buffers { buffer.deallocate() } }
    try walk.run(meta)
    return walk.pagesRead
  }

  private init(descriptor: Int32, meta: LMDBDataFile.Meta) {
    self.descriptor = descriptor
    self.pageSize = meta.pageSize
    self.lastPage = meta.lastPage
    self.visited = [UInt64](repeating: 0, count: Int(meta.lastPage / 64) + 1)
  }

  private mutating func run(_ meta: LMDBDataFile.Meta) throws {
    try walkTree(root: meta.freeDatabase.root, depth: meta.freeDatabase.depth, tree: .free, level: 0, what: "the free list")
    try walkTree(root: meta.mainDatabase.root, depth: meta.mainDatabase.depth, tree: .main, level: 0, what: "the main database")
  }

  // MARK: Reading

  private mutating func buffer(_ level: Int) -> UnsafeMutableRawBufferPointer {
    while buffers.count <= level {
      buffers.append(UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 8))
    }
    return buffers[level]
  }

  private func read(_ pages: UnsafeMutableRawBufferPointer, count: Int, at offset: UInt64) throws {
    var done = 0
    while done < count {
      let n = pread(descriptor, pages.baseAddress! + done, count - done, off_t(offset) + off_t(done))
      if n < 0 {
        if errno == EINTR { continue }
        throw StoreError(.io, "cannot read data.mdb: \(String(cString: strerror(errno)))")
      }
      // The length was checked: a shorter read means the file shrank meanwhile.
      guard n > 0 else { throw Damage(message: "it ends inside page \(offset / UInt64(pageSize))") }
      done += n
    }
  }

  /// Marks `page` visited; a page reached twice is a cycle or two trees sharing it.
  private mutating func visit(_ page: UInt64, from: String) throws {
    guard page >= 2, page <= lastPage else {
      throw Damage(message: "\(from) points to page \(page), past the end of the file (its last page is \(lastPage))")
    }
    let (word, bit) = (Int(page / 64), page % 64)
    guard visited[word] & (1 << bit) == 0 else {
      throw Damage(message: "\(from) points to page \(page), which another page already uses (a cycle or a shared page)")
    }
    visited[word] |= 1 << bit
  }

  // MARK: Trees

  private mutating func walkTree(root: UInt64, depth: Int, tree: Tree, level: Int, what: String) throws {
    if root == LMDBDataFile.noPage { return }
    guard depth >= 1, depth <= Self.maximumDepth else {
      throw Damage(message: "the record of \(what) gives an impossible depth \(depth)")
    }
    guard level < 3 * Self.maximumDepth else { throw Damage(message: "\(what) nests too deeply") }
    try walkPage(root, remaining: depth, tree: tree, level: level, from: "the record of \(what)")
  }

  private mutating func walkPage(_ page: UInt64, remaining: Int, tree: Tree, level: Int, from: String) throws {
    try visit(page, from: from)
    let bytes = buffer(level)
    try read(bytes, count: pageSize, at: page * UInt64(pageSize))
    pagesRead += 1
    let raw = UnsafeRawBufferPointer(bytes)
    guard load(raw, 0, as: UInt64.self) == page else {
      throw Damage(message: "page \(page) records another page number (\(load(raw, 0, as: UInt64.self)))")
    }
    let flags = load(raw, 10, as: UInt16.self) & ~UInt16(0xC010)  // P_DIRTY, P_LOOSE, P_KEEP are in-memory marks
    let isBranch = remaining > 1
    let expected: Set<UInt16> =
      isBranch ? [Self.branchFlag] : (fixedSize(tree) != nil ? [Self.leafFlag, Self.leafFlag | Self.leaf2Flag] : [Self.leafFlag])
    guard expected.contains(flags) else {
      throw Damage(message: "page \(page) has the flags \(flags) where a \(isBranch ? "branch" : "leaf") page belongs")
    }
    let count = try nodeCount(raw, size: pageSize, what: "page \(page)")
    if flags & Self.leaf2Flag != 0 {
      guard let size = fixedSize(tree), size > 0, Self.header + count * size <= pageSize else {
        throw Damage(message: "page \(page) holds more fixed-size keys than fit in it")
      }
      return
    }
    if isBranch {
      guard count >= 1 else { throw Damage(message: "branch page \(page) has no children") }
      var children: [UInt64] = []
      children.reserveCapacity(count)
      for index in 0..<count {
        let node = try nodeOffset(raw, size: pageSize, index: index, count: count, what: "page \(page)")
        let keySize = Int(load(raw, node + 6, as: UInt16.self))
        guard node + Self.nodeHeader + keySize <= pageSize else {
          throw Damage(message: "node \(index) of page \(page) ends past the end of the page")
        }
        let child =
          UInt64(load(raw, node, as: UInt16.self)) | UInt64(load(raw, node + 2, as: UInt16.self)) << 16
          | UInt64(load(raw, node + 4, as: UInt16.self)) << 32
        children.append(child)
      }
      // The page's buffer is this level's: copy the children out before walking them.
      for child in children {
        try walkPage(child, remaining: remaining - 1, tree: tree, level: level, from: "branch page \(page)")
      }
      return
    }
    // A leaf: collect what its nodes lead to before the buffer is reused.
    var followUps: [(node: Int, flags: UInt16, data: [UInt8], overflow: UInt64?, size: Int)] = []
    for index in 0..<count {
      let node = try nodeOffset(raw, size: pageSize, index: index, count: count, what: "page \(page)")
      let nodeFlags = load(raw, node + 4, as: UInt16.self)
      let keySize = Int(load(raw, node + 6, as: UInt16.self))
      let dataSize = Int(load(raw, node, as: UInt16.self)) | Int(load(raw, node + 2, as: UInt16.self)) << 16
      let where_ = "node \(index) of page \(page)"
      guard nodeFlags & ~(Self.bigData | Self.subData | Self.dupData) == 0 else {
        throw Damage(message: "\(where_) has unknown flags \(nodeFlags)")
      }
      let start = node + Self.nodeHeader + keySize
      if nodeFlags & Self.bigData != 0 {
        guard nodeFlags == Self.bigData, start + 8 <= pageSize else {
          throw Damage(message: "\(where_) ends past the end of the page")
        }
        followUps.append((index, nodeFlags, [], load(raw, start, as: UInt64.self), dataSize))
        continue
      }
      guard start + dataSize <= pageSize else { throw Damage(message: "\(where_) ends past the end of the page") }
      try checkLeafFlags(nodeFlags, tree: tree, where_: where_)
      if nodeFlags != 0 || isFreeList(tree) {
        followUps.append((index, nodeFlags, Array(raw[start..<start + dataSize]), nil, dataSize))
      }
    }
    for entry in followUps {
      let where_ = "node \(entry.node) of page \(page)"
      var data = entry.data
      if let overflow = entry.overflow {
        data = try walkOverflow(overflow, size: entry.size, level: level, from: where_, keep: isFreeList(tree))
      }
      try checkLeafData(data, flags: entry.flags, tree: tree, level: level, where_: where_)
    }
  }

  private func isFreeList(_ tree: Tree) -> Bool {
    if case .free = tree { return true }
    return false
  }

  private func fixedSize(_ tree: Tree) -> Int? {
    if case .duplicates(let size) = tree { return size }
    return nil
  }

  private func checkLeafFlags(_ flags: UInt16, tree: Tree, where_: String) throws {
    switch tree {
    case .free, .duplicates:
      guard flags == 0 else { throw Damage(message: "\(where_) has the flags \(flags) where plain data belongs") }
    case .main:
      guard flags == 0 || flags == Self.subData else { throw Damage(message: "\(where_) has the unexpected flags \(flags)") }
    case .named(let databaseFlags):
      let allowed: [UInt16] = databaseFlags & Self.dupSort != 0 ? [0, Self.dupData, Self.dupData | Self.subData] : [0]
      guard allowed.contains(flags) else { throw Damage(message: "\(where_) has the unexpected flags \(flags)") }
    }
  }

  /// Checks the overflow run a big value starts at; returns the value when `keep` (the free list's).
  private mutating func walkOverflow(_ first: UInt64, size: Int, level: Int, from: String, keep: Bool) throws -> [UInt8] {
    try visit(first, from: from)
    let bytes = buffer(level + 1)
    try read(bytes, count: Self.header, at: first * UInt64(pageSize))
    pagesRead += 1
    let raw = UnsafeRawBufferPointer(bytes)
    guard load(raw, 0, as: UInt64.self) == first,
      load(raw, 10, as: UInt16.self) & ~UInt16(0xC010) == Self.overflowFlag
    else { throw Damage(message: "\(from) points to page \(first), which is not an overflow page") }
    let pages = UInt64(load(raw, 12, as: UInt32.self))
    guard pages >= 1, first + pages - 1 <= lastPage else {
      throw Damage(message: "overflow page \(first) runs \(pages) pages, past the end of the file")
    }
    guard UInt64(size) <= pages * UInt64(pageSize) - UInt64(Self.header) else {
      throw Damage(message: "\(from) holds \(size) bytes, more than its overflow pages \(first)… hold")
    }
    for page in first + 1..<first + pages { try visit(page, from: "overflow page \(first)") }
    guard keep else { return [] }
    let value = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
    defer { value.deallocate() }
    try read(value, count: size, at: first * UInt64(pageSize) + UInt64(Self.header))
    return Array(UnsafeRawBufferPointer(value)[0..<size])
  }

  private mutating func checkLeafData(_ data: [UInt8], flags: UInt16, tree: Tree, level: Int, where_: String) throws {
    if case .free = tree {
      // An IDL: a count, then that many page numbers, each one liblmdb may hand out again.
      guard data.count >= 8 else { throw Damage(message: "\(where_) holds a damaged free-page list") }
      let count = data.withUnsafeBytes { load($0, 0, as: UInt64.self) }
      guard count <= UInt64(data.count / 8 - 1) else { throw Damage(message: "\(where_) holds a damaged free-page list") }
      try data.withUnsafeBytes { raw in
        for index in 0..<Int(count) {
          let page = load(raw, 8 + index * 8, as: UInt64.self)
          guard page >= 2, page <= lastPage else {
            throw Damage(message: "\(where_) lists the free page \(page), past the end of the file")
          }
        }
      }
      return
    }
    if flags & Self.subData != 0 {
      guard data.count == Self.databaseRecord else { throw Damage(message: "\(where_) holds a damaged database record") }
      let (databaseFlags, depth, root, pad) = data.withUnsafeBytes { raw in
        (
          load(raw, 4, as: UInt16.self), Int(load(raw, 6, as: UInt16.self)), load(raw, 40, as: UInt64.self),
          Int(load(raw, 0, as: UInt32.self))
        )
      }
      if case .main = tree {
        guard databaseFlags & ~Self.knownDatabaseFlags == 0 else {
          throw Damage(message: "\(where_) holds a database record with unknown flags \(databaseFlags)")
        }
        try walkTree(root: root, depth: depth, tree: .named(flags: databaseFlags), level: level + 1, what: where_)
      } else if case .named(let parent) = tree {
        let fixed = parent & Self.dupFixed != 0 ? pad : nil
        try walkTree(root: root, depth: depth, tree: .duplicates(fixedSize: fixed), level: level + 1, what: where_)
      }
      return
    }
    if flags & Self.dupData != 0, case .named(let parent) = tree {
      try checkSubPage(data, fixed: parent & Self.dupFixed != 0, where_: where_)
    }
  }

  /// A key's few duplicates, kept inline as a small page (`P_SUBP`) in the node's data.
  private func checkSubPage(_ data: [UInt8], fixed: Bool, where_: String) throws {
    guard data.count >= Self.header else { throw Damage(message: "\(where_) holds a damaged duplicate page") }
    try data.withUnsafeBytes { raw in
      let flags = load(raw, 10, as: UInt16.self) & ~UInt16(0xC010)
      let size = data.count
      let count = try nodeCount(raw, size: size, what: "the duplicate page in \(where_)")
      if flags == Self.leafFlag | Self.subPageFlag | Self.leaf2Flag, fixed {
        let keySize = Int(load(raw, 8, as: UInt16.self))
        guard keySize > 0, Self.header + count * keySize <= size else {
          throw Damage(message: "the duplicate page in \(where_) holds more keys than fit in it")
        }
        return
      }
      guard flags == Self.leafFlag | Self.subPageFlag else {
        throw Damage(message: "the duplicate page in \(where_) has the flags \(flags)")
      }
      for index in 0..<count {
        let node = try nodeOffset(raw, size: size, index: index, count: count, what: "the duplicate page in \(where_)")
        let keySize = Int(load(raw, node + 6, as: UInt16.self))
        let dataSize = Int(load(raw, node, as: UInt16.self)) | Int(load(raw, node + 2, as: UInt16.self)) << 16
        guard load(raw, node + 4, as: UInt16.self) == 0, node + Self.nodeHeader + keySize + dataSize <= size else {
          throw Damage(message: "node \(index) of the duplicate page in \(where_) ends past its end")
        }
      }
    }
  }

  // MARK: Page fields

  /// `NUMKEYS`: from `mp_lower`, after checking `mp_lower` and `mp_upper` lie inside the page.
  private func nodeCount(_ raw: UnsafeRawBufferPointer, size: Int, what: String) throws -> Int {
    let lower = Int(load(raw, 12, as: UInt16.self))
    let upper = Int(load(raw, 14, as: UInt16.self))
    guard lower >= Self.header, lower <= upper, upper <= size, (lower - Self.header) % 2 == 0 else {
      throw Damage(message: "\(what) has impossible bounds (lower \(lower), upper \(upper))")
    }
    return (lower - Self.header) / 2
  }

  /// The offset of node `index` (`mp_ptrs[index]`), after checking its header lies inside the page.
  private func nodeOffset(_ raw: UnsafeRawBufferPointer, size: Int, index: Int, count: Int, what: String) throws -> Int {
    let node = Int(load(raw, Self.header + 2 * index, as: UInt16.self))
    guard node >= Self.header + 2 * count, node + Self.nodeHeader <= size else {
      throw Damage(message: "node \(index) of \(what) points outside the page (offset \(node))")
    }
    return node
  }
}

/// A little-endian integer at `offset` of `raw` (the caller checked the bounds).
@inline(__always)
private func load<T: FixedWidthInteger>(_ raw: UnsafeRawBufferPointer, _ offset: Int, as type: T.Type) -> T {
  T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
}
