internal import StrataStoreKit

/// A context's identity map: the one object it has handed out for each ID.
///
/// Stores assign primary keys in sequence, so the objects of a fetch or a save have neighbouring keys.
/// The registry keeps them in pages of 32 neighbouring keys of one entity and remembers the page it
/// used last: registering the 100,000 objects of a fetch looks up one page per 32 objects and fills
/// neighbouring slots, where a dictionary of IDs would hash every ID and write all over its table.
/// Pages are small so that scattered keys (a fetch matching one row in a hundred) cost little: at worst
/// a page of 272 bytes per object, against about 40 in a dictionary.
/// Temporary IDs (objects a child context saved into its parent, which keep theirs until the parent
/// saves them) are kept apart, in a dictionary.
///
/// It holds its objects strongly: a weak reference would cost every object a side table of its own, the
/// largest part of making one. Sweeps let go of objects that nothing but the registry holds — nothing else
/// can reach them, so dropping them is never observable. They are generational, as most objects a walk
/// makes are let go soon after: ``sweepIfDue(adding:)`` checks the objects registered since the last sweep
/// (young) once ``youngLimit`` have been, and every object only when those that survived such a check (old)
/// have doubled since the last full ``sweep()``. A walk that keeps a few objects and passes many then checks
/// each passing object once, while it is still in the cache, and its memory is reused at once; checking
/// every live object at each doubling of the registry let the walked-past objects pile up for as long as
/// the live ones took to double, and read every live one again.
final class ObjectRegistry {
  typealias Page = RegistryPage

  /// Pages by the ID of their first key shifted down: the ID of entity and store with key `pk >> 5`.
  @exclusivity(unchecked) private var pages: [ObjectID: Page] = [:]
  /// The page used last, with its ID.
  @exclusivity(unchecked) private var last: (id: ObjectID, page: Page)?
  @exclusivity(unchecked) private var temporary: [ObjectID: ManagedObject] = [:]
  /// How many objects are registered.
  @exclusivity(unchecked) private(set) var count = 0
  /// The pages with young slots (each listed once, ``RegistryPage/isListed``), with their IDs.
  @exclusivity(unchecked) private var youngPages: [(id: ObjectID, page: Page)] = []
  /// How many registered objects are young: registered since the last sweep.
  @exclusivity(unchecked) private(set) var youngCount = 0
  /// The registry's size at which old objects are checked again: twice what a full sweep left.
  @exclusivity(unchecked) private var fullSweepThreshold = ObjectRegistry.youngLimit

  /// How many objects are registered between young sweeps: few enough that a young generation (an object
  /// and its values take ~400–600 bytes, more with long strings) fits a core's 1–2 MiB second-level cache,
  /// so that the memory a sweep frees is reused by the next objects while it is still there.
  static let youngLimit = 2048

  deinit {
    for page in pages.values { page.deallocate() }
  }

  /// Where `id`'s object is kept: its page's ID and its slot in the page; `nil` for a temporary ID.
  @inline(__always)
  private func place(of id: ObjectID) -> (page: ObjectID, slot: Int)? {
    guard case .permanent(let pk) = id.key else { return nil }
    return (id.withPrimaryKey(pk >> Page.shift), Int(truncatingIfNeeded: pk) & (Page.size - 1))
  }

  @inline(__always)
  private func page(_ pageID: ObjectID, creating: Bool) -> Page? {
    if let last, last.id == pageID { return last.page }
    let page: Page
    if let found = pages[pageID] {
      page = found
    } else {
      guard creating else { return nil }
      page = Page.allocate()
      // At most half full: page IDs of different entities share their hash (``ObjectID/bucketHash(seed:)``
      // hashes the key alone) and runs of them fill whole blocks, so a fuller table probes far.
      if pages.count >= pages.capacity / 2 { pages.reserveCapacity(2 * pages.capacity + 2) }
      pages[pageID] = page
    }
    last = (pageID, page)
    return page
  }

  /// Registers `object` under its ID, in place of any object registered there.
  func register(_ object: ManagedObject) {
    let id = object.objectID
    guard let (pageID, slot) = place(of: id), let page = page(pageID, creating: true) else {
      if temporary.updateValue(object, forKey: id) == nil { count += 1 }
      return
    }
    if page.slots[slot] == nil {
      page.count += 1
      count += 1
    }
    page.slots[slot] = object
    markYoung(slot, of: page, pageID)
  }

  /// Notes the object in `slot` as young, listing its page for the next young sweep.
  @inline(__always)
  private func markYoung(_ slot: Int, of page: Page, _ pageID: ObjectID) {
    let bit = UInt32(1) << UInt32(truncatingIfNeeded: slot)
    let young = page.young
    guard young & bit == 0 else { return }
    page.young = young | bit
    youngCount += 1
    if !page.isListed {
      page.isListed = true
      youngPages.append((pageID, page))
    }
  }

  /// Forgets the object registered under `id`, if any.
  func remove(_ id: ObjectID) {
    guard let (pageID, slot) = place(of: id) else {
      if temporary.removeValue(forKey: id) != nil { count -= 1 }
      return
    }
    guard let page = page(pageID, creating: false), page.slots[slot] != nil else { return }
    clear(slot, of: page, pageID)
  }

  private func clear(_ slot: Int, of page: Page, _ pageID: ObjectID) {
    page.slots[slot] = nil
    page.count -= 1
    count -= 1
    let bit = UInt32(1) << UInt32(truncatingIfNeeded: slot)
    if page.young & bit != 0 {
      page.young &= ~bit
      youngCount -= 1
    }
    // A listed page stays (empty) until the young sweep, which frees it, takes it off the list.
    if page.count == 0 && !page.isListed { free(page, pageID) }
  }

  /// Takes an emptied page out of the table, and out of ``last``, and frees it.
  private func free(_ page: Page, _ pageID: ObjectID) {
    pages[pageID] = nil
    if let last, last.page === page { self.last = nil }
    page.deallocate()
  }

  /// The object registered under `id` that something besides the registry holds; otherwise (no object,
  /// or one only the registry held — gone, as far as anyone can tell) a new one from `make`, registered.
  @inline(__always)
  func claim(_ id: ObjectID, _ make: () -> ManagedObject) -> ManagedObject {
    guard let (pageID, slot) = place(of: id), let page = page(pageID, creating: true) else {
      if let object = live(id) { return object }
      let object = make()
      register(object)
      return object
    }
    let entry = page.slots + slot
    if entry.pointee == nil {
      page.count += 1
      count += 1
    } else if !isKnownUniquelyReferenced(&entry.pointee), let object = entry.pointee {
      return object
    }
    let object = make()
    entry.pointee = object
    markYoung(slot, of: page, pageID)
    return object
  }

  /// The object registered under `id`, unless only the registry holds it: such an object is dropped, as
  /// a weak registry would have dropped it.
  func live(_ id: ObjectID) -> ManagedObject? {
    guard let (pageID, slot) = place(of: id) else {
      guard temporary[id] != nil else { return nil }
      if isKnownUniquelyReferenced(&temporary[id]) {
        temporary[id] = nil
        count -= 1
        return nil
      }
      return temporary[id]
    }
    guard let page = page(pageID, creating: false), page.slots[slot] != nil else { return nil }
    if isKnownUniquelyReferenced(&page.slots[slot]) {
      clear(slot, of: page, pageID)
      return nil
    }
    return page.slots[slot]
  }

  /// Runs `body` with the object ``live(_:)`` would return, lent (no retain and release around the call,
  /// two atomic operations each); `nil` without running it when there is none. `body` must not change the
  /// registry.
  @inline(__always)
  func withLive<Result>(_ id: ObjectID, _ body: (ManagedObject) throws -> Result) rethrows -> Result? {
    guard let (pageID, slot) = place(of: id) else { return try live(id).map(body) }
    guard let page = page(pageID, creating: false), page.slots[slot] != nil else { return nil }
    if isKnownUniquelyReferenced(&page.slots[slot]) {
      clear(slot, of: page, pageID)
      return nil
    }
    return try page.withObject(in: slot, body)
  }

  /// Sweeps if one is due: the young objects once ``youngLimit`` of them (and `extra` about to be
  /// registered) have accumulated, then every object if the old ones have reached twice what the last full
  /// sweep left.
  @inline(__always)
  func sweepIfDue(adding extra: Int = 0) {
    guard youngCount + extra >= Self.youngLimit || count - youngCount >= fullSweepThreshold else { return }
    sweepDue()
  }

  private func sweepDue() {
    sweepYoung()
    if count >= fullSweepThreshold { sweep() }
  }

  /// Drops the young objects only the registry holds; the others become old.
  func sweepYoung() {
    let listed = youngPages
    youngPages.removeAll(keepingCapacity: true)
    youngCount = 0
    for (pageID, page) in listed {
      var young = page.young
      page.young = 0
      page.isListed = false
      while young != 0 {
        let slot = young.trailingZeroBitCount
        young &= young - 1
        if page.slots[slot] != nil && isKnownUniquelyReferenced(&page.slots[slot]) {
          page.slots[slot] = nil
          page.count -= 1
          count -= 1
        }
      }
      if page.count == 0 { free(page, pageID) }
    }
  }

  /// Drops every object only the registry holds; the others become old, and the next full sweep is due
  /// when the registry has doubled.
  func sweep() {
    youngPages.removeAll(keepingCapacity: true)
    youngCount = 0
    var emptied: [(id: ObjectID, page: Page)] = []
    for (pageID, page) in pages {
      page.young = 0
      page.isListed = false
      for slot in 0..<Page.size where page.slots[slot] != nil && isKnownUniquelyReferenced(&page.slots[slot]) {
        page.slots[slot] = nil
        page.count -= 1
        count -= 1
      }
      if page.count == 0 { emptied.append((pageID, page)) }
    }
    for (pageID, page) in emptied { free(page, pageID) }
    for id in Array(temporary.keys) where isKnownUniquelyReferenced(&temporary[id]) {
      temporary[id] = nil
      count -= 1
    }
    fullSweepThreshold = max(Self.youngLimit, count * 2)
  }

  /// Every registered object.
  var objects: [ManagedObject] {
    var result: [ManagedObject] = []
    result.reserveCapacity(count)
    for page in pages.values {
      for slot in 0..<Page.size { if let object = page.slots[slot] { result.append(object) } }
    }
    result.append(contentsOf: temporary.values)
    return result
  }

  /// Makes room for `extra` more objects of neighbouring keys.
  func reserveCapacity(_ extra: Int) {
    pages.reserveCapacity(2 * (pages.count + extra / Page.size + 1))
  }

  func removeAll() {
    for page in pages.values { page.deallocate() }
    pages = [:]
    last = nil
    temporary = [:]
    count = 0
    youngPages = []
    youngCount = 0
    fullSweepThreshold = Self.youngLimit
  }
}
