import ArgumentParser
import FaveFlicks
import Foundation
import StrataCLI
import StrataCore

extension FaveFlicksCommand {
  struct Poster: ParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Store a movie's poster image, or write it out.",
      discussion: """
        With --file, the image becomes the poster of the first movie with this exact title; with --output, \
        that movie's poster is written to the file. A poster of 100 KiB or more is kept beside the store \
        (in <store>_SUPPORT/_EXTERNAL_DATA/ for sqlite and lmdb, in a table of its own for postgres), not in \
        its rows.
        """)

    @OptionGroup var storeOptions: StoreFlags
    @Option(help: "The title of the movie.") var title: String
    @Option(help: ArgumentHelp("The image to store as the movie's poster.", valueName: "IMAGE")) var file: String?
    @Option(help: ArgumentHelp("Where to write the movie's poster.", valueName: "FILE")) var output: String?

    func validate() throws {
      guard (file == nil) != (output == nil) else {
        throw ValidationError("give either --file IMAGE (store a poster) or --output FILE (write it out)")
      }
    }

    func run() throws {
      try runReportingErrors(tool: "fave-flicks") {
        if let file {
          let image: Data
          do {
            image = try Data(contentsOf: URL(fileURLWithPath: file))
          } catch {
            throw StoreError(.io, "cannot read \(file): \((error as NSError).localizedDescription)")
          }
          try openLibrary(storeOptions).setPoster(title: title, image: image)
          print("Stored a poster of \(image.count) bytes for \(title)")
        } else if let output {
          guard let image = try openLibrary(storeOptions, readingOnly: true).poster(title: title) else {
            throw StoreError(.notFound, "\(title) has no poster", entity: "Movie", key: "poster")
          }
          do {
            try image.write(to: URL(fileURLWithPath: output), options: .atomic)
          } catch {
            throw StoreError(.io, "cannot write \(output): \((error as NSError).localizedDescription)")
          }
          print("Wrote the poster of \(title) (\(image.count) bytes) to \(output)")
        }
      }
    }
  }
}
