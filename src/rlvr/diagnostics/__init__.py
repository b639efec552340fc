"""Diagnostics: why each rollout lived or died (format vs verification), and what to do about it."""
