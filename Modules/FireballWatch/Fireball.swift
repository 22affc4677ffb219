import Foundation
import Strata

/// A bright meteor reported to NASA/JPL's Center for Near Earth Object Studies. A value JPL does not
/// know is `nil`, never 0.
public final class Fireball: ManagedObject {
  @Attribute([.unique, .preserveValueOnDeletion]) public var dateTimeStamp: Date
  /// Total radiated energy, in joules ×10¹⁰.
  @Attribute public var radiatedEnergy: Double?
  /// Estimated total impact energy, in kilotons.
  @Attribute(.preserveValueOnDeletion) public var impactEnergy: Double?
  /// Degrees, negative south of the equator.
  @Attribute public var latitude: Double?
  /// Degrees, negative west of Greenwich.
  @Attribute public var longitude: Double?
  /// Kilometres above the ground.
  @Attribute public var altitude: Double?
  /// Kilometres per second.
  @Attribute public var velocity: Double?
  @Relationship(inverse: "fireballs") public var groups: Set<FireballGroup>
}

/// A named collection of fireballs the user keeps; a fireball may be in several.
public final class FireballGroup: ManagedObject {
  @Attribute public var id: UUID
  @Attribute([.unique, .preserveValueOnDeletion]) public var name: String
  @Relationship(inverse: "groups") public var fireballs: Set<Fireball>
  @Derived("fireballs.@count") public var fireballCount: Int64

  public override func awakeFromInsert() {
    id = UUID()
  }
}

/// A fireball as plain data, for import, output and tests.
public struct FireballRecord: Sendable, Hashable, Codable {
  public var dateTimeStamp: Date
  public var radiatedEnergy: Double?
  public var impactEnergy: Double?
  public var latitude: Double?
  public var longitude: Double?
  public var altitude: Double?
  public var velocity: Double?

  public init(
    dateTimeStamp: Date, radiatedEnergy: Double? = nil, impactEnergy: Double? = nil, latitude: Double? = nil,
    longitude: Double? = nil, altitude: Double? = nil, velocity: Double? = nil
  ) {
    self.dateTimeStamp = dateTimeStamp
    self.radiatedEnergy = radiatedEnergy
    self.impactEnergy = impactEnergy
    self.latitude = latitude
    self.longitude = longitude
    self.altitude = altitude
    self.velocity = velocity
  }

  init(_ fireball: Fireball) {
    self.init(
      dateTimeStamp: fireball.dateTimeStamp, radiatedEnergy: fireball.radiatedEnergy,
      impactEnergy: fireball.impactEnergy, latitude: fireball.latitude, longitude: fireball.longitude,
      altitude: fireball.altitude, velocity: fireball.velocity)
  }

  /// The record as a batch-insert row: every attribute given, `nil` ones as null, so that an upsert
  /// clears a value JPL no longer reports.
  var row: [String: Value] {
    func number(_ value: Double?) -> Value { value.map(Value.double) ?? .null }
    return [
      "dateTimeStamp": .date(dateTimeStamp), "radiatedEnergy": number(radiatedEnergy),
      "impactEnergy": number(impactEnergy), "latitude": number(latitude), "longitude": number(longitude),
      "altitude": number(altitude), "velocity": number(velocity),
    ]
  }
}

/// A group as plain data: its name and how many fireballs it holds (the derived `fireballCount`).
public struct FireballGroupRecord: Sendable, Hashable, Codable {
  public var name: String
  public var fireballCount: Int

  public init(name: String, fireballCount: Int) {
    self.name = name
    self.fireballCount = fireballCount
  }
}
