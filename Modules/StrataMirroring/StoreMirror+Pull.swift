import Foundation
import Strata

extension StoreMirror {
  /// Pulls the hub's entries after the last pulled position in batches; each batch is applied in saves of
  /// at most ``pulledChangesPerSave`` changes, each recording its last position in the same transaction.
  /// While a pulled unique key collides with another local object's (a replay of an object that held the key
  /// once, see `PullApplier.collisions`), the save waits for the entries that resolve it, over later
  /// batches too: the store never holds the collision, and a kill meanwhile loses only unsaved work.
  func pull(into report: inout SyncReport) async throws {
    let context = mirrorContext()
    var position = try context.performAndWait {
      var state = try MirrorState(context)
      // A pull skipped what this replica's model lacked, and the model changed since (the app was upgraded,
      // its store migrated): the log is pulled again from its start, bringing what was skipped.
      if let skippedWith = state.pulledWithout, skippedWith != container.model.fingerprint {
        try state.setPulled(0, in: context)
        try state.setPulledWithout(nil, in: context)
        try context.save()
      }
      return state.pulled
    }
    var pending = PendingLocalWork()
    var carried: PullApplier?
    while true {
      let entries = try await hub.pull(after: position, limit: pullBatchSize)
      let isLast = entries.count < pullBatchSize
      if !entries.isEmpty || carried != nil {
        report.pulled += try apply(entries, pending: &pending, carried: &carried)
      }
      if let last = entries.last {
        position = last.position
        noteHubPosition(position)
      }
      var saved = carried == nil && !entries.isEmpty
      if isLast, let unsettled = carried {
        try await settle(unsettled)
        carried = nil
        saved = true
      }
      if saved { try reach(.afterPullBatch) }
      if isLast { return }
    }
  }

  /// Saves a pull whose keys still collide at the end of the hub's log. A key the hub holds on a pulled
  /// object and, here, on an object whose own key change the hub never took (a rejected update, kept in the
  /// rejected list) goes to the pulled object: the local object takes the hub's values of its unique keys
  /// (read with ``MirrorHub/objects(_:)``), unless a local transaction not pushed yet changed them (then the
  /// save fails on the collision, and the sync after that push settles it). A value it takes back may be
  /// one another refused change took here since: that object is settled the same way, and so on.
  private func settle(_ applier: PullApplier) async throws {
    var applier = applier
    var settled: Set<UUID> = []
    while true {
      let holders = try applier.context.performAndWait { try applier.collidingHolders() }.filter { !settled.contains($0.key) }
      guard !holders.isEmpty else { break }
      let current = try await hub.objects(Set(holders.keys))
      try applier.context.performAndWait {
        try applier.takeUniqueKeys(of: holders, from: current)
        try applier.adoptRefused(holders, absentFrom: current)
      }
      settled.formUnion(holders.keys)
    }
    try applier.context.performAndWait { try applier.context.save() }
  }

  /// Applies `entries` in order; returns how many came from other replicas. Fields that local transactions
  /// not yet pushed have changed are left alone (those transactions push them later, and the later push
  /// wins on the hub). Unsaved work whose keys still collide is handed back in `carried`.
  private func apply(
    _ entries: [MirrorLogEntry], pending: inout PendingLocalWork, carried: inout PullApplier?
  ) throws -> Int {
    let context = carried?.context ?? mirrorContext()
    return try context.performAndWait {
      var state = try MirrorState(context)
      let replica = try state.requireReplicaID(in: context)
      if carried == nil, context.hasChanges { try context.save() }
      try pending.catchUp(after: state.acknowledged, in: context)
      let refused = state.rejected
      let transactions = pending.transactions
      func fresh() throws -> PullApplier {
        var applier = PullApplier(context: context, model: container.model, identity: identity(of: replica))
        try applier.notePending(transactions, refused: refused)
        return applier
      }
      var applier: PullApplier
      if let carried {
        applier = carried
        try applier.notePending(transactions, refused: refused)
      } else {
        applier = try fresh()
      }
      carried = nil
      var fromOthers = 0
      var remaining = entries.filter { $0.position > state.pulled }[...]
      while !remaining.isEmpty {
        var changes = 0
        var end = remaining.startIndex
        while end < remaining.endIndex,
          changes == 0 || changes + remaining[end].changes.count <= pulledChangesPerSave
        {
          changes += remaining[end].changes.count
          end += 1
        }
        let save = remaining[..<end]
        remaining = remaining[end...]
        try applier.lookUp(namesIn: save)
        for entry in save {
          try applier.apply(entry, isOwn: entry.replicaID == replica)
          if entry.replicaID != replica { fromOthers += 1 }
        }
        try state.setPulled(save.last?.position ?? state.pulled, in: context)
        if applier.skippedUnknownFields { try state.setPulledWithout(container.model.fingerprint, in: context) }
        if !applier.waitingFieldBases.isEmpty { try state.lowerFieldBases(applier.waitingFieldBases, in: context) }
        if try applier.keysCollide() { continue }
        if context.hasChanges { try context.save() }
        applier = try fresh()
      }
      if try applier.keysCollide() {
        carried = applier
      } else if context.hasChanges {
        try context.save()
      }
      return fromOthers
    }
  }
}

/// The local transactions not yet pushed, as a pull reads them: the history after the acknowledged token,
/// read once and then only what was committed since (a long pull's own transactions are read once each).
struct PendingLocalWork {
  private(set) var transactions: [HistoryTransaction] = []
  private var acknowledged: HistoryToken?
  private var readThrough: HistoryToken?
  private var hasRead = false

  mutating func catchUp(after acknowledged: HistoryToken?, in context: ObjectContext) throws {
    if !hasRead || acknowledged != self.acknowledged {
      self = PendingLocalWork()
      self.acknowledged = acknowledged
      readThrough = acknowledged
      hasRead = true
    }
    let read = try StoreMirror.appTransactions(after: readThrough, in: context)
    transactions += read.transactions
    readThrough = read.readThrough
  }
}

/// Applies hub entries to a context: finds objects by global identity, creates, updates and deletes them.
struct PullApplier {
  let context: ObjectContext
  let model: ObjectModel
  let identity: GlobalIdentity
  private var found: [UUID: ManagedObject?] = [:]
  private var pendingFields: [ObjectID: Set<String>] = [:]
  private var pendingDeletes: Set<UUID> = []
  /// Whether an entry named an entity or field this replica's model lacks (a newer replica's), skipped.
  private(set) var skippedUnknownFields = false
  /// For each field of another replica's entry left alone because a local change of it waits to be pushed:
  /// the position before that entry, by global identity (the base that local change really had).
  private(set) var waitingFieldBases: [UUID: [String: Int64]] = [:]
  /// The entry being applied: its position, and whether it is this replica's own.
  private var applying: (position: Int64, isOwn: Bool) = (0, true)
  /// Objects given a pulled unique key that another live local object held at the time: the replay of an
  /// object that held the key once on the hub, before a later entry moved it away or deleted it (the hub
  /// never holds a key twice). The pulled save waits until none collides (`keysCollide()`).
  private var collisions: [ObjectID: ManagedObject] = [:]
  /// How many names one fetch of `lookUp(namesIn:)` asks for (an `IN` list of this many identities).
  static let namesPerFetch = 500

  init(context: ObjectContext, model: ObjectModel, identity: GlobalIdentity) {
    self.context = context
    self.model = model
    self.identity = identity
  }

  /// Notes what local transactions not yet pushed changed, and what the transactions the hub refused (still
  /// listed) created: objects the hub does not hold, which a pulled insert of their key takes as its twin as
  /// it does a pending insert (a retry's insert merges into it on the hub; a discard gives it the hub's
  /// values), their fields left alone until then.
  mutating func notePending(_ transactions: [HistoryTransaction], refused: [RejectedTransaction] = []) throws {
    for change in refused.lazy.flatMap(\.transaction.changes) where change.kind == .insert {
      if let id = identity.localObjectID(for: change.globalID) { pendingFields[id] = ["*"] }
    }
    for transaction in transactions {
      for change in transaction.changes {
        switch change.changeType {
        case .insert:
          pendingFields[change.objectID] = ["*"]
        case .update:
          pendingFields[change.objectID, default: []].formUnion(change.updatedProperties)
        case .delete:
          let stored = change.tombstone[MirrorModel.identityAttribute]
          if let id = identity.globalID(of: change.objectID, stored: stored) { pendingDeletes.insert(id) }
        }
      }
    }
  }

  /// Finds the objects `entries` name that this replica did not create, in one fetch per entity and
  /// hundreds of names, instead of one fetch per name: what `find` then answers without a fetch (a name no
  /// stored object holds is known to name nothing here). The names this replica gave are found by their
  /// keys, as before.
  mutating func lookUp(namesIn entries: ArraySlice<MirrorLogEntry>) throws {
    var names: [String: Set<UUID>] = [:]
    func note(_ id: UUID, _ entity: String) {
      if model.entity(named: entity) != nil, found[id] == nil && identity.localObjectID(for: id) == nil {
        names[entity, default: []].insert(id)
      }
    }
    for entry in entries {
      for change in entry.changes {
        note(change.globalID, change.entityName)
        let entity = model.entity(named: change.entityName)
        for (name, field) in change.fields {
          guard let destination = entity?.relationship(named: name)?.destination else { continue }
          switch field {
          case .reference(let target?): note(target, destination)
          case .references(let targets): for target in targets { note(target, destination) }
          default: continue
          }
        }
      }
    }
    for (entity, wanted) in names.sorted(by: { $0.key < $1.key }) {
      let all = Array(wanted)
      var stored: [UUID: ManagedObject] = [:]
      for start in stride(from: 0, to: all.count, by: Self.namesPerFetch) {
        let batch = Array(all[start..<min(start + Self.namesPerFetch, all.count)])
        var request = FetchRequest<ManagedObject>(
          entityName: entity,
          predicate: try QueryPredicate(format: "\(MirrorModel.identityAttribute) IN %@", argumentArray: [batch]))
        request.includesPendingChanges = false
        for object in try context.fetch(request) where !object.isDeleted {
          if case .uuid(let id)? = object.primitiveValue(forKey: MirrorModel.identityAttribute) { stored[id] = object }
        }
      }
      for id in wanted where found[id] == nil { found[id] = .some(stored[id]) }
    }
  }

  /// Applies one entry: merged identities first (the object takes its survivor's name), then creations and
  /// attributes, then references (a target may be listed after its source), then deletes (the hub lists a
  /// delete after the changes its delete rules made).
  mutating func apply(_ entry: MirrorLogEntry, isOwn: Bool) throws {
    applying = (entry.position, isOwn)
    for change in entry.changes where change.kind == .merged {
      guard case .reference(let survivor?)? = change.fields["into"],
        let object = try find(change.globalID, entity: change.entityName)
      else { continue }
      if let duplicate = try find(survivor, entity: change.entityName) {
        guard duplicate !== object else { continue }
        try fold(duplicate, into: object)
      }
      try object.setValue(survivor, forKey: MirrorModel.identityAttribute)
      found[survivor] = object
    }
    let writes = entry.changes.filter { $0.kind == .insert || $0.kind == .update || $0.kind == .restored }
    for change in writes {
      guard let entity = model.entity(named: change.entityName) else {
        skippedUnknownFields = true
        continue
      }
      if change.fields.keys.contains(where: { entity.attribute(named: $0) == nil && entity.relationship(named: $0) == nil }) {
        skippedUnknownFields = true
      }
      var object = try find(change.globalID, entity: entity.name)
      if object == nil {
        // An own insert gone locally was deleted or cascaded here since; the delete reaches the hub later
        // or the hub's log deletes it too. A restored object (a delete the hub denied) comes back, unless
        // this replica deleted it again since (that delete is pushed and judged again).
        let creates = change.kind == .restored || (change.kind == .insert && !isOwn)
        guard creates, !pendingDeletes.contains(change.globalID) else { continue }
        // A local object with the same unique key whose insert the hub has not acknowledged (created here
        // before this replica saw the other's) takes the other's name: the hub merges the two the same way
        // when this replica's insert reaches it. An acknowledged one is another object: the hub holds both,
        // so a later entry moves this one's key away, and the keys collide until then.
        let holder = try keyHolder(of: change.fields, entity: entity, besides: nil)
        let created: ManagedObject
        if let holder, pendingFields[holder.objectID]?.contains("*") == true {
          created = holder
        } else {
          created = try context.insertObject(entityName: entity.name)
          if holder != nil { collisions[created.objectID] = created }
        }
        try created.setValue(change.globalID, forKey: MirrorModel.identityAttribute)
        found[change.globalID] = created
        object = created
      }
      guard let object else { continue }
      var movesAKey = false
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        guard case .value(let value) = field, entity.attribute(named: name) != nil, takes(name, of: object, change.globalID)
        else {
          continue
        }
        if change.kind != .insert, !movesAKey, object.entity.uniquenessConstraints.contains(where: { $0.contains(name) }),
          object.primitiveValue(forKey: name) != value
        {
          movesAKey = true
        }
        try object.setValue(value.swiftValue, forKey: name)
      }
      if movesAKey, try keyHolder(of: object, besides: object) != nil { collisions[object.objectID] = object }
    }
    for change in writes {
      guard let entity = model.entity(named: change.entityName), let object = try find(change.globalID, entity: entity.name)
      else { continue }
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        guard case .reference(let target) = field, takes(name, of: object, change.globalID),
          let destination = entity.relationship(named: name)?.destination
        else { continue }
        let targetObject = try target.flatMap { try find($0, entity: destination) }
        try object.setValue(targetObject, forKey: name)
      }
    }
    // Lists last: an ordered one-to-many list orders the members the to-one references above made.
    for change in writes {
      guard let entity = model.entity(named: change.entityName), let object = try find(change.globalID, entity: entity.name)
      else { continue }
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        guard case .references(let targets) = field, takes(name, of: object, change.globalID),
          let rel = entity.relationship(named: name)
        else { continue }
        try applyList(targets, to: object, rel)
      }
    }
    for change in entry.changes where change.kind == .delete {
      guard let object = try find(change.globalID, entity: change.entityName) else { continue }
      // The hub deleted it with no related object left under a Deny rule; a local object related since (not
      // pushed yet) loses the link, as it would under Nullify, instead of failing this save.
      for rel in object.entity.relationships where rel.deleteRule == .deny {
        try object.setValue(nil, forKey: rel.name)
      }
      context.delete(object)
      found[change.globalID] = .some(nil)
    }
  }

  /// Folds `duplicate`, made by this pull for the survivor's insert while `object` held the same key (its
  /// insert already acknowledged, so not taken as its twin), into `object`, which the hub merged into the
  /// survivor: `object` takes the duplicate's pulled values and to-one targets for every field no local
  /// transaction not yet pushed changed (the merged entry's update then sets what `object`'s insert won) and
  /// the members of its to-many relationships, and the duplicate, emptied first so that no delete rule
  /// reaches its targets, is deleted.
  private mutating func fold(_ duplicate: ManagedObject, into object: ManagedObject) throws {
    let entity = object.entity
    for attribute in entity.attributes
    where attribute.isPersistent && attribute.derivation == nil && attribute.name != MirrorModel.identityAttribute
      && isWritable(attribute.name, of: object)
    {
      try object.setValue(duplicate.primitiveValue(forKey: attribute.name)?.swiftValue, forKey: attribute.name)
    }
    for rel in entity.relationships {
      let theirs = duplicate.related(rel)
      try duplicate.setValue(nil, forKey: rel.name)
      if rel.isToMany {
        let own = object.related(rel)
        let held = Set(own.map(\.objectID))
        try object.setValue(own + theirs.filter { !held.contains($0.objectID) }, forKey: rel.name)
      } else if let target = theirs.first, isWritable(rel.name, of: object) {
        try object.setValue(target, forKey: rel.name)
      }
    }
    context.delete(duplicate)
    collisions[duplicate.objectID] = nil
  }

  /// The live local objects holding a key a pulled object holds too, by global identity.
  mutating func collidingHolders() throws -> [UUID: ManagedObject] {
    _ = try keysCollide()
    var holders: [UUID: ManagedObject] = [:]
    for object in collisions.values {
      guard let holder = try keyHolder(of: object, besides: object), let id = identity.globalID(of: holder) else { continue }
      holders[id] = holder
    }
    return holders
  }

  /// Sets the unique-key attributes of each of `holders` the hub holds to the hub's values (`current`),
  /// those a local transaction not pushed yet changed aside.
  mutating func takeUniqueKeys(of holders: [UUID: ManagedObject], from current: [UUID: MirrorObject]) throws {
    for (id, holder) in holders {
      guard let object = current[id] else { continue }
      for name in Set(holder.entity.uniquenessConstraints.joined()) where isWritable(name, of: holder) {
        guard case .value(let value)? = object.fields[name] else { continue }
        try holder.setValue(value.swiftValue, forKey: name)
      }
      collisions[holder.objectID] = holder
    }
  }

  /// Makes each of `holders` that the hub does not hold because the hub refused its insert (still listed)
  /// the twin of the object holding its key, as a pulled insert of that key would: it takes that object's
  /// identity and relationships, and that object goes (a retry's insert merges into it on the hub; a
  /// discard gives the twin the hub's values).
  mutating func adoptRefused(_ holders: [UUID: ManagedObject], absentFrom current: [UUID: MirrorObject]) throws {
    for (id, holder) in holders where current[id] == nil && pendingFields[holder.objectID]?.contains("*") == true {
      guard let other = try keyHolder(of: holder, besides: holder), let otherID = identity.globalID(of: other) else { continue }
      try fold(other, into: holder)
      try holder.setValue(otherID, forKey: MirrorModel.identityAttribute)
      found[otherID] = holder
    }
  }

  /// Sets a to-many relationship from the hub's list: a many-to-many side to exactly those targets (in
  /// order when it is ordered); an ordered one-to-many to the hub's order of its current members (its
  /// members follow the to-one side), the members the list lacks after them in their local order.
  private mutating func applyList(_ ids: [UUID], to object: ManagedObject, _ rel: RelationshipDescription) throws {
    let targets = try ids.compactMap { try find($0, entity: rel.destination) }
    guard MirrorModel.isOrderedOneToMany(rel, in: model) else {
      try object.setValue(rel.isOrdered ? targets : Set(targets) as Any, forKey: rel.name)
      return
    }
    let current = object.value(forKey: rel.name) as? [ManagedObject] ?? []
    let members = Set(current.map(\.objectID))
    var order = targets.filter { members.contains($0.objectID) }
    let placed = Set(order.map(\.objectID))
    order += current.filter { !placed.contains($0.objectID) }
    if order.map(\.objectID) != current.map(\.objectID) { try object.setValue(order, forKey: rel.name) }
  }

  /// The live local object other than `besides` holding the values `fields` give for one of the entity's
  /// uniqueness constraints (unsaved changes included), `nil` when there is none.
  private func keyHolder(
    of fields: [String: MirrorField], entity: EntityDescription, besides: ManagedObject?
  ) throws
    -> ManagedObject?
  {
    for constraint in entity.uniquenessConstraints {
      var values: [Value] = []
      for name in constraint {
        guard case .value(let value)? = fields[name], !value.isNull else { break }
        values.append(value)
      }
      guard values.count == constraint.count else { continue }
      let format = constraint.map { "\($0) == %@" }.joined(separator: " AND ")
      var request = FetchRequest<ManagedObject>(
        entityName: entity.name, predicate: try QueryPredicate(format: format, argumentArray: values))
      request.fetchLimit = besides == nil ? 1 : 2
      if let holder = try context.fetch(request).first(where: { !$0.isDeleted && $0 !== besides }) { return holder }
    }
    return nil
  }

  /// The live local object other than `object` holding one of `object`'s unique keys.
  private func keyHolder(of object: ManagedObject, besides: ManagedObject) throws -> ManagedObject? {
    var fields: [String: MirrorField] = [:]
    for name in Set(object.entity.uniquenessConstraints.joined()) {
      fields[name] = object.primitiveValue(forKey: name).map(MirrorField.value)
    }
    return try keyHolder(of: fields, entity: object.entity, besides: besides)
  }

  /// Whether an object a pulled key was given to still shares a unique key with another live object (the
  /// resolved ones are forgotten).
  mutating func keysCollide() throws -> Bool {
    for (id, object) in collisions {
      if try object.isDeleted || object.managedObjectContext == nil || keyHolder(of: object, besides: object) == nil {
        collisions[id] = nil
      }
    }
    return !collisions.isEmpty
  }

  /// Whether a pulled field of another replica's entry is written: a field a local change waiting to be pushed
  /// changed is left alone, and the position before this entry noted as the base that change had.
  private mutating func takes(_ field: String, of object: ManagedObject, _ id: UUID) -> Bool {
    if isWritable(field, of: object) { return true }
    if !applying.isOwn, pendingFields[object.objectID]?.contains(field) == true {
      waitingFieldBases[id, default: [:]][field] = min(waitingFieldBases[id]?[field] ?? .max, applying.position - 1)
    }
    return false
  }

  private func isWritable(_ field: String, of object: ManagedObject) -> Bool {
    guard let pending = pendingFields[object.objectID] else { return true }
    return !pending.contains("*") && !pending.contains(field)
  }

  /// The live local object with global identity `id`, `nil` when there is none.
  private mutating func find(_ id: UUID, entity: String) throws -> ManagedObject? {
    if let known = found[id] { return known }
    guard model.entity(named: entity) != nil else {
      skippedUnknownFields = true
      return nil
    }
    // Every name this applier gives or takes is in `found`, and its context had nothing unsaved when it
    // began: the store's rows answer the rest, without a look through the save's pending objects.
    let object = try identity.liveObject(id, entity: entity, in: context, includingPendingChanges: false)
    found[id] = .some(object)
    return object
  }
}
