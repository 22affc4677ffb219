import Foundation
import Strata

extension FireballWatch {
  /// Every group by name, with its derived fireball count.
  public func groups() throws -> [FireballGroupRecord] {
    try context.performAndWait {
      try context.fetch(FetchRequest<FireballGroup>(sortDescriptors: [QuerySort(\FireballGroup.name)]))
        .map(FireballGroupRecord.init)
    }
  }

  /// The dates of the fireballs in the group named `name`, newest first.
  /// - Throws: `.notFound` naming the group.
  public func fireballs(inGroup name: String) throws -> [FireballRecord] {
    try context.performAndWait {
      try findGroup(name).fireballs.map(FireballRecord.init).sorted { $0.dateTimeStamp > $1.dateTimeStamp }
    }
  }

  /// Makes an empty group.
  /// - Throws: `.validation` for an empty name; `.constraintConflict` when a group has the name already.
  @discardableResult
  public func createGroup(_ name: String) throws -> FireballGroupRecord {
    try context.performAndWait {
      let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
      guard !name.isEmpty else {
        throw StoreError(.validation, "a group needs a name", entity: "FireballGroup", key: "name", value: .string(name))
      }
      guard try context.count(for: FetchRequest<FireballGroup>(where: \.name == name)) == 0 else {
        throw StoreError(
          .constraintConflict, "a group named '\(name)' exists already", entity: "FireballGroup", key: "name",
          value: .string(name))
      }
      let group = FireballGroup(context: context)
      group.name = name
      try save()
      return FireballGroupRecord(group)
    }
  }

  /// Puts the fireballs seen at `dates` in the group named `name` (those already in it stay).
  /// - Throws: `.notFound` naming the group or the first unknown date; the store is then unchanged.
  @discardableResult
  public func add(_ dates: [Date], toGroup name: String) throws -> FireballGroupRecord {
    try editGroup(name, dates) { group, fireballs in group.fireballs.formUnion(fireballs) }
  }

  /// Takes the fireballs seen at `dates` out of the group named `name` (those not in it are ignored).
  /// - Throws: `.notFound` naming the group or the first unknown date; the store is then unchanged.
  @discardableResult
  public func remove(_ dates: [Date], fromGroup name: String) throws -> FireballGroupRecord {
    try editGroup(name, dates) { group, fireballs in group.fireballs.subtract(fireballs) }
  }

  /// Edits a group and saves. Another process's edit of the same group in between is merged by the
  /// context's merge policy (links are added and removed, not overwritten); when a conflict remains
  /// (the group or a fireball deleted meanwhile), the edit runs again on what is stored now, up to
  /// ``saveAttempts`` times, and then reports it.
  private func editGroup(
    _ name: String, _ dates: [Date], _ edit: (FireballGroup, [Fireball]) -> Void
  ) throws -> FireballGroupRecord {
    try context.performAndWait {
      var attempt = 1
      while true {
        let group = try findGroup(name)
        let fireballs = try dates.map(find)
        edit(group, fireballs)
        do {
          try save()
          return FireballGroupRecord(group)
        } catch let error as StoreError where error.code == .optimisticLockConflict && attempt < Self.saveAttempts {
          attempt += 1
          context.reset()
        }
      }
    }
  }

  /// How many times an edit of a group is tried when other processes keep changing it.
  static let saveAttempts = 4

  private func findGroup(_ name: String) throws -> FireballGroup {
    guard let group = try context.fetch(FetchRequest<FireballGroup>(where: \.name == name)).first else {
      throw StoreError(.notFound, "no group is named '\(name)'", entity: "FireballGroup", key: "name", value: .string(name))
    }
    return group
  }
}

extension FireballGroupRecord {
  init(_ group: FireballGroup) {
    self.init(name: group.name, fireballCount: Int(group.fireballCount))
  }
}
