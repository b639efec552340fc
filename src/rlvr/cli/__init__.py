"""The ``rlvr`` command line: one thin module per command; :mod:`rlvr.cli.console` prints and exits."""

__all__: list[str] = []
