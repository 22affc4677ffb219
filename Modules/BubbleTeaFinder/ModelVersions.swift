import Foundation
import Strata

extension VenueFinder {
  /// The first BubbleTeaFinder model: venues without their list of categories (only the primary one, in
  /// `Category`). It is today's model less `Venue.categories`.
  static func firstModel() throws -> ObjectModel {
    let current = try makeModel()
    let entities = current.entities.map { entity in
      guard entity.name == "Venue" else { return entity }
      return EntityDescription(
        name: entity.name, attributes: entity.attributes.filter { $0.name != "categories" },
        relationships: entity.relationships, uniquenessConstraints: entity.uniquenessConstraints,
        indexes: entity.indexes, renamingIdentifier: entity.renamingIdentifier)
    }
    return try ObjectModel(entities: entities, fetchRequestTemplates: current.fetchRequestTemplates)
  }

  /// Every version of the BubbleTeaFinder model, oldest first: a store of any of them opens with the newest.
  ///
  /// - "1": venues with their primary category.
  /// - "2": every Foursquare category of a venue, in `Venue.categories`. A custom stage fills them from the
  ///   bundled seed by venue name, else from the venue's primary category.
  public static func migrationPlan() throws -> MigrationPlan {
    let v1 = ModelVersion("1", try firstModel())
    let v2 = ModelVersion("2", try makeModel(), types: types)
    let fillCategories = MigrationStage.custom(
      from: v1, to: v2, willMigrate: nil,
      didMigrate: { context in
        let seeded = try seedCategoriesByName()
        for venue in try context.fetch(FetchRequest<Venue>()) where venue.categories.isEmpty {
          venue.categories = seeded[venue.name] ?? venue.category.map { [$0.name] } ?? []
        }
        try context.save()
      })
    return try MigrationPlan([v1, v2], stages: [fillCategories])
  }

  /// The categories of each venue of the bundled seed, by venue name.
  static func seedCategoriesByName() throws -> [String: [String]] {
    let seed = try SeedFile.read(try bundledSeedURL(), named: "seed.json")
    var categories: [String: [String]] = [:]
    for venue in seed.venues { categories[venue.name] = venue.categories?.map(\.name) ?? [] }
    return categories
  }
}
