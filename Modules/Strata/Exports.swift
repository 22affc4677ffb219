// Apps and feature modules import Strata alone: the model, query and error types come with it.
@_exported import StrataCore
