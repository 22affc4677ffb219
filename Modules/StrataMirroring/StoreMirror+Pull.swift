import Foundation
import Strata

extension StoreMirror {
  /// Pulls the hub's entries after the last pulled position in batches; each batch is applied in saves of
  /// at most ``pulledChangesPerSave`` changes, each recording its last position in the same transaction.
  func pull(into report: inout SyncReport) async throws {
    let context = mirrorContext()
    var position = try context.performAndWait { try MirrorState(context).pulled }
    var pending = PendingLocalWork()
    while true {
      let entries = try await hub.pull(after: position, limit: pullBatchSize)
      guard let last = entries.last else { return }
      report.pulled += try apply(entries, pending: &pending)
      position = last.position
      noteHubPosition(position)
      try reach(.afterPullBatch)
      if entries.count < pullBatchSize { return }
    }
  }

  /// Applies `entries` in order; returns how many came from other replicas. Fields that local transactions
  /// not yet pushed have changed are left alone (those transactions push them later, and the later push
  /// wins on the hub).
  private func apply(_ entries: [MirrorLogEntry], pending: inout PendingLocalWork) throws -> Int {
    let context = mirrorContext()
    return try context.performAndWait {
      var state = try MirrorState(context)
      let replica = try state.requireReplicaID(in: context)
      if context.hasChanges { try context.save() }
      try pending.catchUp(after: state.acknowledged, in: context)
      var fromOthers = 0
      var remaining = entries.filter { $0.position > state.pulled }[...]
      while !remaining.isEmpty {
        var applier = PullApplier(context: context, model: container.model, identity: identity(of: replica))
        try applier.notePending(pending.transactions)
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
        if context.hasChanges { try context.save() }
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
  /// How many names one fetch of `lookUp(namesIn:)` asks for (an `IN` list of this many identities).
  static let namesPerFetch = 500

  init(context: ObjectContext, model: ObjectModel, identity: GlobalIdentity) {
    self.context = context
    self.model = model
    self.identity = identity
  }

  /// Notes what local transactions not yet pushed changed.
  mutating func notePending(_ transactions: [HistoryTransaction]) throws {
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
      if found[id] == nil && identity.localObjectID(for: id) == nil { names[entity, default: []].insert(id) }
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
    for change in entry.changes where change.kind == .merged {
      guard case .reference(let survivor?)? = change.fields["into"],
        let object = try find(change.globalID, entity: change.entityName), try find(survivor, entity: change.entityName) == nil
      else { continue }
      try object.setValue(survivor, forKey: MirrorModel.identityAttribute)
      found[survivor] = object
    }
    let writes = entry.changes.filter { $0.kind == .insert || $0.kind == .update || $0.kind == .restored }
    for change in writes {
      guard let entity = model.entity(named: change.entityName) else { continue }
      var object = try find(change.globalID, entity: entity.name)
      if object == nil {
        // An own insert gone locally was deleted or cascaded here since; the delete reaches the hub later
        // or the hub's log deletes it too. A restored object (a delete the hub denied) comes back, unless
        // this replica deleted it again since (that delete is pushed and judged again).
        let creates = change.kind == .restored || (change.kind == .insert && !isOwn)
        guard creates, !pendingDeletes.contains(change.globalID) else { continue }
        // A local object with the same unique key (created here before this replica saw the other's) takes
        // the other's name: the hub merges the two the same way when this replica's insert reaches it.
        let created = try localTwin(of: change, entity: entity) ?? context.insertObject(entityName: entity.name)
        try created.setValue(change.globalID, forKey: MirrorModel.identityAttribute)
        found[change.globalID] = created
        object = created
      }
      guard let object else { continue }
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        guard case .value(let value) = field, isWritable(name, of: object) else { continue }
        try object.setValue(value.swiftValue, forKey: name)
      }
    }
    for change in writes {
      guard let entity = model.entity(named: change.entityName), let object = try find(change.globalID, entity: entity.name)
      else { continue }
      for (name, field) in change.fields.sorted(by: { $0.key < $1.key }) {
        guard case .reference(let target) = field, isWritable(name, of: object),
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
        guard case .references(let targets) = field, isWritable(name, of: object), let rel = entity.relationship(named: name)
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

  /// The live local object holding the same values as `change` for one of the entity's uniqueness
  /// constraints, `nil` when there is none.
  private func localTwin(of change: MirrorChange, entity: EntityDescription) throws -> ManagedObject? {
    for constraint in entity.uniquenessConstraints {
      var values: [Value] = []
      for name in constraint {
        guard case .value(let value)? = change.fields[name], !value.isNull else { break }
        values.append(value)
      }
      guard values.count == constraint.count else { continue }
      let format = constraint.map { "\($0) == %@" }.joined(separator: " AND ")
      var request = FetchRequest<ManagedObject>(
        entityName: entity.name, predicate: try QueryPredicate(format: format, argumentArray: values))
      request.fetchLimit = 1
      if let twin = try context.fetch(request).first, !twin.isDeleted { return twin }
    }
    return nil
  }

  private func isWritable(_ field: String, of object: ManagedObject) -> Bool {
    guard let pending = pendingFields[object.objectID] else { return true }
    return !pending.contains("*") && !pending.contains(field)
  }

  /// The live local object with global identity `id`, `nil` when there is none.
  private mutating func find(_ id: UUID, entity: String) throws -> ManagedObject? {
    if let known = found[id] { return known }
    // Every name this applier gives or takes is in `found`, and its context had nothing unsaved when it
    // began: the store's rows answer the rest, without a look through the save's pending objects.
    let object = try identity.liveObject(id, entity: entity, in: context, includingPendingChanges: false)
    found[id] = .some(object)
    return object
  }
}
