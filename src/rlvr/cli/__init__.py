"""The ``rlvr`` command line: one thin module per command, :mod:`rlvr.cli.app` prints and exits."""
