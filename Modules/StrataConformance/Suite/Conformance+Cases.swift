import Foundation
import Testing

extension Conformance {
  /// One named case of the suite: a small check of one ``Area``, starting from fresh stores. A backend's
  /// test runs every case as an argument of one parameterized test, so a failure names the case
  /// (`area/case`) and, through the test's name, the backend.
  ///
  /// ```swift
  /// @Test("My store conformance", arguments: Conformance.cases)
  /// func conformance(_ check: Conformance.Case) async throws { try await Conformance.run(check, on: backend) }
  /// ```
  public struct Case: Sendable, CustomStringConvertible, CustomTestStringConvertible {
    /// The area the case belongs to; its requirements decide whether the case runs on a backend.
    public let area: Area
    /// What the case checks, as a function name (`upsertsMergeOverExistingRows`).
    public let name: String
    let body: Check

    init(_ area: Area, _ name: String, _ body: @escaping Check) {
      self.area = area
      self.name = name
      self.body = body
    }

    /// `area/name`, as test reports show the case.
    public var description: String { "\(area.rawValue)/\(name)" }
    public var testDescription: String { description }
  }

  /// What a case runs: its checks on one backend's fresh stores.
  typealias Check = @Sendable (ConformanceBackend) async throws -> Void

  /// Every case of every area, area by area: the arguments of a backend's one conformance test.
  ///
  /// While working on one area, `STRATA_CONFORMANCE_CASES` keeps only the cases whose `area/name`
  /// contains one of its comma-separated parts
  /// (`STRATA_CONFORMANCE_CASES=compositeAttributes/,crud/ swift test --filter sqliteConformance`).
  ///
  /// ```swift
  /// #expect(Conformance.cases.contains { $0.description == "batchInsert/upsertsMergeOverExistingRows" })
  /// ```
  public static var cases: [Case] {
    let all = Area.allCases.flatMap(\.cases)
    guard let only = ProcessInfo.processInfo.environment["STRATA_CONFORMANCE_CASES"], !only.isEmpty else { return all }
    let parts = only.split(separator: ",").map(String.init)
    return all.filter { check in parts.contains { check.description.contains($0) } }
  }
}

extension Conformance.Area {
  /// The cases of this area, in the order `Conformance.run(_:on:)` runs them one after another.
  ///
  /// ```swift
  /// let names = Conformance.Area.batchInsert.cases.map(\.name)
  /// ```
  public var cases: [Conformance.Case] {
    typealias C = Conformance
    func named(_ list: KeyValuePairs<String, Conformance.Check>) -> [Conformance.Case] {
      list.map { Conformance.Case(self, $0.key, $0.value) }
    }
    switch self {
    case .crud:
      return named([
        "insertsGetPermanentIDsOnSave": CRUDCases.insertsGetPermanentIDsOnSave,
        "everyAttributeTypeRoundTrips": CRUDCases.everyAttributeTypeRoundTrips,
        "datesRoundTripToTheBit": CRUDCases.datesRoundTripToTheBit,
        "updatesReachARefaultedObject": CRUDCases.updatesReachARefaultedObject,
        "deletesLeaveTheStore": CRUDCases.deletesLeaveTheStore,
        "insertingThenDeletingWritesNothing": CRUDCases.insertingThenDeletingWritesNothing,
        "rollbackAndResetDropUnsavedState": CRUDCases.rollbackAndResetDropUnsavedState,
      ])
    case .relationships:
      return named([
        "relationshipTargetsAreFaultsUntilTouched": C.relationshipTargetsAreFaultsUntilTouched,
        "bothSidesStayInStepThroughASave": C.bothSidesStayInStepThroughASave,
      ])
    case .deleteRules: return named(["nullifyCascadeAndDenyDeletes": C.deleteRules])
    case .uniqueness:
      return named([
        "clashesWithStoredObjectsAreAllListed": UniquenessCases.clashesWithStoredObjectsAreAllListed,
        "twoNewObjectsWithOneKeyClash": UniquenessCases.twoNewObjectsWithOneKeyClash,
        "nilNeverClashes": UniquenessCases.nilNeverClashes,
        "changedKeysAreCheckedToo": UniquenessCases.changedKeysAreCheckedToo,
        "uniqueDerivedAttributesClashByTheirFoldedKey": UniquenessCases.uniqueDerivedAttributesClashByTheirFoldedKey,
        "oneClashAmongManyInsertsIsNamed": UniquenessCases.oneClashAmongManyInsertsIsNamed,
        "saveIfTheStoreHasNone": UniquenessCases.saveIfTheStoreHasNone,
      ])
    case .fetching:
      return named([
        "filmPredicatesAnswerAsWrittenByHand": FetchingCases.filmPredicatesAnswerAsWrittenByHand,
        "fetchedArraysAreOrdinaryArrays": FetchingCases.fetchedArraysAreOrdinaryArrays,
        "toManyPredicatesOnDirectors": FetchingCases.toManyPredicatesOnDirectors,
        "typedPredicatesAgreeWithFormatStrings": FetchingCases.typedPredicatesAgreeWithFormatStrings,
        "sortsComparatorsAndPaging": FetchingCases.sortsComparatorsAndPaging,
        "pagesWithoutSortsFollowCreationOrder": FetchingCases.pagesWithoutSortsFollowCreationOrder,
      ])
    case .concurrency:
      return named([
        "contextsSaveInTurn": ConcurrencyCases.contextsSaveInTurn,
        "readersSeeWholeSaves": ConcurrencyCases.readersSeeWholeSaves,
        "secondSaveOfOneObjectConflicts": ConcurrencyCases.secondSaveOfOneObjectConflicts,
      ])
    case .errors:
      return named([
        "badQueriesNameTheirKey": ErrorCases.badQueriesNameTheirKey,
        "validationFailuresAreReportedTogether": ErrorCases.validationFailuresAreReportedTogether,
        "insertsAreValidatedBeforeUpdates": ErrorCases.insertsAreValidatedBeforeUpdates,
        "setValueChecksKeysAndTypes": ErrorCases.setValueChecksKeysAndTypes,
        "malformedChangeSetsAreRefusedWhole": ErrorCases.malformedChangeSetsAreRefusedWhole,
        "storesCheckWhatTheyWrite": ErrorCases.storesCheckWhatTheyWrite,
        "insertsOutOfOrderGetAKeyEach": ErrorCases.insertsOutOfOrderGetAKeyEach,
      ])
    case .expressions: return named(["functionsAndCollectionOperatorsAgree": C.expressions])
    case .predicates:
      return named([
        "tablesAnswerAsWrittenByHand": PredicateCases.tablesAnswerAsWrittenByHand,
        "nestedSubqueriesReadingTheOuterVariableAreRefused": PredicateCases.nestedSubqueriesReadingTheOuterVariableAreRefused,
        "badSubscriptsAreRefused": PredicateCases.badSubscriptsAreRefused,
        "unicodeStringsSortAlike": PredicateCases.unicodeStringsSortAlike,
        "typedFormsAgreeWithFormatStrings": PredicateCases.typedFormsAgreeWithFormatStrings,
        "stringOperatorsAnswerAsTheReference": PredicateCases.stringOperatorsAnswerAsTheReference,
        "matchesAnswersAsTheReference": PredicateCases.matchesAnswersAsTheReference,
        "stringAnswersWrittenByHand": PredicateCases.stringAnswersWrittenByHand,
      ])
    case .orderedRelationships:
      return named([
        "modelMarksOrderedRelationships": OrderedRelationshipCases.modelMarksOrderedRelationships,
        "editsKeepTheirOrderThroughASave": OrderedRelationshipCases.editsKeepTheirOrderThroughASave,
        "movesAndRemovalsReachOtherContexts": OrderedRelationshipCases.movesAndRemovalsReachOtherContexts,
        "childContextReorderReachesTheStore": OrderedRelationshipCases.childContextReorderReachesTheStore,
        "undoAndRollbackRestoreTheOrder": OrderedRelationshipCases.undoAndRollbackRestoreTheOrder,
        "movesAndDeletesOfTracksKeepTheOthersInOrder": OrderedRelationshipCases.movesAndDeletesOfTracksKeepTheOthersInOrder,
        "anotherContainerSeesAReorderAfterARefresh": OrderedRelationshipCases.anotherContainerSeesAReorderAfterARefresh,
        "predicatesReadElements": OrderedRelationshipCases.predicatesReadElements,
        "badElementPredicatesAreRefused": OrderedRelationshipCases.badElementPredicatesAreRefused,
        "aListForAnUnorderedRelationshipIsRefused": OrderedRelationshipCases.aListForAnUnorderedRelationshipIsRefused,
        "aCopyKeepsEveryOrder": OrderedRelationshipCases.aCopyKeepsEveryOrder,
        "faultsOfABatchReadTheStoredOrder": OrderedRelationshipCases.faultsOfABatchReadTheStoredOrder,
        "batchUpdatesAndDeletesKeepTheOrder": OrderedRelationshipCases.batchUpdatesAndDeletesKeepTheOrder,
        "historyRecordsAReorder": OrderedRelationshipCases.historyRecordsAReorder,
      ])
    case .dictionaries:
      return named([
        "propertiesAndToOneKeyPaths": DictionaryCases.propertiesAndToOneKeyPaths,
        "foldsOverEveryRow": DictionaryCases.foldsOverEveryRow,
        "groupsHavingAndPaging": DictionaryCases.groupsHavingAndPaging,
        "distinctRowsAndPerRowExpressions": DictionaryCases.distinctRowsAndPerRowExpressions,
        "badRequestsNameTheKey": DictionaryCases.badRequestsNameTheKey,
      ])
    case .batch:
      return named([
        "updatesSetConstantsAndExpressions": BatchCases.updatesSetConstantsAndExpressions,
        "badRequestsChangeNothing": BatchCases.badRequestsChangeNothing,
        "valuesAnAttributeCannotHoldAreRefused": BatchCases.valuesAnAttributeCannotHoldAreRefused,
        "valuesBeyondInt64AndFloatAreRefused": BatchCases.valuesBeyondInt64AndFloatAreRefused,
        "aPartlyFittingUpdateWritesNothing": BatchCases.aPartlyFittingUpdateWritesNothing,
        "updatesIgnoreValidationBounds": BatchCases.updatesIgnoreValidationBounds,
        "floatsTakeTheNearestFloat": BatchCases.floatsTakeTheNearestFloat,
        "deletesByPredicateCascadeAndIDs": BatchCases.deletesByPredicateCascadeAndIDs,
      ])
    case .faulting:
      return named([
        "fetchedFaultsHoldTheirValues": FaultingCases.fetchedFaultsHoldTheirValues,
        "batchesLoadWhenFirstRead": FaultingCases.batchesLoadWhenFirstRead,
        "batchedCollectionsWalkTheSameObjects": FaultingCases.batchedCollectionsWalkTheSameObjects,
        "prefetchedRelationshipsCostNoStoreCall": FaultingCases.prefetchedRelationshipsCostNoStoreCall,
        "prefetchingAToManyThroughItsInverse": FaultingCases.prefetchingAToManyThroughItsInverse,
        "aToManysTargetsLoadTogether": FaultingCases.aToManysTargetsLoadTogether,
        "longListsOfIDsMatchAsIDByIDDoes": FaultingCases.longListsOfIDsMatchAsIDByIDDoes,
        "prefetchingBeyondThePredicateLimit": FaultingCases.prefetchingBeyondThePredicateLimit,
        "badPrefetchKeyPathsNameTheKey": FaultingCases.badPrefetchKeyPathsNameTheKey,
        "singleSnapshots": FaultingCases.singleSnapshots,
        "pinnedSnapshots": FaultingCases.pinnedSnapshots,
        "staleVersionsInOneSaveAreAllListed": FaultingCases.staleVersionsInOneSaveAreAllListed,
        "closedStoresGiveNoSnapshot": FaultingCases.closedStoresGiveNoSnapshot,
        "faultsOfEveryEntity": FaultingCases.faultsOfEveryEntity,
        "objectsOutliveTheirContext": FaultingCases.objectsOutliveTheirContext,
        "objectsReachTheirOwnContext": FaultingCases.objectsReachTheirOwnContext,
      ])
    case .boundedWalk:
      // STRATA_WALK_ROWS: scripts/sanitize walks fewer rows (still fifty batches); 100,000 otherwise.
      let rows = ProcessInfo.processInfo.environment["STRATA_WALK_ROWS"].flatMap(Int.init) ?? 100_000
      return named(["walksLargeResultsInBoundedMemory": { try await C.boundedWalk($0, rows: max(rows, 25_000)) }])
    case .identityMap:
      return named([
        "oneObjectPerID": C.identityMap,
        "sweepsLetWalkedObjectsGoAndKeepTheRest": SweepCases.sweepsLetWalkedObjectsGoAndKeepTheRest,
      ])
    case .pendingChanges:
      return named([
        "pendingInsertsAreFetched": PendingChangeCases.pendingInsertsAreFetched,
        "pendingEditsAndDeletesAreMatchedAsTheyAre": PendingChangeCases.pendingEditsAndDeletesAreMatchedAsTheyAre,
        "pendingChangesAreSortedAndPaged": PendingChangeCases.pendingChangesAreSortedAndPaged,
        "pendingObjectsAreReachedThroughRelationships": PendingChangeCases.pendingObjectsAreReachedThroughRelationships,
        "withoutPendingChangesTheStoreAnswers": PendingChangeCases.withoutPendingChangesTheStoreAnswers,
        "savedTheStoreGivesTheSameAnswers": PendingChangeCases.savedTheStoreGivesTheSameAnswers,
        "rolledBackTheStoreAnswersAgain": PendingChangeCases.rolledBackTheStoreAnswersAgain,
        "badPredicatesAreStillRefused": PendingChangeCases.badPredicatesAreStillRefused,
      ])
    case .asynchronousFetch:
      return named([
        "completionGetsWhatAFetchGets": AsynchronousFetchCases.completionGetsWhatAFetchGets,
        "unsavedChangesShow": AsynchronousFetchCases.unsavedChangesShow,
        "cancelBeforeTheFirstChunk": AsynchronousFetchCases.cancelBeforeTheFirstChunk,
        "cancellingTheTaskCancelsTheFetch": AsynchronousFetchCases.cancellingTheTaskCancelsTheFetch,
        "badPredicatesEndTheFetch": AsynchronousFetchCases.badPredicatesEndTheFetch,
      ])
    case .mergePolicies:
      return named([
        "uniquenessClashesUnderErrorAreAllListed": MergePolicyCases.uniquenessClashesUnderErrorAreAllListed,
        "objectTrumpUpdatesTheStoredRow": MergePolicyCases.objectTrumpUpdatesTheStoredRow,
        "storeTrumpKeepsTheStoredRow": MergePolicyCases.storeTrumpKeepsTheStoredRow,
        "overwriteReplacesTheStoredRow": MergePolicyCases.overwriteReplacesTheStoredRow,
        "rollbackGivesWayToTheStoredRow": MergePolicyCases.rollbackGivesWayToTheStoredRow,
        "lockConflictsUnderObjectTrump": MergePolicyCases.lockConflictsUnderObjectTrump,
        "lockConflictsUnderStoreTrump": MergePolicyCases.lockConflictsUnderStoreTrump,
        "lockConflictsUnderOverwrite": MergePolicyCases.lockConflictsUnderOverwrite,
        "lockConflictsUnderRollback": MergePolicyCases.lockConflictsUnderRollback,
        "lockConflictsUnderErrorNameBothValues": MergePolicyCases.lockConflictsUnderErrorNameBothValues,
      ])
    case .transientAttributes: return named(["transientsAreTrackedNeverWritten": C.transientAttributes])
    case .lifecycle:
      return named([
        "hooksRunInOrder": LifecycleCases.hooksRunInOrder,
        "primitiveAccessorsChangeNothing": LifecycleCases.primitiveAccessorsChangeNothing,
        "validationFailuresAreReportedTogether": LifecycleCases.validationFailuresAreReportedTogether,
        "validateForDeleteCanRefuse": LifecycleCases.validateForDeleteCanRefuse,
      ])
    case .undo: return named(["undoAndRedoBeforeASave": C.undo])
    case .derivedAttributes:
      return named([
        "computedOnTheFirstSave": DerivedAttributeCases.computedOnTheFirstSave,
        "storedForPredicatesAndSorts": DerivedAttributeCases.storedForPredicatesAndSorts,
        "ownAttributesRecomputeAndRestamp": DerivedAttributeCases.ownAttributesRecomputeAndRestamp,
        "anItemsPriceReachesItsList": DerivedAttributeCases.anItemsPriceReachesItsList,
        "aRenamedListReachesItsItems": DerivedAttributeCases.aRenamedListReachesItsItems,
        "insertsDeletesAndLinksAreCounted": DerivedAttributeCases.insertsDeletesAndLinksAreCounted,
        "movesAndLinksRecomputeBothSides": DerivedAttributeCases.movesAndLinksRecomputeBothSides,
        "batchUpdatesRecompute": DerivedAttributeCases.batchUpdatesRecompute,
        "batchDeletesRecompute": DerivedAttributeCases.batchDeletesRecompute,
        "derivedAttributesAreReadOnly": DerivedAttributeCases.derivedAttributesAreReadOnly,
        "theModelRefusesBadDerivations": DerivedAttributeCases.theModelRefusesBadDerivations,
      ])
    case .fetchedResults: return named(["controllersFollowEditsAndMerges": C.fetchedResults])
    case .fetchedResultsUnderLoad:
      return named([
        "controllersFollowFourWriters": {
          try await C.fetchedResultsUnderLoad($0, operations: Conformance.rounds(10_000, minimum: 400))
        }
      ])
    case .remoteChanges: return named(["anotherStoresCommitsReachControllers": C.remoteChanges])
    case .history:
      return named([
        "aSaveOfInsertsIsOneTransaction": HistoryCases.aSaveOfInsertsIsOneTransaction,
        "updatesNameTheirPropertiesAndDeletesKeepTombstones": HistoryCases.updatesNameTheirPropertiesAndDeletesKeepTombstones,
        "batchesAreATransactionEach": HistoryCases.batchesAreATransactionEach,
        "fetchesAfterATokenADateOrATransaction": HistoryCases.fetchesAfterATokenADateOrATransaction,
        "unknownPredicateKeysAreRefused": HistoryCases.unknownPredicateKeysAreRefused,
        "aFailedSaveRecordsNothing": HistoryCases.aFailedSaveRecordsNothing,
        "deletingHistoryExpiresOlderTokens": HistoryCases.deletingHistoryExpiresOlderTokens,
        "reopeningWithoutHistoryExpiresEveryToken": HistoryCases.reopeningWithoutHistoryExpiresEveryToken,
        "historyOffRecordsNothing": HistoryCases.historyOffRecordsNothing,
      ])
    case .historyNotifications: return named(["notificationsCarryTheirTokens": C.historyNotifications])
    case .historyBetweenStores: return named(["storesOnOneLocationSeeEachOthersCommits": C.historyBetweenStores])
    case .historyFromAnotherProcess: return named(["anotherProcessesCommitsArriveWithTheirToken": C.historyFromAnotherProcess])
    case .childContexts:
      return named([
        "childrenReadTheirParentsUnsavedChanges": ChildContextCases.childrenReadTheirParentsUnsavedChanges,
        "childSavesReachTheStoreThroughTheParent": ChildContextCases.childSavesReachTheStoreThroughTheParent,
        "failedChildSavesLeaveTheParentAlone": ChildContextCases.failedChildSavesLeaveTheParentAlone,
        "childInsertsTakeTheirPermanentIDs": ChildContextCases.childInsertsTakeTheirPermanentIDs,
        "grandchildSavesReachTheStore": ChildContextCases.grandchildSavesReachTheStore,
      ])
    case .batchInsert:
      return named([
        "newObjectsStartAtDefaults": BatchInsertCases.newObjectsStartAtDefaults,
        "upsertsMergeOverExistingRows": BatchInsertCases.upsertsMergeOverExistingRows,
        "floatsRoundAsASaveDoes": BatchInsertCases.floatsRoundAsASaveDoes,
        "resultTypesReportWhatTheyName": BatchInsertCases.resultTypesReportWhatTheyName,
        "dictionaryHandlerGivesRowsUntilDone": BatchInsertCases.dictionaryHandlerGivesRowsUntilDone,
        "objectHandlerUpserts": BatchInsertCases.objectHandlerUpserts,
        "badRowsChangeNothing": BatchInsertCases.badRowsChangeNothing,
        "updateAndDeleteReportTheirResultType": BatchInsertCases.updateAndDeleteReportTheirResultType,
        "upsertsWithoutDerivedAttributes": BatchInsertCases.upsertsWithoutDerivedAttributes,
        "leftOutValuesGetDefaults": BatchInsertCases.leftOutValuesGetDefaults,
        "badRowsWithoutDerivedAttributesChangeNothing": BatchInsertCases.badRowsWithoutDerivedAttributesChangeNothing,
      ])
    case .queryGenerations:
      return named([
        "aPinnedContextReadsOneSnapshot": QueryGenerationCases.aPinnedContextReadsOneSnapshot,
        "anotherContextSharesTheSnapshot": QueryGenerationCases.anotherContextSharesTheSnapshot,
        "savesAndMergesMoveAPinnedContextOn": QueryGenerationCases.savesAndMergesMoveAPinnedContextOn,
        "savesFromAPinnedContextMeetTheNewestState": QueryGenerationCases.savesFromAPinnedContextMeetTheNewestState,
        "tokensOfAnotherStoreAreRefused": QueryGenerationCases.tokensOfAnotherStoreAreRefused,
      ])
    case .migration:
      return named([
        "attributesAndEntitiesMigrate": { try C.attributesAndEntitiesMigrate($0) },
        "oneEntityFeedsTwo": { try C.oneEntityFeedsTwo($0) },
        "relationshipsMigrate": { try C.relationshipsMigrate($0) },
        "aClashingConstraintChangesNothing": { try C.aClashingConstraintChangesNothing($0) },
        "threeVersionsInOrder": { try C.threeVersionsInOrder($0) },
        "stagesSplitDeduplicateAndInsert": { try C.stagesSplitDeduplicateAndInsert($0) },
        "aFailingStageChangesNothing": { try C.aFailingStageChangesNothing($0) },
        "storageChangesChangeNothing": { try C.storageChangesChangeNothing($0) },
        "derivedAttributesAreComputed": { try C.derivedAttributesAreComputed($0) },
        "orderingMigrates": { try C.orderingMigrates($0) },
        // Stores with a location only: a container opening a store written with an older model.
        "containersMigrateStoresOnOpen": { if $0.location != nil { try C.containersMigrateStoresOnOpen($0) } },
        "containersRunCustomStages": { if $0.location != nil { try C.containersRunCustomStages($0) } },
      ])
    case .queryLimits: return named(["limitsGiveOneAnswerOnEveryBackend": C.queryLimits])
    case .creation: return named(["creationIsAtomicAndRaceSafe": C.creation])
    case .copy:
      return named([
        "copiesHoldEveryObjectAndLink": CopyCases.copiesHoldEveryObjectAndLink,
        "faultsAfterACopyFireInTheNewStore": CopyCases.faultsAfterACopyFireInTheNewStore,
        "anOccupiedDestinationIsRefused": CopyCases.anOccupiedDestinationIsRefused,
      ])
    case .migrationCrash: return named(["killedMigrationsLeaveAWholeStore": C.migrationCrash])
    case .writeCrash: return named(["killedWritesAreWholeOrAbsent": C.writeCrash])
    case .compositeAttributes:
      return named([
        "storedValuesReadBackEqual": CompositeCases.storedValuesReadBackEqual,
        "storedJSONIsCanonical": CompositeCases.storedJSONIsCanonical,
        "predicatesReadCollectionsAndMembers": CompositeCases.predicatesReadCollectionsAndMembers,
        "unsupportedComparisonsAreRefused": CompositeCases.unsupportedComparisonsAreRefused,
        "undecodableValuesAreCorrupted": CompositeCases.undecodableValuesAreCorrupted,
        "valuesJSONCannotHoldAreRefused": CompositeCases.valuesJSONCannotHoldAreRefused,
        "scalarsBecomeCodable": CompositeCases.scalarsBecomeCodable,
        "plainValuesAnswerAlike": CompositeCases.plainValuesAnswerAlike,
        "randomDocumentsAnswerAsTheEvaluator": CompositeCases.randomDocumentsAnswerAsTheEvaluator,
      ])
    case .enumAttributes:
      return named([
        "enumsAreStoredAsRawValues": C.enumsAreStoredAsRawValues,
        "predicatesMatchCasesAndRawValues": C.predicatesMatchCasesAndRawValues,
        "enumsSortByRawValue": C.enumsSortByRawValue,
        "unknownRawValuesAreCorruptedOrTheFallback": C.unknownRawValuesAreCorruptedOrTheFallback,
        "plainAttributesBecomeEnums": C.plainAttributesBecomeEnumsCase,
      ])
    case .inheritance:
      return named([
        "subentitiesInheritTheirParentsProperties": InheritanceCases.subentitiesInheritTheirParentsProperties,
        "abstractEntitiesCannotBeInserted": InheritanceCases.abstractEntitiesCannotBeInserted,
        "parentFetchesReturnEverySubentity": InheritanceCases.parentFetchesReturnEverySubentity,
        "predicatesSortsAndPagesOverAHierarchy": InheritanceCases.predicatesSortsAndPagesOverAHierarchy,
        "relationshipsToAParentHoldSubentities": InheritanceCases.relationshipsToAParentHoldSubentities,
        "aggregatesAndConstraintsSpanTheHierarchy": InheritanceCases.aggregatesAndConstraintsSpanTheHierarchy,
        "batchesSpanTheHierarchy": InheritanceCases.batchesSpanTheHierarchy,
        "deletingAPickedObjectClearsTheReference": InheritanceCases.deletingAPickedObjectClearsTheReference,
        "aCopyHoldsEachObjectOnce": InheritanceCases.aCopyHoldsEachObjectOnce,
        "versionsInAHierarchy": InheritanceCases.versionsInAHierarchy,
        "addingASubentityMigrates": InheritanceCases.addingASubentityMigrates,
        "existingHierarchiesMigrate": InheritanceCases.existingHierarchiesMigrate,
        "removingASubentityClearsReferences": InheritanceCases.removingASubentityClearsReferences,
      ])
    case .unchangedUpserts:
      return named([
        "theSameRowsAgainWriteNothing": UnchangedUpsertCases.theSameRowsAgainWriteNothing,
        "aMixedBatchWritesOnlyWhatChanged": UnchangedUpsertCases.aMixedBatchWritesOnlyWhatChanged,
        "theGeneralPathBehavesAlike": UnchangedUpsertCases.theGeneralPathBehavesAlike,
      ])
    case .observation:
      return named([
        "observersHearOfMergedSaves": C.observersHearOfMergedSaves,
        "observersHearOfMergedDeletions": C.observersHearOfMergedDeletions,
      ])
    case .externalStorage:
      return named([
        "largeValuesRoundTripAndSmallOnesStayInline": ExternalStorageCases.largeValuesRoundTripAndSmallOnesStayInline,
        "replacedAndDeletedValuesAreRemoved": ExternalStorageCases.replacedAndDeletedValuesAreRemoved,
        "batchUpdatesAndDeletesRemoveTheirValues": ExternalStorageCases.batchUpdatesAndDeletesRemoveTheirValues,
        "failedSavesLeaveNoValue": ExternalStorageCases.failedSavesLeaveNoValue,
        "orphansAreRemovedAtOpen": ExternalStorageCases.orphansAreRemovedAtOpen,
        "copiesCarryTheValues": ExternalStorageCases.copiesCarryTheValues,
        "migrationsTurnItOnAndOff": ExternalStorageCases.migrationsTurnItOnAndOff,
        "valuesAreReadOnlyWhenTheAttributeIs": ExternalStorageLazyCases.valuesAreReadOnlyWhenTheAttributeIs,
        "aMissingValueFailsOnlyWhenRead": ExternalStorageLazyCases.aMissingValueFailsOnlyWhenRead,
        "childContextsReadAndKeepTheValues": ExternalStorageLazyCases.childContextsReadAndKeepTheValues,
        "aPinnedContextReadsValuesReplacedSince": ExternalStorageLazyCases.aPinnedContextReadsValuesReplacedSince,
        "storesAreWrappedOnlyWhenNeeded": ExternalStorageLazyCases.storesAreWrappedOnlyWhenNeeded,
        "undoRestoresAValueNeverRead": ExternalStorageLazyCases.undoRestoresAValueNeverRead,
      ])
    case .mirroring:
      typealias M = MirroringCases
      return named([
        "updateUpdateDifferentAttributesMerge": M.updateUpdateDifferentAttributesMerge,
        "updateUpdateSameAttributeLaterPushWins": M.updateUpdateSameAttributeLaterPushWins,
        "updateUpdateSameAttributeHubWins": M.updateUpdateSameAttributeHubWins,
        "updateUpdateSameAttributeCustomResolver": M.updateUpdateSameAttributeCustomResolver,
        "deleteUpdateDeleteWins": M.deleteUpdateDeleteWins,
        "deleteUpdateUpdateWinsRestores": M.deleteUpdateUpdateWinsRestores,
        "deleteUpdateUpdateWinsRevives": M.deleteUpdateUpdateWinsRevives,
        "deleteRelateDropsTheLink": M.deleteRelateDropsTheLink,
        "createCreateSameUniqueKeyIsOneObject": M.createCreateSameUniqueKeyIsOneObject,
        "renameOntoAHeldKeyIsRefusedAndDiscarded": M.renameOntoAHeldKeyIsRefusedAndDiscarded,
        "denyKeepsAParentThatGainedAChild": M.denyKeepsAParentThatGainedAChild,
        "denyLetsAnEmptyParentGoFirst": M.denyLetsAnEmptyParentGoFirst,
        "orderedReorderedOnBothSidesConverges": M.orderedReorderedOnBothSidesConverges,
        "toManyAddedOnBothSidesKeepsBoth": M.toManyAddedOnBothSidesKeepsBoth,
      ])
    }
  }
}
