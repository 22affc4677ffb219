// A libFuzzer target for the predicate parser and validator (StrataCore). `scripts/torture fuzz` builds it
// through SwiftPM in a scratch path of its own, StrataCore instrumented with it:
//
//   swift build --product fuzz-parser --scratch-path .build-fuzz --sanitize fuzzer --sanitize address \
//     --disable-dead-strip -Xswiftc -DSTRATA_LIBFUZZER
//   .build-fuzz/debug/fuzz-parser -max_total_time=60 corpus/
//
// libFuzzer's own `main` then drives `LLVMFuzzerTestOneInput`. An ordinary build (`swift build`) has no
// libFuzzer: its `main` replays the files named on the command line (a directory: every file in it), so a
// crash libFuzzer saved can be run again without sanitizers: `swift run fuzz-parser crash-…`.
//
// Property, as in Tests/StrataStoreKitTests/QueryFuzzTests.swift: every input parses or fails with
// `.invalidQuery`; every predicate that parses validates against a small model or fails with
// `.invalidQuery` or `.unsupported`, and its description parses back. A violation prints the input and
// exits with status 1, which libFuzzer reports (and saves as a crash-… file) like a crash.
import Foundation
import StrataCore

private let fuzzModel: ObjectModel? = try? ObjectModel(entities: [
  EntityDescription(
    name: "Movie",
    attributes: [
      AttributeDescription(name: "title", type: .string),
      AttributeDescription(name: "year", type: .int16),
      AttributeDescription(name: "gross", type: .int64, isOptional: true),
      AttributeDescription(name: "rating", type: .double, isOptional: true),
      AttributeDescription(name: "budget", type: .decimal, isOptional: true),
      AttributeDescription(name: "released", type: .date, isOptional: true),
      AttributeDescription(name: "watched", type: .bool),
    ],
    relationships: [
      RelationshipDescription(name: "sequel", destination: "Movie", inverse: "prequel"),
      RelationshipDescription(name: "prequel", destination: "Movie", inverse: "sequel"),
      RelationshipDescription(name: "tags", destination: "Tag", inverse: "movies", isToMany: true),
    ]),
  EntityDescription(
    name: "Tag", attributes: [AttributeDescription(name: "name", type: .string)],
    relationships: [RelationshipDescription(name: "movies", destination: "Movie", inverse: "tags", isToMany: true)]),
])

private let fuzzArguments: [Value] = [
  .double(.nan), .double(.infinity), .int(.min), .string("(a+)+$"), .array([1, 2]), .null,
  .date(Date(timeIntervalSinceReferenceDate: .nan)), .decimal(.nan),
]

private func violation(_ what: String, _ format: String) -> Never {
  FileHandle.standardError.write(Data("fuzz-parser: \(what) for \(format.debugDescription)\n".utf8))
  exit(1)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParserOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let format = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let predicate: QueryPredicate
  do {
    predicate = try QueryPredicate(format: format, argumentArray: fuzzArguments)
  } catch let error as StoreError where error.code == .invalidQuery {
    return 0
  } catch {
    violation("parsing threw \(error)", format)
  }
  do {
    _ = try QueryPredicate(format: predicate.description)
  } catch {
    violation("the description \(predicate.description.debugDescription) does not parse: \(error)", format)
  }
  guard let model = fuzzModel, let movie = model.entity(named: "Movie") else { violation("no model", format) }
  do {
    _ = try QueryValidator.check(predicate, entity: movie, model: model)
  } catch let error as StoreError where error.code == .invalidQuery || error.code == .unsupported {
    return 0
  } catch {
    violation("validating threw \(error)", format)
  }
  return 0
}

#if !STRATA_LIBFUZZER
  @main enum ReplayInputs {
    static func main() throws {
      var inputs = 0
      for argument in CommandLine.arguments.dropFirst() {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else {
          FileHandle.standardError.write(Data("fuzz-parser: no file at \(argument)\n".utf8))
          exit(64)
        }
        let paths =
          isDirectory.boolValue
          ? try FileManager.default.contentsOfDirectory(atPath: argument).sorted().map { argument + "/" + $0 } : [argument]
        for path in paths {
          // One byte past the input, so that even an empty input has a buffer to point at.
          let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) + [0]
          _ = bytes.withUnsafeBufferPointer { fuzzParserOneInput($0.baseAddress!, $0.count - 1) }
          inputs += 1
        }
      }
      print("fuzz-parser: \(inputs) inputs replayed, no violation")
    }
  }
#endif
