// The `strata` tool: inspect any Strata store without the app's code (the model is stored inside).
StrataCommand.main()
