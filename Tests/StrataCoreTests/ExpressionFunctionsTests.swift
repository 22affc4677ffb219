import Foundation
import Testing

@testable import StrataCore

@Suite("Expression functions")
struct ExpressionFunctionsTests {
  let ints: [Value] = [1, 2, 3, 4, 4, 5, 9, 11].map { Value.int($0) }

  @Test func foldsOverNothingAreZeroOrNil() {
    for function in CollectionFunction.allCases {
      let expected: Value = function == .sum || function == .count ? .int(0) : .null
      #expect(function.fold([]) == expected, "\(function)")
      #expect(function.fold([.null, .null]) == expected, "\(function) skips nil")
    }
  }

  @Test func statisticsMatchNSExpression() throws {
    // NSExpression's stddev: of these numbers is 3.21859… (the population deviation).
    guard case .double(let deviation) = CollectionFunction.stddev.fold(ints) else {
      Issue.record("stddev: is a double")
      return
    }
    #expect(abs(deviation - 3.21859) < 1e-5)
    #expect(CollectionFunction.median.fold(ints) == .double(4))
    #expect(CollectionFunction.median.fold([.int(1), .int(9), .int(3)]) == .double(3))
    #expect(CollectionFunction.mode.fold(ints) == .int(4))
    #expect(CollectionFunction.mode.fold([.string("b"), .string("a"), .string("b"), .string("a")]) == .string("a"))
    #expect(CollectionFunction.average.fold(ints) == .double(39.0 / 8))
    #expect(CollectionFunction.count.fold(ints + [.null]) == .int(8))
    #expect(CollectionFunction.min.fold([.string("b"), .null, .string("B")]) == .string("B"))
    #expect(CollectionFunction.sum.fold(ints) == .int(39))
  }

  @Test func integerSumsOverflowIntoDoubles() {
    #expect(CollectionFunction.sum.fold([.int(.max), .int(1)]) == .double(Double(Int64.max) + 1))
    #expect(CollectionFunction.sum.fold([.int(2), .double(0.5)]) == .double(2.5))
    #expect(CollectionFunction.sum.fold([.bool(true), .int(2)]) == .int(3))
  }

  @Test func numericFunctionsGiveNilOutsideTheirDomain() {
    #expect(ExpressionFunctions.apply("sqrt:", [.int(-1)]) == .null)
    #expect(ExpressionFunctions.apply("ln:", [.int(0)]) == .null)
    #expect(ExpressionFunctions.apply("modulus:by:", [.int(7), .int(0)]) == .null)
    #expect(ExpressionFunctions.apply("modulus:by:", [.int(.min), .int(-1)]) == .int(0))
    #expect(ExpressionFunctions.apply("modulus:by:", [.int(-7), .int(3)]) == .int(-1))
    #expect(ExpressionFunctions.apply("modulus:by:", [.double(7.5), .int(2)]) == .double(1.5))
    #expect(ExpressionFunctions.apply("abs:", [.int(.min)]) == .double(-Double(Int64.min)))
    #expect(ExpressionFunctions.apply("raise:toPower:", [.int(2), .int(10)]) == .double(1024))
    #expect(ExpressionFunctions.apply("trunc:", [.double(-2.7)]) == .double(-2))
    #expect(ExpressionFunctions.apply("floor:", [.double(-2.2)]) == .double(-3))
    #expect(ExpressionFunctions.apply("log:", [.int(1000)]) == .double(3))
    #expect(ExpressionFunctions.apply("no-such:", [.int(1)]) == .null)
  }

  @Test func collectionFunctionsFoldArrays() {
    #expect(ExpressionFunctions.apply("max:", [.array([.int(3), .null, .int(7)])]) == .int(7))
    #expect(ExpressionFunctions.apply("count:", [.array([.int(3), .null])]) == .int(1))
  }
}

@Suite("Value coercion")
struct ValueCoercionTests {
  @Test func outOfRangeIntegersAndNonBooleanIntegersDoNotCoerce() {
    // A bare `nil` in `coerce` once became `.null` (Value is ExpressibleByNilLiteral), so these "fitted".
    #expect(AttributeType.int16.coerce(.int(40_000)) == Optional<Value>.none)
    #expect(AttributeType.int32.coerce(.int(Int64(Int32.max) + 1)) == Optional<Value>.none)
    #expect(AttributeType.bool.coerce(.int(2)) == Optional<Value>.none)
    #expect(AttributeType.int16.coerce(.int(-32_768)) == .int(-32_768))
    #expect(AttributeType.bool.coerce(.int(1)) == .bool(true))
    #expect(AttributeType.int16.coerce(.null) == .null)
  }
}
