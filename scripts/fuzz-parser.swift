// A libFuzzer target for the predicate parser and validator (StrataCore), built by `scripts/torture fuzz`
// into the StrataCore module itself (so it reaches internal API) with `-sanitize=fuzzer,address`:
//
//   swiftc -sanitize=fuzzer,address -parse-as-library -module-name StrataCore \
//     Modules/StrataCore/*.swift scripts/fuzz-parser.swift -o .build/fuzz-parser
//   .build/fuzz-parser -max_total_time=60 corpus/
//
// Property, as in Tests/StrataStoreKitTests/QueryFuzzTests.swift: every input parses or fails with
// `.invalidQuery`; every predicate that parses validates against a small model or fails with
// `.invalidQuery` or `.unsupported`, and its description parses back. A violation prints the input and
// exits with status 1, which libFuzzer reports (and saves as a crash-… file) like a crash.
import Foundation

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
