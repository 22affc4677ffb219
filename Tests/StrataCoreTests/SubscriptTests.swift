import Foundation
import StrataCore
import Testing

@Suite("Subscripts in predicates")
struct SubscriptTests {
  @Test(arguments: [
    "SELF[FIRST] == 1", "SELF[LAST] == 'z'", "SELF[SIZE] > 2", "items[0].name == 'a'", "items[FIRST].name == 'a'",
    "items[SIZE] > 2", "items[2] == nil", "{3, 1, 2}[LAST] == 2", "items[$i].name == 'a'", "a.b[FIRST].c.d == 1",
    "items[1 + 1] == 3", "items[0][1] == 2", "lowercase:(names[LAST]) == 'x'",
  ])
  func subscriptsParseAndPrintBack(_ format: String) throws {
    let predicate = try QueryPredicate(format: format)
    let printed = predicate.description
    #expect(try QueryPredicate(format: printed) == predicate, "\(format) printed as \(printed)")
  }

  @Test func theTreeIsNSExpressionsFunctions() throws {
    guard case .comparison(let c) = try QueryPredicate(format: "items[FIRST].name == 'a'") else {
      Issue.record("not a comparison")
      return
    }
    #expect(c.left == .function("FIRST", [.keyPath("items"), .constant(.string("name"))]))
    let parts = try #require(c.left.subscriptParts)
    #expect(parts.collection == .keyPath("items"))
    #expect(parts.position == .first)
    #expect(parts.keyPath == "name")
    guard case .comparison(let d) = try QueryPredicate(format: "items[%d] == 2", 3) else { return }
    #expect(d.left == .subscripted(.keyPath("items"), by: .index(.constant(.int(3)))))
    #expect(d.left == .function("objectFrom:withIndex:", [.keyPath("items"), .constant(.int(3))]))
    #expect(d.left.description == "items[3]")
    // Outside brackets FIRST, LAST and SIZE stay ordinary keys; inside, case does not matter.
    #expect(try QueryPredicate(format: "first == 1") == .comparison(.init(.keyPath("first"), .equalTo, .constant(.int(1)))))
    #expect(try QueryPredicate(format: "SELF[last] == 1") == QueryPredicate(format: "SELF[LAST] == 1"))
  }

  @Test func elementsFollowTheDocumentedRules() {
    let items: Value = .array([.int(10), .int(20), .int(30)])
    #expect(QuerySubscript.element(of: items, at: .first) == .int(10))
    #expect(QuerySubscript.element(of: items, at: .last) == .int(30))
    #expect(QuerySubscript.element(of: items, at: .size) == .int(3))
    #expect(QuerySubscript.element(of: items, at: .index(.constant(.int(1)))) == .int(20))
    #expect(QuerySubscript.element(of: items, at: .index(.constant(.int(3)))) == .null)
    #expect(QuerySubscript.element(of: items, at: .index(.constant(.int(-1)))) == .null)
    #expect(QuerySubscript.element(of: items, at: .index(.constant(.double(2)))) == .int(30))
    #expect(QuerySubscript.element(of: .array([]), at: .first) == .null)
    #expect(QuerySubscript.element(of: .array([]), at: .last) == .null)
    #expect(QuerySubscript.element(of: .array([]), at: .size) == .int(0))
    #expect(QuerySubscript.element(of: .null, at: .size) == .null)
    #expect(ExpressionFunctions.apply("objectFrom:withIndex:", [items, .int(2)]) == .int(30))
    #expect(ExpressionFunctions.apply("SIZE", [items]) == .int(3))
  }

  @Test func badSubscriptsAreParseErrors() {
    for format in ["items[FIRST == 1", "items[] == 1", "items[SIZE].name == 1", "items[0].@count == 1", "items[0]."] {
      let error = #expect(throws: StoreError.self, "\(format)") { try QueryPredicate(format: format) }
      #expect(error?.code == .invalidQuery, "\(format)")
    }
  }

  @Test func deepSubscriptsHitTheDepthLimit() {
    let format = "items" + String(repeating: "[0]", count: QueryLimits.maxDepth + 2) + " == 1"
    let error = #expect(throws: StoreError.self) { try QueryLimits.check(try QueryPredicate(format: format)) }
    #expect(error?.code == .invalidQuery)
    #expect(error?.message.contains("deeper") == true)
  }

  @Test func theValidatorFoldsConstantsAndRefusesWhatIsNotAnOrderedCollection() throws {
    let entity = EntityDescription(
      name: "List", attributes: [AttributeDescription(name: "title", type: .string)],
      relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "list", isToMany: true)])
    let item = EntityDescription(
      name: "Item", attributes: [AttributeDescription(name: "name", type: .string)],
      relationships: [RelationshipDescription(name: "list", destination: "List", inverse: "items")])
    let model = try ObjectModel(entities: [entity, item])
    let folded = try QueryValidator.check(
      try QueryPredicate(format: "{'c', 'a', 'b'}[LAST] == title"), entity: entity, model: model)
    #expect(folded == .comparison(.init(.keyPath("title"), .equalTo, .constant(.string("b")))))
    let outOfRange = try QueryValidator.check(try QueryPredicate(format: "{3}[4] == nil"), entity: entity, model: model)
    #expect(outOfRange == .true)
    for (format, key) in [
      ("items[FIRST].name == 'a'", "items"), ("title[0] == 'a'", "title"), ("SELF[SIZE] == 1", nil),
      ("{1, 2}[-1] == 1", nil), ("{1, 2}[title] == 1", nil), ("{1, 2}[0].name == 1", "name"),
    ] {
      let error = #expect(throws: StoreError.self, "\(format)") {
        try QueryValidator.check(try QueryPredicate(format: format), entity: entity, model: model)
      }
      #expect(error?.code == .invalidQuery, "\(format): \(error?.message ?? "")")
      if let key { #expect(error?.key == key, "\(format)") }
    }
  }

  @Test func aSubscriptOfACodableAttributeBecomesAMemberOfItsKeyPath() throws {
    let entity = EntityDescription(
      name: "Trip",
      attributes: [
        AttributeDescription(name: "tags", type: .json), AttributeDescription(name: "stops", type: .json),
        AttributeDescription(name: "title", type: .string),
      ])
    let model = try ObjectModel(entities: [entity])
    func checked(_ format: String, _ arguments: any PredicateArgument & Sendable...) throws -> QueryPredicate {
      try QueryValidator.check(try QueryPredicate(format: format, argumentArray: arguments), entity: entity, model: model)
    }
    #expect(try checked("tags[FIRST] == 'a'") == .comparison(.init(.keyPath("tags[0]"), .equalTo, .constant("a"))))
    #expect(try checked("tags[%d] == 'a'", 2) == .comparison(.init(.keyPath("tags[2]"), .equalTo, .constant("a"))))
    #expect(try checked("tags[SIZE] > 2") == .comparison(.init(.keyPath("tags.@count"), .greaterThan, .constant(2))))
    #expect(
      try checked("'x' == stops[LAST].city")
        == .comparison(.init(.keyPath("stops[LAST].city"), .equalTo, .constant("x"))))
    #expect(
      try checked("stops[0][last].city == 'x'")
        == .comparison(.init(.keyPath("stops[0][LAST].city"), .equalTo, .constant("x"))))
    let path = try ResolvedKeyPath("stops[0][LAST].city", entity: entity, model: model)
    #expect(path.members == [.index(0), .last, .key("city")])
    #expect(path.keyPath == "stops[0][LAST].city")
    #expect(try ResolvedKeyPath("tags[first]", entity: entity, model: model).members == [.index(0)])
    let folded = try ResolvedKeyPath("stops[LAST].@sum", entity: entity, model: model)
    #expect(folded.members == [.last] && folded.memberFold == .sum)
    // A key path argument cannot hold brackets: subscripts come from the parser only.
    #expect(throws: StoreError.self) { try checked("%K > 1", "stops[0].zip") }
    // A bracket that is not a subscript stays part of the key.
    #expect(try ResolvedKeyPath("stops.a[-1]", entity: entity, model: model).members == [.key("a[-1]")])
    for format in ["tags[-1] == 'a'", "tags.@count[0] == 1", "title[0] == 'a'", "tags[0].x[SIZE].y == 1"] {
      let error = #expect(throws: StoreError.self, "\(format)") { try checked(format) }
      #expect(error?.code == .invalidQuery, "\(format): \(error?.message ?? "")")
    }
    let inside = #expect(throws: StoreError.self) { try checked("uppercase:(tags[0]) == 'A'") }
    #expect(inside?.code == .unsupported)
  }
}
