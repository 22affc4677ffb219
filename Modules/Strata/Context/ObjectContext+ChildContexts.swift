import Foundation
internal import StrataStoreKit

extension ObjectContext {
  /// A context whose parent is this one: it reads this context's objects as they are now (unsaved
  /// changes included) and its ``save()`` hands its changes to this context, which writes them to the
  /// store when it saves itself. For edits that may be thrown away, such as a form.
  ///
  /// ```swift
  /// let editor = container.viewContext.newChildContext()
  /// let draft = editor.object(with: movie.objectID) as? Movie
  /// draft?.title = "Heat (1995)"
  /// try editor.save()                       // the view context has the change, unsaved
  /// try container.viewContext.save()        // now the store has it
  /// ```
  ///
  /// Do not call a child synchronously from its parent's queue (`performAndWait` both ways would wait
  /// for each other). An object a child inserted still has its temporary ID when the parent saves it; the
  /// child can go on editing, relating and deleting it, and it takes its permanent ID the next time the
  /// child reads from or saves to the parent (Core Data leaves it temporary).
  public func newChildContext(concurrencyType: ConcurrencyType = .privateQueue) -> ObjectContext {
    formerTemporaryIDs.startRemembering()
    let child = ObjectContext(coordinator: coordinator, concurrencyType: concurrencyType, parent: self)
    coordinator.register(child)
    return child
  }

  /// Applies a child context's save to this context's objects: inserts become inserted objects here (with
  /// the child's temporary IDs), updates set the changed properties, deletes delete. Nothing is saved.
  /// A temporary ID of an object this context has saved since names that object.
  func apply(_ changes: ChangeSet) throws -> SaveResult {
    let model = coordinator.model
    var inserted: [(ManagedObject, ObjectChange)] = []
    for change in changes.inserted {
      guard let info = coordinator.info(forEntity: change.objectID.entityName) else {
        throw StoreError(
          .invalidQuery, "the model has no entity '\(change.objectID.entityName)'", entity: change.objectID.entityName)
      }
      let object = info.objectClass.init(
        .managed(info, self, change.objectID, isInserted: true))
      registerInserted(object)
      for (i, attribute) in info.entity.attributes.enumerated() where attribute.derivation == nil && i < change.attributes.count {
        object.setAttribute(change.attributes[i], index: i)
      }
      inserted.append((object, change))
    }
    for (object, change) in inserted {
      guard let entity = object.info?.entity else { continue }
      for (i, rel) in entity.toOneRelationships.enumerated() where i < change.toOne.count {
        if let target = change.toOne[i] { setRelationship(object, rel, targets: [self.object(with: target)]) }
      }
    }
    var versions: [ObjectID: Int64] = [:]
    for change in changes.updated {
      let object = self.object(with: change.objectID)
      guard let entity = object.info?.entity else { continue }
      object.fireFault()
      for key in change.changedKeys {
        switch entity.property(named: key) {
        case .attribute(let attribute, let index) where attribute.derivation == nil && index < change.attributes.count:
          object.setAttribute(change.attributes[index], index: index)
        case .toOne(let rel, let index) where index < change.toOne.count:
          setRelationship(object, rel, targets: change.toOne[index].map { [self.object(with: $0)] } ?? [])
        default:
          continue
        }
      }
      versions[object.objectID] = object.snapshotVersion
    }
    for link in changes.linkChanges {
      guard let rel = model.entity(named: link.entityName)?.relationship(named: link.relationship) else { continue }
      let source = object(with: link.source)
      let target = resolvingFormerTemporaryID(link.target)
      var targets = Set(currentTargets(of: source, rel).map(\.objectID))
      if link.isInsertion { targets.insert(target) } else { targets.remove(target) }
      setRelationship(source, rel, targets: targets.map { object(with: $0) })
    }
    // Ordered lists last: the child's complete list fixes the order the links above left.
    for list in changes.orderedLists {
      guard let rel = model.entity(named: list.entityName)?.relationship(named: list.relationship) else { continue }
      let source = object(with: resolvingFormerTemporaryID(list.source))
      setRelationship(source, rel, targets: list.targets.map { object(with: resolvingFormerTemporaryID($0)) })
    }
    for deletion in changes.deleted {
      delete(object(with: deletion.objectID))
    }
    processPendingChanges()
    return SaveResult(versions: versions)
  }
}
