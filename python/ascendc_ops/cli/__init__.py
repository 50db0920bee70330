"""The command line, one module per command (verify, bench, estimate, profile, info): each owns its parser
through `add_arguments(parser)` and runs through `run(args)`; `ascendc_ops.__main__` only registers them.
Options two commands share are defined once, in `options`; `common` holds the parser class, the argument
types and the suites (a command's subcommands, the older `--suite`/`--preset` spellings kept as aliases)."""
