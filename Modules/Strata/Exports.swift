// Apps and feature modules import Strata alone: the model, query and error types come with it.
@_exported import StrataCore
// The two checks of a store's location, which live with the I/O in StrataStoreKit: apps ask them before
// they open a store (a FIFO, read-only media), as they did when the core held them.
@_exported public import enum StrataStoreKit.ReadOnlyMedia
@_exported public import enum StrataStoreKit.StorePath
