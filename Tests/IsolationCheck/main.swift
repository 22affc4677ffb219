import Foundation
import Strata
import StrataMemory

// Uses a context's objects on their queue or off it, as its one argument says; CLITests runs it with and
// without `STRATA_CONCURRENCY_DEBUG=1`. A misuse mode prints what it read and exits 0 when the debug mode
// is off (the race is silent), and is stopped by the debug mode when it is on. `correct` uses the
// contexts as the docs say (actors, the main actor, perform) and must pass either way.

final class Film: ManagedObject {
  @Attribute var title: String
  @Relationship(inverse: "films") var studio: Studio?
}

final class Studio: ManagedObject {
  @Attribute var name: String
  @Relationship(inverse: "studio") var films: Set<Film>
}

actor FilmImporter: ContextActor {
  nonisolated let contextExecutor: ContextExecutor

  init(container: PersistentContainer) {
    let context = container.newBackgroundContext()
    context.name = "importer"
    contextExecutor = ContextExecutor(context: context)
  }

  func importFilms(_ titles: [String], studio name: String) throws -> [ObjectID] {
    let studio = Studio(context: context)
    studio.name = name
    let films = titles.map { title in
      let film = Film(context: context)
      film.title = title
      film.studio = studio
      return film
    }
    try context.save()
    return films.map(\.objectID)
  }

  func titles(of ids: [ObjectID]) throws -> [String] {
    try ids.map { try context.existingObject(with: $0) as? Film }.compactMap { $0?.title }
  }
}

func makeContainer() throws -> PersistentContainer {
  let container = try PersistentContainer(
    name: "IsolationCheck", types: Film.self, Studio.self, registry: StoreRegistry([MemoryStoreFactory()]))
  container.storeDescriptions = [StoreDescription(type: .memory)]
  try container.loadPersistentStores()
  return container
}

/// A background context named `name` holding one saved film, and that film.
func savedFilm(in container: PersistentContainer, contextName name: String) throws -> (ObjectContext, Film) {
  let context = container.newBackgroundContext()
  context.name = name
  let film = try context.performAndWait {
    let film = Film(context: context)
    film.title = "Heat"
    try context.save()
    return film
  }
  return (context, film)
}

@MainActor func useEverythingCorrectly(_ container: PersistentContainer) async throws {
  let importer = FilmImporter(container: container)
  let ids = try await importer.importFilms(["Heat", "Ronin"], studio: "Regency")
  let titles = try await importer.titles(of: ids)
  let view = container.mainContext
  let films = try view.fetch(FetchRequest<Film>(sortDescriptors: [QuerySort(\Film.title)]))
  let count = try await container.newBackgroundActor().perform { context in try context.count(for: FetchRequest<Film>()) }
  try await Task.sleep(for: .milliseconds(5))
  // After the awaits: still on the main actor, so still on the view context's queue.
  films.first?.title = "Heat (1995)"
  try view.save()
  let studio = films.first?.studio?.name ?? "none"
  let (background, film) = try savedFilm(in: container, contextName: "background")
  let id = film.objectID
  let title = try await background.perform { (try background.existingObject(with: id) as? Film)?.title ?? "none" }
  print("ok \(titles.sorted()) \(count) \(films.map(\.title)) \(studio) \(title)")
}

let mode = CommandLine.arguments.dropFirst().first ?? "correct"
let container = try makeContainer()
switch mode {
case "object-off-queue":
  let (context, film) = try savedFilm(in: container, contextName: "background")
  withExtendedLifetime(context) { print("read \(film.title)") }
case "context-off-queue":
  let (context, _) = try savedFilm(in: container, contextName: "background")
  print("counted \(try context.count(for: FetchRequest<Film>()))")
case "view-off-main":
  let counted = try await Task.detached {
    try container.viewContext.count(for: FetchRequest<Film>())
  }.value
  print("counted \(counted)")
case "correct":
  try await useEverythingCorrectly(container)
default:
  print("unknown mode \(mode): object-off-queue, context-off-queue, view-off-main or correct")
  exit(2)
}
