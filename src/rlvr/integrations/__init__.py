"""Adapters over other engines (``rlvr.integrations.trl``, ``rlvr.integrations.verl``): each imports its engine.

Nothing is imported here, so that neither engine loads unless its adapter is asked for.
"""

__all__: list[str] = []
