// Backends import StrataStoreKit alone: the model, value, query and error types come with it.
@_exported import StrataCore
