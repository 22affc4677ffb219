import Foundation
import Strata

public final class Potato: ManagedObject {
  @Attribute(.unique) public var variety: String
  @Attribute public var crowdRating: Float
  @Attribute(minimum: 0, maximum: 5) public var userRating: Int16
  @Relationship(inverse: "potato", deleteRule: .cascade) public var tastings: Set<Tasting>

  /// The tasting notes, oldest first, one per line; `nil` without any. Notes written together (one `note`
  /// of several lines) keep the order they were typed in: the order they were saved in.
  var notes: String? {
    let lines = tastings.sorted { Self.writingOrder($0) < Self.writingOrder($1) }.map(\.text)
    return lines.isEmpty ? nil : lines.joined(separator: "\n")
  }

  private static func writingOrder(_ tasting: Tasting) -> (Date, Int64) {
    (tasting.writtenAt ?? .distantPast, tasting.objectID.primaryKey ?? .max)
  }
}

/// One line of notes on a potato, with when it was written (`nil` for notes older than version "2").
public final class Tasting: ManagedObject {
  @Attribute public var text: String
  @Attribute public var writtenAt: Date?
  @Relationship(inverse: "tastings") public var potato: Potato?
}

/// A potato as plain data, for output and tests.
public struct PotatoRecord: Sendable, Hashable, Codable {
  public var variety: String
  /// The crowd's rating, 0.0 to 4.9 in steps of 0.1.
  public var crowdRating: Float
  /// The user's own rating, 0 (unrated) to 5 stars.
  public var userRating: Int
  /// The tasting notes, oldest first, one per line.
  public var notes: String?

  public init(variety: String, crowdRating: Float, userRating: Int = 0, notes: String? = nil) {
    self.variety = variety
    self.crowdRating = crowdRating
    self.userRating = userRating
    self.notes = notes
  }

  init(_ potato: Potato) {
    self.init(variety: potato.variety, crowdRating: potato.crowdRating, userRating: Int(potato.userRating), notes: potato.notes)
  }

  /// The user's rating as stars, `★★★` for 3; empty when unrated.
  public var stars: String { String(repeating: "★", count: max(0, userRating)) }
}

/// A section of potatoes: those whose variety starts with the same letter.
public struct PotatoSection: Sendable, Hashable, Codable {
  public var name: String
  public var potatoes: [PotatoRecord]

  public init(name: String, potatoes: [PotatoRecord]) {
    self.name = name
    self.potatoes = potatoes
  }
}

extension Potato {
  /// The section of a variety: its first letter, uppercased, diacritics folded ("Épicure" is under "E").
  public static func section(of variety: String) -> String {
    StringSemantics.fold(String(variety.prefix(1)), [.caseInsensitive, .diacriticInsensitive]).uppercased()
  }
}
