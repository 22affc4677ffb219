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
  private mutating func visit(_ page: UInt64, from: @autoclosure () -> String) throws {
    guard page >= 2, page <= lastPage else {
      throw Damage(message: "\(from()) points to page \(page), past the end of the file (its last page is \(lastPage))")
    }
    let (word, bit) = (Int(page / 64), page % 64)
    guard visited[word] & (1 << bit) == 0 else {
      throw Damage(message: "\(from()) points to page \(page), which another page already uses (a cycle or a shared page)")
    }
    visited[word] |= 1 << bit
  }

  // MARK: Trees

  private mutating func walkTree(root: UInt64, depth: Int, tree: Tree, level: Int, what: @autoclosure () -> String) throws {
    if root == LMDBDataFile.noPage { return }
    guard depth >= 1, depth <= Self.maximumDepth else {
      throw Damage(message: "the record of \(what()) gives an impossible depth \(depth)")
    }
    guard level < 3 * Self.maximumDepth else { throw Damage(message: "\(what()) nests too deeply") }
    try walkPage(root, remaining: depth, tree: tree, level: level, from: "the record of \(what())")
  }

  /// What a leaf node leads to, collected before the page's buffer is reused.
  private enum FollowUp {
    /// A database record (`F_SUBDATA`): a named database in the main one, or a key's duplicate tree.
    case tree(flags: UInt16, depth: Int, root: UInt64, keySize: Int)
    /// A big value: its first overflow page and its size.
    case overflow(UInt64, size: Int)
  }

  private mutating func walkPage(
    _ page: UInt64, remaining: Int, tree: Tree, level: Int, from: @autoclosure () -> String
  ) throws {
    try visit(page, from: from())
    let bytes = buffer(level)
    try read(bytes, count: pageSize, at: page * UInt64(pageSize))
    pagesRead += 1
    let raw = UnsafeRawBufferPointer(bytes)
    guard load64(raw, 0) == page else {
      throw Damage(message: "page \(page) records another page number (\(load64(raw, 0)))")
    }
    let flags = load16(raw, 10) & ~UInt16(0xC010)  // P_DIRTY, P_LOOSE, P_KEEP are in-memory marks
    let isBranch = remaining > 1
    let fixed = fixedSize(tree)
    let fits =
      isBranch
      ? flags == Self.branchFlag : flags == Self.leafFlag || (fixed != nil && flags == Self.leafFlag | Self.leaf2Flag)
    guard fits else {
      throw Damage(message: "page \(page) has the flags \(flags) where a \(isBranch ? "branch" : "leaf") page belongs")
    }
    let count = try nodeCount(raw, base: 0, size: pageSize, what: "page \(page)")
    if flags & Self.leaf2Flag != 0 {
      guard let size = fixed, size > 0, Self.header + count * size <= pageSize else {
        throw Damage(message: "page \(page) holds more fixed-size keys than fit in it")
      }
      return
    }
    if isBranch {
      guard count >= 1 else { throw Damage(message: "branch page \(page) has no children") }
      var children: [UInt64] = []
      children.reserveCapacity(count)
      for index in 0..<count {
        let node = try nodeOffset(raw, base: 0, size: pageSize, index: index, count: count, what: "page \(page)")
        guard node + Self.nodeHeader + Int(load16(raw, node + 6)) <= pageSize else {
          throw Damage(message: "node \(index) of page \(page) ends past the end of the page")
        }
        children.append(
          UInt64(load16(raw, node)) | UInt64(load16(raw, node + 2)) << 16
            | UInt64(load16(raw, node + 4)) << 32)
      }
      // The page's buffer is this level's: the children were copied out before walking them.
      for child in children {
        try walkPage(child, remaining: remaining - 1, tree: tree, level: level, from: "branch page \(page)")
      }
      return
    }
    var followUps: [(node: Int, FollowUp)] = []
    for index in 0..<count {
      let node = try nodeOffset(raw, base: 0, size: pageSize, index: index, count: count, what: "page \(page)")
      let nodeFlags = load16(raw, node + 4)
      let start = node + Self.nodeHeader + Int(load16(raw, node + 6))
      let dataSize = Int(load16(raw, node)) | Int(load16(raw, node + 2)) << 16
      if nodeFlags == Self.bigData {
        guard start + 8 <= pageSize else { throw Damage(message: "node \(index) of page \(page) ends past the end of the page") }
        followUps.append((index, .overflow(load64(raw, start), size: dataSize)))
        continue
      }
      guard start + dataSize <= pageSize else {
        throw Damage(message: "node \(index) of page \(page) ends past the end of the page")
      }
      guard allows(nodeFlags, in: tree) else {
        throw Damage(message: "node \(index) of page \(page) has the unexpected flags \(nodeFlags)")
      }
      if nodeFlags & Self.subData != 0 {
        guard dataSize == Self.databaseRecord else {
          throw Damage(message: "node \(index) of page \(page) holds a damaged database record")
        }
        followUps.append(
          (
            index,
            .tree(
              flags: load16(raw, start + 4), depth: Int(load16(raw, start + 6)),
              root: load64(raw, start + 40), keySize: Int(load32(raw, start)))
          ))
      } else if nodeFlags == Self.dupData, case .named(let parent) = tree {
        try checkSubPage(raw, base: start, size: dataSize, fixed: parent & Self.dupFixed != 0) {
          "the duplicate page in node \(index) of page \(page)"
        }
      } else if case .free = tree {
        try checkFreeList(raw, base: start, size: dataSize) { "node \(index) of page \(page)" }
      }
    }
    for (index, followUp) in followUps {
      switch followUp {
      case .overflow(let first, let size):
        try walkOverflow(first, size: size, tree: tree, level: level, from: "node \(index) of page \(page)")
      case .tree(let databaseFlags, let depth, let root, let keySize):
        if case .named(let parent) = tree {
          let fixed = parent & Self.dupFixed != 0 ? keySize : nil
          try walkTree(
            root: root, depth: depth, tree: .duplicates(fixedSize: fixed), level: level + 1,
            what: "node \(index) of page \(page)")
        } else {
          guard databaseFlags & ~Self.knownDatabaseFlags == 0 else {
            throw Damage(message: "node \(index) of page \(page) holds a database record with unknown flags \(databaseFlags)")
          }
          try walkTree(
            root: root, depth: depth, tree: .named(flags: databaseFlags), level: level + 1,
            what: "node \(index) of page \(page)")
        }
      }
    }
  }

  private func fixedSize(_ tree: Tree) -> Int? {
    if case .duplicates(let size) = tree { return size }
    return nil
  }

  /// The leaf node flags liblmdb expects in `tree` (`F_BIGDATA` is handled before).
  private func allows(_ flags: UInt16, in tree: Tree) -> Bool {
    switch tree {
    case .free, .duplicates: flags == 0
    case .main: flags == 0 || flags == Self.subData
    case .named(let databaseFlags):
      flags == 0 || (databaseFlags & Self.dupSort != 0 && (flags == Self.dupData || flags == Self.dupData | Self.subData))
    }
  }

  /// Checks the overflow run a big value starts at, and the value itself for a free-page list.
  private mutating func walkOverflow(_ first: UInt64, size: Int, tree: Tree, level: Int, from: @autoclosure () -> String) throws {
    try visit(first, from: from())
    let bytes = buffer(level + 1)
    try read(bytes, count: Self.header, at: first * UInt64(pageSize))
    pagesRead += 1
    let raw = UnsafeRawBufferPointer(bytes)
    guard load64(raw, 0) == first,
      load16(raw, 10) & ~UInt16(0xC010) == Self.overflowFlag
    else { throw Damage(message: "\(from()) points to page \(first), which is not an overflow page") }
    let pages = UInt64(load32(raw, 12))
    guard pages >= 1, first + pages - 1 <= lastPage else {
      throw Damage(message: "overflow page \(first) runs \(pages) pages, past the end of the file")
    }
    guard UInt64(size) <= pages * UInt64(pageSize) - UInt64(Self.header) else {
      throw Damage(message: "\(from()) holds \(size) bytes, more than its overflow pages from \(first) hold")
    }
    for page in first + 1..<first + pages { try visit(page, from: "overflow page \(first)") }
    guard case .free = tree else { return }
    let value = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
    defer { value.deallocate() }
    try read(value, count: size, at: first * UInt64(pageSize) + UInt64(Self.header))
    try checkFreeList(UnsafeRawBufferPointer(value), base: 0, size: size, what: from)
  }

  /// An IDL: a count, then that many page numbers, each one liblmdb may hand out again.
  private func checkFreeList(_ raw: UnsafeRawBufferPointer, base: Int, size: Int, what: () -> String) throws {
    guard size >= 8, load64(raw, base) <= UInt64(size / 8 - 1) else {
      throw Damage(message: "\(what()) holds a damaged free-page list")
    }
    for index in 0..<Int(load64(raw, base)) {
      let page = load64(raw, base + 8 + index * 8)
      guard page >= 2, page <= lastPage else {
        throw Damage(message: "\(what()) lists the free page \(page), past the end of the file")
      }
    }
  }

  /// A key's few duplicates, kept inline as a small page (`P_SUBP`) of `size` bytes at `base`.
  private func checkSubPage(_ raw: UnsafeRawBufferPointer, base: Int, size: Int, fixed: Bool, what: () -> String) throws {
    guard size >= Self.header else { throw Damage(message: "\(what()) is too small") }
    let flags = load16(raw, base + 10) & ~UInt16(0xC010)
    let count = try nodeCount(raw, base: base, size: size, what: what())
    if fixed, flags == Self.leafFlag | Self.subPageFlag | Self.leaf2Flag {
      let keySize = Int(load16(raw, base + 8))
      guard keySize > 0, Self.header + count * keySize <= size else {
        throw Damage(message: "\(what()) holds more keys than fit in it")
      }
      return
    }
    guard flags == Self.leafFlag | Self.subPageFlag else { throw Damage(message: "\(what()) has the flags \(flags)") }
    for index in 0..<count {
      let node = try nodeOffset(raw, base: base, size: size, index: index, count: count, what: what())
      let end =
        node + Self.nodeHeader + Int(load16(raw, base + node + 6)) + Int(load16(raw, base + node))
        + Int(load16(raw, base + node + 2)) << 16
      guard load16(raw, base + node + 4) == 0, end <= size else {
        throw Damage(message: "node \(index) of \(what()) ends past its end")
      }
    }
  }

  // MARK: Page fields

  /// `NUMKEYS` of the page of `size` bytes at `base`, after checking `mp_lower` and `mp_upper` lie in it.
  private func nodeCount(_ raw: UnsafeRawBufferPointer, base: Int, size: Int, what: @autoclosure () -> String) throws -> Int {
    let lower = Int(load16(raw, base + 12))
    let upper = Int(load16(raw, base + 14))
    guard lower >= Self.header, lower <= upper, upper <= size, lower & 1 == 0 else {
      throw Damage(message: "\(what()) has impossible bounds (lower \(lower), upper \(upper))")
    }
    return (lower - Self.header) / 2
  }

  /// The offset of node `index` (`mp_ptrs[index]`) in the page at `base`, after checking its header lies
  /// inside the page.
  private func nodeOffset(
    _ raw: UnsafeRawBufferPointer, base: Int, size: Int, index: Int, count: Int, what: @autoclosure () -> String
  ) throws -> Int {
    let node = Int(load16(raw, base + Self.header + 2 * index))
    guard node >= Self.header + 2 * count, node + Self.nodeHeader <= size else {
      throw Damage(message: "node \(index) of \(what()) points outside the page (offset \(node))")
    }
    return node
  }
}

// Little-endian integers at `offset` of `raw` (the caller checked the bounds); not generic, so that a
// debug build walks a large file quickly too.
@inline(__always)
private func load16(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
  UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
}

@inline(__always)
private func load32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
  UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
}

@inline(__always)
private func load64(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
  UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
}
