import Foundation
import StrataStoreKit

/// A broad set of fetch descriptions for the SQL backends' query compilers: every comparison operator and
/// string option, every key-path kind (attribute, to-one, to-many, aggregate, ordered element, Codable
/// member), functions, folds, `SUBQUERY`, sorts by every comparator, sub-entity filtering and dictionary
/// fetches. The backends' characterization tests compile each case and compare the SQL with what the
/// compiler produced when the test was recorded; a case the compiler refuses records its error.
package enum SQLCompilerCorpus {
  /// The store identifier the corpus's object IDs belong to.
  package static let storeIdentifier = "corpus-store"

  /// Items with owners, tags (a join table), ordered parts (a foreign key), a Codable attribute, and a
  /// sub-entity.
  package static func model() throws -> ObjectModel {
    let item = EntityDescription(
      name: "Item",
      attributes: [
        AttributeDescription(name: "name", type: .string),
        AttributeDescription(name: "title", type: .string, isOptional: true),
        AttributeDescription(name: "rating", type: .double, isOptional: true),
        AttributeDescription(name: "weight", type: .float),
        AttributeDescription(name: "year", type: .int32),
        AttributeDescription(name: "small", type: .int16, isOptional: true),
        AttributeDescription(name: "total", type: .int64),
        AttributeDescription(name: "price", type: .decimal, isOptional: true),
        AttributeDescription(name: "flag", type: .bool),
        AttributeDescription(name: "born", type: .date, isOptional: true),
        AttributeDescription(name: "blob", type: .data, isOptional: true),
        AttributeDescription(name: "code", type: .uuid, isOptional: true),
        AttributeDescription(name: "link", type: .url, isOptional: true),
        AttributeDescription(name: "info", type: .json, isOptional: true),
      ],
      relationships: [
        RelationshipDescription(name: "owner", destination: "Owner", inverse: "items"),
        RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", isToMany: true),
        RelationshipDescription(name: "parts", destination: "Part", inverse: "item", isToMany: true, isOrdered: true),
      ])
    let special = EntityDescription(
      name: "Special", attributes: [AttributeDescription(name: "extra", type: .string, isOptional: true)],
      parentEntity: "Item")
    let owner = EntityDescription(
      name: "Owner",
      attributes: [
        AttributeDescription(name: "name", type: .string), AttributeDescription(name: "age", type: .int16),
      ],
      relationships: [
        RelationshipDescription(name: "items", destination: "Item", inverse: "owner", isToMany: true),
        RelationshipDescription(name: "boss", destination: "Owner", inverse: "staff"),
        RelationshipDescription(name: "staff", destination: "Owner", inverse: "boss", isToMany: true),
        RelationshipDescription(name: "favorites", destination: "Tag", inverse: "fans", isToMany: true, isOrdered: true),
        RelationshipDescription(name: "made", destination: "Part", inverse: "maker", isToMany: true),
      ])
    let tag = EntityDescription(
      name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
      relationships: [
        RelationshipDescription(name: "items", destination: "Item", inverse: "tags", isToMany: true),
        RelationshipDescription(name: "fans", destination: "Owner", inverse: "favorites", isToMany: true),
      ])
    let part = EntityDescription(
      name: "Part",
      attributes: [
        AttributeDescription(name: "label", type: .string), AttributeDescription(name: "size", type: .int64),
        AttributeDescription(name: "price", type: .decimal, isOptional: true),
        AttributeDescription(name: "ratio", type: .double, isOptional: true),
      ],
      relationships: [
        RelationshipDescription(name: "item", destination: "Item", inverse: "parts"),
        RelationshipDescription(name: "maker", destination: "Owner", inverse: "made"),
      ])
    return try ObjectModel(entities: [item, special, owner, tag, part])
  }

  /// An object ID of the corpus's store.
  package static func id(_ entity: String, _ key: Int64) -> Value {
    .objectID(ObjectID(entityName: entity, storeIdentifier: storeIdentifier, primaryKey: key))
  }

  /// Predicates in format syntax (with their arguments), over `Item` unless they name another entity.
  package static let formats: [(format: String, arguments: [Value])] = [
    ("name == 'a'", []), ("name != 'a'", []), ("title == nil", []), ("title != nil", []), ("nil == title", []),
    ("'ab' IN name", []), ("rating < 3.5", []), ("rating <= 3", []), ("rating > 2", []), ("rating >= 1", []),
    ("year BETWEEN {1990, 2000}", []), ("year IN {1, 2, 3}", []), ("year IN {1, nil}", []), ("year IN {7}", []),
    ("name IN {'a', 'b'}", []), ("name IN[c] {'a', 'b'}", []), ("rating == %@", [.double(.nan)]),
    ("rating < %@", [.double(.nan)]), ("born > %@", [.date(Date(timeIntervalSinceReferenceDate: 1000))]),
    ("born == %@", [.date(Date(timeIntervalSinceReferenceDate: .nan))]),
    ("price == %@", [.decimal(Decimal(sign: .plus, exponent: -2, significand: 125))]), ("price < %@", [.double(1e300)]),
    ("price BETWEEN %@", [.array([.double(-1e300), .decimal(3)])]), ("price IN %@", [.array([.double(.infinity), .int(2)])]),
    ("rating == %@", [.decimal(4)]), ("flag == YES", []), ("flag != NO", []), ("blob == %@", [.data(Data([1, 2]))]),
    ("code == %@", [.uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))]),
    ("link == %@", [.url(URL(fileURLWithPath: "/tmp/a"))]), ("link BEGINSWITH 'file'", []), ("link < 'g'", []),
    ("name CONTAINS 'x'", []), ("name CONTAINS[c] 'x'", []), ("name BEGINSWITH[cd] 'é'", []),
    ("name ENDSWITH[d] 'x'", []), ("name LIKE 'a*b?'", []), ("name LIKE[c] 'a\\\\*%_'", []), ("name LIKE title", []),
    ("name LIKE[cd] title", []), ("name MATCHES 'a.*'", []), ("name MATCHES[c] '\\\\p{L}+'", []),
    ("name MATCHES[cd] '\\\\p{Han}'", []), ("name MATCHES title", []), ("name MATCHES[d] title", []),
    ("name ==[c] 'A'", []), ("name !=[cd] 'A'", []), ("name <[cd] 'B'", []), ("name >=[c] title", []),
    ("name ==[n] 'x'", []), ("name CONTAINS title", []), ("title BEGINSWITH name", []), ("title ENDSWITH[c] name", []),
    ("name BETWEEN[c] {'a', 'm'}", []), ("name IN[d] title", []), ("title == nil AND name CONTAINS nil", []),
    ("rating < year", []), ("name == title", []), ("owner.name == name", []), ("rating == weight", []),
    ("owner.name == 'a'", []), ("owner.boss.name BEGINSWITH 'b'", []), ("owner == nil", []), ("owner != nil", []),
    ("owner == %@", [id("Owner", 3)]),
    ("owner == %@", [.objectID(ObjectID(entityName: "Owner", storeIdentifier: "other", primaryKey: 3))]),
    ("owner.age > 3", []), ("owner.boss == owner", []), ("SELF == %@", [id("Item", 1)]),
    ("SELF IN %@", [.array([id("Item", 1), id("Item", 2)])]),
    ("owner IN %@", [.array((1...70).map { id("Owner", $0) })]), ("year IN %@", [.array((1...70).map { .int($0) })]),
    ("name IN %@", [.array((1...70).map { .string("n\($0)") })]), ("ANY tags.label == 'x'", []),
    ("ALL tags.label BEGINSWITH 'a'", []), ("NONE parts.size > 3", []), ("ANY tags.label IN {'a', 'b'}", []),
    ("tags.@count > 2", []), ("parts.size.@sum > 10", []), ("parts.ratio.@sum > 1.5", []), ("parts.size.@avg < 2", []),
    ("parts.label.@min == 'a'", []), ("parts.ratio.@max > 1", []), ("owner.items.@count == 1", []),
    ("owner.items.total.@sum > 1", []), ("ANY owner.items.name == 'x'", []), ("ANY tags.items.owner.name == 'x'", []),
    ("ANY parts.maker.name == 'x'", []), ("ANY tags == %@", [id("Tag", 2)]), ("ANY owner.staff.made.size > 2", []),
    ("ANY owner.staff.favorites == %@", [id("Tag", 1)]), ("ALL parts.price > 2", []),
    ("parts[0].label == 'a'", []), ("parts[LAST].size > 1", []), ("parts[FIRST].maker.name == 'x'", []),
    ("parts[1] == %@", [id("Part", 4)]), ("parts[0].price > 1", []), ("owner.favorites[0].label == 'x'", []),
    ("owner.favorites[LAST] == nil", []), ("parts[SIZE] == 2", []), ("ANY owner.items.parts[0].label == 'q'", []),
    ("SUBQUERY(parts, $p, $p.size > 2 AND $p.maker.name == 'x').@count > 0", []),
    ("SUBQUERY(owner.items, $i, $i.name == 'a' AND $i.owner.name == 'b').@count == 1", []),
    ("SUBQUERY(tags, $t, ANY $t.fans.name == 'z').@count >= 2", []), ("lowercase:(name) == 'a'", []),
    ("uppercase:(title) == 'B'", []), ("canonical:(name) == 'e'", []), ("lowercase:(owner.name) BEGINSWITH[c] 'x'", []),
    ("abs:(year) > 3", []), ("sqrt:(rating) > 1", []), ("log:(rating) > 1", []), ("ln:(weight) > 1", []),
    ("exp:(small) < 10", []), ("floor:(rating) == 1", []), ("ceiling:(rating) == 2", []), ("trunc:(rating) == 1", []),
    ("modulus:by:(year, 3) == 1", []), ("raise:toPower:(rating, 2) > 4", []), ("year + 1 > 3", []),
    ("rating - 1 < 0", []), ("rating * 2 > 1", []), ("rating / 2 > 1", []), ("year / small > 1", []),
    ("small * 2 > 1", []), ("weight * 2 > 1", []), ("flag + 1 > 1", []), ("total - small == year", []),
    ("sum:(parts.size) > 3", []), ("count:(tags) > 1", []), ("min:(parts.label) == 'a'", []),
    ("max:(parts.ratio) > 1", []), ("average:(parts.size) > 1", []), ("median:(parts.ratio) > 1", []),
    ("mode:(parts.label) == 'x'", []), ("stddev:(parts.size) > 1", []), ("sum:({1, 2, year}) > 3", []),
    ("max:({name, 'b'}) == 'b'", []), ("count:({rating, 1}) == 2", []), ("average:(tags.items.year) > 3", []),
    ("info.city == 'paris'", []), ("info.city ==[c] 'paris'", []), ("info CONTAINS 'a'", []), ("info CONTAINS 1", []),
    ("ANY info == 1", []), ("ALL info > 2", []), ("NONE info == 'x'", []), ("info[0] == 'a'", []),
    ("info[LAST] == 2", []), ("info.@count == 2", []), ("info.@sum > 3", []), ("info.@avg > 3", []),
    ("info.@min == 'a'", []), ("info.@max > 2", []), ("info.@max == nil", []), ("info == nil", []),
    ("info != nil", []), ("info IN {1, 2}", []), ("info BETWEEN {1, 3}", []), ("info.stops[0].city == 'x'", []),
    ("info.flag == YES", []), ("info.n != 2.5", []), ("info.n < %@", [.double(.nan)]),
    ("owner.name == 'o' AND info.a.b LIKE 'x*'", []),
    ("TRUEPREDICATE", []), ("FALSEPREDICATE", []), ("NOT (name == 'a')", []),
    ("name == 'a' AND (year > 1 OR year < 0)", []), ("NOT (rating < 2 OR owner.name == nil)", []),
  ]

  /// Predicates no format string writes: constants on both sides, empty and long junctions, a quoted
  /// Codable member.
  package static func builtPredicates() -> [(name: String, predicate: QueryPredicate)] {
    let years = (0..<150).map { QueryPredicate.comparison(Comparison(.keyPath("year"), .equalTo, .constant(.int(Int64($0))))) }
    return [
      ("constants", .comparison(Comparison(.constant(.int(3)), .lessThan, .constant(.int(4))))),
      (
        "constant string",
        .comparison(Comparison(.constant(.string("a")), .equalTo, .constant(.string("A")), options: .caseInsensitive))
      ),
      ("empty and", .and([])), ("empty or", .or([])), ("long and", .and(years)), ("long or", .or(years)),
      ("quoted member", .comparison(Comparison(.keyPath("info.we\"ird"), .equalTo, .constant(.int(1))))),
      ("apostrophe member", .comparison(Comparison(.keyPath("info.it's"), .equalTo, .constant(.string("x"))))),
    ]
  }

  /// Sort descriptor lists, over `Item`.
  package static let sorts: [[QuerySort]] = [
    [QuerySort("name")], [QuerySort("name", comparator: .caseInsensitive)],
    [QuerySort("name", ascending: false, comparator: .localized)], [QuerySort("title", comparator: .localizedStandard)],
    [QuerySort("price"), QuerySort("rating", ascending: false)], [QuerySort("owner.name", ascending: false)],
    [QuerySort("owner.boss.age"), QuerySort("year")], [QuerySort("link")], [QuerySort("owner")],
  ]

  /// Every fetch description of the corpus, named.
  package static func requests() throws -> [(name: String, request: FetchDescription)] {
    var result: [(String, FetchDescription)] = []
    for (format, arguments) in formats {
      let predicate = try QueryPredicate(format: format, argumentArray: arguments)
      result.append(("\(format) \(arguments)", FetchDescription(entityName: "Item", predicate: predicate)))
    }
    for (name, predicate) in builtPredicates() {
      result.append((name, FetchDescription(entityName: "Item", predicate: predicate)))
    }
    for sort in sorts {
      result.append(("sort \(sort)", FetchDescription(entityName: "Item", sortDescriptors: sort)))
    }
    var own = FetchDescription(entityName: "Item", predicate: try QueryPredicate(format: "year > 2"))
    own.includesSubentities = false
    result.append(("own rows", own))
    own.predicate = nil
    result.append(("own rows, no predicate", own))
    result.append(("special", FetchDescription(entityName: "Special", predicate: try QueryPredicate(format: "extra == name"))))
    result.append(("part", FetchDescription(entityName: "Part", predicate: try QueryPredicate(format: "item.owner.name == 'a'"))))
    result.append(
      ("owner", FetchDescription(entityName: "Owner", predicate: try QueryPredicate(format: "favorites[1].label == 'x'"))))
    return result
  }

  /// Dictionary fetches over `Item`, named.
  package static func dictionaryRequests() throws -> [(name: String, request: FetchDescription)] {
    func request(
      _ properties: [PropertySelection], groupBy: [String]? = nil, sorts: [QuerySort] = [], predicate: String? = nil
    ) throws -> FetchDescription {
      var request = FetchDescription(
        entityName: "Item", predicate: try predicate.map { try QueryPredicate(format: $0) }, sortDescriptors: sorts,
        resultType: .dictionaries)
      request.propertiesToFetch = properties
      request.propertiesToGroupBy = groupBy
      return request
    }
    func fold(_ name: String, _ format: String, _ type: AttributeType) throws -> PropertySelection {
      .expression(name: name, expression: try QueryExpression(format: format), resultType: type)
    }
    let folds = try [
      fold("s", "sum:(year)", .int64), fold("sr", "sum:(rating)", .double), fold("c", "count:(name)", .int64),
      fold("a", "average:(small)", .double), fold("lo", "min:(rating)", .double), fold("hi", "max:(name)", .string),
      fold("m", "mode:(owner.name)", .string), fold("md", "median:(weight)", .double), fold("sd", "stddev:(total)", .double),
    ]
    return [
      ("properties", try request([.keyPath("name"), .keyPath("owner"), .keyPath("owner.name"), .keyPath("price")])),
      (
        "expressions",
        try request([fold("e", "rating * 2", .double), fold("l", "lowercase:(name)", .string)], predicate: "year > 1")
      ),
      ("folds", try request(folds)),
      ("grouped", try request([.keyPath("owner.name")] + folds, groupBy: ["owner.name"])),
      (
        "grouped sorted",
        try request(
          [.keyPath("name"), fold("s", "sum:(year)", .int64)], groupBy: ["name"], sorts: [QuerySort("name", ascending: false)])
      ),
      ("sorted", try request([.keyPath("name")], sorts: [QuerySort("rating")], predicate: "owner.age > 3")),
    ]
  }

  /// Expressions a batch update assigns, over `Item`'s own attributes.
  package static let valueExpressions = [
    "year + 1", "rating * 2", "lowercase:(name)", "abs:(small)", "price", "flag", "owner.age", "modulus:by:(total, 7)",
  ]

  /// Every case of the corpus as one compiler renders it, named as the recordings name them: each request,
  /// then each dictionary request ("dictionary …"), then, when `value` is given, each value expression
  /// ("value …"). A case the compiler refuses is recorded as `error: …`, its message included.
  ///
  /// ```swift
  /// let cases = try SQLCompilerCorpus.compiledCases(query: { try render($0) }, dictionary: { try renderDictionary($0) })
  /// #expect(try SQLCompilerCorpus.mismatch(cases, against: expectation) == nil)
  /// ```
  package static func compiledCases(
    query: (FetchDescription) throws -> String, dictionary: (FetchDescription) throws -> String,
    value: ((String) throws -> String)? = nil
  ) throws -> [(name: String, text: String)] {
    func outcome(_ body: () throws -> String) -> String {
      do { return try body() } catch { return "error: \(error)" }
    }
    var cases: [(name: String, text: String)] = []
    for (name, request) in try requests() { cases.append((name, outcome { try query(request) })) }
    for (name, request) in try dictionaryRequests() {
      cases.append(("dictionary " + name, outcome { try dictionary(request) }))
    }
    if let value {
      for format in valueExpressions { cases.append(("value " + format, outcome { try value(format) })) }
    }
    return cases
  }

  /// Compares `compiled` (each case's name and the text its compiler made of it) with the text recorded in
  /// `expectation`: `nil` when they match, else what differs (the case count, and the first case that
  /// differs), for the test to report. With `STRATA_RECORD_COMPILED_SQL=1` in the environment it writes
  /// `expectation` instead, and says so, so that a recording run never passes.
  package static func mismatch(_ compiled: [(name: String, text: String)], against expectation: URL) throws -> String? {
    let text = compiled.map { "=== \($0.name)\n\($0.text)\n" }.joined()
    if ProcessInfo.processInfo.environment["STRATA_RECORD_COMPILED_SQL"] == "1" {
      try text.write(to: expectation, atomically: true, encoding: .utf8)
      return "recorded \(compiled.count) cases in \(expectation.path)"
    }
    let recorded = try String(contentsOf: expectation, encoding: .utf8)
    let expected = recorded.components(separatedBy: "=== ").dropFirst()
    let actual = text.components(separatedBy: "=== ").dropFirst()
    var problems: [String] = []
    if expected.count != actual.count { problems.append("\(actual.count) cases, \(expected.count) recorded") }
    if let (was, now) = zip(expected, actual).first(where: { $0 != $1 }) {
      problems.append("compiled differently:\nrecorded: \(was)\nnow:      \(now)")
    }
    return problems.isEmpty ? nil : problems.joined(separator: "\n")
  }
}
