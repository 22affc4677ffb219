import Foundation
import Strata
import StrataStoreKit

/// The conformance suite's sample model: films with every attribute type, their directors (cascade),
/// studios (deny), and actors (many-to-many).
public final class Film: ManagedObject {
  /// The title.
  @Attribute public var title: String
  /// The release year (`Int16`).
  @Attribute public var year: Int16
  /// A rating from 0 to 10 (`Double`, validated).
  @Attribute(minimum: 0, maximum: 10) public var rating: Double
  /// A score (`Float`).
  @Attribute public var score: Float
  /// The running time (`Int32`).
  @Attribute public var runtime: Int32
  /// The takings (`Int64`).
  @Attribute public var boxOffice: Int64
  /// The budget (`Decimal`, optional).
  @Attribute public var budget: Decimal?
  /// Whether the film is out (`Bool`).
  @Attribute public var released: Bool
  /// The release date (optional).
  @Attribute public var releaseDate: Date?
  /// The poster's bytes (optional).
  @Attribute public var poster: Data?
  /// A unique identifier (a uniqueness constraint).
  @Attribute(.unique) public var uuid: UUID
  /// The film's web page (optional).
  @Attribute public var homepage: URL?
  /// The genre (optional).
  @Attribute public var genre: String?
  /// A transient value, never stored.
  @Attribute(.transient) public var scratch: String?
  /// The director (inverse ``Director/films``).
  @Relationship(inverse: "films") public var director: Director?
  /// The studio (inverse ``Studio/films``).
  @Relationship(inverse: "films") public var studio: Studio?
  /// The cast (many-to-many, inverse ``Actor/films``).
  @Relationship(inverse: "films") public var actors: Set<Actor>
}

/// A director; deleting one deletes their films (cascade).
public final class Director: ManagedObject {
  /// The director's name.
  @Attribute public var name: String
  /// The director's country (optional).
  @Attribute public var country: String?
  /// The director's films.
  @Relationship(inverse: "director", deleteRule: .cascade) public var films: Set<Film>
}

/// A studio; one with films cannot be deleted (deny).
public final class Studio: ManagedObject {
  /// The studio's name (unique).
  @Attribute(.unique) public var name: String
  /// When the studio was founded (optional).
  @Attribute public var founded: Date?
  /// The studio's films.
  @Relationship(inverse: "studio", deleteRule: .deny) public var films: Set<Film>
}

/// An actor, in many films.
public final class Actor: ManagedObject {
  /// The actor's name.
  @Attribute public var name: String
  /// The actor's IMDb identifier (unique, optional).
  @Attribute(.unique) public var imdbID: String?
  /// The films the actor is in.
  @Relationship(inverse: "actors") public var films: Set<Film>
}

/// The classes of the sample model, in declaration order.
public let sampleTypes: [ManagedObject.Type] = [Film.self, Director.self, Studio.self, Actor.self]
