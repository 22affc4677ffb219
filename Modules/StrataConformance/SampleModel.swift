import Foundation
import Strata
import StrataStoreKit

/// The conformance suite's sample model: films with every attribute type, their directors (cascade),
/// studios (deny), and actors (many-to-many).
public final class Film: ManagedObject {
  @Attribute public var title: String
  @Attribute public var year: Int16
  @Attribute(minimum: 0, maximum: 10) public var rating: Double
  @Attribute public var score: Float
  @Attribute public var runtime: Int32
  @Attribute public var boxOffice: Int64
  @Attribute public var budget: Decimal?
  @Attribute public var released: Bool
  @Attribute public var releaseDate: Date?
  @Attribute public var poster: Data?
  @Attribute(.unique) public var uuid: UUID
  @Attribute public var homepage: URL?
  @Attribute public var genre: String?
  @Attribute(.transient) public var scratch: String?
  @Relationship(inverse: "films") public var director: Director?
  @Relationship(inverse: "films") public var studio: Studio?
  @Relationship(inverse: "films") public var actors: Set<Actor>
}

public final class Director: ManagedObject {
  @Attribute public var name: String
  @Attribute public var country: String?
  @Relationship(inverse: "director", deleteRule: .cascade) public var films: Set<Film>
}

public final class Studio: ManagedObject {
  @Attribute(.unique) public var name: String
  @Attribute public var founded: Date?
  @Relationship(inverse: "studio", deleteRule: .deny) public var films: Set<Film>
}

public final class Actor: ManagedObject {
  @Attribute public var name: String
  @Attribute(.unique) public var imdbID: String?
  @Relationship(inverse: "actors") public var films: Set<Film>
}

/// The classes of the sample model, in declaration order.
public let sampleTypes: [ManagedObject.Type] = [Film.self, Director.self, Studio.self, Actor.self]
