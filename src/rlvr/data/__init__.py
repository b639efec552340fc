"""Data: reading rows (JSONL) and, with the trainer, tasks and datasets."""
