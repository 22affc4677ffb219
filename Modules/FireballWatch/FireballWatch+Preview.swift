import Foundation
import Strata

extension FireballWatch {
  /// The six fireballs of the preview fixture, from JPL's data (the last one without altitude or velocity).
  public static let previewFireballs: [FireballRecord] = [
    preview("2024-02-26 11:21:01", 3.7, 0.13, 22.9, 57.1, 33.1, 31.3),
    preview("2024-02-05 00:32:54", 4.6, 0.15, -13.8, 123.7, 23.0, 14.4),
    preview("2023-12-30 21:04:34", 21.7, 0.6, -63.4, 79.9, 37.0, 28.3),
    preview("2023-10-30 07:22:56", 2.6, 0.092, -42.9, -44.7, 33.8, 17.6),
    preview("2023-10-26 08:58:25", 29.1, 0.78, 45.9, -174.8, 44.2, 30.2),
    preview("1988-04-15 03:03:10", 758, 14, -4.1, 124.3, nil, nil),
  ]

  /// The preview's groups and the dates of the fireballs in each.
  public static let previewGroups: [(name: String, dates: [String])] = [
    ("Southern Sky", ["2024-02-05 00:32:54", "2023-12-30 21:04:34", "2023-10-30 07:22:56", "1988-04-15 03:03:10"]),
    ("Brightest", ["2023-10-26 08:58:25", "1988-04-15 03:03:10"]),
  ]

  /// A watch over a new in-memory store holding ``previewFireballs`` and ``previewGroups``: the preview
  /// fixture. `registry` must offer the memory store type (the composition root passes one that does).
  public static func preview(registry: StoreRegistry) throws -> FireballWatch {
    let watch = FireballWatch(container: try makeContainer(store: StoreDescription(type: .memory), registry: registry))
    try watch.context.performAndWait {
      var fireballs: [Date: Fireball] = [:]
      for record in previewFireballs {
        let fireball = Fireball(context: watch.context)
        fireball.dateTimeStamp = record.dateTimeStamp
        fireball.radiatedEnergy = record.radiatedEnergy
        fireball.impactEnergy = record.impactEnergy
        fireball.latitude = record.latitude
        fireball.longitude = record.longitude
        fireball.altitude = record.altitude
        fireball.velocity = record.velocity
        fireballs[record.dateTimeStamp] = fireball
      }
      for (name, dates) in previewGroups {
        let group = FireballGroup(context: watch.context)
        group.name = name
        group.fireballs = Set(dates.compactMap { FireballDate.parse($0).flatMap { fireballs[$0] } })
      }
      try watch.save()
    }
    return watch
  }

  private static func preview(
    _ date: String, _ energy: Double, _ impact: Double, _ latitude: Double, _ longitude: Double, _ altitude: Double?,
    _ velocity: Double?
  ) -> FireballRecord {
    FireballRecord(
      dateTimeStamp: FireballDate.parse(date) ?? .distantPast, radiatedEnergy: energy, impactEnergy: impact,
      latitude: latitude, longitude: longitude, altitude: altitude, velocity: velocity)
  }
}
