"""`python3 -m rung`, the command line client in Python (rung.cli is its
entry point), laid out as the C client `rung` in cli/, file for file, so
that a verb is found in the same place in both:

    main.py         cli/main.c         the command table, the parser, main()
    commands.py     cli/commands.h     exit statuses, local errors, what
                                       every command shares
    rest.py         cli/rest.c         the daemon's error as one line, and
                                       which errors are worth a retry
                                       (the requests themselves: rung.client)
    experiments.py  cli/experiments.c  submit, ls, show, cancel, export, best
    control.py      cli/control.c      pause, resume, extend, set,
                                       stop-trial, delete, retry, logs
    meta.py         cli/meta.c         tag, note
    watch.py        cli/watch.c        watch
    analysis.py     cli/analysis.c     importance
    workers.py      cli/workers.c      workers
    view.py         cli/view.c         the pieces of show: parameter
                                       columns, gang members, PBT schedule,
                                       Pareto front
    table.py        cli/table.c        text tables
    fmt.py          cli/fmt.c          values and daemon strings for a
                                       terminal

The YAML reader (cli/yaml.c) is rung._yaml, which the library shares.
Imports go one way: main imports the commands, which import view, table,
fmt, rest and commands; none of those imports a command module.
"""
