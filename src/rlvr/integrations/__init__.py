"""Adapters for other trainers: TRL takes rlvr rewards unchanged; verl needs :mod:`.verl`."""
